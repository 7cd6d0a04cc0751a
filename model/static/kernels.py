"""Numba kernels of the cost model; they take the instance's arrays as one record `a`
(`Instance.arrays`, a NamedTuple of arrays; see `Instance`'s docstring), except the
latency of placements, which takes just the op-side arrays it reads (compute, op_ptr,
op_tensor, access_time): it is the one kernel called once per placement from Python,
and Numba's dispatch of a 15-array record costs several microseconds a call (measured:
0.6 us per placement with the four arrays, 4-8 us with the record).

Each kernel computes exactly what `reference.py` computes, in the spec's summation
order, so results agree to the last bit or within rounding (docs/spec.md section 4).
Compiled once and cached on disk (`cache=True`); `memplace warmup` compiles them all.
"""
from __future__ import annotations

import numpy as np

from memplace.model.core.jit import njit


# Indices are cast to unsigned so Numba skips negative-index wraparound in the hot
# loops (about 2x on BERT-sized instances); every index here is non-negative.
_U = np.uint64


@njit(cache=True, nogil=True, inline="always")
def _op_time(k, place, compute, op_ptr, op_tensor, access_time):
    memory = 0.0
    for i in range(_U(op_ptr[_U(k)]), _U(op_ptr[_U(k) + _U(1)])):
        memory += access_time[i, _U(place[_U(op_tensor[i])])]
    c = compute[_U(k)]
    return c if c > memory else memory


@njit(cache=True, nogil=True)
def latency_kernel(place, compute, op_ptr, op_tensor, access_time):
    """Latency of one placement (int64[T] of level indices)."""
    total = 0.0
    for k in range(compute.shape[0]):
        total += _op_time(k, place, compute, op_ptr, op_tensor, access_time)
    return total


@njit(cache=True, nogil=True)
def latency_batch_kernel(population, compute, op_ptr, op_tensor, access_time, out):
    """Latency of every row of a 2-D placement array, written into `out`."""
    n_ops = compute.shape[0]
    for p in range(population.shape[0]):
        place = population[p]
        total = 0.0
        for k in range(n_ops):
            total += _op_time(k, place, compute, op_ptr, op_tensor, access_time)
        out[p] = total
    return out


@njit(cache=True, nogil=True, inline="always")  # inlined: no record passed per move
def move_delta_kernel(place, t, level, a):
    """Exact latency change of moving tensor t to `level`; touches only the ops that
    access t. `place` is left unchanged."""
    compute, op_ptr, op_tensor, access_time = a.compute, a.op_ptr, a.op_tensor, a.access_time
    tensor_ptr, tensor_access, access_op = a.tensor_ptr, a.tensor_access, a.access_op
    old = place[t]
    if old == level:
        return 0.0
    delta = 0.0
    for i in range(_U(tensor_ptr[t]), _U(tensor_ptr[t + 1])):
        k = _U(access_op[_U(tensor_access[i])])
        memory_old = 0.0
        memory_new = 0.0
        for j in range(_U(op_ptr[k]), _U(op_ptr[k + _U(1)])):
            u = op_tensor[j]
            lu = place[_U(u)]
            memory_old += access_time[j, _U(lu)]
            memory_new += access_time[j, _U(level if u == t else lu)]
        c = compute[k]
        delta += (c if c > memory_new else memory_new) - (c if c > memory_old else memory_old)
    return delta


@njit(cache=True, nogil=True)
def load_kernel(place, a):
    """load[l, k]: bytes of tensors placed in l and live at step k (docs/spec.md section 3)."""
    size, start, end = a.size, a.start, a.end
    n_levels, n_ops = a.capacity.shape[0], a.compute.shape[0]
    diff = np.zeros((n_levels, n_ops + 1), np.int64)
    for t in range(size.shape[0]):
        diff[place[t], start[t]] += size[t]
        diff[place[t], end[t] + 1] -= size[t]
    out = np.empty((n_levels, n_ops), np.int64)
    for l in range(n_levels):
        running = 0
        for k in range(n_ops):
            running += diff[l, k]
            out[l, k] = running
    return out


@njit(cache=True, nogil=True)
def capacity_ok_kernel(load, capacity):
    for l in range(load.shape[0]):
        for k in range(load.shape[1]):
            if load[l, k] > capacity[l]:
                return False
    return True


@njit(cache=True, nogil=True)
def rectify_level_kernel(place, load, l, a, tables):
    """docs/spec.md section 6 for one level l, in place on `place` and `load`:
    for every step, evict the lowest-rank tensor of level l live there to l+1
    until the level fits.

    Weights are live at every step, so they are kept apart in `weights_by_rank`;
    during one level's pass weights only leave level l, so one pointer walks them.
    `step_tensor[step_ptr[k]:step_ptr[k+1]]` are the activations live at k, by rank.
    Returns the number of tensors moved. `tables` is `rectification.RectifyTables`.
    """
    capacity, size, start, end, rank = a.capacity, a.size, a.start, a.end, a.rank
    weights_by_rank, step_ptr, step_tensor = (tables.weights_by_rank, tables.step_ptr,
                                              tables.step_tensor)
    moved = 0
    w = 0
    n_weights = weights_by_rank.shape[0]
    cap = capacity[l]
    for k in range(load.shape[1]):
        while load[l, k] > cap:
            while w < n_weights and place[weights_by_rank[w]] != l:
                w += 1
            best = -1
            if w < n_weights:
                best = weights_by_rank[w]
            for i in range(step_ptr[k], step_ptr[k + 1]):
                t = step_tensor[i]
                if place[t] == l:
                    if best < 0 or rank[t] < rank[best]:
                        best = t
                    break  # activations at k are sorted by rank: the first in l is their best
            place[best] = l + 1
            for j in range(start[best], end[best] + 1):
                load[l, j] -= size[best]
                load[l + 1, j] += size[best]
            moved += 1
    return moved


@njit(cache=True, nogil=True)
def first_overlap_kernel(members, offsets, size, start, end):
    """First pair (i, j) of `members` (sorted by live-range start) that share a live step
    and an address; (-1, -1) when there is none. Sweep: each tensor is compared only with
    earlier-starting tensors still live at its start."""
    m = members.shape[0]
    active = np.empty(m, np.int64)
    n_active = 0
    for i in range(m):
        t = members[i]
        kept = 0
        for j in range(n_active):
            u = active[j]
            if end[u] >= start[t]:
                active[kept] = u
                kept += 1
                if offsets[t] < offsets[u] + size[u] and offsets[u] < offsets[t] + size[t]:
                    return u, t
        n_active = kept
        active[n_active] = t
        n_active += 1
    return -1, -1
