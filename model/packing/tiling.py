"""Exact search for perfect tilings: instances whose live size is the same at every moment.

When every time section holds exactly `height` bytes (MiniMalloc's cut-like suites, a
rectangle cut into buffers; compiler buffers whose holes were filled), a packing at
`height` leaves no byte free anywhere: it is an exact cover of the `time x address`
rectangle, and it is found as exact covers are (Knuth's Algorithm X), by branching where
the fewest choices are left.

Buffers are stacked from the bottom with no hole, so the state is the *skyline*: each
section's floor, the bytes its placed buffers cover. Take a *valley*, a run of sections on
one floor f whose neighbours are higher (or full, or the ends of time). In every packing
that extends the state, the byte f of the valley's first section is covered by a buffer
that sits exactly on f (everything below is placed), that cannot reach into the higher
neighbours (their byte f is covered), so starts in that first section and ends within the
valley; symmetrically for its last section. So a valley edge is a complete choice point:
its options are the unplaced buffers starting (ending) there, fitting the valley, aligned
at f. The search branches on the edge with the fewest options over *every* valley of the
skyline (no option: the node is dead; one: a forced move), not on the lowest floor (the
offset-major `search`) or the first unfilled section in time: both of those commit early
choices whose failure shows up only much later, after chronological backtracking over
unrelated ones.

Identical buffers go in one order; a failure memo on the placed set (which fixes the
skyline: each floor is the sum of the placed sizes there) cuts repeated sub-searches.
`seed` shuffles the order options are tried in, for restarts with a growing node limit
(`exact` runs one per round): one fixed order has a heavy tail of search times.

Complete for perfect tilings: "infeasible" proves that no packing fits `height` bytes
(the peak live size, so no lower packing exists either). Plain Python: the branching is
narrow, so the node count, not the node cost, decides.
"""
from __future__ import annotations

import random
import sys
import time

import numpy as np

from memplace.model.packing.rules import INFEASIBLE, NODE_LIMIT, PACKED, TIME_LIMIT
from memplace.model.packing.timeline import live_load, time_points


def is_perfect(sizes: np.ndarray, lowers: np.ndarray, uppers: np.ndarray) -> bool:
    """True when the live size is the same in every section between the first start and
    the last end (the sections where the buffers live at all)."""
    if sizes.size == 0:
        return False
    load = live_load(sizes, lowers, uppers)[0][:-1]
    return bool((load == load[0]).all())


def tile(sizes: np.ndarray, lowers: np.ndarray, uppers: np.ndarray, alignments: np.ndarray,
         height: int, deadline: float | None = None, node_limit: int | None = None,
         seed: int | None = None) -> tuple[int, np.ndarray, int]:
    """(status, offsets, nodes): a packing of a perfect tiling at exactly `height` (its
    live size in every section), INFEASIBLE when none exists, NODE_LIMIT or TIME_LIMIT
    (`deadline` in perf_counter seconds). `seed` None tries the options of a choice
    point largest first; a seed tries them in a random order of its own."""
    n = int(sizes.size)
    size = [int(x) for x in sizes]
    align = [int(x) for x in alignments]
    points = time_points(lowers, uppers)
    lo = [int(x) for x in np.searchsorted(points, lowers)]
    hi = [int(x) for x in np.searchsorted(points, uppers)]
    nsec = points.size - 1
    order = sorted(range(n), key=lambda i: (-size[i], -(hi[i] - lo[i]), i))
    if seed is not None:
        random.Random(seed).shuffle(order)
    starting: list[list[int]] = [[] for _ in range(nsec + 1)]  # by first section, in order
    ending: list[list[int]] = [[] for _ in range(nsec + 1)]    # by section after the last
    twin_prev = [-1] * n  # identical buffers: each waits for the one before it
    seen: dict[tuple[int, int, int, int], int] = {}
    for i in order:
        starting[lo[i]].append(i)
        ending[hi[i]].append(i)
        key = (lo[i], hi[i], size[i], align[i])
        if key in seen:
            twin_prev[i] = seen[key]
        seen[key] = i
    keys = random.Random(0x5EED).getrandbits
    zkey = [keys(128) for _ in range(n)]  # Zobrist keys of the placed set
    floor = [0] * nsec
    placed = [False] * n
    offsets = np.full(n, -1, np.int64)
    failed: set[int] = set()
    nodes = 0
    state = 0

    def options(pool: list[int], f: int, a: int, b: int) -> list[int]:
        return [c for c in pool
                if not placed[c] and a <= lo[c] and hi[c] <= b and f % align[c] == 0
                and f + size[c] <= height and (twin_prev[c] < 0 or placed[twin_prev[c]])]

    def choice() -> tuple[list[int], int] | None:
        """The valley edge with the fewest options, and its floor; None when every
        section is full."""
        best: tuple[list[int], int] | None = None
        s = 0
        while s < nsec:
            f = floor[s]
            a = s
            while s < nsec and floor[s] == f:
                s += 1
            if f >= height:
                continue
            if (a > 0 and floor[a - 1] < f) or (s < nsec and floor[s] < f):
                continue  # not a valley: a lower neighbour's buffers may reach into it
            for pool in (starting[a], ending[s]):
                got = options(pool, f, a, s)
                if best is None or len(got) < len(best[0]):
                    best = (got, f)
                    if not got:
                        return best
        return best

    def solve() -> bool:
        nonlocal nodes, state
        if state in failed:
            return False
        picked = choice()
        if picked is None:
            return True
        candidates, f = picked
        for c in candidates:
            nodes += 1
            if node_limit is not None and nodes > node_limit:
                raise _OutOfTime(NODE_LIMIT)
            if nodes & 255 == 0 and deadline is not None and time.perf_counter() > deadline:
                raise _OutOfTime(TIME_LIMIT)
            placed[c] = True
            offsets[c] = f
            state ^= zkey[c]
            for s in range(lo[c], hi[c]):
                floor[s] = f + size[c]
            if solve():
                return True
            for s in range(lo[c], hi[c]):
                floor[s] = f
            state ^= zkey[c]
            placed[c] = False
            offsets[c] = -1
        failed.add(state)
        return False

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * n + 100))
    try:
        packed = solve()
    except _OutOfTime as stop:
        return stop.args[0], np.full(n, -1, np.int64), nodes
    finally:
        sys.setrecursionlimit(limit)
    if not packed:
        return INFEASIBLE, np.full(n, -1, np.int64), nodes
    return PACKED, offsets, nodes


class _OutOfTime(Exception):
    pass
