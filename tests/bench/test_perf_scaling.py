"""`memplace perf --scaling` prints one Markdown row per size with every column timed."""
from __future__ import annotations

import json

from click.testing import CliRunner

from memplace.cli import main
from memplace.bench.perf import scaling_columns


def test_scaling_table_has_a_row_per_size_and_a_time_in_every_column(tmp_path):
    result = CliRunner().invoke(main, ["perf", "--scaling", "--sizes", "200,400", "--moves", "1000",
                                       "--folder", str(tmp_path)])
    assert result.exit_code == 0, result.output
    lines = [x for x in result.output.splitlines() if x.startswith("|")]
    assert lines[0] == "| ops | tensors | " + " | ".join(scaling_columns(1000)) + " |"
    rows = [[c.strip() for c in x.strip("|").split("|")] for x in lines[2:]]
    assert [r[0] for r in rows] == ["200", "400"]
    for row in rows:
        assert len(row) == 2 + len(scaling_columns(1000))
        assert all(float(c) >= 0 for c in row[2:])
    data = json.loads((tmp_path / "synth-400@nnpi.json").read_text())
    assert len(data["workload"]["ops"]) == 400  # the instance timed is the size asked for
    assert "compile time excluded" in result.output


def test_scaling_refuses_bad_sizes_in_one_line(tmp_path):
    result = CliRunner().invoke(main, ["perf", "--scaling", "--sizes", "10,x",
                                       "--folder", str(tmp_path)])
    assert result.exit_code == 2
    assert "--sizes must be comma-separated integers" in result.output


def test_perf_without_instance_or_scaling_is_a_usage_error():
    result = CliRunner().invoke(main, ["perf"])
    assert result.exit_code == 2
    assert "give an INSTANCE, or --scaling" in result.output
