"""Which bytes of every level are in use, op by op: the one occupancy structure of the
residency family, as one record of arrays and the Numba kernels that ask and book.

XLA's heap simulator in the residency problem's terms: each level's load per op, and on
addressed levels a chunk (offset, size, first op, last op) per booking (a home or a
window), placed best-fit (the smallest free gap over the chunk's ops, lowest offset
among equals). When no gap fits although the load leaves room, `place` may repack
every chunk of the level with the packing library's best-fit by decreasing size (XLA's
repacker is a best-fit heap too), at most `meta[1]` times; the searches allow none (a
repack moves other windows' offsets, which an undo would have to restore).

Bookings are numbered (ids 0 .. M-1, the caller chooses them); each addressed level keeps
its bookings in booking order as a linked list (a repack hands them to the packing
library in that order). msa's compiled allocator (`allocation_kernel.py`) and `sa`'s
compiled move loop (`move_loop.py`) book into it from Numba; `fast_memory.FastMemory` is
the same record behind hashable keys, for the Python callers (the mallocGame, `Layout`,
the allocator's plain-Python reference).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from memplace.model.core.jit import njit
from memplace.model.instance import Instance
from memplace.model.packing.heuristics import heuristic_offsets
from memplace.model.packing.rules import HEURISTICS

BEST_FIT_BY_SIZE = HEURISTICS["best-fit-size"]


class Occupancy(NamedTuple):
    load: np.ndarray  # int64[L, n]
    capacity: np.ndarray  # int64[L]
    alignment: np.ndarray
    addressed: np.ndarray  # int64[L], 1 where offsets are kept
    level: np.ndarray  # int64[M] per booking id: level (-1: not booked), first and last op,
    lo: np.ndarray  # size, offset (-1: none given)
    hi: np.ndarray
    size: np.ndarray
    offset: np.ndarray
    nxt: np.ndarray  # int64[M]: the next / previous booking of the same addressed level
    prv: np.ndarray
    head: np.ndarray  # int64[L]: first and last booking of each addressed level, -1
    tail: np.ndarray
    meta: np.ndarray  # int64[3]: next free id (the allocator's), repacks left, repacks done
    busy: np.ndarray  # int64[M, 2] scratch: address ranges for a best fit
    top: np.ndarray  # int64[n] scratch: one level's most bytes in use over ops x .. k


def new_occupancy(instance: Instance, bookings: int, max_repacks: int = 0) -> Occupancy:
    """Nothing booked, room for ids 0 .. `bookings` - 1."""
    i = instance
    L, n, M = i.n_levels, i.n_ops, bookings
    return Occupancy(np.zeros((L, n), np.int64), np.asarray(i.capacity, np.int64).copy(),
                     np.asarray(i.alignment, np.int64).copy(), np.asarray(i.addressed, np.int64).copy(),
                     np.full(M, -1, np.int64), np.zeros(M, np.int64), np.zeros(M, np.int64),
                     np.zeros(M, np.int64), np.full(M, -1, np.int64), np.full(M, -1, np.int64),
                     np.full(M, -1, np.int64), np.full(L, -1, np.int64), np.full(L, -1, np.int64),
                     np.array([0, max_repacks, 0], np.int64), np.zeros((M, 2), np.int64),
                     np.zeros(n, np.int64))


def with_homes(instance: Instance, homes: np.ndarray, offsets: np.ndarray | None, bookings: int,
               max_repacks: int = 0, slowest_too: bool = True) -> Occupancy:
    """Tensor t's home booked as id t at `offsets[t]` (-1 without), in tensor order on each
    level (the homes in the slowest level left out without `slowest_too`), room for ids
    0 .. `bookings` - 1."""
    i, T = instance, instance.n_tensors
    occ = new_occupancy(i, bookings, max_repacks)
    homes = np.asarray(homes, np.int64)
    booked = np.arange(T) if slowest_too else np.flatnonzero(homes < i.n_levels - 1)
    occ.level[booked], occ.lo[booked], occ.hi[booked] = homes[booked], i.start[booked], i.end[booked]
    occ.size[booked] = i.size[booked]
    if offsets is not None:
        occ.offset[:T] = offsets
    for l in np.flatnonzero(i.addressed):
        ids = booked[homes[booked] == l]
        if ids.size:
            occ.nxt[ids[:-1]], occ.prv[ids[1:]] = ids[1:], ids[:-1]
            occ.head[l], occ.tail[l] = ids[0], ids[-1]
    sum_load(occ)
    return occ


def with_room(occ: Occupancy, bookings: int) -> Occupancy:
    """The same bookings (the arrays per op shared, not copied) with room for ids 0 ..
    `bookings` - 1."""
    M = occ.level.shape[0]
    if bookings <= M:
        return occ

    def longer(a: np.ndarray, fill: int) -> np.ndarray:
        out = np.full(bookings, fill, np.int64)
        out[:M] = a
        return out

    return occ._replace(level=longer(occ.level, -1), lo=longer(occ.lo, 0), hi=longer(occ.hi, 0),
                        size=longer(occ.size, 0), offset=longer(occ.offset, -1),
                        nxt=longer(occ.nxt, -1), prv=longer(occ.prv, -1),
                        busy=np.zeros((bookings, 2), np.int64))


def copied(occ: Occupancy) -> Occupancy:
    """An independent twin (for look-ahead and undo)."""
    return Occupancy(*(a.copy() for a in occ))


# ---------------------------------------------------------------------- questions
@njit(cache=True, nogil=True, _nrt=False)
def fits(occ, level, lo, hi, size):
    """The load of `level` leaves `size` bytes over ops lo .. hi."""
    top = occ.load[level, lo]
    for k in range(lo + 1, hi + 1):
        if occ.load[level, k] > top:
            top = occ.load[level, k]
    return top + size <= occ.capacity[level]


@njit(cache=True, nogil=True, _nrt=False)
def _sift(a, lo, m):
    """Heap sort's sift-down of row lo among rows 0 .. m-1 of a (by columns 0, then 1)."""
    while True:
        c = 2 * lo + 1
        if c >= m:
            return
        if c + 1 < m and (a[c + 1, 0] > a[c, 0] or (a[c + 1, 0] == a[c, 0] and a[c + 1, 1] > a[c, 1])):
            c += 1
        if a[lo, 0] > a[c, 0] or (a[lo, 0] == a[c, 0] and a[lo, 1] >= a[c, 1]):
            return
        a[lo, 0], a[c, 0] = a[c, 0], a[lo, 0]
        a[lo, 1], a[c, 1] = a[c, 1], a[lo, 1]
        lo = c


