"""Offsets for static placement's addressed levels, from the packing library.

The packing library speaks MiniMalloc's half-open lifespans `[lower, upper)`; a
placement's live ranges are the spec's inclusive `[start, end]`. The conversion
(`upper = end + 1`) happens here, at the edge, and nowhere else.
"""
from __future__ import annotations

import time

import numpy as np

from memplace.model.packing.packers import PACKERS
from memplace.model.static.rectification import Packer, first_fit_packer


def placement_packer(exact_budget_s: float = 5.0) -> Packer:
    """A packer for addressed levels in `rectify` (its `Packer` signature:
    inclusive live ranges, priority = higher keeps its place): the best compiler
    heuristic, then the exact search (sharing `exact_budget_s` seconds over all calls,
    at most 2 s a call), then first-fit in rectify's priority, whose unplaced tensors
    tell rectify what to move down."""
    best, exact = PACKERS["best-heuristic"], PACKERS["exact"]
    left = [exact_budget_s]

    def pack(size, start, end, alignment, capacity, priority):
        aligns = np.full(size.size, alignment, np.int64)
        status, offsets, _ = best(size, start, end + 1, aligns, capacity, None)
        if status == "packed":
            return offsets
        if left[0] > 0.05:
            began = time.perf_counter()
            status, offsets, _ = exact(size, start, end + 1, aligns, capacity, min(left[0], 2.0))
            left[0] -= time.perf_counter() - began
            if status == "packed":
                return offsets
        return first_fit_packer(size, start, end, alignment, capacity, priority)
    return pack
