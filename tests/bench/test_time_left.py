"""The time a batch has left: each solver at what its finished runs took, a solver not
seen yet at its time limit, never the kernels' compilation."""
from __future__ import annotations

import pytest

from memplace.bench.task import Task
from memplace.bench.time_left import TimeLeft


def _task(solver: str, seed: int, time_limit: float = 5.0) -> Task:
    return Task("inst", "inst.json", "sha", solver, {}, seed, time_limit)


def _record(task: Task, wall_s: float) -> dict:
    return {"instance": task.instance, "instance_sha256": task.sha256, "solver": task.solver,
            "params": task.params, "seed": task.seed, "time_limit": task.time_limit,
            "wall_s": wall_s}


def test_solvers_not_seen_yet_count_at_their_time_limit():
    tasks = [_task("sa", s) for s in range(3)] + [_task("greedy", s, 2.0) for s in range(2)]
    assert TimeLeft(tasks, jobs=2).seconds() == pytest.approx((3 * 5.0 + 2 * 2.0) / 2)


def test_finished_runs_set_their_solvers_expected_time():
    tasks = [_task("sa", s) for s in range(3)] + [_task("greedy", s) for s in range(3)]
    left = TimeLeft(tasks, jobs=2)
    left.finished(_record(tasks[3], 0.2))  # greedy takes 0.2 s, not its 5 s limit
    left.finished(_record(tasks[4], 0.4))
    assert left.seconds() == pytest.approx((3 * 5.0 + 1 * 0.3) / 2)
    left.finished(_record(tasks[0], 4.0))
    assert left.seconds() == pytest.approx((2 * 4.0 + 1 * 0.3) / 2)


def test_the_estimate_ignores_the_time_before_the_runs_began():
    """The compile before the first run once made the first estimate 40x too long: the
    estimate is made of run times only, however long the start took."""
    tasks = [_task("sa", s) for s in range(40)]
    left = TimeLeft(tasks, jobs=1)
    left.began -= 300.0  # as if the kernels had compiled for five minutes
    left.finished(_record(tasks[0], 5.0))
    assert left.seconds() == pytest.approx(39 * 5.0)


def test_a_record_of_an_unknown_run_changes_nothing():
    tasks = [_task("sa", 0)]
    left = TimeLeft(tasks, jobs=1)
    left.finished(_record(_task("other", 9), 0.1))
    assert left.seconds() == pytest.approx(5.0)
