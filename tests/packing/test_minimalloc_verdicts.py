"""memplace's verdict on small cases of every MiniMalloc CSV column and combination is
MiniMalloc's, and each side accepts the other's packings.

The expected answers are committed data (`data/minimalloc_verdicts.json`), derived by
running MiniMalloc itself, built on this machine, through
`data/derive_minimalloc_verdicts.py`: its solver's packing where it finds one, else its
own validator over every offset vector. Where its solver reports "no solution" but its
validator accepts a packing ("solver": "no solution", "verdict": "packed": windows at the
top of a buffer, a zero-size buffer) memplace follows the validator.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memplace.cli import main
from memplace.model.packing.minimalloc_csv import read_buffers
from memplace.model.packing.packers import check_packing, pack

CASES = json.loads((Path(__file__).parent / "data" / "minimalloc_verdicts.json")
                   .read_text())["cases"]


def test_the_cases_cover_every_column_and_both_verdicts():
    headers = {name for case in CASES for name in case["csv"].splitlines()[0].split(",")}
    assert headers >= {"id", "buffer", "buffer_id", "lower", "start", "begin", "upper", "end",
                       "size", "alignment", "gaps", "offset", "hint"}
    assert {case["verdict"] for case in CASES} == {"packed", "infeasible"}
    assert any("@" in case["csv"] for case in CASES)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_memplace_verdict_is_minimallocs(case, tmp_path):
    path = tmp_path / "in.csv"
    path.write_text(case["csv"])
    buffers = read_buffers(path).buffers
    if case["offsets"] is not None:  # MiniMalloc's packing is valid under memplace's meaning
        assert check_packing(buffers, case["offsets"], case["capacity"]) == []
    for method in ("exact", "exact-search"):
        got = pack(buffers, case["capacity"], method=method)
        assert got.status == case["verdict"], method
        if got.status == "packed":
            assert check_packing(buffers, got.offsets, case["capacity"]) == [], method


@pytest.mark.parametrize("case", [c for c in CASES if c["verdict"] == "packed"][:6],
                         ids=lambda c: c["name"])
def test_cli_writes_back_minimallocs_columns(case, tmp_path):
    path, out = tmp_path / "in.csv", tmp_path / "out.csv"
    path.write_text(case["csv"])
    result = CliRunner().invoke(main, ["pack", str(path), "--capacity", str(case["capacity"]),
                                       "-o", str(out)])
    assert result.exit_code == 0, result.output
    header = case["csv"].splitlines()[0].split(",")
    written = out.read_text().splitlines()
    assert written[0].split(",") == header + ([] if "offset" in header else ["offset"])
    packed = read_buffers(out)
    offsets = [b.offset for b in packed.buffers]
    assert check_packing(read_buffers(path).buffers, offsets, case["capacity"]) == []
