"""Windows as arrays: the records the residency kernels read (see `kernels.py`)."""
from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from memplace.model.instance import Instance
from memplace.model.residency import kernels
from memplace.model.residency.solution import Window


class Sim(NamedTuple):
    """The instance, as the simulator reads it."""

    compute: np.ndarray
    op_ptr: np.ndarray
    op_tensor: np.ndarray
    access_time: np.ndarray
    copy_bandwidth: np.ndarray


class Enc(NamedTuple):
    """One solution's windows: who serves each access, and the copies by queue."""

    serve: np.ndarray  # int64[A]
    c_issue: np.ndarray  # int64[2 * window slots]
    c_due: np.ndarray
    c_tensor: np.ndarray
    c_size: np.ndarray  # float64[2 * window slots]
    q_copy: np.ndarray  # int64[Q, cap]
    q_len: np.ndarray  # int64[Q]
    due_count: np.ndarray  # int64[n]
    due_q: np.ndarray  # int64[Q, n]


class State(NamedTuple):
    clock: np.ndarray  # float64[1]
    head: np.ndarray  # int64[Q]
    tail: np.ndarray
    left: np.ndarray  # float64[Q]
    stop: np.ndarray  # int64[2]: where a run stopped early; the last change's stop_from
    busy: np.ndarray  # float64[L], scratch
    need: np.ndarray  # float64[L], scratch
    no_times: np.ndarray  # float64[0]
    no_done: np.ndarray  # int64[0, 0]
    guard: np.ndarray  # int64[4, 3]: copies an early stop waits for (run, queue, position)


class Checkpoints(NamedTuple):
    clock: np.ndarray  # float64[C]
    head: np.ndarray  # int64[C, Q]
    tail: np.ndarray
    left: np.ndarray  # float64[C, Q]


class WindowArrays(NamedTuple):
    tensor: np.ndarray
    level: np.ndarray
    start: np.ndarray
    first: np.ndarray
    last: np.ndarray
    issue: np.ndarray  # -1 without an eviction
    due: np.ndarray


def sim_of(instance: Instance) -> Sim:
    i = instance
    return Sim(i.compute, i.op_ptr, i.op_tensor, i.access_time, i.copy_bandwidth)


def window_row(w: Window | None) -> tuple[int, ...]:
    """A window as the kernels read it: (tensor, level, start, first, last, eviction issue,
    eviction due), -1 for no eviction; a None (an empty slot) is a row of -1."""
    if w is None:
        return (-1,) * 7
    issue, due = (-1, -1) if w.evict is None else w.evict
    return (w.tensor, w.level, w.start, w.first, w.last, issue, due)


def window_arrays(instance: Instance, windows: Sequence[Window | None]) -> WindowArrays:
    """Windows as columns, one `checked_row` each."""
    rows = [checked_row(instance, w, k) for k, w in enumerate(windows)]
    cols = np.array(rows, np.int64).reshape(len(rows), 7).T
    return WindowArrays(*(np.ascontiguousarray(c) for c in cols))


def checked_row(instance: Instance, w: Window | None, index: int) -> tuple[int, ...]:
    """`window_row(w)`, refused (ValueError, naming window `index`) when its tensor, level
    or an op is outside the instance: the kernels index their arrays by them unchecked,
    and an eviction due at op n (one past the last) wrote past the end of `due_count`. An
    empty slot (a row of -1) passes. Only the ranges are checked, the memory the kernels
    touch; whether a window is valid is section 10's (`validate`). Plain comparisons, not
    NumPy: `Simulation.try_change` checks each window it is given (0.3 µs a row)."""
    row = window_row(w)
    tensor, level, start, first, last, issue, due = row
    n, T, L = instance.n_ops, instance.n_tensors, instance.n_levels
    if (tensor == -1 or (0 <= tensor < T and 0 <= level < L and 0 <= start < n and 0 <= first < n
                         and 0 <= last < n
                         and ((issue == -1 and due == -1) or (0 <= issue < n and 0 <= due < n)))):
        return row
    raise ValueError(f"window {index} ({w}) is outside the instance: tensors 0..{T - 1}, "
                     f"levels 0..{L - 1}, ops 0..{n - 1}")


def empty_enc(instance: Instance, slots: int) -> Enc:
    """Room for `slots` windows (two copies each; every queue may hold all of them)."""
    Q = 2 * instance.n_levels
    cap = max(2 * slots, 1)
    return Enc(np.empty(instance.op_tensor.shape[0], np.int64),
               np.zeros(cap, np.int64), np.zeros(cap, np.int64), np.zeros(cap, np.int64),
               np.zeros(cap, np.float64), np.zeros((Q, cap), np.int64), np.zeros(Q, np.int64),
               np.zeros(instance.n_ops, np.int64), np.zeros((Q, instance.n_ops), np.int64))


def encode(instance: Instance, placement: np.ndarray, windows: Sequence[Window | None],
           slots: int | None = None) -> Enc:
    """The arrays of one solution, with room for `slots` windows (default: as many as given);
    window w's copies are 2w and 2w + 1."""
    i = instance
    enc = empty_enc(i, len(windows) if slots is None else slots)
    kernels.encode_kernel(np.ascontiguousarray(placement, np.int64), i.tensor_ptr, i.tensor_access,
                          i.access_op, i.op_tensor, i.size, i.n_ops, *window_arrays(i, windows), enc)
    return enc


def initial_state(instance: Instance) -> State:
    Q = 2 * instance.n_levels
    return State(np.zeros(1), np.zeros(Q, np.int64), np.zeros(Q, np.int64), np.zeros(Q),
                 np.full(2, -1, np.int64), np.zeros(instance.n_levels), np.zeros(instance.n_levels),
                 np.zeros(0), np.zeros((0, 0), np.int64), np.full((4, 3), -1, np.int64))


def empty_checkpoints(instance: Instance, K: int) -> Checkpoints:
    C = instance.n_ops // K + 1
    Q = 2 * instance.n_levels
    return Checkpoints(np.zeros(C), np.zeros((C, Q), np.int64), np.zeros((C, Q), np.int64),
                       np.zeros((C, Q)))


def no_checkpoints(instance: Instance) -> Checkpoints:
    """Room for one checkpoint (K past the last op): for runs that write none."""
    return empty_checkpoints(instance, instance.n_ops + 1)
