"""pack-bench's MiniMalloc column: the binary's answer parsed and its packing re-checked.

A stand-in script plays MiniMalloc (its command line and its log lines), so the test needs
no MiniMalloc build."""
from __future__ import annotations

import stat

import pytest

from memplace.bench.minimalloc_side import run_minimalloc
from memplace.model.core.errors import MemplaceError
from memplace.model.packing.buffers import Buffer

BUFFERS = [Buffer("a", 0, 2, 2), Buffer("b", 1, 3, 2)]


def fake(tmp_path, offsets: str, log: str, code: int = 0):
    """A script that writes `offsets` as MiniMalloc's output CSV and prints `log`."""
    path = tmp_path / "minimalloc"
    rows = "\\n".join(f"{b.id},{b.lower},{b.upper},{b.size},{o}"
                      for b, o in zip(BUFFERS, offsets.split(",")))
    path.write_text("#!/bin/sh\nfor a in \"$@\"; do case $a in --output=*) out=${a#--output=};; "
                    "esac; done\n"
                    + (f"printf 'id,lower,upper,size,offset\\n{rows}\\n' > $out\n" if offsets else "")
                    + f"echo '{log}' >&2\nexit {code}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def test_a_valid_packing_is_packed_with_minimallocs_own_time(tmp_path):
    got = run_minimalloc(fake(tmp_path, "0,2", "Elapsed time 0.125s"), BUFFERS, 4, 5)
    assert got == ("packed", 0.125)


def test_an_overlapping_packing_is_caught(tmp_path):
    assert run_minimalloc(fake(tmp_path, "0,1", "Elapsed time 0.5s"), BUFFERS, 4, 5)[0] == "INVALID"


@pytest.mark.parametrize("log, status", [
    ("DEADLINE_EXCEEDED: Error encountered during search.", "timeout"),
    ("NOT_FOUND: Error encountered during search.", "no solution"),
    ("something else", "error")])
def test_failures_are_named(tmp_path, log, status):
    got = run_minimalloc(fake(tmp_path, "", f"Elapsed time 1.5s\n{log}", code=1), BUFFERS, 4, 5)
    assert got == (status, 1.5)


def test_a_missing_binary_is_named(tmp_path):
    with pytest.raises(MemplaceError, match="no MiniMalloc binary"):
        run_minimalloc(tmp_path / "nowhere", BUFFERS, 4, 5)
