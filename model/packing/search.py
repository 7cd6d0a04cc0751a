"""The search kernel of the exact packer: depth-first over canonical packings.

Canonical packings. Let every buffer of a valid packing fall as low as it can
(to the aligned top of the highest time-overlapping buffer below it, or 0).
The packing stays valid, and taking its buffers by increasing offset (ties by
a fixed rank) each one sits exactly on the rounded-up *floor* of its lifespan
(the highest top of the already-placed buffers it overlaps). So it suffices
to search sequences in which buffers are placed on their floor with the pair
(offset, rank) strictly increasing. The last placed offset is a *watermark*:
no later buffer goes below it, and a buffer whose floor is under it is
*stranded*: it has to be lifted by another unplaced buffer first.

Section bound. The time axis is cut at every lifespan end into sections. In a
section the unplaced buffers stack on top of each other, the lowest no lower
than the lowest start any of them can still have (its floor, the watermark,
or for a stranded buffer the top of the lowest neighbour that could lift it);
if that plus their total size exceeds the capacity, the node is dead. With the
watermark this is strong: choosing a buffer that is not among the lowest
wastes the space below it in every other section, fatal at once where a
section has no slack.

Tiling. In a tight section (floor plus unplaced sizes equals the capacity) some
buffer must start exactly on the floor; across a run of tight sections on one
floor those buffers tile the run with neither gap nor overlap. When no set of
unplaced buffers that can start there tiles the run, the node is dead. This
catches, right after the placement that caused it, a dead end that otherwise
surfaces only many placements later (elsewhere on the time axis), after
chronological backtracking over unrelated choices.

Alignment. In a section, the unplaced buffers lie in [base, capacity) (base: the floor
or the watermark), with `free` bytes of it left over. Take an alignment A and the
unplaced buffers whose alignment A divides: each starts at a multiple of A, so the gap
above one of size z, up to the next of them, is -z modulo A long (above the topmost, up to
the capacity: capacity - z modulo A; below the lowest, from the base: -base modulo A).
Only free bytes and the other buffers fill those gaps, and a gap's bytes are congruent
to its need modulo A, so at least its need: the other buffers' sizes modulo A plus the
free bytes must cover the needs summed (the topmost chosen for the least). Checked at
every node, and before the first placement, for each alignment in the part (the first
eight); this is what proves MiniMalloc-like instances with 64- and 256-byte alignments
infeasible at their peak, where the canonical search and MiniMalloc enumerate for
minutes.

Dominance. A buffer placed at or above the top that some unplaced buffer of
the scope would have at its lowest start leaves, under that buffer, a hole it
could drop into: every packing below such a node can be lowered, so the node
is skipped (a packing with the least sum of offsets is never skipped).

Failure memo. Two orders of placing the same buffers can leave the same
floors (a stack of same-lifespan buffers, say). A scope's state is its placed
set and floors; when it fails under threshold t, every later visit under a
threshold >= t fails too (its canonical sequences are a subset), so a 128-bit
hash of failed states cuts the repeat.

Independent groups. When the unplaced buffers of the current scope fall apart
into groups that no lifespan connects, each group is packed on its own; the
failure of one fails the split without revisiting the others.

Re-ranking a group. The canonical argument holds for any fixed tie-break order
within an independent group, so a group entered afresh (a split, or a pending
group taken up) ranks its unplaced buffers again, as MiniMalloc's sub-solves do:
the largest total still to place over the buffer's sections first, ties by the
previous rank. Its threshold becomes (watermark, 0): every offset from the
watermark up, any rank (all of the group's lowered packings start there). The
changes are trailed and undone on backtracking, and the failure memo hashes the
rank vector with the state, so only states under the same ranking meet.

The oracles that check it are the brute-force searches in tests/test_packing.py.
"""
from __future__ import annotations

import time
import warnings

import numba
import numpy as np

# the clock is read in object mode every 1024 nodes, holding the GIL only then
warnings.filterwarnings("ignore", message=".*Code running in object mode",
                        category=numba.NumbaWarning)

from memplace.model.core.jit import njit
from memplace.model.packing.rules import (INFEASIBLE, NODE_LIMIT, PACKED,  # noqa: F401
                                             STOPPED, TIME_LIMIT)


