"""The cost model (docs/spec.md sections 3 and 4) on an `Instance`, through the Numba kernels."""
from __future__ import annotations

import numpy as np

from memplace.model.static import kernels
from memplace.model.instance import Instance


def as_placement(instance: Instance, placement) -> np.ndarray:
    """A placement as a contiguous int64 array of level indices, checked for range."""
    place = np.ascontiguousarray(placement, dtype=np.int64)
    if place.shape != (instance.n_tensors,):
        raise ValueError(f"placement has shape {place.shape}, expected ({instance.n_tensors},)")
    if place.size and (place.min() < 0 or place.max() >= instance.n_levels):
        bad = int(np.flatnonzero((place < 0) | (place >= instance.n_levels))[0])
        raise ValueError(f"{instance.tensor_label(bad)}: level {place[bad]} is not in 0..{instance.n_levels - 1}")
    return place


def latency(instance: Instance, placement) -> float:
    """Latency in seconds of one placement."""
    i = instance
    return float(kernels.latency_kernel(as_placement(i, placement), i.compute, i.op_ptr,
                                        i.op_tensor, i.access_time))


def latency_batch(instance: Instance, population: np.ndarray) -> np.ndarray:
    """Latency of every row of a (P, T) integer array of placements."""
    i = instance
    pop = np.ascontiguousarray(population, dtype=np.int64)
    if pop.ndim != 2 or pop.shape[1] != i.n_tensors:
        raise ValueError(f"population has shape {pop.shape}, expected (P, {i.n_tensors})")
    out = np.empty(pop.shape[0], np.float64)
    return kernels.latency_batch_kernel(pop, i.compute, i.op_ptr, i.op_tensor, i.access_time, out)


def move_delta(instance: Instance, placement: np.ndarray, tensor: int, level: int) -> float:
    """Exact latency change of moving `tensor` to `level` (placement is not changed)."""
    return float(kernels.move_delta_kernel(placement, tensor, level, instance.arrays))


def load_profile(instance: Instance, placement) -> np.ndarray:
    """load[l, k]: bytes in level l live at step k."""
    return kernels.load_kernel(as_placement(instance, placement), instance.arrays)


def capacity_ok(instance: Instance, placement) -> bool:
    """True when no level with a capacity is over it at any step (offsets not checked)."""
    return bool(kernels.capacity_ok_kernel(load_profile(instance, placement), instance.capacity))


def slowest_latency(instance: Instance) -> float:
    return latency(instance, instance.slowest_placement())
