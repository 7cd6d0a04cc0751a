"""Per-level load over the schedule as max segment trees: range add and range max in O(log n).

A level's load at step k (docs/spec.md section 3) is the sum of the sizes of its tensors
live at k. Placement heuristics ask "does tensor t fit level l over its live range
[s, e]" (the largest load over [s, e] plus its size within the capacity) and then
"add t to l over [s, e]"; annealing asks for the peak of a whole level. A plain
array answers the first two in O(e - s), which is O(n) for weights (live at every
step) and makes a fill of n tensors quadratic; these trees answer both in O(log n).

Layout (shared by every caller): one tree per level, rows of two 2-D int64 arrays
`tree_max[l, p]`, `tree_add[l, p]` of `2 * leaves` nodes, node 1 the root and the
leaves at `leaves + k`. `tree_add[l, p]` is what was added to p's whole range and
not passed down; `tree_max[l, p] = max(tree_max[l, 2p], tree_max[l, 2p+1]) + tree_add[l, p]`
(leaves: their load), so `tree_max[l, 1]` is the peak load of level l. Nothing is
ever pushed down: the range max adds the pending amounts of the ancestors it walks
through instead, so queries leave the arrays untouched (safe to share between
threads that only read).
"""
from __future__ import annotations

import numpy as np

from memplace.model.core.jit import njit


def tree_leaves(n_ops: int) -> int:
    """Leaves of a per-level tree: the smallest power of two >= n_ops (at least 1)."""
    p = 1
    while p < n_ops:
        p *= 2
    return p


def empty_trees(n_levels: int, n_ops: int) -> tuple[np.ndarray, np.ndarray, int]:
    """(tree_max, tree_add, leaves) of levels that hold nothing yet."""
    leaves = tree_leaves(n_ops)
    return (np.zeros((n_levels, 2 * leaves), np.int64), np.zeros((n_levels, 2 * leaves), np.int64),
            leaves)


@njit(cache=True, nogil=True, inline="always")
def _tree_apply(tree_max, tree_add, l, p, v):
    tree_max[l, p] += v
    tree_add[l, p] += v


@njit(cache=True, nogil=True, inline="always")
def _tree_rebuild(tree_max, tree_add, l, p):
    while p > 1:
        p >>= 1
        a = tree_max[l, 2 * p]
        b = tree_max[l, 2 * p + 1]
        tree_max[l, p] = (a if a > b else b) + tree_add[l, p]


@njit(cache=True, nogil=True)
def tree_range_add(tree_max, tree_add, leaves, l, lo, hi, v):
    """Add v to the load of level l at steps lo..hi (inclusive)."""
    a = lo + leaves
    b = hi + leaves + 1
    a0 = a
    b0 = b - 1
    while a < b:
        if a & 1:
            _tree_apply(tree_max, tree_add, l, a, v)
            a += 1
        if b & 1:
            b -= 1
            _tree_apply(tree_max, tree_add, l, b, v)
        a >>= 1
        b >>= 1
    _tree_rebuild(tree_max, tree_add, l, a0)
    _tree_rebuild(tree_max, tree_add, l, b0)


@njit(cache=True, nogil=True)
def tree_range_max(tree_max, tree_add, leaves, l, lo, hi):
    """Largest load of level l over steps lo..hi (inclusive; lo <= hi), exactly.

    The nodes covering [lo, hi] are collected bottom-up as in `tree_range_add`. The
    parent of a node collected on the left contains step lo (it straddles the left
    border), so its ancestors are the ancestors of leaf lo; likewise on the right with
    leaf hi. Each side's running max therefore only needs the pending adds of one
    path, added as the walk climbs past each height."""
    a = lo + leaves
    b = hi + leaves + 1
    pa = a  # ancestors of leaf lo, one per height
    pb = b - 1  # ancestors of leaf hi
    left = np.int64(0)
    right = np.int64(0)
    have_left = False
    have_right = False
    # Collect while nodes remain between a and b; keep climbing to the root after that, as
    # the pending adds above the last collected nodes count too.
    while a < b or pa > 1:
        if a < b:
            if a & 1:
                v = tree_max[l, a]
                if not have_left or v > left:
                    left = v
                have_left = True
                a += 1
            if b & 1:
                b -= 1
                v = tree_max[l, b]
                if not have_right or v > right:
                    right = v
                have_right = True
            a >>= 1
            b >>= 1
        pa >>= 1
        pb >>= 1
        if have_left:
            left += tree_add[l, pa]
        if have_right:
            right += tree_add[l, pb]
    if not have_left:
        return right
    if not have_right:
        return left
    return left if left > right else right
