"""An anytime search for the lowest height of large traces: large-neighbourhood search
over time windows around the buffers that reach the top.

What the literature does, and why this. Production planners place once (XLA's and
TFLite's best fit by size, TVM's greedy by conflicts) and never revisit. Exact
searches (MiniMalloc's canonical branch-and-bound, TelaMalloc's heuristic-guided
constraint programming) prove optimality on a few thousand buffers but keep state per
overlapping pair, which on a 10^5-buffer trace with long-lived buffers runs into tens of
millions. idealloc (Lamprakos et al. 2025) scales by Buchsbaum et al.'s *boxing*:
buffers grouped by lifetime classes into boxes packed recursively, repeated with
randomisation; its guarantee is a constant factor of the peak, and it re-packs the
whole instance each try. A large-neighbourhood search (Shaw 1998; Pisinger and Ropke
2010) instead keeps the incumbent and re-packs a small part of it: here, every buffer
whose lifespan lies inside a time window around one buffer that reaches the top, with
everything else crossing the window held fixed (so the rest stays valid without being
looked at). Each step costs the window's buffers, not the trace's, so thousands of steps
fit where a full re-pack runs a handful of times; no step can make the packing worse,
so the search is anytime: it stops at the time limit with the best packing so far. We
chose it because it reuses the O(n log n) placement kernel (`place_around`, in C), its
memory is O(n), and it attacks exactly where the height is decided.

One step, with `H` the height and target `H - 1`: pick a buffer `v` whose top exceeds
the target, a window of time points around its lifespan or around the busiest time in
it (widened at random, and more after each failed step); free every buffer over the
target and every buffer living wholly inside the window; place the
free buffers around the fixed ones under the target, in a randomised priority order
(size, length, area or current offset, with log-normal noise; half the time with the
buffers over the target first, ejecting what they land on) by first or best fit.
If every free buffer fits, the packing is kept (`v` is now under the target; the height
drops once no buffer exceeds it). Seeded: the same seed gives the same packings when
the time limit is not what stops it.
"""
from __future__ import annotations

import time

import numpy as np

from memplace.model.packing.compiled import BEST_FIT, FIRST_FIT, place_around, place_in_order
from memplace.model.packing.timeline import live_load, time_points

SEED = 20261125
NOISE = 0.25           # log-normal spread of the randomised priorities
START_WIDTH = 8        # time points either side of the chosen buffer, at first
GROWTH = 1.5           # the width after a failed step (and back down after a success)


def compact(sizes: np.ndarray, lowers: np.ndarray, uppers: np.ndarray, aligns: np.ndarray,
            offsets: np.ndarray, deadline: float | None = None) -> np.ndarray:
    """Every buffer dropped as low as it goes: first fit in increasing order of the current
    offsets. Each buffer ends at or under its current offset (the buffers under it in
    time overlap end where they ended or lower), so the height never rises."""
    order = np.lexsort((np.arange(sizes.size), offsets)).astype(np.int64)
    cap = int((offsets + sizes).max()) if sizes.size else 0
    dropped = place_in_order(order, sizes, lowers, uppers, aligns, cap, FIRST_FIT, deadline)
    return dropped if (dropped >= 0).all() else offsets


def portfolio(sizes: np.ndarray, lowers: np.ndarray, uppers: np.ndarray, aligns: np.ndarray,
              offsets: np.ndarray, deadline: float, bound: int = 0) -> tuple[np.ndarray, int]:
    """The lowest of `offsets` and first fit / best fit in the orders that break the ties
    of the size order by time: by decreasing size, then increasing start (TFLite's greedy
    by size breaks its ties by first use), or then decreasing end; each asked to pack one
    byte under the best so far, skipped once `deadline` would likely pass, and none once
    the height is down to `bound` (nothing is lower). Returns (offsets, orders tried)."""
    height = int((offsets + sizes).max()) if sizes.size else 0
    index = np.arange(sizes.size)
    orders = (np.lexsort((index, lowers, -sizes)), np.lexsort((index, -uppers, -sizes)))
    tried, took = 0, 0.0
    for order in orders:
        for rule in (FIRST_FIT, BEST_FIT):
            if time.perf_counter() + took > deadline or height <= bound:
                return offsets, tried
            began = time.perf_counter()
            got = place_in_order(order.astype(np.int64), sizes, lowers, uppers, aligns,
                                 height - 1, rule, deadline)
            took = time.perf_counter() - began
            tried += 1
            if (got >= 0).all():
                offsets, height = got, int((got + sizes).max())
    return offsets, tried


