"""Where first-fit puts a tensor's bytes, in O(log n) plus the tensors it must step over.

First-fit offset assignment (docs/spec.md section 5; rectification's canonical packer and the
compiler heuristics) gives a tensor the lowest aligned offset at which its bytes overlap
no tensor already placed in the level that shares a live step with it. Scanning every
placed tensor for the ones sharing a step, then sorting them, makes a level of n
tensors quadratic: with weights (live at every step) every tensor shares a step with
every weight, and a weight with everything. The lowest free offset depends only on the
union of the address ranges it must avoid, so this index keeps, per level:

- `wide`: the union of the address ranges of tensors live over the whole span
  (weights): every later tensor must avoid it;
- `footprint`: the union of the address ranges of every tensor placed: what a wide
  tensor must avoid;
- the other tensors, each filed once under the smallest node of a segment tree over the
  steps whose range holds its live range (a linked list per node: `head[l, p]` first,
  `next_tensor[t]` after t, -1 ends; `count[l, p]` tensors filed in p's subtree).
  A query for [s, e] walks down from the root, skipping nodes outside [s, e] or empty;
  a node inside [s, e] returns its whole subtree, a node straddling a border (at most
  two per height) checks its own tensors, which all cross its middle step: at most
  what the level holds at one step.

Unions are sorted disjoint half-open ranges (touching ranges merged: a tensor has at
least one byte, so no zero-width gap can take it). The lowest free offset is the same
whether the ranges to avoid are swept one by one or as their union, and in any order
among equal starts, so results equal the plain scan's bit for bit.

The index is a tuple of arrays (see `new_offset_index`) so that kernels can build and
pass it without a jitclass, and compiled kernels stay cacheable.
"""
from __future__ import annotations

import numpy as np

from memplace.model.core.jit import njit

_STACK = 192  # > 2 x tree height + 2 for any int64 step count


@njit(cache=True, nogil=True)
def new_offset_index(n_levels, n_steps, n_tensors, span_lo, span_hi):
    """An empty index of `n_levels` levels over steps 0..n_steps-1 for tensor ids below
    `n_tensors`; a tensor live over span_lo..span_hi (or more) counts as wide."""
    leaves = 1
    while leaves < n_steps:
        leaves *= 2
    span = np.array([span_lo, span_hi, leaves], np.int64)
    return (span,
            np.full((n_levels, 2 * leaves), -1, np.int64),  # head
            np.zeros((n_levels, 2 * leaves), np.int64),  # count
            np.full(n_tensors, -1, np.int64),  # next_tensor
            np.empty((n_levels, n_tensors + 1), np.int64),  # wide: lo, hi, size
            np.empty((n_levels, n_tensors + 1), np.int64),
            np.zeros(n_levels, np.int64),
            np.empty((n_levels, n_tensors + 1), np.int64),  # footprint: lo, hi, size
            np.empty((n_levels, n_tensors + 1), np.int64),
            np.zeros(n_levels, np.int64),
            np.empty(n_tensors, np.int64),  # scratch: tensors found, their lo and hi
            np.empty(n_tensors, np.int64),
            np.empty(n_tensors, np.int64))


@njit(cache=True, nogil=True)
def _union_add(lo, hi, n, l, a, b):
    """Add [a, b) to level l's sorted disjoint ranges `lo[l, :n[l]]`, `hi[l, :n[l]]`."""
    m = n[l]
    i = np.searchsorted(hi[l, :m], a)  # first range ending at or after a
    j = np.searchsorted(lo[l, :m], b, side="right")  # first range starting after b
    if i == j:
        for k in range(m, i, -1):
            lo[l, k] = lo[l, k - 1]
            hi[l, k] = hi[l, k - 1]
        lo[l, i] = a
        hi[l, i] = b
        n[l] = m + 1
        return
    new_lo = a if a < lo[l, i] else lo[l, i]
    new_hi = b if b > hi[l, j - 1] else hi[l, j - 1]
    lo[l, i] = new_lo
    hi[l, i] = new_hi
    gone = j - i - 1
    if gone:
        for k in range(i + 1, m - gone):
            lo[l, k] = lo[l, k + gone]
            hi[l, k] = hi[l, k + gone]
        n[l] = m - gone


