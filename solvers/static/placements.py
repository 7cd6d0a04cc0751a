"""Where static solvers start and how they hand a placement in: the one place that builds
start placements (from the compiler heuristics of `heuristics.py`) and the helpers
that offer placements made valid.
"""
from __future__ import annotations

import math
import time
from typing import Callable

import numpy as np

from memplace.model import (Instance, capacity_ok, latency, rectify, rectify_capacity,
                            repair_latency_batch)
from memplace.model.packing.packers import Packer
from memplace.solvers import SearchContext
from memplace.solvers.static.heuristics import (ORDERS, greedy_fill, heuristic_placements,
                                                randomized_greedy)


def heuristic_starts(inst: Instance, rng: np.random.Generator | None = None, greedy: int = 0,
                     noise: float = 0.3, should_stop: Callable[[], bool] = lambda: False
                     ) -> list[np.ndarray]:
    """Every compiler heuristic's (valid) placement, then up to `greedy` randomised greedy
    fills, fewer once `should_stop()` (a fill takes about 0.5 s at 10^4 tensors on a loaded
    machine: twenty of them ran the static ga 18 s past a 10 s limit)."""
    starts = list(heuristic_placements(inst).values())
    for _ in range(greedy):
        if should_stop():
            break
        starts.append(randomized_greedy(inst, rng, noise))
    return starts


def capacity_starts(inst: Instance) -> dict[str, np.ndarray]:
    """The heuristics' placements by name, made capacity-valid by docs/spec.md section 6's loop
    (offsets are not assigned)."""
    return {name: rectify_capacity(inst, place) for name, place in heuristic_placements(inst).items()}


def best_start(inst: Instance) -> tuple[np.ndarray, np.ndarray | None]:
    """The lowest-latency heuristic placement with the offsets its greedy fill gave it on
    addressed levels (None without them): valid as it is, no packing needed."""
    if not inst.has_addressed_levels:
        return min(heuristic_placements(inst).values(), key=lambda p: latency(inst, p)), None
    options = [greedy_fill(inst, order(inst)) for order in ORDERS.values()]
    return min(options, key=lambda po: latency(inst, po[0]))


def offer_valid(ctx: SearchContext, place: np.ndarray, latency_s: float | None = None,
                packer: Packer | None = None) -> np.ndarray:
    """Offer a placement made valid; returns the placement offered.

    Without addressed levels the placement is offered as it is when `latency_s` (its
    latency) is given, the caller vouching for its capacity, else after the canonical
    rectify if it overflows. With addressed levels it goes through rectify with
    `packer` (offsets; tensors that cannot be packed move down) unless `latency_s`
    says it cannot beat the incumbent."""
    inst = ctx.instance
    if not inst.has_addressed_levels:
        if latency_s is None and not capacity_ok(inst, place):
            place = rectify(inst, place).placement
        ctx.offer(place, latency_s)
        return place
    if latency_s is not None and (not math.isfinite(latency_s) or latency_s >= ctx.best_latency):
        return place
    fixed = rectify(inst, place, packer=packer)
    ctx.offer(fixed.placement, offsets=fixed.offsets)
    return fixed.placement


REPAIR_CALL_S = 0.25  # seconds of one kernel call of `offer_repaired` (the clock is read between)
REPAIR_MAX_ROWS = 8  # rows of one call at most: a row's repair time varies 100-fold (a valid
# seed ~1 ms, a random row ~0.3 s at 10^4 tensors), so calls sized on the fast rows once ran 30 s


def offer_repaired(ctx: SearchContext, placements: np.ndarray) -> np.ndarray:
    """Rectify the rows of an int64[P, T] array in place, count them and offer the best;
    return the latencies. The rows go to the kernel in calls of at most `REPAIR_MAX_ROWS`
    (fewer where they take longer than `REPAIR_CALL_S`), and
    at the time limit the rows not reached keep their genes and get an infinite latency
    (a generation of 100 rows took 6 s at 10^4 tensors: checked between generations
    only, the limit was overrun by as much)."""
    rows = placements.shape[0]
    lat = np.full(rows, np.inf)
    done, chunk = 0, 1
    while done < rows and not (done and ctx.should_stop()):
        n = min(chunk, rows - done)
        began = time.perf_counter()
        lat[done:done + n] = repair_latency_batch(ctx.instance, placements[done:done + n])
        took = time.perf_counter() - began
        done += n
        chunk = max(1, min(2 * n, REPAIR_MAX_ROWS, int(n * REPAIR_CALL_S / max(took, 1e-6))))
    ctx.count(done)
    best = int(np.argmin(lat))
    offer_valid(ctx, placements[best], float(lat[best]))
    return lat
