"""Writing a file whole or not at all: a crash never leaves a half-written file behind,
and a failure to write (a missing folder, a full disk, a folder in the way) is one
MemplaceError naming the file, with whatever was at the path left as it was.

Every file memplace writes goes through here. A new file gets the mode a plain
`open(path, "w")` would give it (0666 less the user's umask: 0644 under umask 022);
a file that is replaced keeps its mode.
"""
from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import IO, Iterator

from memplace.model.core.errors import MemplaceError


def _open_temporary(path: Path) -> tuple[int, str]:
    """A new file beside `path`, created with mode 0666 so the kernel applies the umask
    (tempfile.mkstemp would make it 0600 whatever the umask)."""
    import secrets  # here, not at the top: its hmac and hashlib cost every start-up

    for _ in range(100):
        tmp = str(path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {path}")


@contextlib.contextmanager
def atomic_write(path: str | Path, what: str = "file", error: type[MemplaceError] = MemplaceError,
                 newline: str | None = None, binary: bool = False) -> Iterator[IO]:
    """A file in `path`'s folder (text, UTF-8; bytes with `binary`) that replaces `path`
    once the block ends.

    On any error the temporary file is removed and `path` is left as it was; an OSError
    becomes `error` ("cannot write <what> <path>: <reason>").
    """
    path = Path(path)
    if path.is_dir():
        raise error(f"cannot write {what} {path}: is a folder")
    tmp = None
    try:
        fd, tmp = _open_temporary(path)
        with contextlib.suppress(FileNotFoundError):
            os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))  # a replaced file keeps its mode
        if binary:
            out = os.fdopen(fd, "wb")
        else:
            out = os.fdopen(fd, "w", newline=newline, encoding="utf-8")
        with out:
            yield out
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise error(f"cannot write {what} {path}: {exc.strerror or exc}") from None
        raise


def write_atomically(path: str | Path, text: str | bytes, what: str = "file",
                     error: type[MemplaceError] = MemplaceError) -> None:
    """Write `text` (or bytes) to `path` whole or not at all (see `atomic_write`)."""
    binary = isinstance(text, bytes)
    with atomic_write(path, what, error, newline=None if binary else "", binary=binary) as out:
        out.write(text)
