"""The certified gap of a residency program: search and bound within one time budget.

`certified_gap(instance, seconds)` runs two lanes side by side, each through `solve()` (each
result validated there), within `seconds` in all:

- the bound lane: the static `milp` (`static_share` of the time, on programs of at most
  `STATIC_MAX_OPS` ops: the static problem's best placement is a residency solution with
  no windows, docs/spec.md section 9, and on programs where the residency searches start
  from the compiler's homes it is the better solution; larger ones leave it out, as
  multistart does (`MILP_MAX_OPS`): there its time is a core taken from the search lane,
  for a placement without windows far behind sa's), then `bound` for the rest: the closed-form bounds, the delivery relaxation by
  blocks (`solvers/residency/machinery/horizon_bound.py`) and the access relaxation
  (`access_bound.py`), LPs that scale to 10^4 ops; then the capped LP and, where it can be
  built, the MILP relaxation, whose incumbents are the static compiler placement, msa's
  solution and its repaired windows;
- the search lane: `sa` (msa's and the static starts, then annealing) for the whole time,
  its anneals capped at `SEARCH_ANNEAL_MOVES` moves a tensor and following each other from
  the best until the time runs out (sa's `anneal_moves`). Uncapped, sa splits the time
  over three anneals, and on some imported programs a longer anneal ends worse: from
  msa's solution on the BERT-base export (210 ops) one anneal of 3 M moves at sa's
  temperatures ended at its start on 5 seeds of 5, where anneals of 1 M moves found
  0.5% better on 3 of 5; so `memplace gap` left the export at its start (2.19%) on a
  quiet machine. Capped at 3,000 moves a tensor: 4699.6 and 4701.6 µs in 20 s (seeds 0,
  1; uncapped, its start, 4725.3), and on zoo/phi-small-prefill@nnpi 3119.1 and 3124.9
  (uncapped 3138.7, msa's), with the other programs measured (bert-base@nnpi, the
  ResNet-50 export, synth-1000, two LLMs) within the seeds' spread (docs/residency-scale.md).

Run one after the other, the lanes would split the budget, and the stage that gives least
for its time would set how: on synth-1000@nnpi the bound proves its best figure (the
delivery relaxation's) in seconds, then spends the rest of any share on LPs that do not
answer at that size, while the search still improves after minutes; on a 56-op program
the MILP relaxation is what proves the bound. Side by side each lane has the whole
budget, so no share has to be guessed. The search's move loop (Numba, `nogil`) and HiGHS
run outside the interpreter lock; where the bound builds its models in Python, the
search waits for the lock between its ~10 ms calls, so the switch interval is made short
while the lanes run (`SWITCH_S`).

The result names the best valid solution, the best proven lower bound and the solver
(and, for `bound`, which of its bounds) behind each; the gap is `best / bound - 1`.
"""
from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from memplace.model.core.errors import MemplaceError

STAGES = (("milp", "static"), ("bound", "residency"), ("sa", "residency"))
BOUND_LANE = ("milp", "bound")  # one after the other, beside the search ("sa")
# Kept after the lanes, in CPU seconds: what follows them whatever the program (gathering
# the runs, printing), and per access, one lane's result validated and simulated by solve()
# (0.16 s at synth-100000's 304,155 accesses); `after_lanes` turns them into wall seconds
AFTER_CPU_S = 0.3
FINISH_CPU_PER_ACCESS = 1e-6
MIN_PACE = 0.05  # a process is never taken to get less of a core than this
MIN_STAGE_S = 0.2  # a stage with less time than this is skipped
SWITCH_S = 0.001  # the interpreter's switch interval while the lanes run (default 0.005)
STATIC_MAX_OPS = 2000  # the static milp only up to this many ops (module docstring)
SEARCH_ANNEAL_MOVES = 3000  # sa's anneals in the search lane, moves a tensor (docstring)


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


def after_lanes(instance, pace: float = 1.0) -> float:
    """Wall seconds kept after the lanes: both lanes' results validated and simulated by
    `solve()`, then the report, in CPU seconds divided by `pace`, the share of a core this
    process gets (a command measures it over its start-up: 0.15-0.3 at a load of 10-14 on
    2 cores, where a second of CPU took 4-7 s and `memplace gap` ended 8-9 s past its
    limit with a fixed second kept)."""
    cpu = AFTER_CPU_S + 2 * FINISH_CPU_PER_ACCESS * float(instance.op_ptr[-1])  # two lanes
    return cpu / min(1.0, max(MIN_PACE, pace))


