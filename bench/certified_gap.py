"""The certified gap of a residency program: search and bound within one time budget.

`certified_gap(instance, seconds)` runs `sa` (the search: msa's and the static starts,
then anneals) and `bound` (the MILP relaxation on HiGHS, whose own incumbents are the
static compiler placement, msa's solution and its repaired windows) one after the other
through `solve()`, each validated there, within `seconds` in all (the bound first, with
`bound_share` of them, since its model build is what large programs cannot afford; the
search gets every second left). The result names the best valid solution, the best
proven lower bound (the larger of the relaxation's and the closed-form bounds in
`memplace.model.residency.bounds`) and the solver behind each; the gap is
`best / bound - 1`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from memplace.model.core.errors import MemplaceError


@dataclass
class CertifiedGap:
    instance: str
    latency: float  # best valid latency (seconds)
    found_by: str
    bound: float  # best proven lower bound (seconds)
    bound_by: str
    seconds: float
    solution: Any  # the best valid solution (memplace-solution/2)
    runs: dict  # per solver: latency, lower bound, wall seconds

    @property
    def gap(self) -> float:
        return self.latency / self.bound - 1.0 if self.bound > 0 else float("inf")


def certified_gap(instance, seconds: float, seed: int = 0, bound_share: float = 0.5) -> CertifiedGap:
    """Search and bound `instance` (residency problem) within `seconds` in all."""
    from memplace.solvers import solve
    if not seconds > 0 or not 0 < bound_share < 1:
        raise MemplaceError(f"time limit must be > 0 and bound share in (0, 1), got {seconds}, {bound_share}")
    began = time.perf_counter()
    runs: dict[str, Any] = {}
    bound = solve(instance, "bound", time_limit=seconds * bound_share, seed=seed, problem="residency")
    runs["bound"] = bound
    left = seconds - (time.perf_counter() - began)
    if left > 0.5:
        runs["sa"] = solve(instance, "sa", time_limit=left, seed=seed, problem="residency")
    best_name = min(runs, key=lambda n: runs[n].latency)
    best = runs[best_name]
    bounds = {n: r.lower_bound for n, r in runs.items() if r.lower_bound is not None}
    bound_name = max(bounds, key=bounds.get)
    lb = bounds[bound_name]
    if lb > best.latency * (1 + 1e-9):
        raise RuntimeError(f"bound {lb} above the valid latency {best.latency} on {instance.name}")
    # which part of the bound solver proved it: the relaxation or the closed-form bounds
    phases = [v for k, v in bound.notes.items() if k.startswith("phase") and isinstance(v, dict)]
    relaxed = max((p.get("bound", 0.0) for p in phases), default=0.0)
    by = bound_name
    if bound_name == "bound":
        by = "bound (MILP relaxation)" if relaxed >= lb * (1 - 1e-9) else "bound (closed-form bounds)"
    found = best_name if best_name != "bound" else "bound (" + _origin(bound) + ")"
    table = {n: {"latency": r.latency, "lower_bound": r.lower_bound, "wall_s": round(r.wall_s, 2)}
             for n, r in runs.items()}
    return CertifiedGap(instance.name, best.latency, found, lb, by, time.perf_counter() - began,
                        best.to_solution(), table)


def _origin(result) -> str:
    """Which of the bound solver's incumbents is its result."""
    own = result.notes.get("relaxation_incumbent")
    if own is not None and own <= result.latency * (1 + 1e-12):
        return "its relaxation's windows, repaired"
    return "msa or the compiler placement it offers"
