"""One run of a benchmark: what it is (`Task`) and what makes two runs the same run (`run_key`).

A task is this one dataclass everywhere: the plan makes it, the runner hands it to a
worker (pickled to a forked or Dask worker; as JSON on a subprocess's stdin, `to_dict`
and `from_dict`), and the worker's record carries its fields.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

DEFAULT_KILL_MARGIN_S = 10.0


def run_key(instance: str, sha256: str, solver: str, params: dict[str, Any], seed: int,
            time_limit: float) -> tuple:
    """A run's identity: resume skips a task whose key is already recorded."""
    return (instance, sha256, solver, json.dumps(params, sort_keys=True), int(seed),
            float(time_limit))


@dataclass(frozen=True)
class Task:
    """One run: a solver with its parameters on one instance with one seed."""

    instance: str  # the instance's name
    source: str  # what loads it: a built-in name or an absolute file path
    sha256: str  # the problem's fingerprint of the instance
    solver: str
    params: dict[str, Any]  # every parameter, defaults filled in
    seed: int
    time_limit: float
    kill_margin: float = DEFAULT_KILL_MARGIN_S
    memory_limit_mb: int | None = None
    solver_modules: tuple[str, ...] = ()
    problem: str = "static"

    @property
    def key(self) -> tuple:
        return run_key(self.instance, self.sha256, self.solver, self.params, self.seed,
                       self.time_limit)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"solver_modules": list(self.solver_modules)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Task":
        return cls(**{**data, "solver_modules": tuple(data.get("solver_modules", ()))})
