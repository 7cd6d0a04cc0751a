"""Files memplace writes get the user's umask (0644 under 022), are written whole or not
at all, and a replaced file keeps its mode."""
from __future__ import annotations

import contextlib
import os
import stat

import pytest

from memplace.instances import load
from memplace.model.core.errors import MemplaceError
from memplace.model.core.files import write_atomically
from memplace.model.packing.minimalloc_csv import read_buffers, write_solution
from memplace.solvers import solve


@contextlib.contextmanager
def umask(mask: int):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("mask, expected", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_a_new_file_gets_the_mode_the_umask_gives(tmp_path, mask, expected):
    with umask(mask):
        write_atomically(tmp_path / "a.txt", "text")
        write_atomically(tmp_path / "b.bin", b"\x00\x01")
    assert mode(tmp_path / "a.txt") == expected and mode(tmp_path / "b.bin") == expected
    assert (tmp_path / "a.txt").read_text() == "text" and (tmp_path / "b.bin").read_bytes() == b"\x00\x01"


def test_a_replaced_file_keeps_its_mode(tmp_path):
    path = tmp_path / "kept.txt"
    path.write_text("old")
    os.chmod(path, 0o640)
    with umask(0o022):
        write_atomically(path, "new")
    assert mode(path) == 0o640 and path.read_text() == "new"


def test_a_failed_write_leaves_no_temporary_file_and_names_the_file(tmp_path):
    with pytest.raises(MemplaceError, match="missing"):
        write_atomically(tmp_path / "missing" / "x.txt", "text")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("problem", ["static", "residency"])
def test_solution_files_are_0644_under_umask_022(tmp_path, problem):
    inst = load("synth-100@nnpi")
    result = solve(inst, "all-slowest", time_limit=None, problem=problem)
    with umask(0o022):
        result.to_solution().write(tmp_path / "solution.json", inst)
    assert mode(tmp_path / "solution.json") == 0o644


def test_packed_csv_is_0644_under_umask_022(tmp_path):
    source = tmp_path / "buffers.csv"
    source.write_text("id,lower,upper,size\n0,0,2,4\n1,1,3,4\n")
    packing = read_buffers(source)
    with umask(0o022):
        write_solution(tmp_path / "packed.csv", packing, [0, 4])
    assert mode(tmp_path / "packed.csv") == 0o644
    assert (tmp_path / "packed.csv").read_text().splitlines()[1:] == ["0,0,2,4,0", "1,1,3,4,4"]
