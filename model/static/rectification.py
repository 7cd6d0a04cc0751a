"""Canonical rectification (docs/spec.md section 6): any placement made valid, as a compiler would.

Levels are processed fastest first. Each capacitated level gets the spec's loop
(evict the tensor with the smallest traffic/size until every step fits). An
addressed level is then given offsets; tensors that cannot be given offsets move
down one level, smallest traffic/size first, before the next level is processed,
so what they add to it is rectified too. (The spec lists the capacity loop over
all levels before the offsets; interleaving per level is the reading under which
the result is valid. Without addressed levels the two are the same.)

The offset assignment is pluggable: a packing-library `Packer` (half-open lifespans,
so the spec's inclusive live ranges become `[start, end + 1)` here, at the edge).
The canonical assignment is first-fit in decreasing rank (spec order: the tensor
that would be evicted last is placed first); with it, all unplaced tensors move
down at once (moving them one at a time gives the same result, as first-fit never
revisits earlier choices). With a packer, the level is packed by it; if it fails,
the canonical first-fit says which tensors cannot be placed, they move one at a
time, smallest traffic/size first, and the level is packed again, until the packer
says it has given up for good (`first_fit_only`: its budgets are spent), when all move
at once as with the canonical first-fit.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from memplace.model.core.jit import njit
from memplace.model.static import kernels
from memplace.model.static.cost import as_placement
from memplace.model.core.errors import InstanceError
from memplace.model.instance import Instance
from memplace.model.packing.heuristics import FIRST_FIT, place_in_order
from memplace.model.packing.packers import Packer


class Rectified(NamedTuple):
    placement: np.ndarray  # int64 level per tensor
    offsets: np.ndarray | None  # int64 offset per tensor, -1 off addressed levels; None without them


class RectifyTables(NamedTuple):
    """Weights in rank order, and per step the activations live there in rank order."""

    weights_by_rank: np.ndarray
    step_ptr: np.ndarray
    step_tensor: np.ndarray
    by_rank_desc: np.ndarray  # every tensor, highest rank (kept first) first


def rectify_tables(instance: Instance) -> RectifyTables:
    """The tables the rectify kernels read, built once per instance."""
    return instance.derived("rectify_tables", _build_tables)


def _build_tables(instance: Instance) -> RectifyTables:
    rank = instance.rectify_rank
    weights = np.flatnonzero(instance.is_weight == 1)
    weights_by_rank = weights[np.argsort(rank[weights], kind="stable")].astype(np.int64)
    acts = np.flatnonzero(instance.is_weight == 0)
    acts = acts[np.argsort(rank[acts], kind="stable")]
    lengths = instance.end[acts] - instance.start[acts] + 1
    tensor_rep = np.repeat(acts, lengths)
    offsets_in = np.arange(tensor_rep.size) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    steps = np.repeat(instance.start[acts], lengths) + offsets_in
    order = np.argsort(steps, kind="stable")  # stable: rank order kept inside a step
    step_tensor = tensor_rep[order].astype(np.int64)
    step_ptr = np.zeros(instance.n_ops + 1, np.int64)
    np.cumsum(np.bincount(steps, minlength=instance.n_ops), out=step_ptr[1:])
    by_rank_desc = np.argsort(-rank, kind="stable").astype(np.int64)
    return RectifyTables(weights_by_rank, step_ptr, step_tensor, by_rank_desc)


def first_fit_offsets(size: np.ndarray, start: np.ndarray, end: np.ndarray, alignment: int,
                      capacity: int, rank: np.ndarray) -> np.ndarray:
    """The canonical offset assignment of tensors with inclusive live ranges: first-fit
    in decreasing `rank`; -1 where a tensor does not fit."""
    order = np.argsort(-rank, kind="stable").astype(np.int64)
    return place_in_order(order, size, start, end + 1, np.full(size.shape[0], alignment, np.int64),
                          np.int64(capacity), FIRST_FIT)


def rectify_capacity(instance: Instance, placement) -> np.ndarray:
    """docs/spec.md section 6's loop alone (capacities, no offsets)."""
    return _rectify(instance, placement, None, offsets_wanted=False).placement


def rectify(instance: Instance, placement, packer: Packer | None = None) -> Rectified:
    """A valid placement (with offsets on addressed levels) derived canonically."""
    return _rectify(instance, placement, packer, offsets_wanted=True)


