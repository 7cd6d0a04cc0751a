"""XLA's cost-analysis prefetch interval picker, in the residency problem's op indices.

XLA's `CostAnalysisPrefetchIntervalPicker` (memory_space_assignment) decides how long
before a use an asynchronous copy may start. It measures intervals by the elapsed time
of the instructions they overlap (its cost analysis), against the copy's own time
(`size / copy bandwidth`):

- a prefetch may start no later than the last time that still overlaps at least
  `min` times the copy time (minus the time the use itself saves when fast);
- no earlier than the first time that overlaps at most `max_elapsed`, which is `max`
  copy times of the *whole* fast memory (the same bound limits how long a value may
  stay in fast memory without a copy);
- the search starts at the start whose overlap is closest to `preferred` copy times,
  then alternates later and earlier starts (earlier ones in at most
  `EXPLORED_EARLIER` jumps of a third of the widest interval each, as XLA does to
  keep the number of tries small);
- an eviction is due at the first op by which it has overlapped `preferred` copy
  times.

Here a prefetch issued before op `s` and due before op `f` overlaps ops `s .. f-1`,
so `overlap(s, f)` is the sum of their elapsed times. The elapsed times are those of
the homes without windows (XLA's instruction elapsed with operands in default memory).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import numpy as np

EXPLORED_EARLIER = 3  # XLA's kNumExploredDecreasingIntervals


@dataclass(frozen=True)
class IntervalPicker:
    """Prefetch and eviction intervals from per-op elapsed times (seconds)."""

    elapsed: np.ndarray
    min_ratio: float = 0.8
    preferred_ratio: float = 1.5
    max_ratio: float = 10.0
    cum: np.ndarray | None = field(default=None, repr=False, compare=False)  # of `elapsed`

    def __post_init__(self) -> None:
        if self.cum is None:  # `dataclasses.replace` passes it on: one sum per run
            cum = np.zeros(self.elapsed.size + 1, np.float64)
            np.cumsum(self.elapsed, out=cum[1:])
            object.__setattr__(self, "cum", cum)

    def overlap(self, start: int, first: int) -> float:
        """Seconds of ops `start .. first-1` (what a copy issued before `start` and due
        before `first` overlaps)."""
        return float(self.cum[first] - self.cum[start])

    def max_elapsed(self, fast_bytes: float, copy_bandwidth: float) -> float:
        """`max` copy times of the whole fast memory: the longest overlap of a prefetch
        and the longest no-copy stay in fast memory."""
        return self.max_ratio * fast_bytes / copy_bandwidth

    def no_copy_ok(self, start: int, end: int, max_elapsed: float) -> bool:
        """May a value stay in fast memory without a copy from op `start` to op `end`?"""
        return self.overlap(start, end) < max_elapsed

    def latest_start(self, copy_s: float, lo: int, first: int, reduction: float = 0.0) -> int:
        """The latest start in `lo .. first-1` overlapping at least `min` copy times
        (the use's own saving `reduction` counted in); `lo - 1` when none does."""
        need = self.min_ratio * copy_s
        ok = lambda s: not need > self.overlap(s, first) + reduction  # noqa: E731
        # overlap(s, first) does not grow with s: bisect the prefix sums, then settle the
        # rounding at the boundary with the exact test
        s = int(np.searchsorted(self.cum, self.cum[first] - (need - reduction), "right")) - 1
        s = min(max(s, lo - 1), first - 1)
        while s + 1 <= first - 1 and ok(s + 1):
            s += 1
        while s >= lo and not ok(s):
            s -= 1
        return s

    def earliest_start(self, lo: int, latest: int, first: int, max_elapsed: float) -> int:
        """The earliest start in `lo .. latest` whose overlap is at most `max_elapsed`."""
        ok = lambda s: not self.overlap(s, first) > max_elapsed  # noqa: E731
        s = int(np.searchsorted(self.cum, self.cum[first] - max_elapsed, "left"))
        s = min(max(s, lo), latest)
        while s - 1 >= lo and ok(s - 1):
            s -= 1
        while s < latest and not ok(s):
            s += 1
        return s

    def preferred_start(self, copy_s: float, earliest: int, latest: int, first: int) -> int:
        """The start in `earliest .. latest` whose overlap is closest to `preferred` copy
        times (the earliest of equally close ones)."""
        target = self.preferred_ratio * copy_s
        gaps = np.abs(target - (self.cum[first] - self.cum[earliest:latest + 1]))
        return earliest + int(np.argmin(gaps))

    def starts(self, copy_s: float, lo: int, first: int, max_elapsed: float,
               reduction: float = 0.0) -> list[int]:
        """Prefetch starts to try for a use at op `first`, in XLA's order: the preferred
        one, then alternately later and earlier ones; [] when no start in `lo ..
        first-1` satisfies `min` and `max`."""
        return list(self.iter_starts(copy_s, lo, first, max_elapsed, reduction))

    def interval(self, copy_s: float, lo: int, first: int, max_elapsed: float,
                 reduction: float = 0.0) -> tuple[int, int, int] | None:
        """The (earliest, preferred, latest) prefetch starts in `lo .. first-1` for a use at
        op `first`; None when no start satisfies `min` and `max`."""
        latest = self.latest_start(copy_s, lo, first, reduction)
        if latest < lo:
            return None
        earliest = self.earliest_start(lo, latest, first, max_elapsed)
        if self.overlap(earliest, first) > max_elapsed:  # XLA would still try `latest`
            return None
        return earliest, self.preferred_start(copy_s, earliest, latest, first), latest

    def iter_starts(self, copy_s: float, lo: int, first: int, max_elapsed: float,
                    reduction: float = 0.0) -> Iterator[int]:
        """`starts` lazily: a caller that stops at the first start that fits never pays
        for the rest."""
        found = self.interval(copy_s, lo, first, max_elapsed, reduction)
        if found is None:
            return
        earliest, preferred, latest = found
        yield preferred
        later, earlier = preferred + 1, preferred - 1
        widest = self.overlap(earliest, first)
        use_later = True
        while later <= latest or earlier >= earliest:
            if (use_later and later <= latest) or earlier < earliest:
                yield later
                later += 1
            else:
                yield earlier
                target = 0.0
                if later > latest:  # only earlier ones are left: jump in thirds
                    target = self.overlap(earlier, first) + widest / EXPLORED_EARLIER
                earlier -= 1
                while earlier >= earliest and self.overlap(earlier, first) < target:
                    earlier -= 1
            use_later = not use_later

    def eviction_due(self, copy_s: float, issue: int, latest: int) -> int:
        """The first op `due` in `issue+1 .. latest` by which an eviction issued before
        `issue` has overlapped `preferred` copy times; `latest` if none has."""
        due = issue + 1
        while due < latest and self.overlap(issue, due) < self.preferred_ratio * copy_s:
            due += 1
        return due
