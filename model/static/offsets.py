"""Offsets for static placement's addressed levels, from the packing library.

The packing library speaks MiniMalloc's half-open lifespans `[lower, upper)`; a
placement's live ranges are the spec's inclusive `[start, end]`. The conversion
(`upper = end + 1`) happens here, at the edge, and nowhere else.
"""
from __future__ import annotations

import math
import time

import numpy as np

from memplace.model.packing.packers import PACKERS
from memplace.model.static.rectification import Packer, first_fit_packer


def placement_packer(exact_budget_s: float = 5.0,
                     heuristic_budget_s: float | None = None) -> Packer:
    """A packer for addressed levels in `rectify` (its `Packer` signature:
    inclusive live ranges, priority = higher keeps its place): the best compiler
    heuristic, then the exact search (sharing `exact_budget_s` seconds over all calls,
    at most 2 s a call), then first-fit in rectify's priority, whose unplaced tensors
    tell rectify what to move down.

    With `heuristic_budget_s`, the heuristics get that many seconds over all calls (None:
    no limit; they take milliseconds on levels of a few thousand tensors, so only huge
    levels reach a budget of seconds): rectify packs again after each tensor it moves down, so on a large level (10^5 tensors) that fails
    to pack they would otherwise run once per tensor moved. Once both budgets are spent
    the packer is first-fit alone and says so (`pack.first_fit_only`), and rectify
    moves every unplaced tensor down at once, as it does with the canonical packer."""
    best, search = PACKERS["best-heuristic"], PACKERS["exact-search"]
    left = [exact_budget_s]
    heuristics_left = [math.inf if heuristic_budget_s is None else heuristic_budget_s]

    def pack(size, start, end, alignment, capacity, priority):
        aligns = np.full(size.size, alignment, np.int64)
        if heuristics_left[0] > 0:
            began = time.perf_counter()
            status, offsets, _ = best(size, start, end + 1, aligns, capacity, None)
            heuristics_left[0] -= time.perf_counter() - began
            if status == "packed":
                return offsets
        if left[0] > 0.05:
            began = time.perf_counter()
            # the heuristics above already failed: the search alone ("exact" would rerun them)
            status, offsets, _ = search(size, start, end + 1, aligns, capacity, min(left[0], 2.0))
            left[0] -= time.perf_counter() - began
            if status == "packed":
                return offsets
        pack.first_fit_only = heuristics_left[0] <= 0 and left[0] <= 0.05
        return first_fit_packer(size, start, end, alignment, capacity, priority)
    pack.first_fit_only = False
    return pack