def _rectify(instance: Instance, placement, packer: Packer | None,
             offsets_wanted: bool) -> Rectified:
    i = instance
    place = as_placement(i, placement).copy()
    load = kernels.load_kernel(place, i.arrays)
    tables = rectify_tables(i)
    offsets = np.full(i.n_tensors, -1, np.int64) if i.has_addressed_levels else None
    for l in range(i.n_levels):
        if l < i.n_levels - 1:
            kernels.rectify_level_kernel(place, load, l, i.arrays, tables)
        if offsets_wanted and i.addressed[l]:
            _pack_level(i, place, load, offsets, l, packer)
    return Rectified(place, offsets)


def _pack_level(i: Instance, place: np.ndarray, load: np.ndarray, offsets: np.ndarray,
                l: int, packer: Packer | None) -> None:
    members = np.flatnonzero(place == l)
    alignment, capacity = int(i.alignment[l]), int(i.capacity[l])
    while members.size:
        size, start, end = i.size[members], i.start[members], i.end[members]
        status = "failed"
        if packer is not None:
            status, got, _ = packer(size, start, end + 1, np.full(members.size, alignment, np.int64),
                                    capacity, None)
        if status != "packed":
            got = first_fit_offsets(size, start, end, alignment, capacity, i.rectify_rank[members])
        unplaced = members[got < 0]
        if unplaced.size == 0:
            offsets[members] = got
            return
        if l == i.n_levels - 1:
            names = ", ".join(i.tensor_label(int(t)) for t in unplaced[:3])
            raise InstanceError(f"level {l} {i.levels[l].name!r} is the last level and addressed, "
                                f"but {names} cannot be given offsets there")
        # First-fit never revisits a choice, so with it moving all unplaced tensors at
        # once equals moving them one at a time; a packer that has fallen back to
        # first-fit for good says so with `first_fit_only`.
        at_once = packer is None or getattr(packer, "first_fit_only", False)
        evict = unplaced if at_once else unplaced[[np.argmin(i.rectify_rank[unplaced])]]
        for t in evict:
            place[t] = l + 1
            load[l, i.start[t]:i.end[t] + 1] -= i.size[t]
            load[l + 1, i.start[t]:i.end[t] + 1] += i.size[t]
        members = np.setdiff1d(members, evict, assume_unique=True)


@njit(cache=True, nogil=True)
def repair_latency_batch_kernel(population, a, tables, out):
    """For every row of `population` (int64[P, T], changed in place): the canonical
    rectify (capacity loop level by level; on an addressed level, first-fit offsets
    by decreasing rank and the tensors left without one moved a level down), then
    the latency into `out[p]` (inf if an addressed last level cannot take a tensor)."""
    size, start, end, capacity, addressed = a.size, a.start, a.end, a.capacity, a.addressed
    n_pop, n_tensors = population.shape
    n_levels = capacity.shape[0]
    upper = end + 1  # the packing library's half-open lifespans
    order = np.empty(n_tensors, np.int64)
    for p in range(n_pop):
        place = population[p]
        load = kernels.load_kernel(place, a)
        feasible = True
        for l in range(n_levels):
            if l < n_levels - 1:
                kernels.rectify_level_kernel(place, load, l, a, tables)
            if addressed[l]:
                m = 0
                for i in range(n_tensors):
                    t = tables.by_rank_desc[i]
                    if place[t] == l:
                        order[m] = t
                        m += 1
                offsets = place_in_order(order[:m], size, start, upper,
                                         np.full(n_tensors, a.alignment[l], np.int64),
                                         capacity[l], FIRST_FIT)
                for i in range(m):
                    t = order[i]
                    if offsets[t] < 0:
                        if l == n_levels - 1:
                            feasible = False
                        else:
                            place[t] = l + 1
                            for k in range(start[t], end[t] + 1):
                                load[l, k] -= size[t]
                                load[l + 1, k] += size[t]
        if feasible:
            out[p] = kernels.latency_kernel(place, a.compute, a.op_ptr, a.op_tensor,
                                            a.access_time)
        else:
            out[p] = np.inf
    return out


def repair_latency_batch(inst: Instance, population: np.ndarray) -> np.ndarray:
    """Rectify every row of an int64[P, T] placement array in place; return the latencies."""
    out = np.empty(population.shape[0], np.float64)
    return repair_latency_batch_kernel(population, inst.arrays, rectify_tables(inst), out)
