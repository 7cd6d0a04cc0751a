"""Compiler-style heuristic fills: deterministic, one pass, milliseconds (registered as
solvers in `compiler.py`; the other solvers start from them through `placements.py`).

All but `all-slowest` share one greedy fill: tensors in a priority order, each to
the fastest level with room over its whole live range (on an addressed level,
room means a free aligned address range, found first-fit). They differ only in
the order, which is what distinguishes the compilers they imitate:

- `greedy-size`: largest first (TVM / TFLite "greedy by size").
- `xla-msa`: XLA memory-space-assignment style: by the latency the tensor saves
  in memory-bound ops when fast (slowest level -> fastest level), divided by the
  square root of its size. Registered as `compiler`, the default tables measure
  speedups against (as EGRL measured against the NNP-I compiler and mallocMuZero
  against XLA's default).
- `topo-first-fit`: in schedule order of first access (weights by first use).
- `benefit-density`: by exact latency saved per byte, from the delta kernel on
  the slowest placement.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from memplace.model import Instance
from memplace.model.static import kernels


@njit(cache=True, nogil=True)
def greedy_fill_kernel(order, size, start, end, capacity, addressed, alignment, n_ops,
                       place, offsets):
    """Place tensors in `order`, each in the fastest level with room over its live
    range; unplaced tensors keep their level in `place` (the slowest, normally)."""
    n_levels = capacity.shape[0]
    load = np.zeros((n_levels, n_ops), np.int64)
    members = np.empty((n_levels, size.shape[0]), np.int64)
    n_members = np.zeros(n_levels, np.int64)
    lo = np.empty(size.shape[0], np.int64)
    hi = np.empty(size.shape[0], np.int64)
    for i in range(order.shape[0]):
        t = order[i]
        s, e, sz = start[t], end[t], size[t]
        for l in range(n_levels):
            peak = 0
            for k in range(s, e + 1):
                if load[l, k] > peak:
                    peak = load[l, k]
            if peak + sz > capacity[l]:
                continue
            offset = -1
            if addressed[l]:
                c = 0
                for j in range(n_members[l]):
                    u = members[l, j]
                    if start[u] <= e and s <= end[u]:
                        lo[c] = offsets[u]
                        hi[c] = offsets[u] + size[u]
                        c += 1
                order_c = np.argsort(lo[:c])
                candidate = 0
                for a in range(c):
                    j = order_c[a]
                    if lo[j] >= candidate + sz:
                        break
                    if hi[j] > candidate:
                        candidate = ((hi[j] + alignment[l] - 1) // alignment[l]) * alignment[l]
                if candidate + sz > capacity[l]:
                    continue
                offset = candidate
            place[t] = l
            offsets[t] = offset
            members[l, n_members[l]] = t
            n_members[l] += 1
            for k in range(s, e + 1):
                load[l, k] += sz
            break


def greedy_fill(inst: Instance, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Placement and offsets (-1 off addressed levels) from the shared greedy fill."""
    place = inst.slowest_placement()
    offsets = np.full(inst.n_tensors, -1, np.int64)
    greedy_fill_kernel(np.ascontiguousarray(order, np.int64), inst.size, inst.start, inst.end,
                       inst.capacity, inst.addressed, inst.alignment, inst.n_ops, place, offsets)
    return place, offsets


def xla_score(inst: Instance) -> np.ndarray:
    """Latency saved by moving each tensor from the slowest to the fastest level,
    counting only ops that are memory-bound in the slowest placement, / sqrt(size)."""
    slow = inst.n_levels - 1
    memory = np.zeros(inst.n_ops)
    np.add.at(memory, inst.access_op, inst.access_time[:, slow])
    bound = memory > inst.compute
    saved = np.where(bound[inst.access_op],
                     inst.access_time[:, slow] - inst.access_time[:, 0], 0.0)
    per_tensor = np.zeros(inst.n_tensors)
    np.add.at(per_tensor, inst.op_tensor, saved)
    return per_tensor / np.sqrt(inst.size)


def _descending(score: np.ndarray) -> np.ndarray:
    """Indices by decreasing score, ties to the smaller tensor index (deterministic)."""
    return np.lexsort((np.arange(score.size), -score))


def order_greedy_size(inst: Instance) -> np.ndarray:
    return _descending(inst.size.astype(np.float64))


def order_xla(inst: Instance) -> np.ndarray:
    return _descending(xla_score(inst))


def order_topological(inst: Instance) -> np.ndarray:
    first_use = np.full(inst.n_tensors, inst.n_ops, np.int64)
    np.minimum.at(first_use, inst.op_tensor, inst.access_op)
    return np.lexsort((np.arange(inst.n_tensors), first_use))


def order_benefit_density(inst: Instance) -> np.ndarray:
    slow = inst.slowest_placement()
    gain = np.array([-kernels.move_delta_kernel(slow, t, 0, inst.compute, inst.op_ptr,
                                                inst.op_tensor, inst.access_time, inst.tensor_ptr,
                                                inst.tensor_access, inst.access_op)
                     for t in range(inst.n_tensors)])
    return _descending(gain / inst.size)


ORDERS = {
    "greedy-size": order_greedy_size,
    "xla-msa": order_xla,
    "topo-first-fit": order_topological,
    "benefit-density": order_benefit_density,
}
COMPILER = "xla-msa"  # what `compiler` means


def heuristic_placements(inst: Instance) -> dict[str, np.ndarray]:
    """Every heuristic's (valid) placement, by name; for warm starts and seeds."""
    out = {"all-slowest": inst.slowest_placement()}
    for name, order in ORDERS.items():
        out[name] = greedy_fill(inst, order(inst))[0]
    return out


def randomized_greedy(inst: Instance, rng: np.random.Generator, noise: float = 0.5) -> np.ndarray:
    """The XLA-style fill with its scores multiplied by log-normal noise of sigma `noise`."""
    score = xla_score(inst) * np.exp(noise * rng.standard_normal(inst.n_tensors))
    return greedy_fill(inst, _descending(score))[0]
