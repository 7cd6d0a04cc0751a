"""Lower bounds on the latency of any valid residency solution (docs/spec.md sections 9-11).

The latency is the sum of the ops' elapsed times plus waits (>= 0), so a sum over ops of
`max(compute_k, a bound on op k's memory time)` is a bound:

- `fastest_bound`: every access at the fastest level's bandwidth, capacity ignored.
- `op_capacity_bound`: op k's tensors must fit the levels at step k. Op k's access to
  tensor t is served by a level that t *occupies* at step k (its home, live at k, or a
  window whose `first..last`, inside its occupancy, contains k). So the tensors that op k
  touches, each counted once in the level serving it, fit every level's capacity at step
  k. Whatever does not fit the faster levels is served by slower ones, through their
  channels, at their bandwidth. The least memory time of op k over such assignments
  (relaxed to fractions of tensors, other live tensors ignored) is a transportation
  problem whose cost per byte of capacity is `(bytes / size) / bandwidth`: filling the
  fastest level first with the largest `bytes / size` is optimal (the cost is a product,
  so the greedy matching is). With unbounded fast levels it equals `fastest_bound`, so it
  is never below it.

And one on the last level's channel:

- `channel_bound`: the bytes that must cross the last level's channel. A weight is live at
  every step and its home occupies its level at every step, so the weights homed above
  the last level fit the sum `C` of those levels' capacities: at least `W - C` bytes of
  weights (`W` their total) are homed in the last level. Windows do not outlive an
  inference, so every inference each such weight crosses that level's channel: either an
  access served by the home (`bytes / bandwidth` of channel time, inside its op) or a
  prefetch of the whole tensor (`size / copy_bandwidth`, in the channel's idle time or a
  wait). The channel does one thing at a time (an op's own accesses, then copies in the
  idle rest, at most `copy_bandwidth` bytes per second in all), so the latency is at
  least the channel time of the weights homed there: at least the cheapest covering of
  `W - C` bytes, each weight costing `min(its smallest access / bandwidth, size /
  copy_bandwidth)` (relaxed to fractions of weights; cheapest per byte first).
  Activations are left out: one written into a window by its producer need never cross.

A solution's waits and the copies and accesses that the relaxations drop are what the
bounds leave out.
"""
from __future__ import annotations

import numpy as np

from memplace.model.instance import Instance

# Rounding guard: the bound sums in another order than the simulator; scaling it down by
# far more than the rounding of a few thousand additions keeps it a bound.
SAFETY = 1.0 - 1e-12


def fastest_bound(instance: Instance) -> float:
    """Every access at the fastest level's bandwidth, capacity ignored."""
    i = instance
    fastest = float(i.bandwidth.max())
    total = 0.0
    for k in range(i.n_ops):
        memory = float(i.op_bytes[i.op_ptr[k]:i.op_ptr[k + 1]].sum()) / fastest
        total += max(float(i.compute[k]), memory)
    return total * SAFETY


def op_memory_bound(instance: Instance, k: int) -> float:
    """Least memory time of op k when its tensors, each in one level, fit the capacities."""
    i = instance
    lo, hi = int(i.op_ptr[k]), int(i.op_ptr[k + 1])
    tensors = i.op_tensor[lo:hi]
    bytes_ = i.op_bytes[lo:hi].astype(np.float64)
    sizes = i.size[tensors].astype(np.float64)
    order = np.argsort(-(bytes_ / sizes), kind="stable")
    levels = np.argsort(-i.bandwidth, kind="stable")
    room = [float(i.capacity[l]) if i.levels[l].capacity is not None else np.inf for l in levels]
    room[-1] = np.inf  # a relaxation: the slowest level takes whatever is left
    memory = 0.0
    j = 0
    for a in order.tolist():
        need = sizes[a]
        while need > 0:
            take = min(need, room[j])
            if take > 0:
                memory += bytes_[a] * (take / sizes[a]) / float(i.bandwidth[levels[j]])
                room[j] -= take
                need -= take
            if need > 0:
                j += 1  # the last level is unbounded, so j stays in range
    return float(memory)


def op_capacity_bound(instance: Instance) -> float:
    """Sum over ops of max(compute, the least memory time its tensors allow).

    `op_memory_bound` for every op, on Python floats read once from the arrays (the same
    operations in the same order, so the same value to the last bit): per op, NumPy's
    calls on three or four accesses cost 14 us, 1.4 s of CPU at 10^5 ops, which a solver
    spent past its deadline."""
    i = instance
    levels = np.argsort(-i.bandwidth, kind="stable").tolist()
    rooms = [float(i.capacity[l]) if i.levels[l].capacity is not None else np.inf for l in levels]
    rooms[-1] = np.inf  # a relaxation: the slowest level takes whatever is left
    bandwidths = [float(i.bandwidth[l]) for l in levels]
    ptr, tensor = i.op_ptr.tolist(), i.op_tensor.tolist()
    op_bytes, sizes = i.op_bytes.astype(np.float64).tolist(), i.size.astype(np.float64).tolist()
    total = 0.0
    for k, compute in enumerate(i.compute.tolist()):
        accesses = [(op_bytes[a], sizes[tensor[a]]) for a in range(ptr[k], ptr[k + 1])]
        accesses.sort(key=lambda access: -(access[0] / access[1]))  # stable, as argsort's
        room = list(rooms)
        memory = 0.0
        j = 0
        for bytes_, size in accesses:
            need = size
            while need > 0:
                take = min(need, room[j])
                if take > 0:
                    memory += bytes_ * (take / size) / bandwidths[j]
                    room[j] -= take
                    need -= take
                if need > 0:
                    j += 1  # the last level is unbounded, so j stays in range
        total += max(compute, memory)
    return total * SAFETY


def channel_bound(instance: Instance) -> float:
    """Least channel time of the last level spent on the weights that cannot be homed above it."""
    i = instance
    last = i.n_levels - 1
    if last == 0:
        return 0.0
    fast = float(sum(int(i.capacity[l]) for l in range(last)))
    weights = np.flatnonzero(i.is_weight == 1)
    excess = float(i.size[weights].sum()) - fast
    if excess <= 0:
        return 0.0
    bw, cbw = float(i.bandwidth[last]), float(i.copy_bandwidth[last])
    costs = []
    for t in weights.tolist():
        accesses = i.tensor_access[i.tensor_ptr[t]:i.tensor_ptr[t + 1]]
        smallest = float(i.op_bytes[accesses].min())
        size = float(i.size[t])
        costs.append((min(smallest / bw, size / cbw) / size, size))
    costs.sort()
    total = 0.0
    for per_byte, size in costs:
        take = min(size, excess)
        total += per_byte * take
        excess -= take
        if excess <= 0:
            break
    return total * SAFETY


def lower_bound(instance: Instance) -> float:
    """The best of the trivial bounds (seconds), computed once per instance (every
    residency solver states it; 0.5 s of CPU at 10^5 ops)."""
    return instance.derived("residency.lower_bound", lambda i: max(
        fastest_bound(i), op_capacity_bound(i), channel_bound(i)))