@njit(cache=True, nogil=True, _nrt=False)
def sort_ranges(a, m):
    """Rows 0 .. m-1 of a, `(offset, end)` address ranges, sorted in place, allocating
    nothing (heap sort): `sorted(busy)`."""
    for lo in range(m // 2 - 1, -1, -1):
        _sift(a, lo, m)
    for end in range(m - 1, 0, -1):
        a[0, 0], a[end, 0] = a[end, 0], a[0, 0]
        a[0, 1], a[end, 1] = a[end, 1], a[0, 1]
        _sift(a, 0, end)


@njit(cache=True, nogil=True, _nrt=False)
def best_fit_scan(busy, m, size, alignment, capacity):
    """The aligned offset of the smallest free gap of `capacity` that holds `size` bytes
    beside the m sorted busy `(offset, end)` address ranges (lowest offset among equals);
    -1 if none."""
    best, best_gap, cursor = -1, -1, 0
    for j in range(m + 1):
        lo_j, hi_j = (busy[j, 0], busy[j, 1]) if j < m else (capacity, capacity)
        start = -(-cursor // alignment) * alignment
        if start + size <= lo_j:
            gap = lo_j - cursor
            if best < 0 or gap < best_gap:
                best, best_gap = start, gap
        cursor = max(cursor, hi_j)
    return best


@njit(cache=True, nogil=True, _nrt=False)
def best_fit(occ, level, lo, hi, size, skip):
    """Best-fit offset of `size` bytes on addressed `level` over ops lo .. hi, beside every
    booking live there but `skip` (an id, -1: none); -1 if no gap holds it."""
    busy = occ.busy
    m = 0
    b = occ.head[level]
    while b >= 0:
        if b != skip and occ.lo[b] <= hi and lo <= occ.hi[b]:
            busy[m, 0], busy[m, 1] = occ.offset[b], occ.offset[b] + occ.size[b]
            m += 1
        b = occ.nxt[b]
    sort_ranges(busy, m)
    return best_fit_scan(busy, m, size, occ.alignment[level], occ.capacity[level])


# ---------------------------------------------------------------------- bookings as given
@njit(cache=True, nogil=True, _nrt=False)
def add_load(occ, level, lo, hi, size):
    for k in range(lo, hi + 1):
        occ.load[level, k] += size


@njit(cache=True, nogil=True, _nrt=False)
def _link(occ, b, level):
    occ.prv[b] = occ.tail[level]
    occ.nxt[b] = -1
    if occ.tail[level] >= 0:
        occ.nxt[occ.tail[level]] = b
    else:
        occ.head[level] = b
    occ.tail[level] = b


@njit(cache=True, nogil=True, _nrt=False)
def _unlink(occ, b, level):
    if occ.prv[b] >= 0:
        occ.nxt[occ.prv[b]] = occ.nxt[b]
    else:
        occ.head[level] = occ.nxt[b]
    if occ.nxt[b] >= 0:
        occ.prv[occ.nxt[b]] = occ.prv[b]
    else:
        occ.tail[level] = occ.prv[b]


@njit(cache=True, nogil=True, _nrt=False)
def record(occ, b, level, lo, hi, size, offset):
    """Booking b as given, its load not added (`book`, or `sum_load` once for many)."""
    occ.level[b], occ.lo[b], occ.hi[b], occ.size[b], occ.offset[b] = level, lo, hi, size, offset
    if occ.addressed[level]:
        _link(occ, b, level)


@njit(cache=True, nogil=True, _nrt=False)
def book(occ, b, level, lo, hi, size, offset):
    """Booking b: `size` bytes of `level` over ops lo .. hi at `offset` (no check)."""
    record(occ, b, level, lo, hi, size, offset)
    add_load(occ, level, lo, hi, size)


@njit(cache=True, nogil=True, _nrt=False)
def release(occ, b):
    """Booking b freed (its id may be booked again)."""
    level = occ.level[b]
    add_load(occ, level, occ.lo[b], occ.hi[b], -occ.size[b])
    if occ.addressed[level]:
        _unlink(occ, b, level)
    occ.level[b] = -1


@njit(cache=True, nogil=True, _nrt=False)
def sum_load(occ):
    """The load of every level from every booking (as differences at their first and past
    their last op, summed once: a weight lives over the whole program)."""
    load = occ.load
    load[:, :] = 0
    n = load.shape[1]
    for b in range(occ.level.shape[0]):
        level = occ.level[b]
        if level >= 0:
            load[level, occ.lo[b]] += occ.size[b]
            if occ.hi[b] + 1 < n:
                load[level, occ.hi[b] + 1] -= occ.size[b]
    for level in range(load.shape[0]):
        for k in range(1, n):
            load[level, k] += load[level, k - 1]


# ---------------------------------------------------------------------- bookings placed
@njit(cache=True, nogil=True)
def repack(occ, level):
    """Best fit by decreasing size of every booking of `level`, in booking order; True and
    the new offsets kept when everything fits (at most `meta[1]` times)."""
    if occ.meta[1] <= 0:
        return False
    occ.meta[1] -= 1
    occ.meta[2] += 1
    m = 0
    b = occ.head[level]
    while b >= 0:
        m += 1
        b = occ.nxt[b]
    ids = np.empty(m, np.int64)
    sizes, lowers, uppers = np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m, np.int64)
    b, j = occ.head[level], 0
    while b >= 0:
        ids[j], sizes[j], lowers[j], uppers[j] = b, occ.size[b], occ.lo[b], occ.hi[b] + 1
        j += 1
        b = occ.nxt[b]
    aligns = np.full(m, occ.alignment[level], np.int64)
    offsets = heuristic_offsets(sizes, lowers, uppers, aligns, occ.capacity[level],
                                BEST_FIT_BY_SIZE)
    for j in range(m):
        if offsets[j] < 0:
            return False
    for j in range(m):
        occ.offset[ids[j]] = offsets[j]
    return True


@njit(cache=True, nogil=True)
def place(occ, b, level, lo, hi, size):
    """Booking b where the load is known to leave room: a best-fit offset (or a repack) on
    an addressed level. False and nothing booked when no offset is found."""
    offset = -1
    if occ.addressed[level]:
        offset = best_fit(occ, level, lo, hi, size, -1)
        if offset < 0:
            record(occ, b, level, lo, hi, size, -1)
            ok = repack(occ, level)
            _unlink(occ, b, level)
            occ.level[b] = -1
            if not ok:
                return False
            offset = occ.offset[b]
    book(occ, b, level, lo, hi, size, offset)
    return True


@njit(cache=True, nogil=True)
def allocate(occ, b, level, lo, hi, size):
    """Booking b of `size` bytes of `level` over ops lo .. hi where they fit (a best-fit
    offset, or a repack); False and nothing booked if they do not."""
    if not fits(occ, level, lo, hi, size):
        return False
    return place(occ, b, level, lo, hi, size)


@njit(cache=True, nogil=True)
def extend(occ, b, lo, hi):
    """Booking b grown to ops lo .. hi (a superset); False (unchanged) if there is no room
    (or, on an addressed level, its offset clashes and no repack helps)."""
    level, old_lo, old_hi, size = occ.level[b], occ.lo[b], occ.hi[b], occ.size[b]
    a1, b1 = lo, min(hi, old_lo - 1)
    a2, b2 = max(lo, old_hi + 1), hi
    if a1 <= b1 and not fits(occ, level, a1, b1, size):
        return False
    if a2 <= b2 and not fits(occ, level, a2, b2, size):
        return False
    if occ.addressed[level]:
        occ.lo[b], occ.hi[b] = lo, hi
        x = occ.offset[b]
        end = x + size
        clash = False
        c = occ.head[level]
        while c >= 0:
            if c != b and occ.lo[c] <= hi and lo <= occ.hi[c] and occ.offset[c] < end \
                    and x < occ.offset[c] + occ.size[c]:
                clash = True
                break
            c = occ.nxt[c]
        if clash and not repack(occ, level):
            occ.lo[b], occ.hi[b], occ.offset[b] = old_lo, old_hi, x
            return False
    if a1 <= b1:
        add_load(occ, level, a1, b1, size)
    if a2 <= b2:
        add_load(occ, level, a2, b2, size)
    occ.lo[b], occ.hi[b] = lo, hi
    return True
