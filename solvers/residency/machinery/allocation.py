"""Memory-space assignment over fixed homes: the allocator shared by `msa` and the GA, compiled.

XLA's `AllocateSegment` loop (see `msa.py` for the rules and the choices made where XLA
has no counterpart): buffers in decreasing memory boundedness, each use kept in fast
memory without a copy, evicted or prefetched with a start from the cost-analysis
interval picker, chunks placed best-fit, every window checked on the incremental
simulator. It lives below both solvers so that neither imports the other: `msa` runs
it in XLA's order with XLA's picker; the residency GA (`evolution.py`) decodes every
chromosome with it, giving its own buffer `order` and a per-buffer `preferred` overlap
(the prefetch lead, in copy times).

The loop runs in one Numba kernel (`allocation_kernel.py`; `allocation_reference.py` is
the plain-Python reference it equals). An `Allocator` sets up what depends on the homes
alone once (the cost analysis, the homes' bookings, the simulation without windows) and
runs any order and leads from copies of it, so a decoder pays the set-up once per homes.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from memplace.model.instance import Instance
from memplace.model.residency import ResidencySolution, Window
from memplace.model.residency import kernels
from memplace.model.residency.encoding import Checkpoints, empty_checkpoints, encode, initial_state, sim_of
from memplace.solvers.residency.machinery import allocation_kernel as ak
from memplace.solvers.residency.machinery import occupancy as oc
from memplace.solvers.residency.machinery.cost_analysis import CostAnalysis, buffer_order

_EMPTY = np.zeros(0)
_NO_DONE = np.zeros((0, 0), np.int64)
SLICE_SECONDS = 0.02  # with a deadline, the kernel runs slices of the order about this long


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
    truncated: bool = False  # the deadline stopped the allocation before every buffer was seen
    seconds: float = 0.0

    def as_notes(self) -> dict[str, Any]:
        return dict(self.__dict__)


def checkpoint_interval(instance: Instance) -> int:
    """Ops between the incremental simulator's checkpoints during an allocation: a kept
    window rewrites the checkpoints after it (about n_ops / K of them) and a tried one
    re-simulates up to K ops more, so K grows as the square root of the program."""
    return max(2, int(math.sqrt(instance.n_ops) / 2))


def _copy(record):
    return type(record)(*(a.copy() for a in record))


class Allocator:
    """msa's allocator over fixed homes (a valid static placement and its offsets, None
    without addressed levels), with the picker's `min` and `max` overlap ratios and at
    most `max_repacks` best-fit repacks of an addressed level per run. With `reusable`
    each run works on copies of the set-up; without, the first run works on it in place
    (no copies: tens of MB at 10^5 ops) and a later run sets it up again."""

    def __init__(self, instance: Instance, homes: np.ndarray, home_offsets: np.ndarray | None,
                 min_overlap: float = 0.8, max_overlap: float = 10.0, max_repacks: int = 16,
                 reusable: bool = True):
        i = self.instance = instance
        self.reusable = reusable
        self.homes = np.array(homes, np.int64)
        self.home_offsets = None if home_offsets is None else np.array(home_offsets, np.int64)
        self.max_repacks = max_repacks
        costs = CostAnalysis(i, self.homes)
        cum = np.zeros(i.n_ops + 1, np.float64)  # as `IntervalPicker.cum`
        np.cumsum(costs.elapsed, out=cum[1:])
        A = i.access_op.shape[0]
        savings = np.array([costs.access_savings(l) for l in range(i.n_levels - 1)],
                           np.float64).reshape(i.n_levels - 1, A)
        producer = np.array([-1 if x["producer"] is None else int(x["producer"]) for x in i.tensors],
                            np.int64)
        self.rules = ak.Rules(np.asarray(i.start, np.int64), np.asarray(i.end, np.int64),
                              np.asarray(i.size, np.int64), producer, self.homes, i.tensor_ptr,
                              i.tensor_access, i.access_op, np.asarray(i.copy_bandwidth, np.float64),
                              savings, cum, np.array([min_overlap, max_overlap], np.float64))
        self.accesses = np.diff(i.tensor_ptr).astype(np.int64)
        self.K = checkpoint_interval(i)
        self._room = 0  # the bookings and window slots the set-up has room for
        self._fit(2 * i.n_tensors + A)

    def _fit(self, windows: int) -> None:
        """The set-up (the homes booked, the simulation without windows) with room for
        `windows` windows."""
        if windows <= self._room:
            return
        i, T = self.instance, self.instance.n_tensors
        L = i.n_levels
        # homes in fast levels take their space first
        self.occupancy = oc.with_homes(i, self.homes, self.home_offsets, T + windows,
                                       slowest_too=False)
        self.occupancy.meta[0] = T
        self.enc = encode(i, self.homes, [], slots=windows)
        self.ck = empty_checkpoints(i, self.K)
        state = initial_state(i)
        self.latency = float(kernels.run_kernel(sim_of(i), self.enc, state, 0, self.K, self.ck, True,
                                                -1, self.ck, np.zeros(2 * L, np.int64), 0.0, _EMPTY,
                                                _EMPTY, _NO_DONE))
        self._room = windows

    def run(self, order: Sequence[int] | np.ndarray, preferred: np.ndarray,
            deadline: float = math.inf) -> tuple[ResidencySolution, MsaStats]:
        """Windows for every tensor of `order` in turn, `preferred[t]` tensor t's preferred
        overlap in copy times. At `deadline` (a `time.perf_counter()` value) the buffers not
        yet seen stay in their homes (every window kept so far is valid on its own)."""
        i = self.instance
        order = np.ascontiguousarray(order, np.int64)
        preferred = np.ascontiguousarray(preferred, np.float64)
        W = int(self.accesses[order].sum()) + order.size  # at most a window per access and one more
        self._fit(W)
        take = _copy if self.reusable else (lambda record: record)
        occ, enc, ck = take(self.occupancy), take(self.enc), take(self.ck)
        occ.meta[1] = self.max_repacks
        if not self.reusable:
            self._room = -1  # spent: set up again before another run
        scratch = Checkpoints(*(np.empty_like(a) for a in ck))
        state = initial_state(i)
        L = i.n_levels
        pro = ak.Progress(np.zeros((W, ak.KEPT), np.int64), np.zeros(4, np.int64),
                          np.array([self.latency]), np.full(7, -1, np.int64), np.full(7, -1, np.int64),
                          np.zeros(L))
        args = (self.rules, occ, pro, sim_of(i), enc, state, ck, scratch, self.K,
                np.zeros(2 * L, np.int64))
        stats = MsaStats()
        if math.isinf(deadline):
            status = ak.assign_kernel(*args, order, preferred)
        else:  # slices of the order, about SLICE_SECONDS each, the clock read between them
            j, step, status = 0, 1, ak.OK
            while j < order.size and status == ak.OK:
                if time.perf_counter() >= deadline:
                    stats.truncated = True
                    break
                began = time.perf_counter()
                status = ak.assign_kernel(*args, order[j:j + step], preferred)
                j += step
                took = time.perf_counter() - began
                step = max(1, int(step * min(4.0, SLICE_SECONDS / max(took, 1e-6))))
        if status != ak.OK:
            raise AssertionError("replaying a kept window gave another latency than its try")
        return self._solution(occ, pro, stats), stats

    def _solution(self, occ: oc.Occupancy, pro: ak.Progress, stats: MsaStats) -> ResidencySolution:
        """Homes (whole-life defining windows become fast homes) and windows with the
        offsets their bookings ended at."""
        i = self.instance
        homes = self.homes.copy()
        offsets = None
        addressed = np.asarray(i.addressed, bool)
        if i.has_addressed_levels:
            offsets = (self.home_offsets.copy() if self.home_offsets is not None
                       else np.full(i.n_tensors, -1, np.int64))
            at = np.flatnonzero((homes < i.n_levels - 1) & addressed[homes])
            offsets[at] = occ.offset[at]
        kept = pro.kept[:pro.meta[0]]
        t = kept[:, 0]
        whole = (kept[:, 8] == 1) & (kept[:, 5] < 0) & (kept[:, 3] == i.start[t]) & (kept[:, 4] == i.end[t])
        offset = np.where(addressed[kept[:, 1]], occ.offset[kept[:, 7]], -1)
        homes[t[whole]] = kept[whole, 1]  # at most one whole-life window per tensor
        if offsets is not None:
            offsets[t[whole]] = offset[whole]
        stats.fast_homes = int(whole.sum())
        by = np.lexsort((kept[:, 2], kept[:, 0]))  # windows by tensor, then start
        rows, rows_offset = kept[by][~whole[by]], offset[by][~whole[by]]
        has_offset = addressed[rows[:, 1]].tolist()
        windows = tuple(Window(t, level, start, first, last, off if has else None,
                               None if issue < 0 else (issue, due))
                        for (t, level, start, first, last, issue, due), off, has in
                        zip(rows[:, :7].tolist(), rows_offset.tolist(), has_offset))
        stats.windows = len(windows)
        stats.prefetches = int((rows[:, 2] < rows[:, 3]).sum())
        stats.evictions = int((rows[:, 5] >= 0).sum())
        stats.defining = stats.windows - stats.prefetches
        stats.rejected = int(pro.meta[2])
        stats.repacks = int(occ.meta[2])
        return ResidencySolution(i.name, homes, offsets, windows)


def assign_windows(instance: Instance, homes: np.ndarray, home_offsets: np.ndarray | None,
                   min_overlap: float = 0.8, preferred_overlap: float = 1.5,
                   max_overlap: float = 10.0, max_repacks: int = 16,
                   order: Sequence[int] | None = None,
                   preferred: Sequence[float] | np.ndarray | None = None,
                   deadline: float = math.inf) -> tuple[ResidencySolution, MsaStats]:
    """Memory-space assignment over fixed homes: every tensor of `order` (default: the
    decreasing memory boundedness of `cost_analysis.buffer_order`) gets its windows in turn;
    `preferred[t]`, when given, is tensor t's own preferred overlap in copy times (its
    prefetch lead; default `preferred_overlap`). At `deadline` (a `time.perf_counter()`
    value) the buffers not yet seen stay in their homes (every window kept so far is valid
    on its own). Returns the solution and what was done."""
    run = Allocator(instance, homes, home_offsets, min_overlap, max_overlap, max_repacks,
                    reusable=False)
    if order is None:
        order = buffer_order(instance, run.homes)
    leads = (np.full(instance.n_tensors, float(preferred_overlap)) if preferred is None
             else np.asarray(preferred, np.float64))
    return run.run(order, leads, deadline)