def improve(sizes: np.ndarray, lowers: np.ndarray, uppers: np.ndarray, aligns: np.ndarray,
            offsets: np.ndarray, bound: int, deadline: float, seed: int = SEED
            ) -> tuple[np.ndarray, dict]:
    """A packing no higher than `offsets` (valid, every offset >= 0), lowered by window
    re-packing until its height reaches `bound` (nothing is lower) or `deadline`
    (`time.perf_counter()` seconds) passes. Returns (offsets, statistics: steps tried,
    kept, and the heights after each drop with their seconds)."""
    n = sizes.size
    stats = {"steps": 0, "kept": 0, "drops": []}
    if n == 0:
        return offsets, stats
    rng = np.random.default_rng(seed)
    began = time.perf_counter()
    best = compact(sizes, lowers, uppers, aligns, offsets, deadline)
    tops = best + sizes
    height = int(tops.max())
    points = time_points(lowers, uppers)
    m = points.size
    load, first, last = live_load(sizes, lowers, uppers)  # live bytes from each time point on
    keys = (sizes.astype(float), (uppers - lowers).astype(float),
            sizes.astype(float) * (uppers - lowers))
    width = float(START_WIDTH)
    while height > bound and time.perf_counter() < deadline:
        target = height - 1
        over = np.flatnonzero(tops > target)
        v = over[rng.integers(over.size)]
        if rng.integers(2):  # around v's whole lifespan
            lo, hi = int(first[v]), int(last[v])
        else:  # around a busy time within it: where the space under v is decided
            at = int(first[v]) + int(np.argmax(load[first[v]:last[v]] *
                                               rng.lognormal(0.0, NOISE, last[v] - first[v])))
            lo, hi = at, at + 1
        lo = max(0, lo - int(rng.integers(0, int(width) + 1)))
        hi = min(m - 1, hi + int(rng.integers(0, int(width) + 1)))
        t0, t1 = points[lo], points[hi]
        # free: the buffers over the target and those living inside the window; the
        # sub-instance: everything that meets them, the rest held where it is
        span0, span1 = min(t0, int(lowers[over].min())), max(t1, int(uppers[over].max()))
        inside = np.flatnonzero((uppers > span0) & (lowers < span1))
        free = ((lowers[inside] >= t0) & (uppers[inside] <= t1)) | (tops[inside] > target)
        fixed = np.where(free, -1, best[inside])
        which = int(rng.integers(4))
        noise = rng.lognormal(0.0, NOISE, inside.size)
        if which < 3:
            key = -keys[which][inside] * noise
        else:  # current offset, lowest first: a perturbed gravity order
            key = best[inside] * noise
        key = key - key.min() + 1.0
        if rng.integers(2):  # ejection: the buffers over the target first
            key = np.where(tops[inside] > target, 0.0, key)
        order = np.flatnonzero(free)[np.argsort(key[free], kind="stable")].astype(np.int64)
        rule = BEST_FIT if rng.integers(2) else FIRST_FIT
        got = place_around(order, sizes[inside], lowers[inside], uppers[inside],
                           aligns[inside], target, rule, fixed, deadline)
        stats["steps"] += 1
        if (got >= 0).all():
            best[inside] = got
            tops[inside] = got + sizes[inside]
            stats["kept"] += 1
            width = max(float(START_WIDTH), width / GROWTH)
            new = int(tops.max())
            if new < height:
                height = new
                stats["drops"].append((height, round(time.perf_counter() - began, 3)))
        else:
            width = min(float(m), width * GROWTH)
    return best, stats