@njit(cache=True, nogil=True)
def _round_up(x, a):
    return ((x + a - 1) // a) * a


@njit(cache=True, nogil=True)
def _now():
    with numba.objmode(t="float64"):
        t = time.perf_counter()
    return t


@njit(cache=True, nogil=True)
def _mix(x):
    """splitmix64's finaliser: a well-spread 64-bit hash of `x`."""
    x = np.uint64(x)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@njit(cache=True, nogil=True)
def _state_hash(zob, salt, floor, slo, shi):
    """Hash of a scope's state: the placed set (Zobrist `zob`), the scope and its floors."""
    h = zob ^ _mix(np.uint64(slo) * np.uint64(1000003) + np.uint64(shi) + salt)
    for s in range(slo, shi):
        h = _mix(h ^ (np.uint64(floor[s]) + salt))
    return h


@njit(cache=True, nogil=True)
def _dead(sizes, alignments, sec_ptr, sec_members, adj_ptr, adj, slo, shi, placed, maxfloor,
          floor, remaining, capacity, n, threshold, lift, stamp, node, rank, levels):
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
            if v * n + rank[c] > threshold and v < lowest:
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
            if v * n + rank[c] > threshold:
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
    # alignment residues (the docstring's "Alignment")
    for s in range(slo if levels.size else shi, shi):
        rem = remaining[s]
        if rem == 0:
            continue
        base = max(floor[s], watermark)
        free_bytes = capacity - base - rem
        members = sec_ptr[s + 1] - sec_ptr[s]
        for q in range(levels.size):
            a = levels[q]
            if free_bytes >= (a - 1) * (members + 2):
                continue  # the residues needed cannot exceed it
            need = 0
            have = 0
            aligned = 0
            last = a
            for k in range(sec_ptr[s], sec_ptr[s + 1]):
                c = sec_members[k]
                if placed[c]:
                    continue
                z = sizes[c]
                if alignments[c] % a == 0:
                    after = (a - z % a) % a
                    top = (capacity - z) % a
                    need += after
                    aligned += 1
                    if top - after < last:
                        last = top - after
                else:
                    have += z % a
            if aligned == 0:
                need = (capacity - base) % a
            else:
                need += (a - base % a) % a + last
            if have + free_bytes < need:
                return True
    return False


MAX_LEVELS = 8  # alignments the residue rule looks at (as _core.c)


@njit(cache=True, nogil=True)
def _levels(alignments):
    """The distinct alignments above 1, in order of first appearance, at most MAX_LEVELS."""
    out = np.empty(MAX_LEVELS, np.int64)
    m = 0
    for i in range(alignments.size):
        a = alignments[i]
        seen = a <= 1
        for q in range(m):
            if out[q] == a:
                seen = True
        if not seen and m < MAX_LEVELS:
            out[m] = a
            m += 1
    return out[:m]


@njit(cache=True, nogil=True)
def _untileable(sizes, alignments, sec_lo, sec_hi, sec_ptr, sec_members, slo, shi, placed,
                maxfloor, floor, remaining, capacity, threshold, reach, rank):
    """True when a run of *tight* sections (no slack: floor plus the unplaced sizes is the
    capacity) on one floor f cannot be tiled at f.

    In a tight section the byte at its floor must be covered, so some unplaced buffer
    starts exactly at f there; it can only if its lowest start is at most f, f is
    aligned for it and (canonical order) its key (f, rank) is above `threshold`, the
    last placement's. In a run of tight sections on the same floor these buffers meet
    neither overlap nor gap, so their lifespans (clipped to the run) tile the run end to
    end: a reachability walk over the run's section boundaries decides whether any
    tiling exists. Twins and stranding are ignored (a weaker, still sound test).
    `reach` holds a flag per boundary (scratch)."""
    n = sizes.size + 1
    s = slo
    while s < shi:
        if remaining[s] == 0 or floor[s] + remaining[s] != capacity:
            s += 1
            continue
        f = floor[s]
        a = s
        while s < shi and remaining[s] > 0 and floor[s] == f and \
                f + remaining[s] == capacity:
            s += 1
        b = s
        if b - a < 2:
            continue  # one section: the section bound already asks for a buffer at f
        for t in range(a, b + 1):
            reach[t] = 0
        reach[a] = 1
        for t in range(a, b):
            if reach[t] == 0:
                continue
            for k in range(sec_ptr[t], sec_ptr[t + 1]):
                c = sec_members[k]
                if placed[c] or (sec_lo[c] != t and t != a):
                    continue
                if f % alignments[c] != 0 or maxfloor[c] > f or f + sizes[c] > capacity \
                        or f * n + rank[c] <= threshold:
                    continue
                reach[min(sec_hi[c], b)] = 1
        if reach[b] == 0:
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
                remaining, capacity, slo, shi, threshold, out, prio, late, valley_first, rank):
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
    # dominance: a buffer placed at or above the top some unplaced buffer of the scope
    # would have at its lowest start leaves a hole that buffer could drop into
    gap_top = capacity + 1
    for c in range(n):
        if placed[c] or sec_lo[c] < slo or sec_hi[c] > shi:
            continue
        t = _round_up(maxfloor[c], alignments[c]) + sizes[c]
        if t < gap_top and sizes[c] > 0:
            gap_top = t
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
        if o + sizes[c] > capacity or o * (n + 1) + rank[c] <= threshold or o >= gap_top:
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
        prio[j] = (o * 2 + (1 if fit else 0)) * (n + 1) + rank[c]
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
    """Depth-first search over canonical packings (ranks start by index, then per group).

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
    # candidate lists of the depths on the current path, in trial order, end to end
    pool = np.empty(max(1024, 4 * n), np.int64)
    cand_start = np.zeros(n + 1, np.int64)
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
    reach = np.zeros(nsec + 1, np.int64)
    stamp = np.full(n, -1, np.int64)
    zkey1 = np.empty(n, np.uint64)
    zkey2 = np.empty(n, np.uint64)
    for i in range(n):
        zkey1[i] = _mix(np.uint64(2 * i + 1))
        zkey2[i] = _mix(np.uint64(2 * i + 2) * np.uint64(0x9E3779B97F4A7C15))
    zob1 = np.uint64(0)
    zob2 = np.uint64(0)
    hash1 = np.zeros(n + 1, np.uint64)
    hash2 = np.zeros(n + 1, np.uint64)
    memo_size = 1024
    while memo_size < min(node_limit, 1 << 20):
        memo_size *= 2
    memo_mask = np.uint64(memo_size - 1)
    memo_k1 = np.zeros(memo_size, np.uint64)
    memo_k2 = np.zeros(memo_size, np.uint64)
    memo_thr = np.zeros(memo_size, np.int64)
    key_base = np.int64(n + 1)
    # tie-break ranks 1..n (0 is a fresh group's threshold), re-ranked per group, trailed
    rank = np.arange(1, n + 1).astype(np.int64)
    levels = _levels(alignments)
    rank_top = np.zeros(n + 2, np.int64)
    grp = np.empty(n, np.int64)
    gkey = np.empty(n, np.int64)
    gval = np.empty(n, np.int64)
    rt_idx = np.empty(n + 16, np.int64)
    rt_val = np.empty(n + 16, np.int64)
    rtop = 0
    ph = np.uint64(0)
    # read the clock about every millisecond: nodes cost more as instances grow
    clock_mask = 1023 if n <= 256 else 63 if n <= 1024 else 15
    # the rules hold for the empty packing too (threshold 0: any buffer may go first)
    if _dead(sizes, alignments, sec_ptr, sec_members, adj_ptr, adj, 0, nsec, placed, maxfloor,
             floor, remaining, capacity, key_base, 0, lift, stamp, -2, rank, levels) or \
            _untileable(sizes, alignments, sec_lo, sec_hi, sec_ptr, sec_members, 0, nsec, placed,
                        maxfloor, floor, remaining, capacity, 0, reach, rank):
        return INFEASIBLE, 0
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
            old_lo = scope_lo[depth]
            old_hi = scope_hi[depth]
            rank_top[depth] = rtop
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
            # keep the tightest group; the others wait on the pending list
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
            start = cand_start[depth - 1] + ncand[depth - 1] if depth > 0 else 0
            if start + n > pool.size:
                grown = np.empty(2 * pool.size + n, np.int64)
                grown[:pool.size] = pool
                pool = grown
            cand_start[depth] = start
            if scope_lo[depth] != old_lo or scope_hi[depth] != old_hi:
                # a new group: rank its buffers afresh by the loads left to place (the
                # largest unplaced total over their sections first), ties by the old rank;
                # at the watermark any of them may go next
                glo = scope_lo[depth]
                ghi = scope_hi[depth]
                g = 0
                for c in range(n):
                    if placed[c] or sec_lo[c] < glo or sec_hi[c] > ghi:
                        continue
                    t = 0
                    for q in range(sec_lo[c], sec_hi[c]):
                        if remaining[q] > t:
                            t = remaining[q]
                    grp[g] = c
                    gkey[g] = t
                    gval[g] = rank[c]
                    g += 1
                for j in range(1, g):
                    c = grp[j]
                    t = gkey[j]
                    i = j
                    while i > 0 and (gkey[i - 1] < t or
                                     (gkey[i - 1] == t and rank[grp[i - 1]] > rank[c])):
                        grp[i] = grp[i - 1]
                        gkey[i] = gkey[i - 1]
                        i -= 1
                    grp[i] = c
                    gkey[i] = t
                for j in range(1, g):
                    v = gval[j]
                    i = j
                    while i > 0 and gval[i - 1] > v:
                        gval[i] = gval[i - 1]
                        i -= 1
                    gval[i] = v
                if rtop + g > rt_idx.size:
                    ns = 2 * rt_idx.size + g
                    a1 = np.empty(ns, np.int64)
                    a1[:rtop] = rt_idx[:rtop]
                    rt_idx = a1
                    a2 = np.empty(ns, np.int64)
                    a2[:rtop] = rt_val[:rtop]
                    rt_val = a2
                for j in range(g):
                    c = grp[j]
                    if rank[c] == gval[j]:
                        continue
                    rt_idx[rtop] = c
                    rt_val[rtop] = rank[c]
                    rtop += 1
                    ph ^= _mix(np.uint64(c * key_base + rank[c])) ^ \
                        _mix(np.uint64(c * key_base + gval[j]))
                    rank[c] = gval[j]
                if tried[depth] >= 0:
                    tried[depth] = (tried[depth] // key_base) * key_base
            # a scope state (placed set, floors) that failed before under a threshold no
            # higher than this one fails again: its canonical sequences are a superset
            h1 = _state_hash(zob1 ^ ph, np.uint64(0x9E3779B97F4A7C15), floor, scope_lo[depth],
                             scope_hi[depth])
            h2 = _state_hash(zob2 ^ (ph * np.uint64(0x9E3779B97F4A7C15)),
                             np.uint64(0xD1B54A32D192ED03), floor, scope_lo[depth],
                             scope_hi[depth])
            hash1[depth] = h1
            hash2[depth] = h2
            slot = np.int64(h1 & memo_mask)
            if memo_k1[slot] == h1 and memo_k2[slot] == h2 and memo_thr[slot] <= tried[depth]:
                ncand[depth] = 0
                next_cand[depth] = 0
                continue
            ncand[depth] = _candidates(sizes, alignments, sec_lo, sec_hi, twin_prev, placed,
                                       maxfloor, floor, remaining, capacity, scope_lo[depth],
                                       scope_hi[depth], tried[depth], pool[start:start + n], prio,
                                       late, valley_first, rank)
            next_cand[depth] = 0
        best = -1
        if next_cand[depth] < ncand[depth]:
            best = pool[cand_start[depth] + next_cand[depth]]
            next_cand[depth] += 1
        slo = scope_lo[depth]
        shi = scope_hi[depth]
        if best < 0:
            slot = np.int64(hash1[depth] & memo_mask)
            memo_k1[slot] = hash1[depth]
            memo_k2[slot] = hash2[depth]
            memo_thr[slot] = tried[depth]
            target = fail_to[depth]
            if target < 0:
                return INFEASIBLE, nodes
            for d in range(depth - 1, target - 1, -1):
                zob1 ^= zkey1[chosen[d]]
                zob2 ^= zkey2[chosen[d]]
                _undo(chosen[d], sizes, sec_lo, sec_hi, placed, offsets, floor, remaining, cross,
                      floor_trail, floor_top[d], maxfloor, mf_trail_idx, mf_trail_val,
                      mf_top[d], mf_top[d + 1])
            while rtop > rank_top[target + 1]:
                rtop -= 1
                c = rt_idx[rtop]
                ph ^= _mix(np.uint64(c * key_base + rank[c])) ^ \
                    _mix(np.uint64(c * key_base + rt_val[rtop]))
                rank[c] = rt_val[rtop]
            depth = target
            continue
        b = best
        o = _round_up(maxfloor[b], alignments[b])
        best_key = o * key_base + rank[b]
        nodes += 1
        if nodes > node_limit:
            return NODE_LIMIT, nodes
        if (nodes & clock_mask) == 0:
            if stop[0] != 0:
                return STOPPED, nodes
            if deadline >= 0.0 and _now() > deadline:
                return TIME_LIMIT, nodes
        top = o + sizes[b]
        placed[b] = True
        zob1 ^= zkey1[b]
        zob2 ^= zkey2[b]
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
                 maxfloor, floor, remaining, capacity, key_base, best_key, lift, stamp, nodes,
                 rank, levels) \
                or _untileable(sizes, alignments, sec_lo, sec_hi, sec_ptr, sec_members, slo,
                               shi, placed, maxfloor, floor, remaining, capacity, best_key,
                               reach, rank):
            zob1 ^= zkey1[b]
            zob2 ^= zkey2[b]
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
