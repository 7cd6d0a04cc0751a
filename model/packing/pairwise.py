"""Packing under MiniMalloc's whole model: gaps, partial windows and pinned offsets.

The fast packers (`heuristics`, `search`) work on rectangles: a buffer holds all
its bytes over all its lifespan. A buffer with gaps holds less, and a pinned one
cannot move, so these packers see the problem as MiniMalloc's solver does: as
pairwise constraints. For two buffers active at a common time, one lies below
the other by its *effective size* (`buffers.effective_size`): placing `j` above
`i` needs `o_j >= o_i + eff(i, j)`.

- `heuristic_offsets`: pinned buffers at their pins, then the others in a
  priority order, each at the lowest (first fit) or tightest (best fit) aligned
  offset that keeps every placed neighbour below or above it.
- `exact_offsets`: MiniMalloc's canonical search over these constraints: buffers
  are placed in increasing (offset, rank) order, each at its *minimum offset*
  (the highest `o_i + eff(i, j)` over placed neighbours `i`, or its pin), with
  the dominance rule (no buffer placed at or above the lowest top an unplaced one
  could still have) and a section bound (in every time slot, the watermark plus
  the bytes the unplaced buffers still hold there must fit). Restarts over
  static and randomised rankings with a growing node limit, as `exact` does.

It is plain Python: instances with gaps or pins are the small ones of
MiniMalloc's test suite and hand-made cases; rectangles go to the fast kernels.
"""
from __future__ import annotations

import time
from typing import Sequence

import numpy as np

from memplace.model.packing.buffers import Buffer, effective_size
from memplace.model.packing.ordering import features, random_order, static_orders

PACKED, INFEASIBLE, TIME_LIMIT = 0, 1, 3
FIRST_FIT, BEST_FIT = 0, 1
NODE_LIMIT = 1000
LIMIT_GROWTH = 2
SEED = 20231


