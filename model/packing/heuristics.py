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

from memplace.model.core.jit import njit
from memplace.model.packing.offset_index import index_add, index_fit, new_offset_index
from memplace.model.packing.rules import BEST_FIT, FIRST_FIT, HEURISTICS  # noqa: F401


@njit(cache=True, nogil=True)
def place_in_order(order, sizes, lowers, uppers, alignments, capacity, gap_rule):
    """Offsets for buffers placed in `order` by `gap_rule` (FIRST_FIT or BEST_FIT); -1 = did not fit.

    Gaps are those left by the placed buffers whose lifespans intersect, in offset
    order; the offset index (`memplace.model.packing.offset_index`) finds them in
    O(log n) plus the buffers to step over, over lifespans renumbered by the rank of
    their ends (which keeps every intersection), so the whole is O(n log n) where a
    scan of every placed buffer was O(n^2)."""
    offsets = np.full(sizes.size, -1, np.int64)
    _place(order, sizes, lowers, uppers, alignments, capacity, gap_rule, offsets, False)
    return offsets


@njit(cache=True, nogil=True)
def place_around(order, sizes, lowers, uppers, alignments, capacity, gap_rule, fixed):
    """`place_in_order` around fixed buffers: those with `fixed[b] >= 0` keep that offset
    (they enter the index first); the others in `order` are placed by `gap_rule`. The
    large-neighbourhood search of `memplace.model.packing.anytime` re-packs a window this way."""
    offsets = fixed.copy()
    _place(order, sizes, lowers, uppers, alignments, capacity, gap_rule, offsets, True)
    return offsets


@njit(cache=True, nogil=True)
def _place(order, sizes, lowers, uppers, alignments, capacity, gap_rule, offsets, keep):
    """Fill `offsets` for the buffers of `order`, as the C core's `place_core` does: with
    `keep`, the buffers whose offset is already >= 0 stay there (entered first) and are
    skipped in `order`; every other buffer gets its gap or stays as it is (-1)."""
    n = sizes.size
    if n == 0:
        return
    points = np.unique(np.concatenate((lowers, uppers)))
    first = np.searchsorted(points, lowers)  # inclusive steps over ranks
    last = np.searchsorted(points, uppers) - 1
    ix = new_offset_index(1, last.max() + 1, n, first.min(), last.max())
    if keep:
        for b in range(n):
            if offsets[b] >= 0:
                index_add(ix, 0, b, first[b], last[b], offsets[b], sizes[b])
    best_fit = gap_rule == BEST_FIT
    for k in range(order.size):
        b = order[k]
        if keep and offsets[b] >= 0:
            continue
        at = index_fit(ix, 0, first[b], last[b], sizes[b], alignments[b], capacity, best_fit,
                       first, last, offsets, sizes)
        if at < 0:
            continue
        offsets[b] = at
        index_add(ix, 0, b, first[b], last[b], at, sizes[b])


@njit(cache=True, nogil=True)
def _order_by(primary, secondary):
    """Indices by decreasing primary, then decreasing secondary, then increasing index."""
    first = np.argsort(-secondary, kind="mergesort")
    second = np.argsort(-primary[first], kind="mergesort")
    return first[second]


@njit(cache=True, nogil=True)
def conflict_counts(lowers, uppers):
    """For each buffer, how many other buffers' lifespans intersect its own: all others
    but those ending at or before its start and those starting at or after its end
    (two sorted searches per buffer, O(n log n))."""
    ends = np.sort(uppers)
    starts = np.sort(lowers)
    n = lowers.size
    counts = np.empty(n, np.int64)
    for i in range(n):
        before = np.searchsorted(ends, lowers[i], side="right")
        after = n - np.searchsorted(starts, uppers[i], side="left")
        counts[i] = n - 1 - before - after
    return counts


@njit(cache=True, nogil=True)
def heuristic_offsets(sizes, lowers, uppers, alignments, capacity, which):
    """Offsets by heuristic number `which`: 0 best-fit by size, 1 best-fit by length,
    2 greedy by size (first fit), 3 greedy by conflicts (first fit)."""
    lengths = uppers - lowers
    if which == 1:
        order = _order_by(lengths, sizes)
    elif which == 3:
        order = _order_by(conflict_counts(lowers, uppers), sizes)
    else:
        order = _order_by(sizes, lengths)
    return place_in_order(order, sizes, lowers, uppers, alignments, capacity,
                          BEST_FIT if which < 2 else FIRST_FIT)
