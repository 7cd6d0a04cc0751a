"""`msa`: XLA's memory-space assignment as the residency problem's default (spec section 12).

XLA (openxla/xla, `xla/service/memory_space_assignment`) homes every value in the
default memory and gives values *allocations* in the alternate (fast) memory, buffer
by buffer, in decreasing *memory boundedness*: the latency the buffer's uses save when
fast, divided by the square root of its size. For each use of a buffer, in time order
(`AllocateSegment`), it

1. keeps the value in fast memory without a copy when it is there already (or is being
   defined there) and the interval since that allocation began is short enough (the
   picker's no-copy bound) and the space is free;
2. else evicts it to the default memory (only needed for a value defined in fast memory:
   the default copy is stale until then), due where the picker prefers;
3. else prefetches it for the use, trying the starts the cost-analysis prefetch interval
   picker proposes (`interval_picker.py`) until one has free space.

Chunks are placed best-fit, with a best-fit repack of the level when a chunk does not
fit although the load leaves room (`fast_memory.py`).

In the residency problem's terms: the default memory is the slowest level (every home),
an allocation in fast memory is a `Window` (defining = written by the producer into
fast memory; prefetch = copied from the home), and a defining window that covers the
whole live range without an eviction is a *fast home* (XLA's whole-life no-copy
allocation), so it is written as a home in that level. Choices where XLA has no
counterpart:

- More than two levels: each segment tries the fastest level first, then the next
  ones down to the level just above the home (a no-copy extension stays in its level);
  the picker's `max` bound uses the capacity of the level tried.
- XLA's cost analysis guides every choice; the residency simulator (section 11) then
  checks each window as it is made (incremental re-simulation) and a window that does
  not lower the latency is dropped (its use is served by the home). This stands in for
  the parts of XLA's cost model that a heuristic cannot see here (channel contention).
- The result is compared with the static `compiler` placement (no windows) and the
  faster one is returned (ties: msa's own), so msa is never slower than `compiler`.
- `homes="compiler"` runs the same allocation on top of the compiler's homes instead of
  the default memory, `homes="best"` runs both; the default is XLA's (`"slowest"`).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memplace.model.instance import Instance
from memplace.model.residency import (ResidencySolution, Window, lower_bound, producer_of,
                                      simulate)
from memplace.model.residency.simulation import Simulation, details
from memplace.solvers import Param, SearchContext, register, solve
from memplace.solvers.residency.fast_memory import FastMemory
from memplace.solvers.residency.interval_picker import IntervalPicker

HOMES = ("slowest", "compiler", "best")
PARAMS = {
    "min_overlap": Param(0.8, float, 0.0, "preferred_overlap",
                         doc="a prefetch overlaps at least this many copy times"),
    "preferred_overlap": Param(1.5, float, "min_overlap", "max_overlap",
                               doc="prefetches and evictions aim at this many copy times"),
    "max_overlap": Param(10.0, float, "preferred_overlap",
                         doc="no-copy stays and prefetch overlaps last at most this many "
                             "copy times of the whole fast level"),
    "max_repacks": Param(16, int, 0, doc="best-fit repacks of an addressed level allowed"),
    "homes": Param("slowest", str, choices=HOMES,
                   doc="homes windows are added to: XLA's default memory, compiler's, or both"),
}


@dataclass
class MsaStats:
    """What one run of memory-space assignment did."""

    homes: str = "slowest"
    windows: int = 0
    prefetches: int = 0
    evictions: int = 0
    defining: int = 0
    fast_homes: int = 0  # whole-life no-copy allocations written as homes
    rejected: int = 0  # windows the simulator dropped
    repacks: int = 0
    waits: int = 0  # ops that waited for a copy
    fallback: bool = False  # the static compiler placement was faster
    seconds: float = 0.0

    def as_notes(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class _Open:
    """A window being built: its level, ops and reservation key."""

    key: tuple[int, int]
    level: int
    start: int
    first: int
    last: int
    defining: bool
    evict: tuple[int, int] | None = None


def op_elapsed(instance: Instance, placement: np.ndarray) -> np.ndarray:
    """Section 4's time of every op with each tensor served by its level in `placement`."""
    i = instance
    seconds = i.op_bytes / i.bandwidth[placement[i.op_tensor]]
    memory = np.bincount(i.access_op, weights=seconds, minlength=i.n_ops)
    return np.maximum(i.compute, memory)


