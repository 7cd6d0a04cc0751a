"""Home exchanges that keep the windows: one fast weight out to the last level, several in.

Where the last level's channel sets the pace (every byte of the weights homed there is
moved over it once, by a copy or a direct read), a solution's latency is that channel's
work plus the time of the ops it cannot overlap: the ops after the last copy is due.
deeplabv3-mobilenet-v3-large@nnpi (memplace-lib/6's best known, 311.193 µs) is such a
program: its DRAM channel moves 299.3 µs of weights and is busy up to op 86; the four ops
after it (11.9 µs) are the rest. Homing the 2.36 MB weight of op 87 in DRAM, read there
directly (its read is channel work, so op 87 overlaps itself), and homing four DRAM
weights of 2.35 MB in all in LLC in the space it leaves keeps the channel's work and cuts
the tail: 307.859 µs. No move of `sa`'s anneal or of `home_swaps.descend` makes it: the
anneal re-homes one tensor at a time (homing one more weight in LLC does not fit before
the other leaves, and the other leaving first costs 35 µs), and `descend` swaps only equal
sizes and re-derives every window with msa's allocator, losing the anneal's windows.

`exchange` is a local search over one move, taking for each weight the best of its sets
(the first weight in a random order with an improving set): a weight `d` homed in a
level `l` other than the last moves to the last level (its windows dropped: it is read
there directly), and a set `M` of at most `max_set` weights homed in the last level, whose
sizes add up to at most `size[d]` plus what `l` has free at every step, moves to `l`
(their windows into `l` or slower dropped). Every other window is kept. The sets are
enumerated for `d`, largest total first (at most MAX_SETS); a candidate that breaks a
rule is refused by the validator, and only a faster valid solution is kept.
"""
from __future__ import annotations

import itertools
import time
from dataclasses import replace

import numpy as np

from memplace.model.instance import Instance
from memplace.model.residency import ResidencySolution, simulate, violations
from memplace.model.residency.validation import load_with_windows

MAX_SET = 4  # weights moved into the freed space at most
MAX_ITEMS = 20  # the largest last-level weights that fit are the candidates (4 of 20: 6,195 sets)
MAX_SETS = 200  # sets tried per demoted weight, largest total first


def _filling_sets(sizes: dict[int, int], room: int, max_set: int) -> list[tuple[int, ...]]:
    """Sets of at most `max_set` of the tensors of `sizes` (the MAX_ITEMS largest of those
    of at most `room` bytes) whose total is at most `room`, largest total first (ties: fewer
    tensors, then tensor order), at most MAX_SETS."""
    items = sorted((t for t in sizes if sizes[t] <= room), key=lambda t: (-sizes[t], t))[:MAX_ITEMS]
    found = []
    for r in range(1, max_set + 1):
        for combo in itertools.combinations(items, r):
            total = sum(sizes[t] for t in combo)
            if total <= room:
                found.append((-total, r, tuple(sorted(combo))))
    found.sort()
    return [combo for _, _, combo in found[:MAX_SETS]]


def exchange(instance: Instance, start: ResidencySolution, rng: np.random.Generator,
             deadline: float, max_set: int = MAX_SET,
             max_tries: int | None = None) -> tuple[ResidencySolution, int]:
    """Exchanges (module docstring) from `start` until none improves, `deadline` (a
    `time.perf_counter()` value) or `max_tries` candidates; returns the best valid solution
    (`start` itself when nothing improves; its latency set) and the candidates tried."""
    i = instance
    last = i.n_levels - 1
    best = start
    if best.latency is None or not np.isfinite(best.latency):
        best.latency = simulate(i, best)
    addressed = np.asarray(i.addressed, bool)
    if addressed[last]:  # a weight moved there would need an offset
        return best, 0
    weight = np.asarray(i.is_weight, bool) & (np.asarray(i.traffic) > 0)
    tries = 0
    improved = True
    while improved:
        improved = False
        homes = np.asarray(best.placement, np.int64)
        slow = {int(t): int(i.size[t]) for t in np.flatnonzero(weight & (homes == last))}
        demotable = np.flatnonzero(weight & (homes < last) & ~addressed[homes])
        for d in rng.permutation(demotable).tolist():
            level = int(homes[d])
            kept = tuple(w for w in best.windows if w.tensor != d)
            load = load_with_windows(i, homes, kept)
            room = int(i.size[d]) + int(np.min(i.capacity[level] - load[level]))
            found = best
            for moved in _filling_sets(slow, room, max_set):
                if time.perf_counter() >= deadline or (max_tries is not None and tries >= max_tries):
                    return found, tries
                tries += 1
                h = homes.copy()
                h[d] = last
                h[list(moved)] = level
                wins = tuple(w for w in kept if not (w.tensor in moved and w.level >= level))
                cand = replace(best, placement=h, windows=wins, latency=float("nan"))
                if violations(i, cand):
                    continue
                cand.latency = simulate(i, cand)
                if cand.latency < found.latency * (1 - 1e-9):
                    found = cand
            if found is not best:
                best, improved = found, True
                break
    return best, tries
