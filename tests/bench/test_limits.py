"""`memplace limits`: a run is judged by the later of solve()'s return and its solver
thread's end, so a thread that outlives a hard stop (and holds a core) is reported.

No wall-clock speed is asserted here: the solver below sleeps a fixed time past a tiny
limit, so its thread's end is at least that late whatever the machine's load.
"""
from __future__ import annotations

import time

import pytest

from memplace.bench.limits import MARGIN_S, LimitRow, table, timed_solve
from memplace.model import Instance
from memplace.model.warmup import tiny_instance_dict
from memplace.solvers import register, solvers_of

SLEEP_S = 2.0


def _overstayer(ctx, seconds: float) -> None:
    ctx.offer(ctx.instance.slowest_placement())
    time.sleep(seconds)  # ignores the limit


@pytest.fixture
def overstayer():
    register("test-overstayer", "test only: offers the slowest placement, then sleeps past "
             "its limit", params={"seconds": SLEEP_S})(_overstayer)
    yield "test-overstayer"
    solvers_of().remove("test-overstayer")


def test_a_thread_that_outlives_its_hard_stop_is_timed_to_its_end(overstayer):
    inst = Instance.from_dict(tiny_instance_dict())
    row = timed_solve(inst, overstayer, "static", 0.1)
    assert row.hard_stop and not row.error
    assert row.ended_s >= SLEEP_S and row.ended_s >= row.returned_s
    assert row.over_s == pytest.approx(row.ended_s - 0.1)


def test_a_run_holds_only_within_the_margin_and_without_error():
    def row(returned: float, ended: float, error: str = "") -> LimitRow:
        return LimitRow("residency", "sa", "p", 10, 10.0, returned, ended, False, error)
    assert row(10.2, 10.2).holds
    assert row(10.0 + MARGIN_S, 10.0 + MARGIN_S).holds
    assert not row(10.2, 10.0 + MARGIN_S + 0.1).holds  # the thread ran on
    assert not row(10.0 + MARGIN_S + 0.1, 10.0 + MARGIN_S + 0.1).holds
    assert not row(1.0, 1.0, "RuntimeError: boom").holds
    text = table([row(10.2, 10.2), row(10.2, 30.0)])
    lines = [line for line in text.splitlines() if line.startswith("| residency")]
    assert "+20.00" in lines[0] and "NO" in lines[0]  # the overrun first
    assert "1 of 2 runs" in text


def test_a_plans_runs_are_judged_by_their_recorded_wall_time(tmp_path):
    """`memplace limits --runs`: each record's wall_s against its time limit; a failed run
    does not hold, however quick."""
    from memplace.bench.limits import record_rows

    def record(solver: str, wall: float, status: str = "feasible") -> dict:
        return {"problem": "residency", "solver": solver, "instance": "p", "time_limit": 10.0,
                "wall_s": wall, "status": status, "notes": {"hard_stop": wall > 10.25},
                "error": None if status == "feasible" else "worker killed by SIGKILL"}

    records = [record("sa", 10.1), record("ga", 16.0), record("beam", 3.0, "killed")]
    rows = record_rows(records)
    assert [(r.solver, r.holds, r.hard_stop) for r in rows] == [
        ("sa", True, False), ("ga", False, True), ("beam", False, False)]
    assert rows[1].over_s == pytest.approx(6.0) and "killed" in rows[2].error



def test_limits_reads_a_committed_plans_runs(tmp_path):
    from pathlib import Path

    from click.testing import CliRunner

    from memplace.bench.store import read_runs
    from memplace.cli import main
    runs = Path(__file__).resolve().parents[2] / "results" / "quick" / "runs.jsonl"
    out = tmp_path / "quick"
    result = CliRunner().invoke(main, ["limits", "--runs", str(runs), "--out", str(out)])
    n = len(read_runs(runs))
    assert f"{n} of {n} runs within" in result.output and result.exit_code == 0, result.output
    table = (out / "table.md").read_text(encoding="utf-8")
    assert table.startswith(f"Written by `memplace limits --runs {runs} --out {out}`")


def test_each_timed_run_starts_from_the_instance_as_loaded():
    """What one run derived (msa's closed-form bounds: 0.5 s of CPU at 10^5 ops) is not
    handed to the next run of the sweep."""
    inst = Instance.from_dict(tiny_instance_dict())
    built = []
    inst.derived("test.count", built.append)
    timed_solve(inst, "compiler", "static", 1.0)
    inst.derived("test.count", built.append)
    assert len(built) == 2
