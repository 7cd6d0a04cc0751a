"""What a runs file says: runs grouped by instance and solver, compared with the best
known latency, the best proven bound and the two reference placements.

Definitions every table and plot shares (per instance):

- best known = the lowest latency of any run; best bound = the highest proven
  lower bound of any run (None if no run proved one);
- the references are the problem's baselines (`Problem.baselines`: for static
  placement `slowest` = the all-slowest placement, `compiler` = the `compiler`
  heuristic): the best latency of that solver's runs in the file, or, if the file
  has none, of the solver run here;
- speedup of a solver = reference latency / the solver's best latency;
- gap to bound = best latency / best bound - 1; gap to best = latency / best known - 1;
- time (evaluations) to within eps of the best known, for one run: the first trace
  point with latency <= best known x (1 + eps); never reached (or no result) is
  infinite. Per solver the median over its runs is reported (infinite: not reached
  by half of them).

Only the last record of each run key counts (a retried failure is replaced).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from memplace.bench.store import is_ok, latest_by_key

TARGETS = (1e-2, 1e-3)  # within 1% and 0.1% of the best known
GAP_SHIFT = 1e-4  # shifted geometric mean of gaps: shift 0.01%
TIME_SHIFT = 1.0  # ... of times: shift 1 s


def shifted_geomean(values: list[float], shift: float) -> float:
    """exp(mean(log(v + shift))) - shift; nan for no values."""
    if not values:
        return math.nan
    return float(np.exp(np.mean(np.log(np.asarray(values, np.float64) + shift))) - shift)


def reach(record: dict[str, Any], target: float) -> tuple[float, float]:
    """(seconds, evaluations) at which a run's trace first gets to <= target; inf if never."""
    if is_ok(record):
        for seconds, evaluations, latency in record["trace"]:
            if latency <= target:
                return float(seconds), float(evaluations)
    return math.inf, math.inf


def relative_gap(latency: float, known: float) -> float:
    """latency / known - 1, at least 0; infinite above a best known latency of 0 (an
    instance with no compute and no traffic)."""
    if latency <= known:
        return 0.0
    return latency / known - 1.0 if known > 0 else math.inf


def median_or_none(values: list[float]) -> float | None:
    if not values:
        return None
    value = float(np.median(np.asarray(values, np.float64)))
    return None if math.isinf(value) or math.isnan(value) else value


@dataclass
class Cell:
    """One solver on one instance, over its seeds."""

    instance: str
    solver: str
    runs: int
    failed: int
    best: float | None
    mean: float | None
    speedup_compiler: float | None
    speedup_slowest: float | None
    gap_bound: float | None
    time_to: dict[float, float | None]  # eps -> median seconds
    evals_to: dict[float, float | None]  # eps -> median evaluations


@dataclass
class SolverSummary:
    solver: str
    runs: int
    failed: int
    wins: int  # instances where its best equals the best known (rel 1e-9)
    instances: int
    sgm_gap: float  # shifted geomean of gap to best over runs with a result
    sgm_time: float  # shifted geomean of time to within 1%, unreached = time limit


