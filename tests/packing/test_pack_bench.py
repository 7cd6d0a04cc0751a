"""`memplace pack-bench`: the table's rows, the files it writes, the start-up figures."""
from __future__ import annotations

import csv
import shutil

from click.testing import CliRunner

from memplace.bench import pack_startup, pack_table
from memplace.cli import main
from memplace.model.packing import BENCHMARKS

EXAMPLE = BENCHMARKS / "minimalloc" / "examples" / "input.12.csv"


def test_pack_bench_writes_the_table_it_prints(tmp_path):
    folder = tmp_path / "set"
    folder.mkdir()
    shutil.copy(EXAMPLE, folder / "example.12.csv")
    shutil.copy(EXAMPLE, folder / "tight.11.csv")  # peak live size 12: infeasible at 11
    out = tmp_path / "results"
    result = CliRunner().invoke(main, ["pack-bench", "--dir", str(folder), "--time-limit", "5",
                                       "--out", str(out)])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader((out / "pack-bench.csv").open()))
    assert [(r["instance"], r["status"], r["height"], r["bound"]) for r in rows] == [
        ("example", "packed", "12", "12"), ("tight", "infeasible", "0", "12")]
    table = (out / "pack-bench.md").read_text()
    assert "| minimalloc | example | 5 | 12 | packed | 12 | 12 |" in table
    assert "memplace pack-bench" in table


def test_a_trace_without_capacity_is_minimised_to_its_bound():
    instance = pack_table.Instance("traces", "example",
                                   pack_table.read_buffers(EXAMPLE).buffers, None)
    row = pack_table.run(instance, time_limit=5)
    assert (row.status, row.height, row.bound, row.gap_pct) == ("optimal", 12, 12, 0.0)


def test_startup_measures_a_whole_process_and_its_memory():
    fig = pack_startup.measure("help", ["--help"], 1)
    assert fig.exit_codes == (0,) and len(fig.seconds) == 1
    assert fig.seconds[0] > 0 and fig.peak_mb > 5  # an interpreter takes more than 5 MB
