"""Numba's cache lives in a user folder, never inside the installed package (a leftover
cache folder in site-packages once shadowed the editable install of the README's
second command); every way in (library, CLI) sets it before a kernel is compiled."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from memplace.model.core.numba_cache import source_digest

ROOT = Path(__file__).resolve().parents[2]


def _python(code: str, **env: str | None) -> str:
    environ = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    environ.update({k: v for k, v in env.items() if v is not None})
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environ)
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


def test_library_import_points_numba_at_the_user_cache_folder(tmp_path):
    printed = _python("import memplace.model, numba; print(numba.config.CACHE_DIR)",
                      XDG_CACHE_HOME=str(tmp_path))
    assert printed == str(tmp_path / "memplace" / "numba" / source_digest())
    assert Path(printed).is_dir()


def test_the_folder_is_chosen_when_numba_is_imported_not_before(tmp_path):
    """Importing memplace's model costs no digest of the source tree (`memplace pack`
    never loads Numba); importing numba afterwards still caches in the user folder."""
    code = ("import os, sys\nimport memplace.model\n"
            "print('NUMBA_CACHE_DIR' in os.environ, 'platformdirs' in sys.modules)\n"
            "import numba\nprint(numba.config.CACHE_DIR)")
    assert _python(code, XDG_CACHE_HOME=str(tmp_path)).splitlines() == [
        "False False", str(tmp_path / "memplace" / "numba" / source_digest())]


def test_numba_imported_first_still_caches_in_the_user_folder(tmp_path):
    code = ("import numba\nimport memplace.bench.perf\n"
            "print(numba.config.CACHE_DIR)")
    assert _python(code, XDG_CACHE_HOME=str(tmp_path)) == str(tmp_path / "memplace" / "numba"
                                                               / source_digest())


def test_an_explicit_numba_cache_dir_is_respected(tmp_path):
    mine = tmp_path / "mine"
    printed = _python("import memplace.solvers, numba; print(numba.config.CACHE_DIR)",
                      XDG_CACHE_HOME=str(tmp_path / "xdg"), NUMBA_CACHE_DIR=str(mine))
    assert printed == str(mine)


def test_an_unwritable_user_folder_falls_back_to_the_temp_folder(tmp_path):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would go")
    printed = _python("import memplace.model, numba; print(numba.config.CACHE_DIR)",
                      XDG_CACHE_HOME=str(blocked), TMPDIR=str(tmp_path))
    assert printed.startswith(str(tmp_path / "memplace-numba-"))
    assert printed.endswith(source_digest())


def test_a_changed_source_file_gets_a_fresh_cache_folder(tmp_path, monkeypatch):
    """Numba checks only the defining file's timestamp: a kernel calling a function of an
    edited module would keep its stale compiled code, so any edit changes the folder."""
    from memplace.model.core import numba_cache
    tree = tmp_path / "tree"
    (tree / "model" / "core").mkdir(parents=True)
    (tree / "solvers").mkdir()
    kernel = tree / "solvers" / "kernels.py"
    kernel.write_text("x = 1\n")
    monkeypatch.setattr(numba_cache, "__file__", str(tree / "model" / "core" / "numba_cache.py"))
    before = numba_cache.source_digest()
    assert numba_cache.source_digest() == before
    kernel.write_text("x = 22\n")
    assert numba_cache.source_digest() != before


def test_compiled_kernels_land_in_the_cache_folder_not_the_package(tmp_path):
    import memplace.model.static as package
    in_package = set(Path(package.__file__).parent.rglob("*.nbi"))  # stale ones of old checkouts
    code = ("import numpy as np\n"
            "from memplace.model.static.kernels import capacity_ok_kernel\n"
            "print(capacity_ok_kernel(np.zeros((1, 2), np.int64), np.ones(1, np.int64)))")
    assert _python(code, XDG_CACHE_HOME=str(tmp_path)) == "True"
    assert list((tmp_path / "memplace" / "numba").rglob("*capacity_ok_kernel*.nbi"))
    assert set(Path(package.__file__).parent.rglob("*.nbi")) == in_package


def test_warmup_compiles_the_residency_simulator_too(tmp_path):
    """`memplace warmup`, the harness and `memplace solve` compile before a run's clock
    starts; a residency run once spent its 30 s compiling and returned all-slowest."""
    code = ("from memplace.model import warmup\n"
            "from memplace.model.residency import kernels as k\n"
            "warmup()\n"
            "print(sorted(f.__name__ for f in (k.run_kernel, k.batch_kernel, k.change_kernel,\n"
            "             k.try_change_kernel, k.encode_kernel) if f.signatures))")
    # (replay_kernel is called only from inside other kernels, since b249293: it is compiled
    # into them, and a caller loaded from the disk cache never compiles it on its own)
    assert _python(code) == str(sorted(["run_kernel", "batch_kernel", "change_kernel",
                                        "try_change_kernel", "encode_kernel"]))


def test_the_cache_says_whether_it_holds_kernels_and_how_long_the_last_compile_took(tmp_path):
    code = ("from memplace.model.core import numba_cache as c\n"
            "print(c.has_kernels(), c.last_compile_seconds())\n"
            "(c.cache_dir() / 'x.nbi').write_bytes(b'')\n"
            "c.record_compile_seconds(74.56)\n"
            "print(c.has_kernels(), c.last_compile_seconds())\n")
    assert _python(code, XDG_CACHE_HOME=str(tmp_path)).splitlines() == ["False None", "True 74.6"]
