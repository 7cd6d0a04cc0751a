"""Exact offset assignment: a depth-first search over canonical packings.

The search rests on three facts about the dynamic storage allocation problem.

Canonical packings. Let every buffer of a valid packing fall as low as it can
(to the aligned top of the highest time-overlapping buffer below it, or 0).
The packing stays valid, and taking its buffers by increasing offset (ties by
a fixed rank) each one sits exactly on the rounded-up *floor* of its lifespan
(the highest top of the already-placed buffers it overlaps). So it suffices
to search sequences in which buffers are placed on their floor with the pair
(offset, rank) strictly increasing. The last placed offset is a *watermark*:
no later buffer goes below it.

Section bound. The time axis is cut at every lifespan end into sections. In a
section, the unplaced buffers stack on top of each other, the lowest no lower
than the watermark or its own floor; if that plus their total size exceeds
the capacity, the partial packing is dead. With the watermark this is strong:
choosing a buffer that is not among the lowest wastes the space below it in
every other section, and in a section without slack that is fatal at once.

Independent parts. Buffers whose lifespans do not cross a time cut can be
packed on either side of it independently; the driver splits there.

The kernel runs under a node limit; the driver restarts with another static
order (the tie-breaking rank) and a doubled limit, as long as time is left.
Exhausting the search without a node-limit stop proves infeasibility.
"""
from __future__ import annotations

import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import numba
import numpy as np
from numba import njit

# the clock is read in object mode every 1024 nodes, holding the GIL only then
warnings.filterwarnings("ignore", message=".*Code running in object mode",
                        category=numba.NumbaWarning)

PACKED = 0
INFEASIBLE = 1
NODE_LIMIT = 2
TIME_LIMIT = 3
STOPPED = 4  # another search of the same problem finished first


