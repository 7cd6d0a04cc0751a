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
    assert fig.exit_codes == (0,) and len(fig.seconds) == len(fig.cpu_seconds) == 1
    assert fig.seconds[0] > 0 and fig.cpu_seconds[0] > 0
    assert fig.peak_mb > 5  # an interpreter takes more than 5 MB


def test_warm_runs_fill_a_bytecode_cache_even_when_writing_bytecode_is_off(tmp_path,
                                                                          monkeypatch):
    """Else every "warm" run compiles memplace's sources again (a start-up 0.1 s slower)."""
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    pack_startup.measure("help", ["--help"], 1, warm_cache=str(tmp_path))
    assert [p for p in tmp_path.rglob("main.*.pyc") if p.parent.name == "cli"]  # cli/main.py


def test_a_startup_row_holds_the_fastest_wall_time_to_its_goal():
    fig = pack_startup.Startup("memplace pack F (warm)", ("pack",), (0.31, 0.3, 0.5),
                               (0.16, 0.2, 0.17), 38.0, (0, 0, 0), goal_s=0.25)
    line = pack_startup.text_line(fig)
    assert line.split()[4:] == ["3", "0.300", "0.310", "0.160", "0.170", "38.0", "0.250", "no",
                                "(cpu", "yes)"]
    faster = pack_startup.Startup("x", (), (0.2,), (0.1,), 30.0, (0,), goal_s=0.25)
    assert pack_startup.text_line(faster).endswith("yes")
    failed = pack_startup.Startup("x", (), (0.2,), (0.1,), 30.0, (2,), goal_s=None)
    assert pack_startup.text_line(failed).endswith("-  exit (2,)")

def test_startup_results_keep_the_printed_table_and_its_command(tmp_path):
    lines = ["load average 1.00, 1.00, 1.00 on 2 cores at the start", pack_startup.HEADER,
             "memplace --help (warm)  5  0.100"]
    path = pack_startup.write_results(tmp_path / "out", lines, "memplace pack-bench --startup")
    text = path.read_text()
    assert path.name == "startup.md" and "`memplace pack-bench --startup`" in text
    assert "```\n" + "\n".join(lines) + "\n```\n" in text