def _round_up(x: int, a: int) -> int:
    return -(-x // a) * a


def conflicts(buffers: Sequence[Buffer]) -> list[list[tuple[int, int, int]]]:
    """Per buffer i, its neighbours as (j, lift, drop): every j active at a common time,
    with lift = eff(i, j) (j above i needs o_j >= o_i + lift) and drop = eff(j, i)
    (j below i needs o_i >= o_j + drop). Found by a sweep over lifespans (time is the number of pairs)."""
    n = len(buffers)
    out: list[list[tuple[int, int, int]]] = [[] for _ in range(n)]
    order = sorted(range(n), key=lambda i: buffers[i].lower)
    active: list[int] = []
    for i in order:
        b = buffers[i]
        active = [j for j in active if buffers[j].upper > b.lower]
        for j in active:
            up = effective_size(buffers[j], b)
            if up is None:
                continue
            down = effective_size(b, buffers[j])
            out[i].append((j, down, up))
            out[j].append((i, up, down))
        active.append(i)
    return out


def _forbidden(nbrs, offsets) -> list[tuple[int, int]]:
    """Open intervals of offsets that the placed neighbours rule out for this buffer."""
    out = []
    for j, lift, drop in nbrs:
        oj = offsets[j]
        if oj >= 0 and lift + drop > 0:
            out.append((oj - lift, oj + drop))
    out.sort()
    return out


def fit(b: Buffer, nbrs, offsets, capacity: int, rule: int) -> int:
    """The offset `rule` gives buffer `b` among the placed buffers, or -1 when none fits."""
    if b.offset is not None:
        o = b.offset
        free = o + b.size <= capacity and all(not lo < o < hi for lo, hi in
                                              _forbidden(nbrs, offsets))
        return o if free else -1
    top = capacity - b.size
    a = b.alignment
    best, best_room = -1, None
    o = 0
    for lo, hi in _forbidden(nbrs, offsets) + [(top + 1, top + 2)]:
        if lo >= o:  # free offsets o..lo (lo itself is allowed); the lowest aligned one
            if o <= top and o <= lo:
                if rule == FIRST_FIT:
                    return o
                room = min(lo, top + 1) - o
                if best_room is None or room < best_room:
                    best, best_room = o, room
        if hi > o:
            o = _round_up(hi, a)
        if o > top:
            break
    return best


def heuristic_offsets(buffers: Sequence[Buffer], nbrs, capacity: int, order: Sequence[int],
                      rule: int) -> np.ndarray:
    """Pinned buffers at their pins, then the others in `order` by `rule`; -1 = not placed."""
    offsets = np.full(len(buffers), -1, np.int64)
    pinned = [i for i, b in enumerate(buffers) if b.offset is not None]
    for i in pinned + [i for i in order if buffers[i].offset is None]:
        offsets[i] = fit(buffers[i], nbrs[i], offsets, capacity, rule)
    return offsets


def pin_clash(buffers: Sequence[Buffer], nbrs, capacity: int) -> str | None:
    """Why the pinned buffers alone admit no packing (a proof of infeasibility), or None."""
    offsets = np.full(len(buffers), -1, np.int64)
    for i, b in enumerate(buffers):
        if b.offset is None:
            continue
        if b.offset + b.size > capacity:
            return f"buffer {b.id!r} is pinned at {b.offset}, ending at {b.offset + b.size} > capacity {capacity}"
        if fit(b, nbrs[i], offsets, capacity, FIRST_FIT) < 0:
            other = next(buffers[j].id for j, lo, hi in nbrs[i]
                         if offsets[j] >= 0 and offsets[j] - lo < b.offset < offsets[j] + hi)
            return f"buffers {other!r} and {b.id!r} are pinned so that they overlap"
        offsets[i] = b.offset
    return None


class _Search:
    """One depth-first canonical search under one ranking (see the module docstring)."""

    def __init__(self, buffers, nbrs, capacity, rank, deadline, node_limit):
        self.b, self.nbrs, self.cap = buffers, nbrs, capacity
        n = len(buffers)
        self.rank = np.empty(n, np.int64)
        self.rank[rank] = np.arange(n)
        self.deadline, self.node_limit, self.nodes = deadline, node_limit, 0
        self.offsets = [-1] * n
        self.minoff = [b.offset if b.offset is not None else 0 for b in buffers]
        # time slots between consecutive piece ends, and the bytes still to place in each
        points = sorted({t for b in buffers for p in b.pieces for t in p[:2]})
        at = {t: k for k, t in enumerate(points)}
        self.spans = [[(at[t0], at[t1], wu - wl) for t0, t1, wl, wu in b.pieces] for b in buffers]
        self.remaining = np.zeros(max(len(points) - 1, 1), np.int64)
        for spans in self.spans:
            for s0, s1, held in spans:
                self.remaining[s0:s1] += held
        # zero-sized buffers sit at 0 unless pinned: 0 + eff(z, j) = -wl_j <= o_j for all j
        self.unplaced = set()
        for i, b in enumerate(buffers):
            if b.size == 0 and b.offset is None:
                self.offsets[i] = 0
            else:
                self.unplaced.add(i)
        # canonical sequences break ties between equal offsets by rank; that loses nothing
        # only when every pair of neighbours needs a positive distance both ways (windows
        # can make one zero: two buffers at one offset, the order then matters)
        lifts = [lift for i in self.unplaced for j, lift, _ in nbrs[i] if j in self.unplaced]
        self.by_rank = all(lift > 0 for lift in lifts)
        # a negative effective size (windows) lets a buffer lie "below" one at a lower
        # offset: then offsets need not grow along the sequence, and the search tries every
        # order (still each buffer at its lowest offset given those placed before it, which
        # is complete: place a packing's buffers in an order of its "below" relation)
        self.monotone = all(lift >= 0 for lift in lifts)

    def run(self) -> int:
        if (self.remaining > self.cap).any():
            return INFEASIBLE
        return self._dfs(-1, -1)

    def _dfs(self, last_o: int, last_r: int) -> int:
        if not self.unplaced:
            return PACKED
        b, rank = self.b, self.rank
        cands, lowest_top = [], None
        for i in self.unplaced:
            m = self.minoff[i]
            pin = b[i].offset
            if pin is not None and m > pin:
                return INFEASIBLE  # pushed above its pin by the buffers below
            if m + b[i].size > self.cap:
                return INFEASIBLE
            if b[i].size > 0 and self.monotone and (lowest_top is None or m + b[i].size < lowest_top):
                lowest_top = m + b[i].size
            if not self.monotone or m > last_o or \
                    (m == last_o and (rank[i] > last_r or not self.by_rank)):
                cands.append((m, int(rank[i]), i))
        cands.sort()
        for m, r, i in cands:
            if lowest_top is not None and m >= lowest_top:
                break  # dominated: some unplaced buffer could drop into the hole below
            self.nodes += 1
            if self.nodes > self.node_limit:
                return NODE_LIMIT_HIT
            if (self.nodes & 255) == 0 and self.deadline is not None and \
                    time.perf_counter() > self.deadline:
                return TIME_LIMIT
            status = self._place(i, m, r)
            if status != INFEASIBLE:
                return status
        return INFEASIBLE

    def _place(self, i: int, o: int, r: int) -> int:
        self.offsets[i] = o
        self.unplaced.discard(i)
        for s0, s1, held in self.spans[i]:
            self.remaining[s0:s1] -= held
        trail = []
        for j, lift, _ in self.nbrs[i]:
            if self.offsets[j] < 0:
                want = _round_up(o + lift, self.b[j].alignment)
                if want > self.minoff[j]:
                    trail.append((j, self.minoff[j]))
                    self.minoff[j] = want
        status = INFEASIBLE
        watermark = o if self.monotone else 0
        if not (self.remaining > self.cap - watermark).any():
            status = self._dfs(o, r)
        if status != PACKED:
            for j, old in reversed(trail):
                self.minoff[j] = old
            for s0, s1, held in self.spans[i]:
                self.remaining[s0:s1] += held
            self.unplaced.add(i)
            self.offsets[i] = -1
        return status


NODE_LIMIT_HIT = 2


def _rankings(buffers: Sequence[Buffer]):
    """MiniMalloc's most-constrained-first orders, then seeded random ones, forever."""
    sizes = np.array([b.size for b in buffers], np.int64)
    lowers = np.array([b.lower for b in buffers], np.int64)
    uppers = np.array([b.upper for b in buffers], np.int64)
    yield from static_orders(sizes, lowers, uppers)
    feats = features(sizes, lowers, uppers)
    rng = np.random.default_rng(SEED)
    while True:
        yield random_order(feats, rng)


def exact_offsets(buffers: Sequence[Buffer], nbrs, capacity: int,
                  time_limit: float | None = None) -> tuple[int, np.ndarray, int]:
    """(status, offsets, nodes): PACKED, INFEASIBLE (proven) or TIME_LIMIT."""
    import sys
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 4 * len(buffers) + 1000))
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    if pin_clash(buffers, nbrs, capacity) is not None:
        return INFEASIBLE, np.full(len(buffers), -1, np.int64), 0
    limit, nodes = NODE_LIMIT, 0
    rankings = _rankings(buffers)
    while True:
        for _ in range(4):
            search = _Search(buffers, nbrs, capacity, next(rankings), deadline, limit)
            status = search.run()
            nodes += search.nodes
            if status in (PACKED, INFEASIBLE, TIME_LIMIT):
                offsets = np.array(search.offsets, np.int64) if status == PACKED \
                    else np.full(len(buffers), -1, np.int64)
                return status, offsets, nodes
        limit *= LIMIT_GROWTH
