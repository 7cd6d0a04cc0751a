"""Deterministic offset-assignment heuristics: place buffers one at a time, never revisit.

Every heuristic here is "an order, then a gap rule": buffers are taken in a
priority order and each gets, over its whole live range, either the lowest
free gap that fits (first fit) or the smallest one (best fit). The named
compiler heuristics differ only in the order:

- XLA's global decreasing-size best-fit: by size, or by live-range length
  (XLA's spatial and temporal variants), best fit.
- TFLite's greedy by size: by size, the lowest gap that fits (gap filling).
- TVM's greedy by conflicts: by the number of buffers whose lifespans
  intersect, first fit.

Lifespans are half-open `[lower, upper)`. A buffer that fits nowhere below
`capacity` gets offset -1 and the others are still placed.
"""
from __future__ import annotations

import numpy as np
from numba import njit

FIRST_FIT = 0
BEST_FIT = 1


@njit(cache=True, nogil=True)
def _round_up(x, a):
    return ((x + a - 1) // a) * a


@njit(cache=True, nogil=True)
def place_in_order(order, sizes, lowers, uppers, alignments, capacity, gap_rule):
    """Offsets for buffers placed in `order` by `gap_rule` (FIRST_FIT or BEST_FIT); -1 = did not fit."""
    n = sizes.size
    offsets = np.full(n, -1, np.int64)
    placed = np.empty(n, np.int64)  # placed buffer indices, kept sorted by offset
    nplaced = 0
    busy_lo = np.empty(n, np.int64)
    busy_hi = np.empty(n, np.int64)
    for k in range(order.size):
        b = order[k]
        size = sizes[b]
        a = alignments[b]
        # occupied address intervals of time-overlapping buffers, in offset order
        m = 0
        for j in range(nplaced):
            p = placed[j]
            if lowers[p] < uppers[b] and lowers[b] < uppers[p]:
                busy_lo[m] = offsets[p]
                busy_hi[m] = offsets[p] + sizes[p]
                m += 1
        best = -1
        best_gap = np.int64(-1)
        cursor = np.int64(0)
        for j in range(m + 1):
            gap_end = capacity if j == m else busy_lo[j]
            start = _round_up(cursor, a)
            if start + size <= gap_end:
                if gap_rule == FIRST_FIT:
                    best = start
                    break
                gap = gap_end - cursor
                if best < 0 or gap < best_gap:
                    best = start
                    best_gap = gap
            if j < m and busy_hi[j] > cursor:
                cursor = busy_hi[j]
        if best < 0:
            continue
        offsets[b] = best
        # insert b into the offset-sorted list of placed buffers
        pos = nplaced
        while pos > 0 and offsets[placed[pos - 1]] > best:
            placed[pos] = placed[pos - 1]
            pos -= 1
        placed[pos] = b
        nplaced += 1
    return offsets


@njit(cache=True, nogil=True)
def _order_by(primary, secondary):
    """Indices by decreasing primary, then decreasing secondary, then increasing index."""
    first = np.argsort(-secondary, kind="mergesort")
    second = np.argsort(-primary[first], kind="mergesort")
    return first[second]


@njit(cache=True, nogil=True)
def conflict_counts(lowers, uppers):
    """For each buffer, how many other buffers' lifespans intersect its own."""
    n = lowers.size
    counts = np.zeros(n, np.int64)
    for i in range(n):
        for j in range(i + 1, n):
            if lowers[i] < uppers[j] and lowers[j] < uppers[i]:
                counts[i] += 1
                counts[j] += 1
    return counts


@njit(cache=True, nogil=True)
def heuristic_offsets(sizes, lowers, uppers, alignments, capacity, which):
    """Offsets by heuristic number `which`: 0 best-fit by size, 1 best-fit by length,
    2 greedy by size (first fit), 3 greedy by conflicts (first fit)."""
    lengths = uppers - lowers
    if which == 0:
        return place_in_order(_order_by(sizes, lengths), sizes, lowers, uppers, alignments,
                              capacity, BEST_FIT)
    if which == 1:
        return place_in_order(_order_by(lengths, sizes), sizes, lowers, uppers, alignments,
                              capacity, BEST_FIT)
    if which == 2:
        return place_in_order(_order_by(sizes, lengths), sizes, lowers, uppers, alignments,
                              capacity, FIRST_FIT)
    counts = conflict_counts(lowers, uppers)
    return place_in_order(_order_by(counts, sizes), sizes, lowers, uppers, alignments,
                          capacity, FIRST_FIT)


HEURISTICS = {
    "best-fit-size": 0,       # XLA global decreasing-size best-fit (spatial)
    "best-fit-length": 1,     # XLA global decreasing-size best-fit (temporal)
    "greedy-size": 2,         # TFLite greedy by size with gap filling
    "greedy-conflicts": 3,    # TVM greedy by conflicts
}
