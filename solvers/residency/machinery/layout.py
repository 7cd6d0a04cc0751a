"""A residency solution kept valid under local changes: homes, windows, loads and offsets.

Local search over homes and windows (`sa.py`) proposes one change at a time; this class
says whether the change keeps the solution valid (docs/spec.md section 10) and books it:

- which bytes are in use (`fast_memory.FastMemory`: the family's one occupancy record,
  `occupancy.py`, which msa's allocator, the compiled move loop and the mallocGame book
  into too): homes over their live range, keys ("h", tensor), and
  windows over their occupancy `start .. hold`, keys ("w", slot); a new or changed one
  gets the *best-fit* offset on an addressed level and a change with no gap is refused
  (no repacking inside a move: a repack would move other windows' offsets and the undo
  would have to restore them all);
- the rules that concern one tensor alone (kinds, live range, evictions, disjoint
  occupancies, one defining window, the home valid for every access it serves and for
  every prefetch) are checked on the tensor's new window set by `tensor_ok`.

Windows live in numbered *slots* (the slot numbers of the incremental `Simulation`):
a removed window leaves its slot empty (`None`).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import numpy as np

from memplace.model.instance import Instance
from memplace.model.residency import ResidencySolution, Window, producer_of
from memplace.model.residency.validation import NEVER
from memplace.solvers.residency.machinery.fast_memory import FastMemory


class Layout:
    """Homes, home offsets and slot-numbered windows with their loads and chunks."""

    def __init__(self, instance: Instance, placement: np.ndarray, offsets: np.ndarray | None,
                 windows: Sequence[Window]):
        i = self.instance = instance
        self.homes = np.array(placement, np.int64)
        self.offsets = (np.full(i.n_tensors, -1, np.int64) if offsets is None
                        else np.array(offsets, np.int64))
        self.windows: list[Window | None] = list(windows)
        self.by_tensor: dict[int, list[int]] = {}
        self.fast = FastMemory(i, homes=self.homes, offsets=self.offsets)
        self.producer = np.array([producer_of(i, t) for t in range(i.n_tensors)], np.int64)
        self.access_ops = [sorted({int(i.access_op[i.tensor_access[a]])
                                   for a in range(i.tensor_ptr[t], i.tensor_ptr[t + 1])})
                           for t in range(i.n_tensors)]
        for s, w in enumerate(self.windows):
            if w is not None:
                self.by_tensor.setdefault(w.tensor, []).append(s)
                self._book_window(s, w, +1)

    # ------------------------------------------------------------------ booking
    @property
    def load(self) -> np.ndarray:
        """Bytes in use per level and op."""
        return self.fast.load

    def _book_home(self, t: int, level: int, offset: int, sign: int) -> None:
        i = self.instance
        if sign > 0:
            self.fast.book(("h", t), level, int(i.start[t]), int(i.end[t]), int(i.size[t]), offset)
        else:
            self.fast.release(("h", t))

    def _book_window(self, slot: int, w: Window, sign: int) -> None:
        if sign > 0:
            self.fast.book(("w", slot), w.level, w.start, w.hold, int(self.instance.size[w.tensor]),
                           w.offset)
        else:
            self.fast.release(("w", slot))

    def _place(self, level: int, lo: int, hi: int, size: int) -> int | None | bool:
        """Where `size` bytes of `level` go over ops `lo .. hi`: the best-fit offset on an
        addressed level, None on another, False when they do not fit."""
        if not self.fast.fits(level, lo, hi, size):
            return False
        if not self.instance.addressed[level]:
            return None
        off = self.fast.best_fit(level, lo, hi, size)
        return False if off < 0 else off

    # ------------------------------------------------------------------ rules of one tensor
    def tensor_ok(self, t: int, home: int, windows: Sequence[Window]) -> bool:
        """Section 10's rules of tensor t with this home and these windows (space aside)."""
        i = self.instance
        lo, hi, p = int(i.start[t]), int(i.end[t]), int(self.producer[t])
        v = 0 if p < 0 else p + 1
        defining = 0
        for w in windows:
            if not (w.level < home and w.start <= w.first <= w.last and lo <= w.start and w.last <= hi):
                return False
            is_def = w.start == w.first == p
            if not is_def and not w.start < w.first:
                return False
            if w.evict is not None:
                issue, due = w.evict
                if not (is_def and p < issue < due <= hi):
                    return False
            if is_def:
                defining += 1
                v = NEVER if w.evict is None else w.evict[1]
        if defining > 1:
            return False
        spans = sorted((w.start, w.hold) for w in windows)
        if any(b[0] <= a[1] for a, b in zip(spans, spans[1:])):
            return False
        for w in windows:
            if w.start < w.first and w.start < v:
                return False
        for k in self.access_ops[t]:
            if k != p and k < v and not any(w.first <= k <= w.last for w in windows):
                return False
        return True

    # ------------------------------------------------------------------ changes
    def tensor_windows(self, t: int) -> list[Window]:
        return [self.windows[s] for s in self.by_tensor.get(t, [])]

    def set_window(self, slot: int, new: Window | None) -> Window | None | bool:
        """Replace window `slot` by `new` (slot == len(windows) adds one). Returns the
        window as booked (with its best-fit offset on an addressed level), None for a
        removal, or False (nothing changed) when it breaks a rule or does not fit."""
        if slot == len(self.windows):
            self.windows.append(None)
        old = self.windows[slot]
        t = (new or old).tensor
        kept = [self.windows[s] for s in self.by_tensor.get(t, []) if s != slot]
        if not self.tensor_ok(t, int(self.homes[t]), kept if new is None else kept + [new]):
            return False
        if old is not None:
            self._book_window(slot, old, -1)
        if new is not None:
            off = self._place(new.level, new.start, new.hold, int(self.instance.size[t]))
            if off is False:
                if old is not None:
                    self._book_window(slot, old, +1)
                return False
            new = replace(new, offset=off)
            self._book_window(slot, new, +1)
        self.windows[slot] = new
        slots = self.by_tensor.setdefault(t, [])
        if old is None and new is not None:
            slots.append(slot)
        elif new is None and slot in slots:
            slots.remove(slot)
        return new

    def set_home(self, t: int, level: int) -> bool:
        """Move tensor t's home to `level` (its windows must already allow it); False and
        nothing changed when the level lacks room or an offset."""
        i = self.instance
        if not self.tensor_ok(t, level, self.tensor_windows(t)):
            return False
        old, old_off = int(self.homes[t]), int(self.offsets[t])
        self._book_home(t, old, old_off, -1)
        off = self._place(level, int(i.start[t]), int(i.end[t]), int(i.size[t]))
        if off is False:
            self._book_home(t, old, old_off, +1)
            return False
        off = -1 if off is None else off
        self.homes[t] = level
        self.offsets[t] = off
        self._book_home(t, level, off, +1)
        return True

    def solution(self) -> ResidencySolution:
        i = self.instance
        offsets = self.offsets.copy() if i.has_addressed_levels else None
        windows = tuple(w for w in self.windows if w is not None)
        return ResidencySolution(i.name, self.homes.copy(), offsets, windows)

    def snapshot(self, t: int) -> tuple:
        """Everything a compound change of tensor t's home and windows may touch, to
        `restore` if it is refused (other tensors' window lists are not copied)."""
        return (t, self.homes.copy(), self.offsets.copy(), list(self.windows),
                list(self.by_tensor.get(t, [])), self.fast.copy())

    def restore(self, snap: tuple) -> None:
        t, homes, offsets, windows, slots, fast = snap
        self.homes, self.offsets, self.windows = homes, offsets, windows
        self.by_tensor[t] = slots
        self.fast = fast
