"""`bound`: the residency relaxation (`relaxation.py`) on HiGHS, its windows as an incumbent.

The MILP's optimum, or the dual bound HiGHS has proven when the time limit stops it, is
a lower bound on the residency optimum (the argument is in `relaxation.py`). Two models
are solved in turn: first without the start binaries of prefetch windows (a third of
the time; quick, and often already tight), then with them (exact occupancies: a
stronger bound and windows that keep the capacity); the bound is the larger of the two
and of the model's closed-form bounds (`model/residency/bounds.py`). Before them two LPs
linear in the accesses and live ranges run with `ACCESS_SHARE` of the time: the horizon
bound (`horizon_bound.py`: the delivery relaxation of `delivery_bound.py` by blocks of the
schedule, `HORIZON_SHARE` of it), then the access relaxation (`access_bound.py`: above
`ACCESS_AFTER_HORIZON_OPS` ops only if the horizon bound proved nothing); where
the MILP has more than `MAX_COLUMNS` columns (synth-10000; counted without building it,
`relaxation.model_columns`) it is not built and the two LPs get all the time. Where it
has more than `CAPPED_COLUMNS` (its root LP would not solve by simplex in time), the capped LP (`relaxation.solve_capped`: the MILP's LP by
interior point, its interval columns capped by the best valid latency so far, its bound
recomputed from the duals) runs next with `CAPPED_SHARE` of the time left.

Each integral point names homes, the level serving every access and where copies move;
`windows_of` turns it into windows (runs of accesses served by one window, a prefetch
started where the model starts it, a defining window evicted as the model evicts it),
`repair` drops windows until the solution validates (capacity, and offsets by the
packing library's best-fit on addressed levels, where a home without one moves a level
down), and the simulator gives its latency. The solver also offers the static compiler
placement and `msa`'s solution, so it is never worse than either; it reports `optimal`
only when its best solution is within `gap` of the bound.

HiGHS runs a MILP of more than `FULL_PRESOLVE_NONZEROS` nonzeros with a light presolve
(`presolve`, "auto"). Its full presolve, which no time limit interrupts, paid on the
smaller models and not on the larger ones: on gpt2@edge-npu (89,332 nonzeros) it takes
phase 1 from 19,484 to 3,035 columns in 13 s and the branch and bound then explores 85
nodes in 37 s (none with the light one); on bert-base[seq_len=256]@edge-npu it took 25 s
(probing) to drop 5% of phase 1's columns (310,369 nonzeros; with the light one the root
LP starts after 3 s) and left phase 0 (189,613) at its root when the time limit struck,
where the light one lets it solve to optimality in 14 s. The last `polish` share of
the time (kept from the start) anneals the best solution found at a low temperature
(sa's compiled move loop, `move_loop.anneal`): a point of the relaxation, decoded, is
near a good solution but not at its local optimum (the relaxation moves copies as fluid
shares), and a few seconds of moves from it gain 0.04-0.2%.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from memplace.model import Instance
from memplace.model.packing.heuristics import heuristic_offsets
from memplace.model.residency import ResidencySolution, Window, producer_of, simulate, violations
from memplace.model.residency.bounds import lower_bound
from memplace.solvers import Param, SearchContext, register
from memplace.solvers.residency.machinery import move_loop
from memplace.solvers.residency.machinery.access_bound import access_bound
from memplace.solvers.residency.machinery.horizon_bound import horizon_bound
from memplace.solvers.residency.machinery.relaxation import (BOUND_MARGIN, PRESOLVE_MODES,
                                                             BuildTimeout, Relaxation,
                                                             formulate, model_columns,
                                                             solve_capped, solve_relaxation,
                                                             tensor_accesses)
from memplace.solvers.residency.machinery.starts import finish_seconds, msa_solution, static_homes

ON = 0.5  # a binary is 1 above this
MAX_COLUMNS = 3_000_000  # larger models are not built: the closed-form bounds stand
MOVED = 1e-6  # a share above this has started to move
DECODE_SHARE = 0.1  # of the time left after a build, kept for decoding and repairing
ACCESS_SHARE = 0.3  # of the time left after msa, for the access relaxation when the MILP follows
# The access relaxation is not built beyond this many accesses: synth-10000's 30,409 took
# 1.25 GB and 113 s (loaded machine); ten times that would not fit in 8 GB
ACCESS_MAX_ACCESSES = 100_000
# Above this many columns of the model without start binaries (`model_columns`, the model
# the MILP's first phase and the capped LP build) its root LP does not solve by simplex in
# the time a run has (the XLA programs: 74,000-106,000), so the capped LP (relaxation.py's
# `solve_capped`, by interior point) runs first with CAPPED_SHARE of the time left. Below
# it the MILP with start binaries runs in the time the capped LP would take
# (bert-base[seq_len=256]@edge-npu: 37,962 columns, its best solution in 26 s)
CAPPED_COLUMNS = 40_000
CAPPED_SHARE = 0.6
HORIZON_SHARE = 0.6  # of the time for the LPs, for the horizon bound (it runs first)
# Above this many ops the access relaxation runs only when the horizon bound proved
# nothing: the delivery relaxation dominates it row for row, and at 10^4 ops (synth-10000)
# it took 113 s and 1.25 GB to prove no more than the closed-form bounds, time the search
# of `memplace gap` can use
ACCESS_AFTER_HORIZON_OPS = 2_000
# The polish's anneal: temperatures relative to the latency (sa's start at 3e-3 would
# leave the solution's basin), and below this many seconds left it is not started
POLISH_TEMPERATURES = (1e-4, 1e-7)
POLISH_MIN_S = 0.2
FULL_PRESOLVE_NONZEROS = 100_000  # larger MILPs get HiGHS's light presolve ("auto")


def windows_of(model: Relaxation, values: np.ndarray) -> tuple[np.ndarray, list[Window]]:
    """Homes and windows read from an integral point of the relaxation (offsets unset)."""
    inst = model.instance
    T, L = inst.n_tensors, inst.n_levels
    homes = np.full(T, L - 1, np.int64)
    for t in range(T):
        cols = [(values[c], l) for l, c in enumerate(model.x[t]) if c >= 0]
        homes[t] = max(cols)[1]
    windows: list[Window] = []
    for t in range(T):
        windows += _tensor_windows(model, values, t, int(homes[t]))
    return homes, windows


def _runs(model: Relaxation, values: np.ndarray, t: int, h: int,
          acc: list[tuple[int, int, int]]) -> list[list[int]]:
    """Tensor t's runs of accesses served by one window of a level faster than its home h
    (a new prefetch breaks a run): [level, first access index, last access index]."""
    served = []  # window level of each access, -1 = home
    for (k, _, a) in acc:
        level = -1
        for l in range(h):
            col = model.s.get((a, l))
            if col is not None and values[col] > ON:
                level = l
        served.append(level)
    runs: list[list[int]] = []
    for i, level in enumerate(served):
        if level < 0:
            continue
        fresh = (t, level, h, i) in model.prefetch and \
            values[model.prefetch[t, level, h, i][-1]] > ON
        if runs and runs[-1][0] == level and runs[-1][2] == i - 1 and not fresh:
            runs[-1][2] = i
        else:
            runs.append([level, i, i])
    return runs


def _tensor_windows(model: Relaxation, values: np.ndarray, t: int, h: int) -> list[Window]:
    """Tensor t's windows over home h: a defining window evicted as the model evicts it,
    prefetches started where the model starts them (dropped when no copy fits before)."""
    inst = model.instance
    acc = tensor_accesses(inst, t)
    p = producer_of(inst, t)
    windows: list[Window] = []
    cursor, valid = int(inst.start[t]), (0 if p < 0 else p + 1)
    for level, i0, i1 in _runs(model, values, t, h, acc):
        first, last = acc[i0][0], acc[i1][0]
        if p >= 0 and i0 == 0:  # the defining window
            after = i1 + 1 < len(acc)
            if not after:
                windows.append(Window(t, level, p, p, last))
                cursor, valid = last + 1, int(inst.end[t]) + 1
                continue
            k_next = acc[i1 + 1][0]
            cols = model.evict.get((t, h), [])
            issue = next((p + 1 + m for m, c in enumerate(cols) if values[c] > MOVED), p + 1)
            done = next((p + 1 + m for m, c in enumerate(cols) if values[c] > 1 - MOVED), k_next - 1)
            due = min(k_next, done + 1)
            issue = min(max(issue, p + 1), due - 1)
            if due < p + 2 or issue < p + 1:
                continue  # cannot evict in time: the write goes to the home
            windows.append(Window(t, level, p, p, last, evict=(issue, due)))
            cursor, valid = max(last, due - 1) + 1, due
            continue
        cols = model.starts.get((t, level, i0))  # binary start indicators, if modelled
        moved = ON
        if cols is None:
            cols, moved = model.prefetch.get((t, level, h, i0), []), MOVED
        lo = int(model.lo[t])
        start = next((lo + m for m, c in enumerate(cols) if values[c] > moved), first - 1)
        start = max(start, cursor, valid)
        if start >= first:
            continue  # no room for the copy: served by the home
        windows.append(Window(t, level, start, first, last))
        cursor = last + 1
    return windows


def _offsets(inst: Instance, homes: np.ndarray, windows: list[Window]
             ) -> tuple[np.ndarray | None, list[Window], list[int]]:
    """Best-fit offsets on every addressed level for homes and windows; returns the
    offsets, the windows with theirs, and the indices of windows that got none (-1 for
    a home that got none)."""
    if not inst.has_addressed_levels:
        return None, windows, []
    offsets = np.full(inst.n_tensors, -1, np.int64)
    out = list(windows)
    failed: list[int] = []
    for l in np.flatnonzero(inst.addressed).tolist():
        tensors = np.flatnonzero(homes == l)
        wins = [w for w, win in enumerate(windows) if win.level == l]
        sizes = np.array([inst.size[t] for t in tensors] + [inst.size[windows[w].tensor] for w in wins],
                         np.int64)
        lows = np.array([inst.start[t] for t in tensors] + [windows[w].start for w in wins], np.int64)
        ups = np.array([inst.end[t] + 1 for t in tensors] + [windows[w].hold + 1 for w in wins], np.int64)
        if sizes.size == 0:
            continue
        aligns = np.full(sizes.size, int(inst.alignment[l]), np.int64)
        got = heuristic_offsets(sizes, lows, ups, aligns, np.int64(inst.capacity[l]), 0)
        for m, t in enumerate(tensors.tolist()):
            offsets[t] = got[m]
            if got[m] < 0:
                failed.append(-1)
        for m, w in enumerate(wins):
            o = int(got[tensors.size + m])
            if o < 0:
                failed.append(w)
            else:
                out[w] = Window(out[w].tensor, l, out[w].start, out[w].first, out[w].last,
                                offset=o, evict=out[w].evict)
    return offsets, out, failed


def repair(inst: Instance, homes: np.ndarray, windows: list[Window],
           deadline: float = math.inf) -> ResidencySolution | None:
    """A valid solution from homes and windows: windows named by a violation, or the
    one with the least traffic per byte at an over-full step, are dropped until it
    validates (a home that gets no offset on an addressed level moves one level down);
    None if even the homes alone are not valid, or at `deadline` (`time.perf_counter()`)."""
    windows = list(windows)
    traffic = inst.traffic / inst.size
    while time.perf_counter() < deadline:
        offsets, placed, failed = _offsets(inst, homes, windows)
        if -1 in failed:  # a home without an offset moves one level down, as rectify does
            homes = homes.copy()
            for t in np.flatnonzero((offsets < 0) & inst.addressed[homes]).tolist():
                homes[t] += 1
            windows = [win for win in windows if win.level < homes[win.tensor]]
            continue
        if failed:
            drop = set(failed)
            windows = [win for w, win in enumerate(windows) if w not in drop]
            continue
        sol = ResidencySolution(inst.name, homes, offsets, tuple(placed))
        broken = violations(inst, sol)
        if not broken:
            sol.latency = simulate(inst, sol)
            return sol
        if not windows:
            return None
        named = [v.window for v in broken if v.window >= 0]
        if named:
            drop = set(named)
        else:
            cap = next((v for v in broken if v.rule == "capacity"), None)
            if cap is None:
                return None
            at = [w for w, win in enumerate(windows)
                  if win.level == cap.level and win.start <= cap.op <= win.hold]
            if not at:
                return None
            drop = {min(at, key=lambda w: traffic[windows[w].tensor])}
        windows = [win for w, win in enumerate(windows) if w not in drop]
    return None


PARAMS = {
    "gap": Param(1e-4, float, low=0.0, high=1.0,
                 doc="relative gap at which HiGHS stops, and within which the best incumbent "
                     "counts as optimal"),
    "threads": Param(1, int, low=1, high=64, doc="HiGHS threads"),
    "seeds": Param(True, bool, doc="also offer msa's solution (the static compiler placement "
                                    "is always offered)"),
    "presolve": Param("auto", str, choices=("auto",) + tuple(PRESOLVE_MODES),
                      doc="HiGHS's presolve on the MILPs (full: its default, not interrupted "
                          "by the time limit; auto: light above 100,000 nonzeros)"),
    "polish": Param(0.1, float, low=0.0, high=0.9,
                    doc="share of the time kept for annealing the best solution at a low "
                        "temperature at the end (0: none)"),
}


@dataclass
class BoundResult:
    """The bound (seconds), the best valid solution offered, and whether it is proven."""

    bound: float
    solution: ResidencySolution
    optimal: bool
    incumbent: ResidencySolution | None  # the relaxation's own windows, repaired (None if none)
    notes: dict = field(default_factory=dict)


def bound_and_incumbent(inst: Instance, time_limit: float | None = 60.0, gap: float = 1e-4,
                        threads: int = 1, seed: int = 0, seeds: bool = True,
                        should_stop=None, on_solution=None, on_bound=None,
                        notes: dict | None = None, presolve: str = "auto",
                        polish: float = 0.1) -> BoundResult:
    """Solve the relaxation, decode and repair its windows, and keep the best of them,
    the static compiler placement and (with `seeds`) msa's solution. `on_solution(sol)`
    sees every valid solution as it is found, `on_bound(seconds)` every bound proven;
    `notes` (a new dict if None) is filled as each bound finishes, so a caller that stops
    waiting still knows which bound proved what.

    `time_limit` covers everything: msa's start (at most a fifth of it), building each
    model (abandoned at the deadline), HiGHS (given what is left after the build, less
    `DECODE_SHARE` kept for decoding and repairing its point), the polish (`polish` of
    it, kept from the start; without a time limit none). `presolve`: HiGHS's on the MILPs
    (a key of `relaxation.PRESOLVE_MODES`, or "auto": light on a MILP of more than
    `FULL_PRESOLVE_NONZEROS` nonzeros, else full)."""
    polish_s = 0.0 if time_limit is None else polish * time_limit
    run = _Run(inst, time_limit, gap, threads, seed, should_stop, on_solution, on_bound,
               {} if notes is None else notes, presolve)
    run.deadline -= polish_s  # the bounds' deadline; the polish's is the run's
    # the model's closed-form bounds (model/residency/bounds.py) first, as they are proven
    # at once, whatever the time limit cuts short
    run.prove(lower_bound(inst))
    run.notes["closed_form_bound"] = run.bound
    run.incumbents(seeds)
    columns = model_columns(inst)
    big = columns > MAX_COLUMNS
    run.lp_bounds(big)
    if CAPPED_COLUMNS < columns <= MAX_COLUMNS and run.left() > 1:
        run.capped_bound()
    if big:
        run.notes["model"] = f"not built: {columns} columns > {MAX_COLUMNS}"
    else:
        run.milp_phases()
    run.deadline += polish_s
    if polish_s > 0:
        run.polish()
    return BoundResult(run.bound, run.best, run.proven(), run.incumbent, run.notes)


class _Run:
    """One `bound_and_incumbent`: the best bound and solutions so far, told as they come."""

    def __init__(self, inst: Instance, time_limit: float | None, gap: float, threads: int,
                 seed: int, should_stop, on_solution, on_bound, notes: dict,
                 presolve: str = "auto"):
        self.inst, self.time_limit, self.gap, self.presolve = inst, time_limit, gap, presolve
        self.threads, self.seed, self.should_stop = threads, seed, should_stop
        self.found = on_solution or (lambda sol: None)
        self.proved = on_bound or (lambda seconds: None)
        self.notes = notes
        self.began = time.perf_counter()
        self.deadline = math.inf if time_limit is None else self.began + time_limit
        self.bound = -math.inf
        self.best: ResidencySolution | None = None
        self.incumbent: ResidencySolution | None = None  # the relaxation's windows, repaired

    def left(self) -> float:
        return self.deadline - time.perf_counter()

    def limit(self, seconds: float) -> float | None:
        """A solver's time limit of `seconds` (None without a time limit)."""
        return None if self.time_limit is None else seconds

    def prove(self, bound: float) -> None:
        if bound > self.bound:
            self.bound = bound
            self.proved(bound)

    def offer(self, sol: ResidencySolution) -> None:
        self.found(sol)
        if self.best is None or sol.latency < self.best.latency:
            self.best = sol

    def proven(self) -> bool:
        return self.best.latency <= self.bound * (1 + self.gap) / (1 - BOUND_MARGIN)

    def incumbents(self, seeds: bool) -> None:
        """The static compiler placement, then (with `seeds`) msa's solution in at most a
        fifth of the time."""
        inst = self.inst
        place, offsets = static_homes(inst, "compiler")
        compiler = ResidencySolution(inst.name, place, offsets)
        compiler.latency = simulate(inst, compiler)
        self.offer(compiler)
        if seeds:
            self.offer(msa_solution(inst, deadline=self.began + (self.deadline - self.began) / 5)[0])

    def lp_bounds(self, big: bool) -> None:
        """The horizon bound (horizon_bound.py: the delivery relaxation, which follows where
        prefetched bytes wait, by blocks of the schedule), then the access relaxation
        (access_bound.py): LPs that scale; all the time when the MILP is too large to build,
        else `ACCESS_SHARE` of it."""
        inst, notes = self.inst, self.notes
        lps_end = time.perf_counter() + (self.left() if big else self.left() * ACCESS_SHARE)
        for name, run, share in (("horizon", horizon_bound, HORIZON_SHARE), ("access", access_bound, 1.0)):
            left = lps_end - time.perf_counter()
            if int(inst.op_ptr[-1]) > ACCESS_MAX_ACCESSES:
                notes[name] = {"model": f"not built: {int(inst.op_ptr[-1])} accesses > {ACCESS_MAX_ACCESSES}"}
            elif name == "access" and inst.n_ops > ACCESS_AFTER_HORIZON_OPS and \
                    math.isfinite(notes.get("horizon", {}).get("bound", -math.inf)):
                notes[name] = {"model": f"not built: the horizon bound stands above {ACCESS_AFTER_HORIZON_OPS} ops"}
            elif left > 0.05:
                got = run(inst, self.best.latency, self.limit(left * share), self.threads, self.seed)
                notes[name] = {"bound": got.bound, "status": got.status,
                               "seconds": round(got.seconds, 3), "model": got.stats}
                self.prove(got.bound)

    def capped_bound(self) -> None:
        """The capped LP by interior point, where the MILP's root would not solve in time;
        its ceiling is the best valid latency so far."""
        got = solve_capped(self.inst, self.best.latency, self.limit(self.left() * CAPPED_SHARE),
                           self.threads, self.seed)
        self.notes["capped"] = {"bound": got.bound, "status": got.status,
                                "seconds": round(got.seconds, 3)}
        self.prove(got.bound)

    def milp_phases(self) -> None:
        """Two models: without start binaries (fast), then with them (exact occupancies, a
        stronger bound and windows that keep the capacity); the bound is the larger one."""
        for phase, (starts, share) in enumerate(((False, 1 / 3), (True, 1.0))):
            if self.left() <= 0.05 or not self._milp_phase(phase, starts, share):
                break
            if self.proven() or (self.should_stop is not None and self.should_stop()):
                break

    def _milp_phase(self, phase: int, starts: bool, share: float) -> bool:
        """One model solved and its point decoded and repaired; False when it could not run."""
        inst = self.inst
        try:
            model = formulate(inst, binary_starts=starts, deadline=self.deadline)
        except BuildTimeout as late:
            self.notes[f"phase{phase}"] = {"model": f"not built in time ({late})"}
            return False
        limit = self.limit(self.left() * share * (1 - DECODE_SHARE))
        if limit is not None and limit <= 0.05:
            self.notes[f"phase{phase}"] = {"model": model.stats, "highs_status": "no time left"}
            return False
        presolve = self.presolve
        if presolve == "auto":
            presolve = "full" if model.stats["nonzeros"] <= FULL_PRESOLVE_NONZEROS else "light"
        out = solve_relaxation(model, limit, gap=self.gap, threads=self.threads, seed=self.seed,
                               should_stop=self.should_stop, presolve=presolve)
        self.proved(max(self.bound, out.bound))
        self.bound = max(self.bound, out.bound)
        self.notes[f"phase{phase}"] = {"model": model.stats, "presolve": presolve,
                                       "highs_status": out.status,
                                       "nodes": out.nodes, "highs_s": round(out.seconds, 3),
                                       "bound": out.bound}
        if out.values is not None:
            homes, windows = windows_of(model, out.values)
            sol = repair(inst, homes, windows, self.deadline)
            if sol is not None:
                self.found(sol)
                if self.incumbent is None or sol.latency < self.incumbent.latency:
                    self.incumbent = sol
                    self.notes["incumbent_windows"] = len(sol.windows)
        if self.incumbent is not None and self.incumbent.latency < self.best.latency:
            self.best = self.incumbent
        return True

    def polish(self) -> None:
        """Anneal the best solution at `POLISH_TEMPERATURES` until the deadline or until
        its best is proven optimal (sa's compiled move loop: every solution it returns is
        valid); offered if better. Not when the best is proven optimal already or less
        than `POLISH_MIN_S` is left."""
        left = self.left()
        if left < POLISH_MIN_S or self.proven() or (self.should_stop is not None and self.should_stop()):
            return
        began, start = time.perf_counter(), self.best
        best = [start.latency]

        def on_best(sol: ResidencySolution, latency: float) -> None:
            best[0] = min(best[0], latency)

        def done() -> bool:  # proven optimal, or told to stop
            return best[0] <= self.bound * (1 + self.gap) / (1 - BOUND_MARGIN) or \
                (self.should_stop is not None and self.should_stop())
        found, moves = move_loop.anneal(self.inst, start, np.random.default_rng(self.seed), 0,
                                        *POLISH_TEMPERATURES, should_stop=done, on_best=on_best,
                                        seconds=left)
        found.latency = simulate(self.inst, found)
        self.notes["polish"] = {"from": start.latency, "to": min(found.latency, start.latency),
                                "moves": moves, "seconds": round(time.perf_counter() - began, 3)}
        if found.latency < start.latency:
            self.offer(found)


@register("bound", "MILP relaxation of the simulator on HiGHS: a proven lower bound (homes, "
          "serving levels, copy bytes on idle channel time, capacity); its windows, "
          "repaired and simulated, are an incumbent", params=PARAMS, deterministic=True,
          problem="residency")
def solve_bound(ctx: SearchContext, gap: float, threads: int, seeds: bool, presolve: str,
                polish: float) -> None:
    def offer(sol: ResidencySolution) -> None:
        ctx.count(1)
        ctx.offer(sol, sol.latency)

    def proved(value: float) -> None:
        ctx.lower_bound = value

    limit = None if ctx.time_limit is None else max(0.05, ctx.remaining() - finish_seconds(ctx.instance))
    res = bound_and_incumbent(ctx.instance, limit, gap, threads, ctx.seed, seeds, ctx.should_stop,
                              offer, proved, ctx.notes, presolve, polish)
    if res.incumbent is not None:  # the relaxation's own windows, repaired and simulated
        ctx.notes["relaxation_incumbent"] = res.incumbent.latency
    ctx.lower_bound = res.bound
    ctx.proven_optimal = res.optimal and ctx.best_latency <= res.solution.latency
