"""Memory-space assignment over fixed homes in plain Python: the reference of the compiled allocator.

XLA's `AllocateSegment` loop (see `msa.py` for the rules and the choices made where XLA
has no counterpart): buffers in decreasing memory boundedness, each use kept in fast
memory without a copy, evicted or prefetched with a start from the cost-analysis
interval picker, chunks placed best-fit, every window checked on the incremental
simulator, one Python call per step (`IntervalPicker`, `FastMemory`, `Simulation`).
`allocation_kernel.py` computes the same in one Numba kernel, which `allocation.py`
runs for `msa` and the GA's decoder; the tests hold the two against each other.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from memplace.model.instance import Instance
from memplace.model.residency import ResidencySolution, Window
from memplace.model.residency.simulation import Simulation
from memplace.solvers.residency.machinery.allocation import MsaStats, checkpoint_interval
from memplace.solvers.residency.machinery.cost_analysis import CostAnalysis, buffer_order
from memplace.solvers.residency.machinery.fast_memory import FastMemory
from memplace.solvers.residency.machinery.interval_picker import IntervalPicker


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


class _Assignment:
    """One run of memory-space assignment over fixed homes."""

    def __init__(self, instance: Instance, homes: np.ndarray, home_offsets: np.ndarray | None,
                 picker_ratios: tuple[float, float, float], max_repacks: int):
        i = self.instance = instance
        self.homes = np.array(homes, np.int64)
        self.home_offsets = None if home_offsets is None else np.array(home_offsets, np.int64)
        self.costs = CostAnalysis(i, self.homes)
        self.picker = IntervalPicker(self.costs.elapsed, *picker_ratios)
        # what each access saves served by each faster level (rows: levels)
        self.savings = np.array([self.costs.access_savings(l) for l in range(i.n_levels - 1)])
        # homes in fast levels take their space first
        self.fast = FastMemory(i, max_repacks, self.homes, self.home_offsets, slowest_too=False)
        self.sim = Simulation(i, self.homes, [], K=checkpoint_interval(i))
        self.kept: list[_Open] = []
        self.stats = MsaStats()

    # ----------------------------------------------------------------- one tensor
    def assign(self, t: int, preferred: float | None = None) -> None:
        """AllocateSegment for every access of tensor t, in time order; `preferred`
        replaces the picker's preferred overlap (copy times) for this tensor alone."""
        picker = self.picker
        if preferred is not None:
            picker = replace(picker, preferred_ratio=float(preferred))
        self.cur_picker = picker
        i, fast = self.instance, self.fast
        h = int(self.homes[t])
        size = int(i.size[t])
        copy_s = size / float(i.copy_bandwidth[h])
        max_el = [picker.max_elapsed(float(i.capacity[l]), float(i.copy_bandwidth[h]))
                  for l in range(h)]
        p = i.tensors[t]["producer"]
        p = -1 if p is None else int(p)
        accesses = i.tensor_access[i.tensor_ptr[t]:i.tensor_ptr[t + 1]]  # in op order
        ops = i.access_op[accesses].tolist()
        savings = self.savings[:h, accesses].T.tolist()  # per access, per faster level
        live_lo = int(i.start[t])
        self.valid = 0 if p < 0 else p + 1  # first op the home holds the data
        self.prev_hold = -1  # last op occupied by the previous window of t
        cur: _Open | None = None
        if p >= 0:
            for l in range(h):
                if fast.allocate((t, p), l, p, p, size):
                    cur = _Open((t, p), l, p, p, p, True)
                    break
        for k, saving in zip(ops, savings):
            if k == p:
                continue
            if cur is not None:
                if picker.no_copy_ok(cur.start, k, max_el[cur.level]) and \
                        fast.extend(cur.key, cur.start, k):
                    cur.last = k
                    continue
                self._close(t, cur, copy_s, next_use=k)
                cur = None
            cur = self._prefetch(t, k, max(self.valid, self.prev_hold + 1, live_lo), saving,
                                 copy_s, max_el)
        if cur is not None:
            self._close(t, cur, copy_s, next_use=None)

    def _prefetch(self, t: int, k: int, lo: int, saving: list[float], copy_s: float,
                  max_el: list[float]) -> _Open | None:
        """A prefetch of t for its use at op k starting at or after op `lo`: the fastest
        level where the use saves time and a start the picker proposes has room."""
        size = int(self.instance.size[t])
        for l, saved in enumerate(saving):
            if saved <= 0:
                continue
            for s in self.cur_picker.iter_starts(copy_s, lo, k, max_el[l], saved):
                if self.fast.allocate((t, s), l, s, k, size):
                    return _Open((t, s), l, s, k, k, False)
        return None

    def _close(self, t: int, win: _Open, copy_s: float, next_use: int | None) -> None:
        """Finish a window: evict a defining one when a later access needs the home, then
        keep it only if the simulator says it lowers the latency."""
        fast = self.fast
        if win.defining and next_use is not None:
            issue = win.start + 1  # XLA starts an eviction as soon as the value is defined
            due = max(self.cur_picker.eviction_due(copy_s, issue, next_use), win.last + 1, issue + 1)
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
                key = ("h", t)
                if key in fast and fast.offset(key) is not None:
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


def assign_windows_reference(instance: Instance, homes: np.ndarray,
                             home_offsets: np.ndarray | None, min_overlap: float = 0.8,
                             preferred_overlap: float = 1.5, max_overlap: float = 10.0,
                             max_repacks: int = 16, order: Sequence[int] | None = None,
                             preferred: Sequence[float] | np.ndarray | None = None,
                             deadline: float = math.inf) -> tuple[ResidencySolution, MsaStats]:
    """`allocation.assign_windows`, one Python call per step: every tensor of `order` (default: the
    decreasing memory boundedness of `cost_analysis.buffer_order`) gets its windows in turn;
    `preferred[t]`, when given, is tensor t's own preferred overlap in copy times (its
    prefetch lead). At `deadline` (a `time.perf_counter()` value) the buffers not yet
    seen stay in their homes (every window kept so far is valid on its own). Returns the
    solution and what was done."""
    run = _Assignment(instance, homes, home_offsets, (min_overlap, preferred_overlap, max_overlap),
                      max_repacks)
    for t in (buffer_order(instance, run.homes).tolist() if order is None else order):
        if time.perf_counter() >= deadline:
            run.stats.truncated = True
            break
        run.assign(int(t), None if preferred is None else float(preferred[t]))
    return run.solution(), run.stats
