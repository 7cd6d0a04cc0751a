"""Starting solutions of the residency searches: msa's, and a static optimum with windows.

An independent check found that windows added to a static optimum gain under 0.5%, and
`msa` (XLA's homes, or the compiler's) can be slower than the static optimum; a search
that starts from msa alone then spends its time re-finding the static homes. So the
searches also start from the static problem's best placement (the static `sa` with a
move budget, which makes the run depend only on its seed) with msa's allocator adding
windows over those homes. msa is computed here (`msa_solution`: the `msa` solver, the
searches, the bound, the planners and the environment start from it); static solvers, of
the other problem, run through `solve()`.
"""
from __future__ import annotations

import math
import time

import numpy as np

from memplace.model.instance import Instance
from memplace.model.residency import ResidencySolution, simulate
from memplace.model.residency.simulation import details
from memplace.solvers import solve
from memplace.solvers.residency.machinery.allocation import MsaStats, assign_windows

HOMES = ("slowest", "compiler", "best")  # msa's homes: XLA's default memory, compiler's, both


def finish_seconds(instance: Instance) -> float:
    """Seconds a residency solver keeps before its deadline for the work after its search
    (a last full simulation, the offer): grows with the accesses simulated."""
    return 0.1 + 2e-6 * float(instance.op_ptr[-1])


def _limit(seconds: float | None) -> float | None:
    """A solve() time limit from seconds left (None: no limit); never below 10 ms."""
    return None if seconds is None or not math.isfinite(seconds) else max(0.01, seconds)


def msa_solution(instance: Instance, min_overlap: float = 0.8, preferred_overlap: float = 1.5,
                 max_overlap: float = 10.0, max_repacks: int = 16, homes: str = "best",
                 deadline: float = math.inf) -> tuple[ResidencySolution, MsaStats]:
    """XLA's memory-space assignment, or the static compiler placement when that is faster.

    The latency is section 11's (simulated); `stats` says what was done and whether the
    fall-back was taken. At `deadline` (a `time.perf_counter()` value) the allocation stops
    where it is (`stats.truncated`); with two homes, each gets half the time left, and the
    second is not tried once the deadline has passed (its set-up alone takes seconds at
    10^5 ops)."""
    began = time.perf_counter()
    ratios = dict(min_overlap=min_overlap, preferred_overlap=preferred_overlap,
                  max_overlap=max_overlap, max_repacks=max_repacks)
    compiler = static_homes(instance, "compiler")
    starts = []  # the compiler's homes first: the better use of a deadline that cuts short
    if homes in ("compiler", "best"):
        starts.append(("compiler", compiler))
    if homes in ("slowest", "best"):
        starts.append(("slowest", static_homes(instance, "all-slowest")))
    best: tuple[ResidencySolution, MsaStats] | None = None
    for j, (name, (place, offsets)) in enumerate(starts):
        if best is not None and time.perf_counter() >= deadline:
            break
        share = (deadline - time.perf_counter()) / (len(starts) - j)
        sol, stats = assign_windows(instance, place, offsets, **ratios,
                                    deadline=time.perf_counter() + share)
        sol.latency = simulate(instance, sol)
        stats.homes = name
        if best is None or sol.latency < best[0].latency:
            best = (sol, stats)
    sol, stats = best
    static = ResidencySolution(instance.name, compiler[0], compiler[1])
    static.latency = simulate(instance, static)
    if static.latency < sol.latency:
        sol, stats = static, MsaStats(homes="compiler", fallback=True)
    stats.waits = details(instance, sol).waits
    stats.seconds = time.perf_counter() - began
    return sol, stats


def static_homes(instance: Instance, solver: str, seconds: float | None = None,
                 **params) -> tuple[np.ndarray, np.ndarray | None]:
    """A static solver's placement (run through solve() within `seconds`, None: no limit;
    `params` its seed and parameters) and its offsets (None without addressed levels)."""
    result = solve(instance, solver, time_limit=_limit(seconds), problem="static", **params)
    offsets = result.offsets if instance.has_addressed_levels else None
    return np.array(result.placement, np.int64), offsets


def static_start(instance: Instance, moves: int, seed: int,
                 deadline: float = math.inf) -> ResidencySolution:
    """The static `sa`'s placement with msa's windows over it, or without windows when
    those do not help; its latency set. By `deadline` (a `time.perf_counter()` value): the
    static sa has half the time left, msa's allocator the rest."""
    half = (deadline - time.perf_counter()) / 2
    place, offsets = static_homes(instance, "sa", half if math.isfinite(half) else None,
                                  seed=seed, moves=moves)
    bare = ResidencySolution(instance.name, place, offsets)
    bare.latency = simulate(instance, bare)
    sol, _ = assign_windows(instance, place, offsets, deadline=deadline)
    sol.latency = simulate(instance, sol)
    return sol if sol.latency < bare.latency else bare


def milp_start(instance: Instance, deadline: float = math.inf) -> ResidencySolution:
    """The static MILP's placement (its optimum when HiGHS finishes by `deadline`, a
    `time.perf_counter()` value, else its incumbent) with msa's windows over it, or without
    windows when those do not help; its latency set. The static `milp` has two thirds of
    the time left, msa's allocator the rest.

    The static optimum is a residency solution (docs/spec.md section 9) that the searches'
    re-homing moves, one tensor at a time from the compiler's homes, need not reach."""
    share = 2 * (deadline - time.perf_counter()) / 3
    place, offsets = static_homes(instance, "milp", share if math.isfinite(share) else None)
    bare = ResidencySolution(instance.name, place, offsets)
    bare.latency = simulate(instance, bare)
    sol, _ = assign_windows(instance, place, offsets, deadline=deadline)
    sol.latency = simulate(instance, sol)
    return sol if sol.latency < bare.latency else bare
