"""The residency latency (docs/spec.md section 11) on an `Instance`, through the Numba kernels.

- `simulate(instance, solution)`: one solution.
- `simulate_batch(instance, placement, window_sets)`: solutions sharing homes, differing in windows.
- `details(instance, solution)`: the same run with per-op waits and elapsed times, and the op
  at which each window's copies completed.
- `Simulation`: incremental re-simulation of one-window changes from checkpoints.
- `timeline(instance, solution)`: the plain-Python reference's own record (slow; the oracle).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from memplace.model.instance import Instance
from memplace.model.residency import kernels, reference
from memplace.model.residency.encoding import (Enc, State, checked_row, empty_checkpoints, encode,
                                               initial_state, no_checkpoints, sim_of, window_arrays,
                                               window_row)
from memplace.model.residency.solution import ResidencySolution, Window

_EMPTY = np.zeros(0)
_NO_DONE = np.zeros((0, 0), np.int64)


def _run(instance: Instance, enc: Enc, state: State | None = None, wait=_EMPTY, elapsed=_EMPTY,
         done=_NO_DONE) -> float:
    i = instance
    state = initial_state(i) if state is None else state
    ck = no_checkpoints(i)
    shift = np.zeros(2 * i.n_levels, np.int64)
    return float(kernels.run_kernel(sim_of(i), enc, state, 0, i.n_ops + 1, ck, False, -1, ck, shift,
                                    0.0, wait, elapsed, done))


def simulate(instance: Instance, solution: ResidencySolution) -> float:
    """Latency in seconds of a residency solution whose windows are well-formed."""
    return _run(instance, encode(instance, solution.placement, solution.windows))


def simulate_batch(instance: Instance, placement: np.ndarray,
                   window_sets: Sequence[Sequence[Window]]) -> np.ndarray:
    """Latency of each window set with the same homes."""
    i = instance
    place = np.ascontiguousarray(placement, np.int64)
    all_windows = [w for ws in window_sets for w in ws]
    ptr = np.zeros(len(window_sets) + 1, np.int64)
    np.cumsum([len(ws) for ws in window_sets], out=ptr[1:])
    wa = window_arrays(i, all_windows)
    enc = encode(i, place, [], slots=max((len(ws) for ws in window_sets), default=0))
    ck = no_checkpoints(i)
    out = np.empty(len(window_sets))
    kernels.batch_kernel(sim_of(i), place, i.tensor_ptr, i.tensor_access, i.access_op, i.size,
                         ptr, *wa, enc, initial_state(i), ck, np.zeros(2 * i.n_levels, np.int64), out)
    return out


@dataclass
class Details:
    """A run op by op: `begin[k]` is the clock when op k starts running (after its wait);
    `prefetch_done[w]` / `evict_done[w]` the op in whose wait or run window w's copy
    completed (-1 where the window has no such copy)."""

    latency: float
    wait: np.ndarray
    elapsed: np.ndarray
    begin: np.ndarray
    prefetch_done: np.ndarray
    evict_done: np.ndarray

    @property
    def waits(self) -> int:
        return int(np.count_nonzero(self.wait))


def details(instance: Instance, solution: ResidencySolution) -> Details:
    i = instance
    enc = encode(i, solution.placement, solution.windows)
    wait, elapsed = np.zeros(i.n_ops), np.zeros(i.n_ops)
    done = np.full(enc.q_copy.shape, -1, np.int64)
    lat = _run(i, enc, None, wait, elapsed, done)
    begin = np.empty(i.n_ops)
    clock = 0.0
    for k in range(i.n_ops):  # the kernel's own float order
        clock += wait[k]
        begin[k] = clock
        clock += elapsed[k]
    W = len(solution.windows)
    prefetch_done, evict_done = np.full(W, -1, np.int64), np.full(W, -1, np.int64)
    for q in range(enc.q_len.shape[0]):
        for j in range(int(enc.q_len[q])):
            target = evict_done if q % 2 else prefetch_done
            target[enc.q_copy[q, j] // 2] = done[q, j]
    return Details(lat, wait, elapsed, begin, prefetch_done, evict_done)


def timeline(instance: Instance, solution: ResidencySolution) -> reference.Timeline:
    """Per-op clock, waits and elapsed times, and each copy's completion op (the reference)."""
    return reference.timeline(instance.data, solution.placement.tolist(), solution.windows)


