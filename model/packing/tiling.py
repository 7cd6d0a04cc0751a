"""Exact search for perfect tilings: instances whose live size is the same at every moment.

When every time section holds exactly `height` bytes (MiniMalloc's cut-like suites, a
rectangle cut into buffers; compiler buffers whose holes were filled), a packing at
`height` leaves no byte free anywhere, and a time-major search is far stronger than the
offset-major canonical search of `search`: sweep the sections in time order; in the
first section not yet full, the lowest free byte must be covered by a buffer that
*starts* in that section (every buffer alive earlier is placed already), and that
buffer's offset is exactly that byte. So each node branches only over the unplaced
buffers that start there and fit the free gap for their whole lifespan.

Pruning: each free gap of the current section must be filled exactly by buffers that
start there (a subset-sum check on the gap's length); identical buffers go in rank
order; and a failure memo on the *profile* at a section boundary (the offsets of the
placed buffers alive across it: all the future can see) cuts repeated sub-searches,
as a profile dynamic programme would.

Complete for perfect tilings: "infeasible" proves that no packing fits `height` bytes
(the peak live size, so no lower packing exists either). Plain Python: the branching is
narrow, so the node count, not the node cost, decides.
"""
from __future__ import annotations

import bisect
import sys
import time

import numpy as np

from memplace.model.packing.ordering import time_points
from memplace.model.packing.rules import INFEASIBLE, NODE_LIMIT, PACKED, TIME_LIMIT
SUBSET_BITS = 1 << 16  # gaps longer than this many size units skip the subset-sum check


def is_perfect(sizes: np.ndarray, lowers: np.ndarray, uppers: np.ndarray) -> bool:
    """True when the live size is the same in every section between the first start and
    the last end (the sections where the buffers live at all)."""
    if sizes.size == 0:
        return False
    points = time_points(lowers, uppers)
    delta = np.zeros(points.size, np.int64)
    np.add.at(delta, np.searchsorted(points, lowers), sizes)
    np.add.at(delta, np.searchsorted(points, uppers), -sizes)
    load = np.cumsum(delta)[:-1]
    return bool((load == load[0]).all())