@njit(cache=True, nogil=True)
def _overlapping(head, count, next_tensor, leaves, l, s, e, start, end, out):
    """Write into `out` the tensors filed under level l sharing a step with s..e; return
    how many."""
    node = np.empty(_STACK, np.int64)
    node_lo = np.empty(_STACK, np.int64)
    node_hi = np.empty(_STACK, np.int64)
    node[0] = 1
    node_lo[0] = 0
    node_hi[0] = leaves - 1
    depth = 1
    c = 0
    while depth > 0:
        depth -= 1
        p = node[depth]
        lo = node_lo[depth]
        hi = node_hi[depth]
        if count[l, p] == 0 or hi < s or e < lo:
            continue
        inside = s <= lo and hi <= e
        u = head[l, p]
        while u >= 0:
            if inside or (start[u] <= e and s <= end[u]):
                out[c] = u
                c += 1
            u = next_tensor[u]
        if lo < hi:
            mid = (lo + hi) // 2
            node[depth] = 2 * p
            node_lo[depth] = lo
            node_hi[depth] = mid
            node[depth + 1] = 2 * p + 1
            node_lo[depth + 1] = mid + 1
            node_hi[depth + 1] = hi
            depth += 2
    return c


@njit(cache=True, nogil=True)
def index_add(ix, l, t, s, e, offset, nbytes):
    """Record tensor t, live over steps s..e, at `offset` (`nbytes` bytes) in level l."""
    span, head, count, next_tensor = ix[0], ix[1], ix[2], ix[3]
    if s <= span[0] and e >= span[1]:
        _union_add(ix[4], ix[5], ix[6], l, offset, offset + nbytes)
    else:
        leaves = span[2]
        a = s + leaves
        b = e + leaves
        while a != b:
            a >>= 1
            b >>= 1
        next_tensor[t] = head[l, a]
        head[l, a] = t
        while a >= 1:
            count[l, a] += 1
            a >>= 1
    _union_add(ix[7], ix[8], ix[9], l, offset, offset + nbytes)


@njit(cache=True, nogil=True)
def index_fit(ix, l, s, e, need, alignment, capacity, best_fit, start, end, offsets, size):
    """Where `need` bytes live over steps s..e go in level l: the lowest (first fit) or
    the smallest-gap (best fit; ties to the lowest) multiple of `alignment` at which
    they overlap no tensor recorded there sharing one of those steps and end within
    `capacity`; -1 when there is none.

    Sweep the ranges to avoid in order of start, with `cursor` the highest end so far:
    a range starting above the cursor leaves the gap [cursor, its start), and the last
    gap ends at the capacity. First fit stops at the first gap that takes the bytes."""
    span = ix[0]
    found, found_lo, found_hi = ix[10], ix[11], ix[12]
    if s <= span[0] and e >= span[1]:
        other_lo, other_hi, n_other = ix[7][l], ix[8][l], ix[9][l]
        c = 0
    else:
        other_lo, other_hi, n_other = ix[4][l], ix[5][l], ix[6][l]
        c = _overlapping(ix[1], ix[2], ix[3], span[2], l, s, e, start, end, found)
        for i in range(c):
            u = found[i]
            found_lo[i] = offsets[u]
            found_hi[i] = offsets[u] + size[u]
        order = np.argsort(found_lo[:c])
        found_lo[:c] = found_lo[:c][order]
        found_hi[:c] = found_hi[:c][order]
    best = -1
    best_gap = 0
    cursor = 0
    i = 0
    j = 0
    while i < c or j < n_other:
        if j >= n_other or (i < c and found_lo[i] <= other_lo[j]):
            a, b = found_lo[i], found_hi[i]
            i += 1
        else:
            a, b = other_lo[j], other_hi[j]
            j += 1
        at = ((cursor + alignment - 1) // alignment) * alignment
        if at + need <= a:
            if not best_fit:
                return at if at + need <= capacity else -1
            if best < 0 or a - cursor < best_gap:
                best = at
                best_gap = a - cursor
        if b > cursor:
            cursor = b
    at = ((cursor + alignment - 1) // alignment) * alignment
    if at + need <= capacity and (best < 0 or capacity - cursor < best_gap):
        best = at
    return best