def _row(window: Window | None) -> np.ndarray:
    return np.array(window_row(window), np.int64)


class Simulation:
    """A solution kept simulated, with checkpoints every `K` ops, for one-window changes.

    `try_change(slot, window)` replaces window `slot` (`len(windows)` adds one; `None`
    removes it) and returns the new latency, re-simulating from the checkpoint at or
    before the first op the change touches, and stopping early at the first checkpoint
    after the change where the simulator state equals the old run's (the rest of the old
    run then applies, shifted in time). `accept()` keeps the change, `reject()` undoes
    it (a new `try_change` rejects a pending one). The result may differ from a full
    simulation by rounding only (the clock of the old run's tail is shifted).
    """

    def __init__(self, instance: Instance, placement: np.ndarray, windows: Sequence[Window],
                 K: int = 2, spare: int = 64):
        if K < 1:
            raise ValueError(f"checkpoint interval K must be >= 1, got {K}")
        i = self.instance = instance
        self.K = K
        self.placement = np.ascontiguousarray(placement, np.int64)
        self.windows: list[Window | None] = list(windows)
        self.sim = sim_of(i)
        self.enc = encode(i, self.placement, self.windows, slots=len(self.windows) + spare)
        self.ck = empty_checkpoints(i, K)
        self.scratch = empty_checkpoints(i, K)
        self.state = initial_state(i)
        self.shift = np.zeros(2 * i.n_levels, np.int64)
        self.latency = float(kernels.run_kernel(self.sim, self.enc, self.state, 0, K, self.ck, True, -1,
                                                self.ck, self.shift, 0.0, _EMPTY, _EMPTY, _NO_DONE))
        self._pending: tuple | None = None

    def solution_windows(self) -> tuple[Window, ...]:
        return tuple(w for w in self.windows if w is not None)

    def try_change(self, slot: int, window: Window | None) -> float:
        """Latency with window `slot` replaced by `window` (pending until accept/reject)."""
        if self._pending is not None:
            self.reject()
        new = np.array(checked_row(self.instance, window, slot), np.int64)
        if slot == len(self.windows):
            self.windows.append(None)
        old = self.windows[slot]
        if old is None and window is None:
            return self.latency
        if 2 * len(self.windows) > self.enc.c_issue.shape[0]:
            # room for more windows: encode again (the state and checkpoints do not change)
            self.enc = encode(self.instance, self.placement, self.windows, slots=2 * len(self.windows) + 64)
        i, st = self.instance, self.state
        lat = float(kernels.try_change_kernel(self.sim, self.enc, st, self.ck, self.scratch, self.K,
                                              self.placement, i.tensor_ptr, i.tensor_access,
                                              i.access_op, i.size, slot, _row(old), new,
                                              self.shift, self.latency))
        c0 = min(w.start for w in (old, window) if w is not None) // self.K
        self.windows[slot] = window
        self._pending = (slot, old, window, c0, int(st.stop[0]), lat, self.shift.copy())
        return lat

    def accept(self) -> None:
        """Keep the pending change: checkpoints from its start on become the new run's."""
        if self._pending is None:
            return
        slot, old, new, c0, stop, lat, shift = self._pending
        again = kernels.accept_kernel(self.sim, self.enc, self.state, self.ck, self.scratch, self.K,
                                      c0, shift, self.latency, lat)
        if again != lat or self.state.stop[0] != stop:
            raise AssertionError(f"replaying a change gave {again!r} (stop {self.state.stop[0]}), "
                                 f"its try {lat!r} (stop {stop})")
        self.latency = lat
        self._pending = None

    def reject(self) -> None:
        """Undo the pending change."""
        if self._pending is None:
            return
        slot, old, new, *_ = self._pending
        i = self.instance
        kernels.change_kernel(self.enc, self.placement, i.tensor_ptr, i.tensor_access, i.access_op,
                              i.size, slot, _row(new), _row(old))
        self.windows[slot] = old
        self._pending = None

    def full_latency(self) -> float:
        """A full simulation of the current windows (no checkpoints): for checks and timing."""
        return _run(self.instance, self.enc)
