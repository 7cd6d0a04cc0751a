"""Which bytes of every level are in use, op by op: the one occupancy structure of the
residency family (msa's allocator, `sa`'s layout, the mallocGame).

XLA's heap simulator in the residency problem's terms: each level's load per op, and on
addressed levels a chunk (offset, size, first op, last op) per booking (a home or a
window), placed best-fit (the smallest free gap over the chunk's ops, lowest offset
among equals). When no gap fits although the load leaves room, `allocate` may repack
every chunk of the level with the packing library's best-fit by decreasing size (XLA's
repacker is a best-fit heap too), at most `max_repacks` times; the searches allow none
(a repack moves other windows' offsets, which an undo would have to restore).
"""
from __future__ import annotations

from typing import Hashable

import numpy as np

from memplace.model.instance import Instance
from memplace.model.packing.heuristics import HEURISTICS, heuristic_offsets

BEST_FIT_BY_SIZE = HEURISTICS["best-fit-size"]
Chunk = tuple[int, int, int, int]  # offset (-1: none given), size, first op, last op


def best_fit_gap(busy: list[tuple[int, int]], size: int, alignment: int, capacity: int) -> int:
    """The aligned offset of the smallest free gap of `capacity` that holds `size` bytes
    beside the busy `(offset, end)` address ranges (lowest offset among equals); -1 if none."""
    best, best_gap = -1, -1
    cursor = 0
    for lo, hi in sorted(busy) + [(capacity, capacity)]:
        start = -(-cursor // alignment) * alignment
        if start + size <= lo:
            gap = lo - cursor
            if best < 0 or gap < best_gap:
                best, best_gap = start, gap
        cursor = max(cursor, hi)
    return best


class FastMemory:
    """Bookings by key: the load of every level per op and the chunks of addressed levels.

    `fits` and `best_fit` ask, `book` records (as given), `allocate` asks and records,
    `extend` grows a booking, `release` frees it, `copy` is an independent twin (for
    look-ahead and undo)."""

    def __init__(self, instance: Instance, max_repacks: int = 0):
        self.instance = instance
        self.load = np.zeros((instance.n_levels, instance.n_ops), np.int64)
        self.capacity = instance.capacity
        self.booked: dict[Hashable, tuple[int, int, int, int]] = {}  # key -> level, lo, hi, size
        self.chunks: dict[int, dict[Hashable, Chunk]] = {
            l: {} for l in range(instance.n_levels) if instance.addressed[l]}
        self.repacks_left = max_repacks
        self.repacks = 0

    def copy(self) -> "FastMemory":
        twin = object.__new__(FastMemory)
        twin.__dict__.update(self.__dict__)
        twin.load = self.load.copy()
        twin.booked = dict(self.booked)
        twin.chunks = {l: dict(c) for l, c in self.chunks.items()}
        return twin

    # ------------------------------------------------------------------ questions
    def fits(self, level: int, lo: int, hi: int, size: int) -> bool:
        """Does the load of `level` leave `size` bytes over ops `lo .. hi`?"""
        return int(self.load[level, lo:hi + 1].max()) + size <= self.capacity[level]

    def best_fit(self, level: int, lo: int, hi: int, size: int, skip: Hashable = None) -> int:
        """Best-fit offset of `size` bytes on addressed `level` over ops `lo .. hi`, beside
        every chunk but `skip`'s; -1 if no gap holds it."""
        busy = [(c[0], c[0] + c[1]) for key, c in self.chunks[level].items()
                if c[2] <= hi and lo <= c[3] and key != skip]
        i = self.instance
        return best_fit_gap(busy, size, int(i.alignment[level]), int(self.capacity[level]))

    def offset(self, key: Hashable) -> int | None:
        """The booking's offset (None off addressed levels)."""
        level = self.booked[key][0]
        return self.chunks[level][key][0] if level in self.chunks else None

    # ------------------------------------------------------------------ changes
    def book(self, key: Hashable, level: int, lo: int, hi: int, size: int,
             offset: int | None = None) -> None:
        """Record `size` bytes of `level` over ops `lo .. hi` as given (no check)."""
        if level in self.chunks:
            self.chunks[level][key] = (-1 if offset is None else int(offset), size, lo, hi)
        self.booked[key] = (level, lo, hi, size)
        self.load[level, lo:hi + 1] += size

    def release(self, key: Hashable) -> None:
        level, lo, hi, size = self.booked.pop(key)
        self.load[level, lo:hi + 1] -= size
        if level in self.chunks:
            del self.chunks[level][key]

    def allocate(self, key: Hashable, level: int, lo: int, hi: int, size: int) -> bool:
        """Book `size` bytes of `level` over ops `lo .. hi` under `key` where they fit (a
        best-fit offset, or a repack); False and nothing booked if they do not."""
        if not self.fits(level, lo, hi, size):
            return False
        offset = None
        if level in self.chunks:
            offset = self.best_fit(level, lo, hi, size)
            if offset < 0:
                self.chunks[level][key] = (-1, size, lo, hi)
                if not self._repack(level):
                    del self.chunks[level][key]
                    return False
                offset = self.chunks[level][key][0]
        self.book(key, level, lo, hi, size, offset)
        return True

    def extend(self, key: Hashable, lo: int, hi: int) -> bool:
        """Grow `key`'s booking to ops `lo .. hi` (a superset); False (unchanged) if no room."""
        level, old_lo, old_hi, size = self.booked[key]
        extra = [(a, b) for a, b in ((lo, min(hi, old_lo - 1)), (max(lo, old_hi + 1), hi)) if a <= b]
        if not all(self.fits(level, a, b, size) for a, b in extra):
            return False
        if level in self.chunks:
            chunks = self.chunks[level]
            saved = chunks[key]
            chunks[key] = (saved[0], size, lo, hi)
            end = saved[0] + size
            clash = any(c[0] < end and saved[0] < c[0] + c[1] for k, c in chunks.items()
                        if k != key and c[2] <= hi and lo <= c[3])
            if clash and not self._repack(level):
                chunks[key] = saved
                return False
        for a, b in extra:
            self.load[level, a:b + 1] += size
        self.booked[key] = (level, lo, hi, size)
        return True

    def _repack(self, level: int) -> bool:
        """Best-fit repack of every chunk of `level` (the newest one included); True
        and the new offsets kept when everything fits."""
        if self.repacks_left <= 0:
            return False
        self.repacks_left -= 1
        self.repacks += 1
        chunks = self.chunks[level]
        keys = list(chunks)
        arr = np.array([chunks[k] for k in keys], np.int64).reshape(-1, 4)
        aligns = np.full(len(keys), int(self.instance.alignment[level]), np.int64)
        offsets = heuristic_offsets(arr[:, 1].copy(), arr[:, 2].copy(), arr[:, 3] + 1, aligns,
                                    np.int64(self.capacity[level]), BEST_FIT_BY_SIZE)
        if (offsets < 0).any():
            return False
        for k, o in zip(keys, offsets.tolist()):
            chunks[k] = (o,) + chunks[k][1:]
        return True
