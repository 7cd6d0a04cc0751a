"""XLA's cost analysis over fixed homes, and msa's buffer order (docs/spec.md section 12).

Every op's time with each tensor served by its home (section 4's `max(compute, memory)`,
no channel contention), and what one access saves when its tensor is served by a faster
level instead. msa's allocator, the mallocGame and the GA's decoder all order buffers
and pick prefetch starts from these figures; what a solution is worth is always the
simulated latency.
"""
from __future__ import annotations

import numpy as np

from memplace.model.instance import Instance


class CostAnalysis:
    """Op times with the homes (`elapsed`, `memory`: seconds per op) and access savings."""

    def __init__(self, instance: Instance, homes: np.ndarray):
        i = self.instance = instance
        self.homes = np.asarray(homes, np.int64)
        seconds = i.op_bytes / i.bandwidth[self.homes[i.op_tensor]]
        self.memory = np.bincount(i.access_op, weights=seconds, minlength=i.n_ops)
        self.elapsed = np.maximum(i.compute, self.memory)

    def saving(self, t: int, k: int, b: int, level: int) -> float:
        """Seconds op k saves when its access of b bytes to t is served by `level`."""
        i = self.instance
        bw = i.bandwidth
        memory = self.memory[k] - b / bw[self.homes[t]] + b / bw[level]
        return float(self.elapsed[k] - max(i.compute[k], memory))

    def access_savings(self, level: int) -> np.ndarray:
        """`saving` of every access (in the instance's access order) served by `level`,
        every other access of its op staying home."""
        i = self.instance
        home = self.homes[i.op_tensor]
        faster = (self.memory[i.access_op] - i.op_bytes / i.bandwidth[home]
                  + i.op_bytes / i.bandwidth[level])
        return self.elapsed[i.access_op] - np.maximum(i.compute[i.access_op], faster)


def buffer_order(instance: Instance, homes: np.ndarray) -> np.ndarray:
    """msa's order: the tensors not homed in level 0 whose accesses would save time there,
    by decreasing memory boundedness (the seconds all their accesses would save in level
    0, over the square root of the size), ties to the smaller index."""
    i = instance
    costs = CostAnalysis(i, homes)
    saved = np.bincount(i.op_tensor, weights=costs.access_savings(0), minlength=i.n_tensors)
    tensors = np.flatnonzero((costs.homes > 0) & (saved > 0))
    score = saved[tensors] / np.sqrt(i.size[tensors])
    return tensors[np.lexsort((tensors, -score))].astype(np.int64)