class Results:
    """The latest record of every run in a runs file, and comparisons over them."""

    def __init__(self, records: list[dict[str, Any]]):
        self.records = list(latest_by_key(records).values())
        # sorted, so tables and plots do not depend on the order runs finished in
        self.instances = sorted({r["instance"] for r in self.records})
        self.solvers = sorted({r["solver"] for r in self.records})
        self._instance_cache: dict[str, Any] = {}
        self._baseline: dict[tuple[str, str], float | None] = {}
        from memplace.model.core.problem import problem
        from memplace.model.core.search import DEFAULT_PROBLEM
        self.problem = problem(DEFAULT_PROBLEM)

    # ------------------------------------------------------------------ selections
    def runs(self, instance: str | None = None, solver: str | None = None) -> list[dict[str, Any]]:
        return [r for r in self.records if (instance is None or r["instance"] == instance)
                and (solver is None or r["solver"] == solver)]

    def ok_runs(self, instance: str | None = None, solver: str | None = None) -> list[dict[str, Any]]:
        return [r for r in self.runs(instance, solver) if is_ok(r)]

    def best_known(self, instance: str) -> float | None:
        lats = [r["latency"] for r in self.ok_runs(instance)]
        return min(lats) if lats else None

    def best_record(self, instance: str) -> dict[str, Any] | None:
        runs = self.ok_runs(instance)
        return min(runs, key=lambda r: (r["latency"], r["solver"], r["seed"])) if runs else None

    def best_bound(self, instance: str) -> float | None:
        bounds = [r["lower_bound"] for r in self.ok_runs(instance) if r["lower_bound"] is not None]
        return max(bounds) if bounds else None

    # ------------------------------------------------------------------ references
    def instance(self, name: str):
        """The Instance of a name as recorded (None if it cannot be loaded any more)."""
        if name not in self._instance_cache:
            from memplace.instances import load
            from memplace.model.core.errors import MemplaceError
            source = self.runs(name)[0]["instance_source"]
            try:
                self._instance_cache[name] = load(source)
            except MemplaceError:
                self._instance_cache[name] = None
        return self._instance_cache[name]

    def baseline(self, instance: str, role: str) -> float | None:
        """The latency of the problem's baseline solver for `role` on an instance: its
        best run in the file, else solved here (None if the instance is gone)."""
        key = (instance, role)
        if key not in self._baseline:
            solver = self.problem.baselines[role]
            lats = [r["latency"] for r in self.ok_runs(instance, solver)]
            if lats:
                self._baseline[key] = min(lats)
            elif self.instance(instance) is None:
                self._baseline[key] = None
            else:
                from memplace.solvers import solve
                self._baseline[key] = solve(self.instance(instance), solver, time_limit=None,
                                            problem=self.problem).latency
        return self._baseline[key]

    def slowest(self, instance: str) -> float | None:
        return self.baseline(instance, "slowest")

    def compiler(self, instance: str) -> float | None:
        return self.baseline(instance, "compiler")

    # ------------------------------------------------------------------ comparisons
    def cell(self, instance: str, solver: str) -> Cell:
        runs = self.runs(instance, solver)
        ok = [r for r in runs if is_ok(r)]
        lats = [r["latency"] for r in ok]
        best = min(lats) if lats else None
        known = self.best_known(instance)
        bound = self.best_bound(instance)
        compiler, slowest = self.compiler(instance), self.slowest(instance)
        time_to, evals_to = {}, {}
        for eps in TARGETS:
            reached = [reach(r, known * (1 + eps)) for r in runs] if known is not None else []
            time_to[eps] = median_or_none([s for s, _ in reached])
            evals_to[eps] = median_or_none([e for _, e in reached])
        return Cell(
            instance, solver, len(runs), len(runs) - len(ok), best,
            float(np.mean(lats)) if lats else None,
            compiler / best if best and compiler else None,
            slowest / best if best and slowest else None,
            max(0.0, best / bound - 1.0) if best and bound else None,
            time_to, evals_to)

    def cells(self) -> list[Cell]:
        return [self.cell(i, s) for i in self.instances for s in self.solvers if self.runs(i, s)]

    def summary(self, solver: str) -> SolverSummary:
        runs = self.runs(solver=solver)
        gaps, times, wins = [], [], 0
        instances = list(dict.fromkeys(r["instance"] for r in runs))
        for instance in instances:
            known = self.best_known(instance)
            mine = [r for r in runs if r["instance"] == instance]
            ok = [r for r in mine if is_ok(r)]
            if ok and known is not None:
                wins += math.isclose(min(r["latency"] for r in ok), known, rel_tol=1e-9)
            for r in ok:
                gaps.append(relative_gap(r["latency"], known))
            for r in mine:
                seconds = reach(r, known * (1 + TARGETS[0]))[0] if known is not None else math.inf
                times.append(min(seconds, r["time_limit"]))
        failed = sum(not is_ok(r) for r in runs)
        return SolverSummary(solver, len(runs), failed, wins, len(instances),
                             shifted_geomean(gaps, GAP_SHIFT), shifted_geomean(times, TIME_SHIFT))

    def summaries(self) -> list[SolverSummary]:
        return [self.summary(s) for s in self.solvers]
