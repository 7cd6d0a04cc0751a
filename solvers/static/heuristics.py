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

from memplace.model import Instance
from memplace.model.core.jit import njit
from memplace.model.static import kernels
from memplace.model.static.load_tree import empty_trees, tree_range_add, tree_range_max
from memplace.model.packing.offset_index import index_add, index_fit, new_offset_index


@njit(cache=True, nogil=True)
def greedy_fill_kernel(order, a, tree_max, tree_add, leaves, place, offsets):
    """Place tensors in `order`, each in the fastest level with room over its live
    range; unplaced tensors keep their level in `place` (the slowest, normally).

    Room means: the largest load of the level over the live range plus the tensor's
    size is within the capacity (a range max on the level's load tree), and on an
    addressed level also a free aligned address range below the capacity, first-fit
    among the tensors of the level sharing a live step (the offset index). Both take
    O(log n) plus what the index returns, so the fill is O(n log n) where scanning
    each live range step by step was O(n^2) with weights (live at every step)."""
    size, start, end, capacity = a.size, a.start, a.end, a.capacity
    addressed, alignment = a.addressed, a.alignment
    n_levels, n_tensors, n_ops = capacity.shape[0], size.shape[0], a.compute.shape[0]
    any_addressed = addressed.any()
    ix = new_offset_index(n_levels if any_addressed else 0, n_ops,
                          n_tensors if any_addressed else 0, 0, n_ops - 1)
    for i in range(order.shape[0]):
        t = order[i]
        s, e, sz = start[t], end[t], size[t]
        for l in range(n_levels):
            peak = tree_range_max(tree_max, tree_add, leaves, l, s, e)
            if peak + sz > capacity[l]:
                continue
            offset = -1
            if addressed[l]:
                offset = index_fit(ix, l, s, e, sz, alignment[l], capacity[l], False, start, end,
                                   offsets, size)
                if offset < 0:
                    continue
                index_add(ix, l, t, s, e, offset, sz)
            place[t] = l
            offsets[t] = offset
            tree_range_add(tree_max, tree_add, leaves, l, s, e, sz)
            break


def greedy_fill(inst: Instance, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Placement and offsets (-1 off addressed levels) from the shared greedy fill."""
    place = inst.slowest_placement()
    offsets = np.full(inst.n_tensors, -1, np.int64)
    greedy_fill_kernel(np.ascontiguousarray(order, np.int64), inst.arrays,
                       *empty_trees(inst.n_levels, inst.n_ops), place, offsets)
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
    return np.argsort(-score, kind="stable")


def order_greedy_size(inst: Instance) -> np.ndarray:
    return _descending(inst.size.astype(np.float64))


def order_xla(inst: Instance) -> np.ndarray:
    return _descending(xla_score(inst))


def order_topological(inst: Instance) -> np.ndarray:
    first_use = np.full(inst.n_tensors, inst.n_ops, np.int64)
    np.minimum.at(first_use, inst.op_tensor, inst.access_op)
    return np.lexsort((np.arange(inst.n_tensors), first_use))


@njit(cache=True, nogil=True)
def gains_to_fastest(place, a):
    """Latency saved by moving each tensor alone from `place` to level 0 (one compiled
    loop: a Python loop of kernel calls took 0.5 s at 10^5 tensors)."""
    gain = np.empty(a.tensor_ptr.shape[0] - 1)
    for t in range(gain.shape[0]):
        gain[t] = -kernels.move_delta_kernel(place, t, 0, a)
    return gain


def order_benefit_density(inst: Instance) -> np.ndarray:
    gain = gains_to_fastest(inst.slowest_placement(), inst.arrays)
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