@dataclass
class _Costs:
    """XLA's cost analysis: op times with the homes, and what an access saves when fast."""

    instance: Instance
    homes: np.ndarray
    elapsed: np.ndarray = field(init=False)
    memory: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        i = self.instance
        seconds = i.op_bytes / i.bandwidth[self.homes[i.op_tensor]]
        self.memory = np.bincount(i.access_op, weights=seconds, minlength=i.n_ops)
        self.elapsed = np.maximum(i.compute, self.memory)

    def saving(self, t: int, k: int, b: int, level: int) -> float:
        """Seconds op k saves when its access of b bytes to t is served by `level`."""
        i = self.instance
        bw = i.bandwidth
        memory = self.memory[k] - b / bw[self.homes[t]] + b / bw[level]
        return float(self.elapsed[k] - max(i.compute[k], memory))


def boundedness_order(instance: Instance, costs: _Costs) -> list[int]:
    """Tensors by decreasing memory boundedness (latency saved by all accesses in the
    fastest level, over the square root of the size); ties by index; tensors that save
    nothing or are homed in the fastest level are left out."""
    scores = []
    for t, tensor in enumerate(instance.tensors):
        if costs.homes[t] == 0:
            continue
        saved = sum(costs.saving(t, k, b, 0) for k, b in tensor["accesses"])
        if saved > 0:
            scores.append((-saved / math.sqrt(instance.size[t]), t))
    return [t for _, t in sorted(scores)]


class _Assignment:
    """One run of memory-space assignment over fixed homes."""

    def __init__(self, instance: Instance, homes: np.ndarray, home_offsets: np.ndarray | None,
                 picker_ratios: tuple[float, float, float], max_repacks: int):
        i = self.instance = instance
        self.homes = np.array(homes, np.int64)
        self.home_offsets = None if home_offsets is None else np.array(home_offsets, np.int64)
        self.costs = _Costs(i, self.homes)
        self.picker = IntervalPicker(self.costs.elapsed, *picker_ratios)
        self.fast = FastMemory(i, max_repacks)
        slowest = i.n_levels - 1
        for t in range(i.n_tensors):  # homes in fast levels take their space first
            h = int(self.homes[t])
            if h < slowest:
                offset = None if self.home_offsets is None else int(self.home_offsets[t])
                self.fast.reserve(("home", t), h, int(i.start[t]), int(i.end[t]), int(i.size[t]),
                                  offset)
        self.sim = Simulation(i, self.homes, [])
        self.kept: list[_Open] = []
        self.stats = MsaStats()

    # ----------------------------------------------------------------- one tensor
    def assign(self, t: int) -> None:
        """AllocateSegment for every access of tensor t, in time order."""
        i, picker, fast = self.instance, self.picker, self.fast
        h = int(self.homes[t])
        size = int(i.size[t])
        copy_s = size / float(i.copy_bandwidth[h])
        max_el = [picker.max_elapsed(float(i.capacity[l]), float(i.copy_bandwidth[h]))
                  for l in range(h)]
        p = producer_of(i, t)
        accesses = sorted(i.tensors[t]["accesses"])
        live_lo = int(i.start[t])
        self.valid = 0 if p < 0 else p + 1  # first op the home holds the data
        self.prev_hold = -1  # last op occupied by the previous window of t
        cur: _Open | None = None
        if p >= 0:
            for l in range(h):
                if fast.allocate((t, p), l, p, p, size):
                    cur = _Open((t, p), l, p, p, p, True)
                    break
        for k, b in accesses:
            if k == p:
                continue
            if cur is not None:
                if picker.no_copy_ok(cur.start, k, max_el[cur.level]) and \
                        fast.extend(cur.key, cur.start, k):
                    cur.last = k
                    continue
                self._close(t, cur, copy_s, next_use=k)
                cur = None
            saving = [self.costs.saving(t, k, b, l) for l in range(h)]
            lo = max(self.valid, self.prev_hold + 1, live_lo)
            for l in range(h):
                if saving[l] <= 0:
                    continue
                for s in picker.iter_starts(copy_s, lo, k, max_el[l], saving[l]):
                    if fast.allocate((t, s), l, s, k, size):
                        cur = _Open((t, s), l, s, k, k, False)
                        break
                if cur is not None:
                    break
        if cur is not None:
            self._close(t, cur, copy_s, next_use=None)

    def _close(self, t: int, win: _Open, copy_s: float, next_use: int | None) -> None:
        """Finish a window: evict a defining one when a later access needs the home, then
        keep it only if the simulator says it lowers the latency."""
        fast = self.fast
        if win.defining and next_use is not None:
            issue = win.start + 1  # XLA starts an eviction as soon as the value is defined
            due = max(self.picker.eviction_due(copy_s, issue, next_use), win.last + 1, issue + 1)
            if due > next_use or not fast.extend(win.key, win.start, max(win.last, due - 1)):
                fast.release(win.key)
                return
            win.evict = (issue, due)
        window = Window(t, win.level, win.start, win.first, win.last, None, win.evict)
        latency = self.sim.try_change(len(self.sim.windows), window)
        if not latency < self.sim.latency:
            self.sim.reject()
            fast.release(win.key)
            self.stats.rejected += 1
            return
        self.sim.accept()
        self.kept.append(win)
        self.prev_hold = window.hold
        if win.evict is not None:
            self.valid = win.evict[1]

    # ------------------------------------------------------------------ result
    def solution(self) -> ResidencySolution:
        """Homes (whole-life defining windows become fast homes) and windows with the
        offsets the chunks ended at."""
        i, fast, stats = self.instance, self.fast, self.stats
        homes = self.homes.copy()
        offsets = None
        if i.has_addressed_levels:
            offsets = (self.home_offsets.copy() if self.home_offsets is not None
                       else np.full(i.n_tensors, -1, np.int64))
            for t in range(i.n_tensors):
                key = ("home", t)
                if key in fast.owner and fast.offset(key) is not None:
                    offsets[t] = fast.offset(key)
        windows = []
        for win in self.kept:
            t = win.key[0]
            offset = fast.offset(win.key)
            if (win.defining and win.evict is None and win.first == int(i.start[t])
                    and win.last == int(i.end[t])):
                homes[t] = win.level
                if offsets is not None:
                    offsets[t] = -1 if offset is None else offset
                stats.fast_homes += 1
                continue
            windows.append(Window(t, win.level, win.start, win.first, win.last, offset, win.evict))
        windows.sort(key=lambda w: (w.tensor, w.start))
        stats.windows = len(windows)
        stats.prefetches = sum(w.is_prefetch for w in windows)
        stats.evictions = sum(w.evict is not None for w in windows)
        stats.defining = sum(not w.is_prefetch for w in windows)
        stats.repacks = fast.repacks
        return ResidencySolution(i.name, homes, offsets, tuple(windows))