@njit(cache=True, nogil=True)
def _round_up(x, a):
    return ((x + a - 1) // a) * a


@njit(cache=True, nogil=True)
def _now():
    with numba.objmode(t="float64"):
        t = time.perf_counter()
    return t


@njit(cache=True, nogil=True)
def _dead(sizes, alignments, sec_ptr, sec_members, adj_ptr, adj, slo, shi, placed, maxfloor,
          floor, remaining, capacity, n, threshold, lift, stamp, node):
    """True when, in some section of [slo, shi), the unplaced buffers cannot stack above
    their lowest possible start.

    `threshold` is the (offset, rank) key of the last placement: the watermark is
    its offset, and a buffer whose own key is not above it is *stranded*: it must
    first be lifted by an unplaced buffer it overlaps in time, which starts at or
    above the watermark. `lift`/`stamp` cache that bound for this `node`."""
    watermark = threshold // n
    for s in range(slo, shi):
        rem = remaining[s]
        if rem > 0 and max(floor[s], watermark) + rem > capacity:
            return True
    for s in range(slo, shi):
        rem = remaining[s]
        if rem == 0:
            continue
        base = max(floor[s], watermark)  # nothing here can start lower
        lowest = capacity
        # buffers free to go next first: one of them at `base` settles the section
        for k in range(sec_ptr[s], sec_ptr[s + 1]):
            c = sec_members[k]
            if placed[c]:
                continue
            v = _round_up(maxfloor[c], alignments[c])
            if v * n + c > threshold and v < lowest:
                lowest = v
                if v <= base:
                    break
        if lowest <= base or lowest + rem <= capacity:
            continue
        # only stranded buffers can still bring the section's lowest start down
        for k in range(sec_ptr[s], sec_ptr[s + 1]):
            c = sec_members[k]
            if placed[c]:
                continue
            v = _round_up(maxfloor[c], alignments[c])
            if v * n + c > threshold:
                continue
            if stamp[c] != node:
                stamp[c] = node
                best = capacity + 1
                for j in range(adj_ptr[c], adj_ptr[c + 1]):
                    d = adj[j]
                    if not placed[d]:
                        u = _round_up(maxfloor[d], alignments[d])
                        if u < watermark:
                            u = watermark
                        u += sizes[d]
                        if u < best:
                            best = u
                lift[c] = _round_up(best, alignments[c])
            v = lift[c]
            if v + sizes[c] > capacity:
                return True
            if v < lowest:
                lowest = v
                if lowest + rem <= capacity:
                    break
        if lowest + rem > capacity:
            return True
    return False


@njit(cache=True, nogil=True)
def _undo(b, sizes, sec_lo, sec_hi, placed, offsets, floor, remaining, cross, floor_trail, ft,
          maxfloor, mf_trail_idx, mf_trail_val, mt_from, mt_to):
    placed[b] = False
    offsets[b] = -1
    for s in range(sec_lo[b], sec_hi[b]):
        floor[s] = floor_trail[ft]
        remaining[s] += sizes[b]
        ft += 1
    for s in range(sec_lo[b] + 1, sec_hi[b]):
        cross[s] += 1
    for k in range(mt_to - 1, mt_from - 1, -1):
        maxfloor[mf_trail_idx[k]] = mf_trail_val[k]


@njit(cache=True, nogil=True)
def _candidates(sizes, alignments, sec_lo, sec_hi, twin_prev, placed, maxfloor, floor,
                remaining, capacity, slo, shi, threshold, out, prio, late, valley_first):
    """Fill `out` with the buffers that may come next in scope [slo, shi): key above
    `threshold`, in the order to try them; returns how many.

    Lowest offset first. Among the lowest, a buffer that spans its whole *valley*
    (the run of sections, not yet finished, whose floor is no higher than its offset)
    goes first when `valley_first`: it leaves no fragment beside it. Then by rank.
    """
    n = sizes.size
    # a buffer placed above `high` raises the watermark past the slack of some section:
    # dead unless it is the last buffer of every such section; the few that may live
    # are tried last, unsorted
    high = capacity
    tight = -1
    for s in range(slo, shi):
        if remaining[s] > 0 and capacity - remaining[s] < high:
            high = capacity - remaining[s]
            tight = s
    m = capacity + 1
    k = 0
    nlate = 0
    for c in range(n):
        if placed[c] or sec_lo[c] < slo or sec_hi[c] > shi:
            continue
        tp = twin_prev[c]
        if tp >= 0 and not placed[tp]:
            continue
        o = _round_up(maxfloor[c], alignments[c])
        if o + sizes[c] > capacity or o * n + c <= threshold:
            continue
        if o > high:
            # above `high`, section `tight` overflows unless this buffer is all it has left
            if not (sec_lo[c] <= tight < sec_hi[c] and remaining[tight] == sizes[c]):
                continue
            nlate += 1
            late[n - nlate] = c
            continue
        out[k] = c
        k += 1
        if o < m:
            m = o
    for j in range(k):
        c = out[j]
        o = _round_up(maxfloor[c], alignments[c])
        fit = n
        if o == m and valley_first:
            lo = sec_lo[c]
            hi = sec_hi[c]
            if (lo == slo or floor[lo - 1] > o or remaining[lo - 1] == 0) and \
                    (hi == shi or floor[hi] > o or remaining[hi] == 0):
                fit = 0
        prio[j] = (o * 2 + (1 if fit else 0)) * n + c
    # insertion sort by priority
    for j in range(1, k):
        v = prio[j]
        c = out[j]
        i = j
        while i > 0 and prio[i - 1] > v:
            prio[i] = prio[i - 1]
            out[i] = out[i - 1]
            i -= 1
        prio[i] = v
        out[i] = c
    for j in range(nlate):
        out[k + j] = late[n - 1 - j]
    return k + nlate


@njit(cache=True, nogil=True)
def search(sizes, alignments, sec_lo, sec_hi, nsec, adj_ptr, adj, sec_ptr, sec_members,
           twin_prev, capacity, valley_first, node_limit, deadline, stop, offsets):
    """Depth-first search over canonical packings of buffers ranked by index.

    Fills `offsets` and returns (status, nodes): PACKED, INFEASIBLE (search space
    exhausted), NODE_LIMIT or TIME_LIMIT (`deadline` in perf_counter seconds,
    negative for none), or STOPPED when `stop[0]` turns non-zero. `valley_first`
    picks the trial order of `_candidates`.

    Each depth works inside a *scope*, an interval of sections. When the unplaced
    buffers of a scope fall apart into time-disjoint groups, the depth keeps the
    tightest group and the others wait on a pending list; a group that turns out
    unpackable fails the whole split at once, without revisiting its siblings.
    """
    n = sizes.size
    placed = np.zeros(n, np.bool_)
    maxfloor = np.zeros(n, np.int64)
    floor = np.zeros(nsec, np.int64)
    remaining = np.zeros(nsec, np.int64)
    cross = np.zeros(nsec + 1, np.int64)   # unplaced buffers alive on both sides of cut s
    for i in range(n):
        for s in range(sec_lo[i], sec_hi[i]):
            remaining[s] += sizes[i]
        for s in range(sec_lo[i] + 1, sec_hi[i]):
            cross[s] += 1
    for s in range(nsec):
        if remaining[s] > capacity:
            return INFEASIBLE, 0
    total_width = 0
    for i in range(n):
        total_width += sec_hi[i] - sec_lo[i]
    floor_trail = np.empty(total_width + 1, np.int64)
    mf_trail_idx = np.empty(adj.size + 1, np.int64)
    mf_trail_val = np.empty(adj.size + 1, np.int64)
    chosen = np.empty(n + 1, np.int64)
    tried = np.empty(n + 1, np.int64)      # (offset, rank) key of the placement above each depth
    cand = np.empty((n + 1, n), np.int64)  # candidates of each depth, in trial order
    ncand = np.zeros(n + 1, np.int64)
    next_cand = np.zeros(n + 1, np.int64)
    prio = np.empty(n, np.int64)
    late = np.empty(n, np.int64)
    floor_top = np.zeros(n + 2, np.int64)  # trail sizes at entry of each depth
    mf_top = np.zeros(n + 2, np.int64)
    scope_lo = np.empty(n + 1, np.int64)
    scope_hi = np.empty(n + 1, np.int64)
    fail_to = np.empty(n + 1, np.int64)    # depth to resume at when this depth runs dry
    head = np.empty(n + 1, np.int64)       # pending groups (a linked list in the pool)
    pool_top = np.empty(n + 1, np.int64)
    npool = 2 * n + 4
    p_lo = np.empty(npool, np.int64)
    p_hi = np.empty(npool, np.int64)
    p_thr = np.empty(npool, np.int64)
    p_fail = np.empty(npool, np.int64)
    p_next = np.empty(npool, np.int64)
    comp_lo = np.empty(nsec + 1, np.int64)
    comp_hi = np.empty(nsec + 1, np.int64)
    comp_slack = np.empty(nsec + 1, np.int64)
    lift = np.zeros(n, np.int64)
    stamp = np.full(n, -1, np.int64)
    key_base = np.int64(n)
    nodes = 0
    depth = 0
    scope_lo[0] = 0
    scope_hi[0] = nsec
    fail_to[0] = -1
    head[0] = -1
    pool_top[0] = 0
    tried[0] = -1
    entering = True
    while True:
        if entering:
            entering = False
            # split the scope into time-disjoint groups of unplaced buffers
            watermark = tried[depth] // key_base if tried[depth] >= 0 else 0
            ncomp = 0
            s = scope_lo[depth]
            shi = scope_hi[depth]
            while s < shi:
                if remaining[s] == 0:
                    s += 1
                    continue
                start = s
                slack = capacity
                while True:
                    v = capacity - max(floor[s], watermark) - remaining[s]
                    if v < slack:
                        slack = v
                    s += 1
                    if s >= shi or cross[s] == 0:
                        break
                comp_lo[ncomp] = start
                comp_hi[ncomp] = s
                comp_slack[ncomp] = slack
                ncomp += 1
            while ncomp == 0:
                # scope complete: continue with a pending group, or finish
                e = head[depth]
                if e < 0:
                    return PACKED, nodes
                scope_lo[depth] = p_lo[e]
                scope_hi[depth] = p_hi[e]
                tried[depth] = p_thr[e]
                fail_to[depth] = p_fail[e]
                head[depth] = p_next[e]
                ncomp = 1
                comp_lo[0] = p_lo[e]
                comp_hi[0] = p_hi[e]
            if ncomp >= 2:
                first = 0
                for k in range(1, ncomp):
                    if comp_slack[k] < comp_slack[first]:
                        first = k
                for k in range(ncomp):
                    if k == first:
                        continue
                    e = pool_top[depth]
                    pool_top[depth] += 1
                    p_lo[e] = comp_lo[k]
                    p_hi[e] = comp_hi[k]
                    p_thr[e] = tried[depth]
                    p_fail[e] = fail_to[depth]
                    p_next[e] = head[depth]
                    head[depth] = e
                scope_lo[depth] = comp_lo[first]
                scope_hi[depth] = comp_hi[first]
            else:
                scope_lo[depth] = comp_lo[0]
                scope_hi[depth] = comp_hi[0]
            ncand[depth] = _candidates(sizes, alignments, sec_lo, sec_hi, twin_prev, placed,
                                       maxfloor, floor, remaining, capacity, scope_lo[depth],
                                       scope_hi[depth], tried[depth], cand[depth], prio,
                                       late, valley_first)
            next_cand[depth] = 0
        best = -1
        if next_cand[depth] < ncand[depth]:
            best = cand[depth, next_cand[depth]]
            next_cand[depth] += 1
        slo = scope_lo[depth]
        shi = scope_hi[depth]
        if best < 0:
            target = fail_to[depth]
            if target < 0:
                return INFEASIBLE, nodes
            for d in range(depth - 1, target - 1, -1):
                _undo(chosen[d], sizes, sec_lo, sec_hi, placed, offsets, floor, remaining, cross,
                      floor_trail, floor_top[d], maxfloor, mf_trail_idx, mf_trail_val,
                      mf_top[d], mf_top[d + 1])
            depth = target
            continue
        b = best
        o = _round_up(maxfloor[b], alignments[b])
        best_key = o * key_base + b
        nodes += 1
        if nodes > node_limit:
            return NODE_LIMIT, nodes
        if (nodes & 1023) == 0:
            if stop[0] != 0:
                return STOPPED, nodes
            if deadline >= 0.0 and _now() > deadline:
                return TIME_LIMIT, nodes
        top = o + sizes[b]
        placed[b] = True
        offsets[b] = o
        chosen[depth] = b
        ft = floor_top[depth]
        for s in range(sec_lo[b], sec_hi[b]):
            floor_trail[ft] = floor[s]
            floor[s] = top
            remaining[s] -= sizes[b]
            ft += 1
        for s in range(sec_lo[b] + 1, sec_hi[b]):
            cross[s] -= 1
        floor_top[depth + 1] = ft
        mt = mf_top[depth]
        for k in range(adj_ptr[b], adj_ptr[b + 1]):
            c = adj[k]
            if not placed[c] and maxfloor[c] < top:
                mf_trail_idx[mt] = c
                mf_trail_val[mt] = maxfloor[c]
                maxfloor[c] = top
                mt += 1
        mf_top[depth + 1] = mt
        if _dead(sizes, alignments, sec_ptr, sec_members, adj_ptr, adj, slo, shi, placed,
                 maxfloor, floor, remaining, capacity, key_base, best_key, lift, stamp, nodes):
            _undo(b, sizes, sec_lo, sec_hi, placed, offsets, floor, remaining, cross,
                  floor_trail, floor_top[depth], maxfloor, mf_trail_idx, mf_trail_val,
                  mf_top[depth], mt)
            continue
        depth += 1
        tried[depth] = best_key
        scope_lo[depth] = slo
        scope_hi[depth] = shi
        fail_to[depth] = depth - 1
        head[depth] = head[depth - 1]
        pool_top[depth] = pool_top[depth - 1]
        entering = True


# ---------------------------------------------------------------------------
# Driver: static orders, time sections, independent parts, restarts.

def _static_orders(sizes: np.ndarray, lowers: np.ndarray, uppers: np.ndarray) -> list[np.ndarray]:
    """Rankings tried in turn, each most-constrained first. "total" is the peak load over
    the buffer's lifespan, "width" its length, "area" width times size."""
    width = uppers - lowers
    area = width * sizes
    points = np.unique(np.concatenate([lowers, uppers]))
    lo = np.searchsorted(points, lowers)
    hi = np.searchsorted(points, uppers)
    load = np.zeros(points.size, np.int64)
    np.add.at(load, lo, sizes)
    np.add.at(load, hi, -sizes)
    load = np.cumsum(load)
    total = np.array([load[lo[i]:hi[i]].max() for i in range(sizes.size)], np.int64)
    idx = np.arange(sizes.size)
    # np.lexsort sorts by the last key first; negated keys sort decreasing
    keys = [
        (idx, -area, -width, -total),   # total, then width, then area
        (idx, -width, -area, -total),   # total, then area, then width
        (idx, -total, -area, -width),   # width, then area, then total
    ]
    return [np.lexsort(k) for k in keys]


# (static order, valley-first trial order) pairs tried in each round of restarts, and the
# node-limit growth per round. Chosen on MiniMalloc's challenging instances: no single
# pair is fast on all of them (valley-first helps B and C, hurts D and E's second part).
CONFIGS = ((0, True), (1, True), (1, False), (2, False))
LIMIT_GROWTH = 3


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


def _prepare(sizes, lowers, uppers, alignments):
    """Sections, time-overlap adjacency and section membership, buffers ranked by index."""
    n = sizes.size
    points = np.unique(np.concatenate([lowers, uppers]))
    sec_lo = np.searchsorted(points, lowers).astype(np.int64)
    sec_hi = np.searchsorted(points, uppers).astype(np.int64)
    nsec = points.size - 1
    overlap = (lowers[:, None] < uppers[None, :]) & (lowers[None, :] < uppers[:, None])
    np.fill_diagonal(overlap, False)
    adj_ptr = np.concatenate([[0], np.cumsum(overlap.sum(axis=1))]).astype(np.int64)
    adj = np.nonzero(overlap)[1].astype(np.int64)
    counts = np.zeros(nsec, np.int64)
    for i in range(n):
        counts[sec_lo[i]:sec_hi[i]] += 1
    sec_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    fill = sec_ptr[:-1].copy()
    sec_members = np.empty(sec_ptr[-1], np.int64)
    for i in range(n):
        for s in range(sec_lo[i], sec_hi[i]):
            sec_members[fill[s]] = i
            fill[s] += 1
    # identical buffers are interchangeable: place them in rank order only
    twin_prev = np.full(n, -1, np.int64)
    seen: dict[tuple[int, int, int, int], int] = {}
    for i in range(n):
        key = (int(lowers[i]), int(uppers[i]), int(sizes[i]), int(alignments[i]))
        if key in seen:
            twin_prev[i] = seen[key]
        seen[key] = i
    return sec_lo, sec_hi, nsec, adj_ptr, adj, sec_ptr, sec_members, twin_prev


def _solve_part(sizes, lowers, uppers, alignments, capacity, deadline, node_limit, workers):
    """(status, offsets, nodes) for one independent part.

    Each worker runs a stream of restarts over its share of CONFIGS, the node
    limit doubling after each pass, so the work wasted on unlucky orders stays
    within a constant factor of what the luckiest one needs. The first stream
    to settle the question (packed, infeasible or out of time) stops the others.
    """
    orders = _static_orders(sizes, lowers, uppers)
    prepared = [_prepare(sizes[rank], lowers[rank], uppers[rank], alignments[rank])
                for rank in orders]
    stop = np.zeros(1, np.int64)

    def stream(configs):
        nodes = 0
        limit = node_limit
        while True:
            for k, valley_first in configs:
                rank, prep = orders[k], prepared[k]
                ranked = np.full(sizes.size, -1, np.int64)
                status, used = search(sizes[rank], alignments[rank], *prep, np.int64(capacity),
                                      valley_first, np.int64(limit), float(deadline), stop,
                                      ranked)
                nodes += used
                if status == STOPPED:
                    return status, None, nodes
                if status in (PACKED, INFEASIBLE, TIME_LIMIT):
                    stop[0] = 1
                    offsets = np.full(sizes.size, -1, np.int64)
                    if status == PACKED:
                        offsets[rank] = ranked
                    return status, offsets, nodes
            limit *= LIMIT_GROWTH

    workers = max(1, min(workers, len(CONFIGS)))
    if workers == 1 or sizes.size < 24:
        return stream(CONFIGS)
    with ThreadPoolExecutor(workers) as pool:
        runs = [f.result() for f in [pool.submit(stream, CONFIGS[i::workers])
                                     for i in range(workers)]]
    nodes = sum(r[2] for r in runs)
    for wanted in (PACKED, INFEASIBLE, TIME_LIMIT):
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
                  node_limit: int = 1000, workers: int | None = None
                  ) -> tuple[int, np.ndarray, int]:
    """(status, offsets, nodes): PACKED with every offset, INFEASIBLE (proven) or TIME_LIMIT."""
    deadline = -1.0 if time_limit is None else time.perf_counter() + time_limit
    offsets = np.full(sizes.size, -1, np.int64)
    # empty buffers take no memory: offset 0 is aligned and meets nothing
    offsets[sizes == 0] = 0
    busy = np.flatnonzero(sizes > 0)
    total_nodes = 0
    timed_out = False
    # smallest parts first: an infeasible small part settles the question quickly
    for part in sorted((busy[p] for p in _parts(lowers[busy], uppers[busy])), key=len):
        status, got, nodes = _solve_part(sizes[part], lowers[part], uppers[part],
                                         alignments[part], capacity, deadline, node_limit,
                                         default_workers() if workers is None else workers)
        total_nodes += nodes
        if status == INFEASIBLE:
            return INFEASIBLE, np.full(sizes.size, -1, np.int64), total_nodes
        if status == TIME_LIMIT:
            timed_out = True
            break
        offsets[part] = got
    if timed_out:
        return TIME_LIMIT, np.full(sizes.size, -1, np.int64), total_nodes
    return PACKED, offsets, total_nodes
