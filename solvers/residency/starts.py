"""Starting solutions of the residency searches: msa's, and a static optimum with windows.

An independent check found that windows added to a static optimum gain under 0.5%, and
`msa` (XLA's homes, or the compiler's) can be slower than the static optimum; a search
that starts from msa alone then spends its time re-finding the static homes. So the
searches also start from the static problem's best placement (the static `sa` with a
move budget, which makes the run depend only on its seed) with msa's allocator adding
windows over those homes. Other solvers run through `solve()` only.
"""
from __future__ import annotations

import math
import time

import numpy as np

from memplace.model.instance import Instance
from memplace.model.residency import ResidencySolution, simulate
from memplace.solvers import solve
from memplace.solvers.residency.allocation import assign_windows


def finish_seconds(instance: Instance) -> float:
    """Seconds a residency solver keeps before its deadline for the work after its search
    (a last full simulation, the offer): grows with the accesses simulated."""
    return 0.1 + 2e-6 * float(instance.op_ptr[-1])


def _limit(seconds: float | None) -> float | None:
    """A solve() time limit from seconds left (None: no limit); never below 10 ms."""
    return None if seconds is None or not math.isfinite(seconds) else max(0.01, seconds)


def msa_start(instance: Instance, homes: str = "best", seconds: float | None = None) -> ResidencySolution:
    """msa's solution, run through solve() (so it is validated) within `seconds` (None:
    no limit), its latency set."""
    return solve(instance, "msa", time_limit=_limit(seconds), problem="residency",
                 homes=homes).to_solution()


def static_homes(instance: Instance, solver: str, seconds: float | None = None,
                 **params) -> tuple[np.ndarray, np.ndarray | None]:
    """A static solver's placement (run through solve() within `seconds`, None: no limit;
    `params` its seed and parameters) and its offsets (None without addressed levels)."""
    result = solve(instance, solver, time_limit=_limit(seconds), problem="static", **params)
    offsets = result.offsets if instance.has_addressed_levels else None
    return np.array(result.placement, np.int64), offsets


def static_start(instance: Instance, moves: int, seed: int,
                 seconds: float | None = None) -> ResidencySolution:
    """The static `sa`'s placement with msa's windows over it, or without windows when
    those do not help; its latency set. Within `seconds` (None: no limit): the static sa
    has half of them, msa's allocator the rest."""
    began = time.perf_counter()
    place, offsets = static_homes(instance, "sa", None if seconds is None else seconds / 2,
                                  seed=seed, moves=moves)
    bare = ResidencySolution(instance.name, place, offsets)
    bare.latency = simulate(instance, bare)
    deadline = math.inf if seconds is None else began + seconds
    sol, _ = assign_windows(instance, place, offsets, deadline=deadline)
    sol.latency = simulate(instance, sol)
    return sol if sol.latency < bare.latency else bare
