"""How long a running batch has left, from the runs that finished.

A solver's remaining runs are expected to take what its finished runs took (their
`wall_s`); a solver with none finished yet is taken at its time limit, the plan's
bound on it. The clock starts when the kernels are loaded, after their one-off
compilation: spread over the first runs, that compilation once made the first
estimate forty times too long.
"""
from __future__ import annotations

import time
from collections import defaultdict
from typing import Any, Iterable

from memplace.bench.store import record_key
from memplace.bench.task import Task


class TimeLeft:
    """The seconds left of a batch of `tasks` run `jobs` at a time."""

    def __init__(self, tasks: Iterable[Task], jobs: int):
        self.todo = {task.key: task for task in tasks}
        self.jobs = max(1, jobs)
        self.took: dict[str, list[float]] = defaultdict(list)
        self.began = time.perf_counter()

    def start(self) -> None:
        """The runs begin now: the kernels are loaded."""
        self.began = time.perf_counter()

    def elapsed(self) -> float:
        """Seconds since the runs began."""
        return time.perf_counter() - self.began

    def finished(self, record: dict[str, Any]) -> None:
        """A run came in."""
        task = self.todo.pop(record_key(record), None)
        if task is not None and record.get("wall_s") is not None:
            self.took[task.solver].append(float(record["wall_s"]))

    def per_run(self, task: Task) -> float:
        """The seconds one run of `task` is expected to take."""
        took = self.took.get(task.solver)
        return sum(took) / len(took) if took else task.time_limit

    def seconds(self) -> float:
        """The seconds until the last run is expected to finish."""
        return sum(self.per_run(task) for task in self.todo.values()) / self.jobs