def certified_gap(instance, seconds: float, seed: int = 0, static_share: float = 0.1,
                  began: float | None = None, pace: float = 1.0) -> CertifiedGap:
    """Search and bound `instance` (residency problem) within `seconds` in all, counted
    from `began` (a `time.perf_counter()` value; default now): a command passes its own
    start, so that loading the program and the kernels comes out of the budget, and the
    share of a core it has had so far (`pace`, see `after_lanes`)."""
    from memplace.model.residency import ResidencySolution, simulate, violations
    from memplace.solvers import solve
    if not seconds > 0 or not 0 <= static_share < 1:
        raise MemplaceError(f"time limit must be > 0 and the static share in [0, 1), got "
                            f"{seconds}, {static_share}")
    began = time.perf_counter() if began is None else began
    end = began + seconds - after_lanes(instance, pace)
    problems = dict(STAGES)

    def run(name: str, limit: float):
        # `bound` proves (its polish, an anneal of its best, is the search lane's work); sa's
        # anneals are capped (module docstring)
        params = {"bound": {"polish": 0.0}, "sa": {"anneal_moves": SEARCH_ANNEAL_MOVES}}
        return name, solve(instance, name, time_limit=limit, seed=seed, problem=problems[name],
                           **params.get(name, {}))

    def bound_lane() -> list:
        done = []
        for name in BOUND_LANE:
            left = end - time.perf_counter()
            limit = left if name == "bound" else min(left, seconds * static_share)
            if limit >= MIN_STAGE_S and not (name == "milp" and instance.n_ops > STATIC_MAX_OPS):
                done.append(run(name, limit))
        return done

    def search_lane() -> list:
        left = end - time.perf_counter()
        return [run("sa", left)] if left >= MIN_STAGE_S else []

    switch = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_S)
    try:
        with ThreadPoolExecutor(2, thread_name_prefix="memplace-gap") as pool:
            bounds_done, search_done = pool.submit(bound_lane), pool.submit(search_lane)
            finished = dict(bounds_done.result() + search_done.result())
    finally:
        sys.setswitchinterval(switch)
    runs: dict[str, Any] = {name: finished[name] for name, _ in STAGES if name in finished}
    latencies: dict[str, float] = {}
    solutions: dict[str, Any] = {}
    for name, result in list(runs.items()):
        if problems[name] == "static":  # a residency solution without windows
            sol = ResidencySolution(instance.name, result.placement,
                                    result.offsets if instance.has_addressed_levels else None)
            if violations(instance, sol):
                continue
            sol.latency = simulate(instance, sol)
        else:
            sol = result.to_solution()
        latencies[name], solutions[name] = sol.latency, sol
    if not latencies:  # out of time before either lane (loading took the budget): the bound's
        # closed-form bounds and the compiler placement it offers first, without msa's
        # allocation (seconds at 10^5 ops), are an answer at once
        runs["bound"] = result = solve(instance, "bound", time_limit=MIN_STAGE_S, seed=seed,
                                       problem="residency", seeds=False)
        latencies["bound"], solutions["bound"] = result.latency, result.to_solution()
    best_name = min(latencies, key=latencies.get)
    bounds = {n: r.lower_bound for n, r in runs.items()
              if r.lower_bound is not None and problems[n] == "residency"}
    if not bounds:  # the bound's run was cut short before it proved any: the closed-form ones
        from memplace.model.residency import lower_bound
        bounds["closed-form bounds"] = lower_bound(instance)
    bound_name = max(bounds, key=bounds.get)
    lb = bounds[bound_name]
    if lb > latencies[best_name] * (1 + 1e-9):
        raise RuntimeError(f"bound {lb} above the valid latency {latencies[best_name]} on {instance.name}")
    by = bound_name
    if bound_name == "bound":
        by = f"bound ({_bound_origin(runs['bound'].notes, lb)})"
    found = best_name
    if best_name == "bound":
        found = f"bound ({_origin(runs['bound'])})"
    elif best_name == "milp":
        found = "milp (the static optimum's placement, no windows)"
    table = {n: {"latency": latencies.get(n, float("nan")),
                 "lower_bound": bounds.get(n), "wall_s": round(r.wall_s, 2)} for n, r in runs.items()}
    return CertifiedGap(instance.name, latencies[best_name], found, lb, by, time.perf_counter() - began,
                        solutions[best_name], table)


def _bound_origin(notes: dict, bound: float) -> str:
    """Which of the bound solver's bounds proved `bound`."""
    close = bound * (1 - 1e-9)
    phases = [v.get("bound", 0.0) for k, v in notes.items() if k.startswith("phase") and isinstance(v, dict)]
    if max(phases, default=0.0) >= close:
        return "MILP relaxation"
    for name, origin in (("horizon", "delivery relaxation by blocks"), ("access", "access relaxation"),
                         ("capped", "capped LP")):
        if notes.get(name, {}).get("bound", 0.0) >= close:
            return origin
    return "closed-form bounds"


def _origin(result) -> str:
    """Which of the bound solver's incumbents is its result."""
    own = result.notes.get("relaxation_incumbent")
    if own is not None and own <= result.latency * (1 + 1e-12):
        return "its relaxation's windows, repaired"
    return "msa or the compiler placement it offers"


TABLE_HEAD = ("| program | ops | best valid (µs) | found by | best bound (µs) | proven by | "
              "certified gap | seconds (limit) |\n|---|---|---|---|---|---|---|---|\n")


def table_row(got: CertifiedGap, n_ops: int, limit: float) -> str:
    """One markdown row of a certified-gap table."""
    return (f"| {got.instance} | {n_ops} | {got.latency * 1e6:.3f} | {got.found_by} | "
            f"{got.bound * 1e6:.3f} | {got.bound_by} | {got.gap:.2%} | {got.seconds:.1f} ({limit:g}) |\n")
