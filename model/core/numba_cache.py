"""Where Numba keeps the compiled kernels (`cache=True`): a user cache folder, never
the installed package.

Left alone, Numba writes its cache files next to the source, inside
site-packages for a non-editable install. `pip install -e` later removes only the
files pip recorded, so those cache folders stayed behind and the leftover
`site-packages/memplace/model/` shadowed the editable install as a namespace
package. Importing this module (the first thing `memplace.model`,
`memplace.solvers` and `memplace.bench` do, so every entry point goes through it
before any kernel is decorated) points Numba at, in order of preference:

1. `NUMBA_CACHE_DIR` when the user set it (respected as given);
2. `platformdirs.user_cache_dir("memplace")/numba/<source>` (`~/.cache/memplace/numba/...`
   on Linux);
3. `<tempdir>/memplace-numba-<user>/<source>` when the user cache folder cannot be written.

`<source>` is a digest of memplace's own source files (path, size, modification
time). Numba checks only the timestamp of the file that defines a cached kernel,
not of the files whose functions it calls, so after an edit or an upgrade of one
module a kernel in another could run stale compiled code and give wrong results
silently (this happened during development). One folder per state of the source
makes every change recompile; old folders can be deleted freely.

Numba reads `NUMBA_CACHE_DIR` when it is imported, so the folder is chosen the
moment something first imports numba (a finder on `sys.meta_path` that removes
itself), not when this module is imported: computing the digest imports
platformdirs, hashlib and tempfile and walks the source tree, time that `memplace
pack` and `memplace --help`, which never load Numba, should not spend. If numba was
imported before memplace, its configuration is reloaded here. Worker processes
inherit the variable from the environment, or choose the same folder themselves.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

ENV = "NUMBA_CACHE_DIR"


def _writable(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(path, os.W_OK | os.X_OK)


ROOTS = ("model", "solvers", "instances", "bench", "envs")  # memplace's source folders


def source_digest() -> str:
    """A short digest of every Python file of memplace (relative path, size, mtime)."""
    import hashlib
    top = Path(__file__).resolve().parents[2]  # the checkout, or site-packages/memplace
    digest = hashlib.sha1()
    for root in ROOTS:
        for path in sorted((top / root).rglob("*.py")):
            try:
                stat = path.stat()
            except OSError:
                continue
            digest.update(f"{path.relative_to(top)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def _default_dir() -> Path:
    import getpass
    import tempfile

    import platformdirs
    source = source_digest()
    user = Path(platformdirs.user_cache_dir("memplace")) / "numba"
    if _writable(user / source):
        return user / source
    try:
        who = getpass.getuser()
    except (KeyError, OSError):  # no user name for this uid (e.g. a bare container)
        who = str(os.getuid()) if hasattr(os, "getuid") else "user"
    return Path(tempfile.gettempdir()) / f"memplace-numba-{who}" / source


def configure() -> Path:
    """Set `NUMBA_CACHE_DIR` (unless the user did) and return the folder Numba caches in."""
    explicit = os.environ.get(ENV)
    if explicit:
        path = Path(explicit)
    else:
        path = _default_dir()
        os.environ[ENV] = str(path)
    if "numba.core.config" in sys.modules:  # numba came first: make it read the variable again
        sys.modules["numba.core.config"].reload_config()
    return path


def cache_dir() -> Path:
    """The folder Numba caches compiled kernels in (as configured on import)."""
    return Path(os.environ.get(ENV) or configure())



def has_kernels() -> bool:
    """Whether the cache folder holds compiled kernels already (Numba's index files)."""
    folder = cache_dir()
    return folder.is_dir() and next(folder.rglob("*.nbi"), None) is not None


def _compile_log() -> Path:
    """Where the seconds of the last compile into an empty cache are kept: beside the
    per-source folders, so a new version of memplace can say how long the last took."""
    import platformdirs
    return Path(platformdirs.user_cache_dir("memplace")) / "compile-seconds.txt"


def record_compile_seconds(seconds: float) -> None:
    """Keep how long compiling into an empty cache took (best effort: never fails)."""
    try:
        _compile_log().parent.mkdir(parents=True, exist_ok=True)
        _compile_log().write_text(f"{seconds:.1f}\n", encoding="utf-8")
    except OSError:
        pass


def last_compile_seconds() -> float | None:
    """The seconds the last compile into an empty cache took, if one was recorded."""
    try:
        return float(_compile_log().read_text(encoding="utf-8").split()[0])
    except (OSError, ValueError, IndexError):
        return None


class _BeforeNumba:
    """A meta-path finder that configures the cache folder when numba is first imported,
    then steps aside (it finds nothing itself)."""

    @classmethod
    def find_spec(cls, name: str, path=None, target=None) -> None:
        if name == "numba":
            _uninstall()
            configure()
        return None


def _uninstall() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if f is not _BeforeNumba]


def configure_when_numba_loads() -> None:
    """Configure now if numba is loaded already, else the moment it is imported."""
    if "numba" in sys.modules:
        configure()
    elif _BeforeNumba not in sys.meta_path:
        sys.meta_path.insert(0, _BeforeNumba)


configure_when_numba_loads()