def tile(sizes: np.ndarray, lowers: np.ndarray, uppers: np.ndarray, alignments: np.ndarray,
         height: int, deadline: float | None = None, node_limit: int | None = None
         ) -> tuple[int, np.ndarray, int]:
    """(status, offsets, nodes): a packing of a perfect tiling at exactly `height` (its
    live size in every section), INFEASIBLE when none exists, NODE_LIMIT or TIME_LIMIT
    (`deadline` in perf_counter seconds)."""
    n = int(sizes.size)
    offsets = np.full(n, -1, np.int64)
    sizes_l = [int(x) for x in sizes]
    align_l = [int(x) for x in alignments]
    points = time_points(lowers, uppers)
    lo = [int(x) for x in np.searchsorted(points, lowers)]
    hi = [int(x) for x in np.searchsorted(points, uppers)]
    nsec = points.size - 1
    starting: list[list[int]] = [[] for _ in range(nsec)]
    for i in sorted(range(n), key=lambda i: (-sizes_l[i], -(hi[i] - lo[i]), i)):
        starting[lo[i]].append(i)
    twin_prev = [-1] * n
    seen: dict[tuple[int, int, int, int], int] = {}
    for s in range(nsec):
        for i in starting[s]:
            key = (lo[i], hi[i], sizes_l[i], align_l[i])
            if key in seen:
                twin_prev[i] = seen[key]
            seen[key] = i
    # occupied byte intervals of each section, sorted: starts and ends in parallel lists
    occ_lo: list[list[int]] = [[] for _ in range(nsec)]
    occ_hi: list[list[int]] = [[] for _ in range(nsec)]
    occ_id: list[list[int]] = [[] for _ in range(nsec)]
    placed = [False] * n
    failed: set[tuple] = set()
    nodes = 0
    clock = [0]

    def free(i: int, a: int, first: int) -> bool:
        b = a + sizes_l[i]
        for s in range(first, hi[i]):
            k = bisect.bisect_right(occ_lo[s], a)
            if k and occ_hi[s][k - 1] > a:
                return False
            if k < len(occ_lo[s]) and occ_lo[s][k] < b:
                return False
        return True

    def put(i: int, a: int) -> None:
        b = a + sizes_l[i]
        for s in range(lo[i], hi[i]):
            k = bisect.bisect_left(occ_lo[s], a)
            occ_lo[s].insert(k, a)
            occ_hi[s].insert(k, b)
            occ_id[s].insert(k, i)
        placed[i] = True
        offsets[i] = a

    def take(i: int, a: int) -> None:
        for s in range(lo[i], hi[i]):
            k = bisect.bisect_left(occ_lo[s], a)
            del occ_lo[s][k]
            del occ_hi[s][k]
            del occ_id[s][k]
        placed[i] = False
        offsets[i] = -1

    def gaps(s: int) -> list[tuple[int, int]]:
        out, at = [], 0
        for a, b in zip(occ_lo[s], occ_hi[s]):
            if a > at:
                out.append((at, a))
            at = b
        if at < height:
            out.append((at, height))
        return out

    unit = int(np.gcd.reduce(sizes)) if n else 1
    unit = max(unit, 1)

    def fillable(length: int, pool: list[int]) -> bool:
        """Some subset of the unplaced sizes in `pool` sums to exactly `length` (a bitset
        of reachable sums, in units of the sizes' common divisor)."""
        if length % unit:
            return False
        target = length // unit
        reach = 1
        mask = (1 << (target + 1)) - 1
        for i in pool:
            if not placed[i] and sizes_l[i] <= length:
                reach |= (reach << (sizes_l[i] // unit)) & mask
                if reach >> target & 1:
                    return True
        return bool(reach >> target & 1)

    def profile(s: int) -> tuple:
        # all the future sees at the boundary before section s: which buffers are placed
        # where there (every placed buffer alive later is alive at s too)
        return (s, tuple(occ_id[s]), tuple(occ_lo[s]))

    def solve(s: int) -> int:
        nonlocal nodes
        while s < nsec and not gaps(s):
            s += 1
        if s == nsec:
            return PACKED
        key = None
        if not any(placed[i] for i in starting[s]):  # a section boundary: memo the profile
            key = profile(s)
            if key in failed:
                return INFEASIBLE
        section_gaps = gaps(s)
        pool = [i for i in starting[s] if not placed[i]]
        if sum(sizes_l[i] for i in pool) != sum(b - a for a, b in section_gaps):
            return _fail(key)
        # every gap has to be filled exactly by buffers starting here
        for a, b in section_gaps:
            if (b - a) // unit <= SUBSET_BITS and not fillable(b - a, pool):
                return _fail(key)
        # the most constrained corner: the bottom or the top of one of the section's gaps,
        # where a buffer starting here must sit with its bottom (top) on the gap's edge
        best = None
        for a, b in section_gaps:
            for bottom in (True, False):
                options = []
                for i in pool:
                    size = sizes_l[i]
                    at = a if bottom else b - size
                    if size > b - a or at % align_l[i] or \
                            (twin_prev[i] >= 0 and not placed[twin_prev[i]]):
                        continue
                    if free(i, at, s + 1):
                        options.append((i, at))
                if best is None or len(options) < len(best):
                    best = options
                    if len(best) <= 1:
                        break
            if len(best) <= 1:
                break
        tried = set()
        for i, at in best:
            shape = (sizes_l[i], hi[i], align_l[i])
            if shape in tried:
                continue
            nodes += 1
            if node_limit is not None and nodes > node_limit:
                raise _OutOfTime(NODE_LIMIT)
            if nodes & 255 == 0 and deadline is not None and time.perf_counter() > deadline:
                raise _OutOfTime(TIME_LIMIT)
            put(i, at)
            if solve(s) == PACKED:
                return PACKED
            take(i, at)
            tried.add(shape)
        return _fail(key)

    def _fail(key) -> int:
        if key is not None:
            failed.add(key)
        return INFEASIBLE

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * n + 100))
    try:
        status = solve(0)
    except _OutOfTime as stop:
        return stop.args[0], np.full(n, -1, np.int64), nodes
    finally:
        sys.setrecursionlimit(limit)
    if status != PACKED:
        return INFEASIBLE, np.full(n, -1, np.int64), nodes
    return PACKED, offsets, nodes


class _OutOfTime(Exception):
    pass
