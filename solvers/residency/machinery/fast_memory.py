"""Occupancy of the fast levels while memory-space assignment allocates windows.

XLA's heap simulator in the residency problem's terms: each level's load per op, and on
addressed levels a chunk (offset, size, first op, last op) per window or home, placed
best-fit (the smallest free gap over the chunk's ops) when it is allocated. When no gap
fits although the load leaves room, every chunk of the level is repacked with the
packing library's best-fit by decreasing size (XLA's repacker is a best-fit heap too),
at most `max_repacks` times in a run.
"""
from __future__ import annotations

from typing import Hashable

import numpy as np

from memplace.model.instance import Instance
from memplace.model.packing.heuristics import HEURISTICS, heuristic_offsets

BEST_FIT_BY_SIZE = HEURISTICS["best-fit-size"]


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
    """Load of every level per op and the chunks of addressed levels."""

    def __init__(self, instance: Instance, max_repacks: int = 16):
        self.instance = instance
        self.load = np.zeros((instance.n_levels, instance.n_ops), np.int64)
        self.capacity = instance.capacity
        self.chunks: dict[int, dict[Hashable, list[int]]] = {
            l: {} for l in range(instance.n_levels) if instance.addressed[l]}
        self.owner: dict[Hashable, int] = {}  # key -> level
        self.spans: dict[Hashable, tuple[int, int]] = {}  # key -> (first op, last op)
        self.sizes: dict[Hashable, int] = {}
        self.repacks_left = max_repacks
        self.repacks = 0

    def room(self, level: int, lo: int, hi: int, size: int) -> bool:
        """Does the load of `level` leave `size` bytes over ops `lo .. hi`?"""
        return int(self.load[level, lo:hi + 1].max()) + size <= self.capacity[level]

    def _busy(self, level: int, lo: int, hi: int, skip: Hashable = None) -> list[tuple[int, int]]:
        return [(c[0], c[0] + c[1]) for key, c in self.chunks[level].items()
                if key != skip and c[2] <= hi and lo <= c[3]]

    def allocate(self, key: Hashable, level: int, lo: int, hi: int, size: int) -> bool:
        """Reserve `size` bytes of `level` over ops `lo .. hi` under `key`; False if no room."""
        if not self.room(level, lo, hi, size):
            return False
        if level in self.chunks:
            inst = self.instance
            offset = best_fit_gap(self._busy(level, lo, hi), size, int(inst.alignment[level]),
                                  int(self.capacity[level]))
            self.chunks[level][key] = [offset, size, lo, hi]
            if offset < 0 and not self._repack(level):
                del self.chunks[level][key]
                return False
        self._book(key, level, lo, hi, size)
        return True

    def reserve(self, key: Hashable, level: int, lo: int, hi: int, size: int,
                offset: int | None) -> None:
        """Record a reservation made elsewhere (a home of a valid static placement) as it is."""
        if level in self.chunks:
            self.chunks[level][key] = [-1 if offset is None else int(offset), size, lo, hi]
        self._book(key, level, lo, hi, size)

    def _book(self, key: Hashable, level: int, lo: int, hi: int, size: int) -> None:
        self.owner[key] = level
        self.spans[key] = (lo, hi)
        self.sizes[key] = size
        self.load[level, lo:hi + 1] += size

    def extend(self, key: Hashable, lo: int, hi: int) -> bool:
        """Grow `key`'s reservation to ops `lo .. hi` (a superset); False (unchanged) if no room."""
        level = self.owner[key]
        old = self.spans[key]
        size = self.sizes[key]
        extra = [(a, b) for a, b in ((lo, min(hi, old[0] - 1)), (max(lo, old[1] + 1), hi)) if a <= b]
        if any(int(self.load[level, a:b + 1].max()) + size > self.capacity[level] for a, b in extra):
            return False
        if level in self.chunks:
            chunk = self.chunks[level][key]
            saved = list(chunk)
            chunk[2], chunk[3] = lo, hi
            offset, end = chunk[0], chunk[0] + size
            clash = any(b_lo < end and offset < b_hi for b_lo, b_hi in self._busy(level, lo, hi, key))
            if clash and not self._repack(level):
                chunk[:] = saved
                return False
        for a, b in extra:
            self.load[level, a:b + 1] += size
        self.spans[key] = (lo, hi)
        return True

    def release(self, key: Hashable) -> None:
        level = self.owner.pop(key)
        lo, hi = self.spans[key]
        self.load[level, lo:hi + 1] -= self.sizes[key]
        self.spans.pop(key)
        self.sizes.pop(key)
        if level in self.chunks:
            del self.chunks[level][key]

    def offset(self, key: Hashable) -> int | None:
        level = self.owner[key]
        return self.chunks[level][key][0] if level in self.chunks else None

    def _repack(self, level: int) -> bool:
        """Best-fit repack of every chunk of `level` (the newest one included); True
        and the new offsets kept when everything fits."""
        if self.repacks_left <= 0:
            return False
        self.repacks_left -= 1
        self.repacks += 1
        keys = list(self.chunks[level])
        arr = np.array([self.chunks[level][k] for k in keys], np.int64).reshape(-1, 4)
        aligns = np.full(len(keys), int(self.instance.alignment[level]), np.int64)
        offsets = heuristic_offsets(arr[:, 1].copy(), arr[:, 2].copy(), arr[:, 3] + 1, aligns,
                                    np.int64(self.capacity[level]), BEST_FIT_BY_SIZE)
        if (offsets < 0).any():
            return False
        for k, o in zip(keys, offsets.tolist()):
            self.chunks[level][k][0] = o
        return True