def _static(instance: Instance, solver: str) -> tuple[np.ndarray, np.ndarray | None]:
    result = solve(instance, solver, time_limit=None, problem="static")
    offsets = result.offsets if instance.has_addressed_levels else None
    return np.array(result.placement, np.int64), offsets


def assign_windows(instance: Instance, homes: np.ndarray, home_offsets: np.ndarray | None,
                   min_overlap: float = 0.8, preferred_overlap: float = 1.5,
                   max_overlap: float = 10.0, max_repacks: int = 16
                   ) -> tuple[ResidencySolution, MsaStats]:
    """Memory-space assignment over fixed homes: every tensor in decreasing memory
    boundedness gets its windows (module docstring); returns the solution and what was done."""
    run = _Assignment(instance, homes, home_offsets, (min_overlap, preferred_overlap, max_overlap),
                      max_repacks)
    for t in boundedness_order(instance, run.costs):
        run.assign(t)
    return run.solution(), run.stats


def msa_solution(instance: Instance, min_overlap: float = 0.8, preferred_overlap: float = 1.5,
                 max_overlap: float = 10.0, max_repacks: int = 16, homes: str = "slowest"
                 ) -> tuple[ResidencySolution, MsaStats]:
    """XLA's memory-space assignment, or the static compiler placement when that is faster.

    The latency is section 11's (simulated); `stats` says what was done and whether the
    fall-back was taken."""
    began = time.perf_counter()
    ratios = dict(min_overlap=min_overlap, preferred_overlap=preferred_overlap,
                  max_overlap=max_overlap, max_repacks=max_repacks)
    compiler = _static(instance, "compiler")
    starts = []
    if homes in ("slowest", "best"):
        starts.append(("slowest", _static(instance, "all-slowest")))
    if homes in ("compiler", "best"):
        starts.append(("compiler", compiler))
    best: tuple[ResidencySolution, MsaStats] | None = None
    for name, (place, offsets) in starts:
        sol, stats = assign_windows(instance, place, offsets, **ratios)
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


@register("msa", "XLA's memory-space assignment: windows by memory boundedness, no-copy / "
          "evict / prefetch per use with the cost-analysis interval picker (never slower than "
          "the static compiler placement)", params=PARAMS, deterministic=True,
          problem="residency")
def solve_msa(ctx: SearchContext, min_overlap: float, preferred_overlap: float,
              max_overlap: float, max_repacks: int, homes: str) -> None:
    sol, stats = msa_solution(ctx.instance, min_overlap, preferred_overlap, max_overlap,
                              max_repacks, homes)
    ctx.count(1)
    ctx.notes.update(stats.as_notes())
    ctx.lower_bound = lower_bound(ctx.instance)
    ctx.offer(sol, sol.latency)
