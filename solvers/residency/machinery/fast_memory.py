"""Which bytes of every level are in use, op by op, for Python callers (the mallocGame,
`sa`'s `Layout`, the allocator's plain-Python reference): the occupancy record of
`occupancy.py` behind hashable keys.

Every question and change is one of `occupancy.py`'s kernels, the ones msa's compiled
allocator and `sa`'s compiled move loop call, so there is one capacity check and one
best fit in the family; this class only maps keys to booking ids (reusing freed ones)
and grows the record when it runs out of ids.
"""
from __future__ import annotations

from typing import Hashable

import numpy as np

from memplace.model.instance import Instance
from memplace.solvers.residency.machinery import occupancy as oc


def best_fit_gap(busy: list[tuple[int, int]], size: int, alignment: int, capacity: int) -> int:
    """The aligned offset of the smallest free gap of `capacity` that holds `size` bytes
    beside the busy `(offset, end)` address ranges (lowest offset among equals); -1 if none."""
    ranges = np.array(busy, np.int64).reshape(-1, 2)
    oc.sort_ranges(ranges, len(busy))
    return int(oc.best_fit_scan(ranges, len(busy), size, alignment, capacity))


class FastMemory:
    """Bookings by key: the load of every level per op and the chunks of addressed levels.

    `fits` and `best_fit` ask, `book` records (as given), `allocate` asks and records,
    `extend` grows a booking, `release` frees it, `copy` is an independent twin (for
    look-ahead and undo). At most `max_repacks` repacks of a level (`occupancy.repack`)."""

    def __init__(self, instance: Instance, max_repacks: int = 0, homes: np.ndarray | None = None,
                 offsets: np.ndarray | None = None, slowest_too: bool = True):
        """Nothing booked or, with `homes`, tensor t's home under key ("h", t) at `offsets[t]`
        (None: no offsets), the homes in the slowest level left out without `slowest_too`."""
        self.instance = i = instance
        room = max(16, 2 * i.n_tensors)
        self.ids: dict[Hashable, int] = {}
        self.free: list[int] = []  # ids released, reused last first
        self.next_id = 0
        if homes is None:
            self.occ = oc.new_occupancy(i, room, max_repacks)
            return
        self.occ = oc.with_homes(i, homes, offsets, room, max_repacks, slowest_too)
        self.ids = {("h", t): t for t in np.flatnonzero(self.occ.level[:i.n_tensors] >= 0).tolist()}
        self.free = sorted(set(range(i.n_tensors)) - set(self.ids.values()), reverse=True)
        self.next_id = i.n_tensors

    def copy(self) -> "FastMemory":
        twin = object.__new__(FastMemory)
        twin.instance = self.instance
        twin.occ = oc.copied(self.occ)
        twin.ids, twin.free, twin.next_id = dict(self.ids), list(self.free), self.next_id
        return twin

    @property
    def load(self) -> np.ndarray:
        """Bytes in use per level and op."""
        return self.occ.load

    @property
    def repacks(self) -> int:
        return int(self.occ.meta[2])

    @property
    def booked(self) -> dict[Hashable, tuple[int, int, int, int]]:
        """key -> (level, first op, last op, size) of every booking."""
        o = self.occ
        return {k: (int(o.level[b]), int(o.lo[b]), int(o.hi[b]), int(o.size[b]))
                for k, b in self.ids.items()}

    def __contains__(self, key: Hashable) -> bool:
        return key in self.ids

    # ------------------------------------------------------------------ questions
    def fits(self, level: int, lo: int, hi: int, size: int) -> bool:
        """Does the load of `level` leave `size` bytes over ops `lo .. hi`?"""
        return bool(oc.fits(self.occ, level, lo, hi, size))

    def best_fit(self, level: int, lo: int, hi: int, size: int, skip: Hashable = None) -> int:
        """Best-fit offset of `size` bytes on addressed `level` over ops `lo .. hi`, beside
        every chunk but `skip`'s; -1 if no gap holds it."""
        return int(oc.best_fit(self.occ, level, lo, hi, size, self.ids.get(skip, -1)))

    def offset(self, key: Hashable) -> int | None:
        """The booking's offset (None off addressed levels)."""
        b = self.ids[key]
        return int(self.occ.offset[b]) if self.occ.addressed[self.occ.level[b]] else None

    # ------------------------------------------------------------------ changes
    def _new_id(self) -> int:
        if self.free:
            return self.free.pop()
        if self.next_id >= self.occ.level.shape[0]:
            self.occ = oc.with_room(self.occ, 2 * self.occ.level.shape[0])
        self.next_id += 1
        return self.next_id - 1

    def book(self, key: Hashable, level: int, lo: int, hi: int, size: int,
             offset: int | None = None) -> None:
        """Record `size` bytes of `level` over ops `lo .. hi` as given (no check)."""
        if key in self.ids:
            self.release(key)
        b = self.ids[key] = self._new_id()
        oc.book(self.occ, b, level, lo, hi, size, -1 if offset is None else int(offset))

    def release(self, key: Hashable) -> None:
        b = self.ids.pop(key)
        oc.release(self.occ, b)
        self.free.append(b)

    def allocate(self, key: Hashable, level: int, lo: int, hi: int, size: int) -> bool:
        """Book `size` bytes of `level` over ops `lo .. hi` under `key` where they fit (a
        best-fit offset, or a repack); False and nothing booked if they do not."""
        b = self._new_id()
        if not oc.allocate(self.occ, b, level, lo, hi, size):
            self.free.append(b)
            return False
        self.ids[key] = b
        return True

    def extend(self, key: Hashable, lo: int, hi: int) -> bool:
        """Grow `key`'s booking to ops `lo .. hi` (a superset); False (unchanged) if no room."""
        return bool(oc.extend(self.occ, self.ids[key], lo, hi))
