"""Offset assignment for addressed memories: the dynamic storage allocation problem.

Buffers with half-open lifespans `[lower, upper)` and sizes get offsets in
`[0, capacity)`, each a multiple of its buffer's alignment, so that buffers
alive at the same time never share an address (docs/spec.md section 5). The packers
are registered by name in `PACKERS`; `pack` runs one and `check_packing`
re-checks any answer independently of how it was found.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

import numpy as np

from memplace.model.core.errors import MemplaceError
from memplace.model.core.registry import Registry
from memplace.model.packing import anytime
from memplace.model.packing import exact as pack_exact
from memplace.model.packing import pairwise
from memplace.model.packing.buffers import Buffer, Gap, effective_size
from memplace.model.packing.timeline import peak_live
from memplace.model.packing.compiled import (FIRST_FIT, HEURISTICS, heuristic_offsets,
                                             place_in_order)

_STATUS = {pack_exact.PACKED: "packed", pack_exact.INFEASIBLE: "infeasible", pack_exact.TIME_LIMIT: "timeout"}
CLIMB_PROBE_S = 2.0  # seconds per climbing probe of `minimize` without a time limit


@dataclass
class PackResult:
    """Offsets (int64, -1 where unplaced) and how they were found.

    `status` is "packed" (every buffer placed within the capacity), "infeasible"
    (proven: no packing exists), "timeout" (the time limit ran out first) or
    "failed" (a heuristic could not place everything; proves nothing).
    `height` is the highest `offset + size` over placed buffers.
    """

    offsets: np.ndarray
    status: str
    height: int
    method: str
    wall_s: float
    nodes: int = 0
    notes: list[str] = field(default_factory=list)


def _arrays(buffers: Sequence[Buffer]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    sizes = np.fromiter((b.size for b in buffers), np.int64, len(buffers))
    lowers = np.fromiter((b.lower for b in buffers), np.int64, len(buffers))
    uppers = np.fromiter((b.upper for b in buffers), np.int64, len(buffers))
    aligns = np.fromiter((b.alignment for b in buffers), np.int64, len(buffers))
    return sizes, lowers, uppers, aligns


def _check_capacity(capacity: int) -> None:
    if capacity <= 0:
        raise MemplaceError(f"capacity {capacity} must be positive")


def _height(sizes: np.ndarray, offsets: np.ndarray) -> int:
    placed = offsets >= 0
    return int((offsets[placed] + sizes[placed]).max()) if placed.any() else 0


def peak_live_size(buffers: Sequence[Buffer]) -> int:
    """Largest total of bytes held at one time (a buffer in a gap holds its window, or
    nothing): a lower bound on any packing's height."""
    if all(not b.gaps for b in buffers):
        return peak_live(*_arrays(buffers)[:3])
    pieces = [(wu - wl, t0, t1) for b in buffers for t0, t1, wl, wu in b.pieces]
    if not pieces:
        return 0
    held, lowers, uppers = (np.array(column, np.int64) for column in zip(*pieces))
    return peak_live(held, lowers, uppers)


# ---------------------------------------------------------------------------
# Packers by name. `Packer` is the one packer type of memplace: int64 arrays of
# sizes, half-open lifespans [lowers, uppers) and alignments, a capacity and a time
# limit (None: none) -> (status, offsets with -1 where unplaced, search nodes).

Packer = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, "float | None"],
                  tuple[str, np.ndarray, int]]
PACKERS: Registry[Packer] = Registry("packing method")
register = PACKERS.decorator


def _heuristic_packer(which: int) -> Packer:
    def run(sizes, lowers, uppers, aligns, capacity, time_limit):
        offsets = heuristic_offsets(sizes, lowers, uppers, aligns, np.int64(capacity), which)
        return ("packed" if (offsets >= 0).all() else "failed"), offsets, 0
    return run


for _name, _which in HEURISTICS.items():
    register(_name)(_heuristic_packer(_which))


@register("first-fit")
def _first_fit(sizes, lowers, uppers, aligns, capacity, time_limit):
    """First fit in the given (input) order."""
    offsets = place_in_order(np.arange(sizes.size, dtype=np.int64), sizes, lowers, uppers,
                             aligns, np.int64(capacity), FIRST_FIT)
    return ("packed" if (offsets >= 0).all() else "failed"), offsets, 0


@register("best-heuristic")
def _best_heuristic(sizes, lowers, uppers, aligns, capacity, time_limit):
    """The lowest packing among the compiler heuristics (first one that packs, by height).

    It stops at a packing as low as the peak live size (nothing is lower). With a time
    limit, once one packs, a heuristic that would likely end past the limit is skipped
    (each is O(n log n) plus the overlapping pairs: seconds on traces of 10^5 buffers)."""
    best = None
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    peak = None
    took = 0.0
    for which in HEURISTICS.values():
        if best is not None and deadline is not None and time.perf_counter() + took > deadline:
            break  # the next heuristic would likely overrun the limit
        began = time.perf_counter()
        # once one packs, the others stop at the deadline (an unfinished one does not pack)
        offsets = heuristic_offsets(sizes, lowers, uppers, aligns, np.int64(capacity), which,
                                    deadline if best is not None else None)
        took = time.perf_counter() - began
        if (offsets >= 0).all():
            h = _height(sizes, offsets)
            if best is None or h < best[0]:
                best = (h, offsets)
            peak = peak_live(sizes, lowers, uppers) if peak is None else peak
            if h <= peak:
                break  # at the peak live size: no packing is lower
    if best is None:
        return "failed", np.full(sizes.size, -1, np.int64), 0
    return "packed", best[1], 0


@register("exact-search")
def _exact_search_only(sizes, lowers, uppers, aligns, capacity, time_limit):
    """The canonical-packing search alone (no heuristic shortcut), for benchmarking it.

    Past EXACT_PAIRS overlapping pairs its memory would grow with them, so the
    randomised heuristic orders try instead, within the time limit (20 s without one):
    "timeout" (or "failed" without a time limit) when none packs, which proves nothing."""
    if _overlapping_pairs(lowers, uppers) > EXACT_PAIRS:
        budget = time_limit if time_limit is not None else CLIMB_PROBE_S * 10
        best = np.full(sizes.size, -1, np.int64)
        best, _ = _reorder_heuristics(sizes, lowers, uppers, aligns, best, 0,
                                      time.perf_counter() + budget, capacity=capacity)
        if (best >= 0).all():
            return "packed", best, 0
        return ("timeout" if time_limit is not None else "failed"), best, 0
    code, offsets, nodes = pack_exact.exact_offsets(sizes, lowers, uppers, aligns, capacity,
                                                    time_limit)
    return _STATUS[code], offsets, nodes


@register("exact")
def _exact(sizes, lowers, uppers, aligns, capacity, time_limit):
    """Heuristics first (cheap), then the canonical-packing search."""
    status, offsets, _ = _best_heuristic(sizes, lowers, uppers, aligns, capacity, time_limit)
    if status == "packed":
        return status, offsets, 0
    return _exact_search_only(sizes, lowers, uppers, aligns, capacity, time_limit)


# ---------------------------------------------------------------------------
# Buffers with gaps or pinned offsets: the same methods on `pairwise`'s constraints.

_GENERAL_ORDERS = {
    "best-fit-size": (lambda b, c: (-b.size, -(b.upper - b.lower)), pairwise.BEST_FIT),
    "best-fit-length": (lambda b, c: (-(b.upper - b.lower), -b.size), pairwise.BEST_FIT),
    "greedy-size": (lambda b, c: (-b.size, -(b.upper - b.lower)), pairwise.FIRST_FIT),
    "greedy-conflicts": (lambda b, c: (-c, -b.size), pairwise.FIRST_FIT),
}
_PAIRWISE_STATUS = {pairwise.PACKED: "packed", pairwise.INFEASIBLE: "infeasible",
                    pairwise.TIME_LIMIT: "timeout"}


def _general_heuristic(buffers, nbrs, capacity, name):
    if name == "first-fit":
        order, rule = range(len(buffers)), pairwise.FIRST_FIT
    else:
        key, rule = _GENERAL_ORDERS[name]
        order = sorted(range(len(buffers)), key=lambda i: (*key(buffers[i], len(nbrs[i])), i))
    return pairwise.heuristic_offsets(buffers, nbrs, capacity, order, rule)


def _general_best(buffers, nbrs, capacity, sizes):
    best = None
    for name in _GENERAL_ORDERS:
        offsets = _general_heuristic(buffers, nbrs, capacity, name)
        if (offsets >= 0).all() and (best is None or _height(sizes, offsets) < best[0]):
            best = (_height(sizes, offsets), offsets)
    return None if best is None else best[1]


def _general_pack(buffers, capacity, method, time_limit):
    """(status, offsets, nodes) for buffers with gaps or pins, by the method's meaning."""
    nbrs = pairwise.conflicts(buffers)
    sizes = _arrays(buffers)[0]
    n = len(buffers)
    if method in ("exact", "best-heuristic"):
        offsets = _general_best(buffers, nbrs, capacity, sizes)
        if offsets is not None:
            return "packed", offsets, 0
        if method == "best-heuristic":
            return "failed", np.full(n, -1, np.int64), 0
    if method in ("exact", "exact-search"):
        code, offsets, nodes = pairwise.exact_offsets(buffers, nbrs, capacity, time_limit)
        return _PAIRWISE_STATUS[code], offsets, nodes
    offsets = _general_heuristic(buffers, nbrs, capacity, method)
    return ("packed" if (offsets >= 0).all() else "failed"), offsets, 0


def _run(buffers: Sequence[Buffer], capacity: int, method: str, time_limit: float | None
         ) -> tuple[str, np.ndarray, int]:
    if all(b.plain for b in buffers):
        sizes, lowers, uppers, aligns = _arrays(buffers)
        return PACKERS[method](sizes, lowers, uppers, aligns, int(capacity), time_limit)
    return _general_pack(buffers, int(capacity), method, time_limit)


def _follow_hints(buffers: Sequence[Buffer], capacity: int) -> tuple[np.ndarray | None, str]:
    """A packing with every hinted buffer at its hint (the others by the heuristics), or
    None, and a note saying which. Hints are advice: MiniMalloc's solver reads and writes
    them but does not use them; memplace keeps them when they pack."""
    hinted = [b for b in buffers if b.hint is not None and b.offset is None]
    if not hinted:
        return None, ""
    bad = [b.id for b in hinted if b.hint % b.alignment or b.hint + b.size > capacity]
    if not bad:
        pinned = [replace(b, offset=b.hint) if b.hint is not None and b.offset is None else b
                  for b in buffers]
        status, offsets, _ = _general_pack(pinned, int(capacity), "best-heuristic", None)
        if status == "packed":
            return offsets, f"hints: all {len(hinted)} followed"
    why = (f"buffer {bad[0]!r}'s hint is misaligned or beyond the capacity" if bad else
           "the heuristics found no packing with every hinted buffer at its hint")
    return None, f"hints: not followed ({why})"


# ---------------------------------------------------------------------------
# Public entry points

def validate_buffers(buffers: Sequence[Buffer]) -> None:
    """Raise MemplaceError naming the first malformed buffer (also catches duplicate ids)."""
    seen = set()
    for b in buffers:
        Buffer.__post_init__(b)
        if b.id in seen:
            raise MemplaceError(f"buffer {b.id!r} appears twice")
        seen.add(b.id)


def pack(buffers: Sequence[Buffer], capacity: int, method: str = "exact",
         time_limit: float | None = None, workers: int | None = None) -> PackResult:
    """Offsets for `buffers` within `capacity` by the packer named `method` (see PACKERS).

    Every field of a buffer is honoured: gaps and pinned offsets take the pairwise
    packers (`pairwise`), hints are tried first and kept when they pack (the note says
    so). `workers` sets the threads of the exact search on rectangles (default one);
    with more than one, which of several valid packings comes back may vary.
    """
    PACKERS.get(method)  # raises, naming the method and the known ones
    if time_limit is not None and time_limit <= 0:
        raise MemplaceError(f"time limit {time_limit} must be positive")
    _check_capacity(capacity)
    validate_buffers(buffers)
    start = time.perf_counter()
    if not buffers:
        return PackResult(np.zeros(0, np.int64), "packed", 0, method, 0.0, 0)
    sizes = _arrays(buffers)[0]
    offsets, note = _follow_hints(buffers, capacity)
    notes = [note] if note else []
    if offsets is not None:
        return PackResult(offsets, "packed", _height(sizes, offsets), method,
                          time.perf_counter() - start, 0, notes)
    with pack_exact.search_workers(workers):
        status, offsets, nodes = _run(buffers, capacity, method, time_limit)
    return PackResult(offsets, status, _height(sizes, offsets), method,
                      time.perf_counter() - start, nodes, notes)


def check_packing(buffers: Sequence[Buffer], offsets: Sequence[int], capacity: int) -> list[str]:
    """Every broken rule of a packing under MiniMalloc's meaning (its `validator.cc`), one
    message per problem naming the buffers; [] = valid.

    Pinned buffers sit at their pins; offsets are non-negative multiples of the alignment
    with `offset + size <= capacity`; two buffers active at a common time lie one wholly
    below the other in the bytes they hold (`buffers.effective_size`). Without gaps that
    is disjointness of `[offset, offset + size)`; a buffer of size 0 strictly inside
    another's bytes counts as overlapping, as in MiniMalloc."""
    problems = []
    if len(offsets) != len(buffers):
        return [f"{len(offsets)} offsets for {len(buffers)} buffers"]
    for b, o in zip(buffers, offsets):
        o = int(o)
        if b.offset is not None and o != b.offset:
            problems.append(f"buffer {b.id!r} is pinned at {b.offset} but has offset {o}")
        if o < 0:
            problems.append(f"buffer {b.id!r} has no offset ({o})")
        elif o % b.alignment:
            problems.append(f"buffer {b.id!r} offset {o} is not a multiple of its alignment "
                            f"{b.alignment}")
        if o >= 0 and o + b.size > capacity:
            problems.append(f"buffer {b.id!r} ends at {o + b.size}, beyond capacity {capacity}")
    if all(not b.gaps for b in buffers) and all(int(o) >= 0 for o in offsets) and \
            not _plain_overlaps(buffers, offsets):
        return problems  # no overlap (fast); else name every overlapping pair below
    by_lower = sorted(range(len(buffers)), key=lambda i: buffers[i].lower)
    for k, i in enumerate(by_lower):
        a, oa = buffers[i], int(offsets[i])
        for j in by_lower[k + 1:]:
            b, ob = buffers[j], int(offsets[j])
            if b.lower >= a.upper:
                break
            if oa < 0 or ob < 0:
                continue
            a_under = effective_size(a, b)
            if a_under is None or oa + a_under <= ob or ob + effective_size(b, a) <= oa:
                continue
            problems.append(f"buffers {a.id!r} [{oa}, {oa + a.size}) and {b.id!r} "
                            f"[{ob}, {ob + b.size}) overlap in memory while both active over "
                            f"[{max(a.lower, b.lower)}, {min(a.upper, b.upper)})")
    return problems


def _plain_overlaps(buffers: Sequence[Buffer], offsets: Sequence[int]) -> list[str]:
    """The overlaps of buffers without gaps, by a sweep over time that keeps the live
    buffers sorted by address: a new buffer that overlaps any live one overlaps one of its
    neighbours in that order (the live ones are pairwise fine). O(n log n) plus the moves
    of a sorted list; the pair-by-pair check is quadratic on traces with long-lived buffers."""
    import bisect
    import heapq
    problems = []
    live: list[tuple[int, int, int]] = []  # (offset, end, index), sorted
    ending: list[tuple[int, tuple[int, int, int]]] = []
    for i in sorted(range(len(buffers)), key=lambda i: buffers[i].lower):
        b = buffers[i]
        while ending and ending[0][0] <= b.lower:
            del live[bisect.bisect_left(live, heapq.heappop(ending)[1])]
        o = int(offsets[i])
        key = (o, o + b.size, i)
        at = bisect.bisect_left(live, key)
        for j in range(max(0, at - 3), min(len(live), at + 3)):
            oj, ej, other = live[j]
            if not (o + b.size <= oj or ej <= o):
                a = buffers[other]
                problems.append(f"buffers {a.id!r} [{oj}, {ej}) and {b.id!r} [{o}, {o + b.size}) "
                                f"overlap in memory while both active over "
                                f"[{max(a.lower, b.lower)}, {min(a.upper, b.upper)})")
                break
        else:
            live.insert(at, key)
            heapq.heappush(ending, (b.upper, key))
    return problems


def minimize(buffers: Sequence[Buffer], time_limit: float | None = None,
             capacity: int | None = None) -> tuple[PackResult, int]:
    """The lowest height that packs, by exact searches bisecting between the proven lower
    bound and the best height found (short probes; see `exact.lowest_height`), then one
    step under the best height, until a probe fails or the time runs out.

    Returns (result, lower_bound): the result packs at `result.height`; the lower
    bound is the peak live size (rounded up to `exact.height_granule` on rectangles),
    raised past every height proven infeasible. Every stage stops the moment the best
    height equals the bound: first the compiler heuristics, then (on rectangles) a
    short exact search at the bound, node-limited (`BOUND_PROBE_NODES`), then the
    anytime search, then the exact searches.
    `result.status` is "packed" when a packing was found (optimal when its height
    equals the bound), "infeasible" when nothing packs within `capacity`.
    """
    validate_buffers(buffers)
    if capacity is not None:
        _check_capacity(capacity)
    start = time.perf_counter()
    deadline = None if time_limit is None else start + time_limit
    if not buffers:
        return PackResult(np.zeros(0, np.int64), "packed", 0, "minimize", 0.0), 0
    sizes, lowers, uppers, aligns = _arrays(buffers)
    lower = peak_live_size(buffers)
    pins = [b.offset + b.size for b in buffers if b.offset is not None]
    lower = max([lower, *pins])
    limit = int(capacity) if capacity is not None else \
        int(sizes.sum() + aligns.sum() + max([0, *(b.offset for b in buffers if b.offset is not None)]))
    plain = all(b.plain for b in buffers)
    granule = pack_exact.height_granule(sizes, aligns) if plain else 1
    lower = -(-lower // granule) * granule

    def solve(height: int, budget: float | None) -> tuple[int, np.ndarray, int]:
        if plain:
            return pack_exact.exact_offsets(sizes, lowers, uppers, aligns, height, budget)
        status, offsets, nodes = _general_pack(buffers, height, "exact-search", budget)
        return {"packed": pack_exact.PACKED, "infeasible": pack_exact.INFEASIBLE,
                "timeout": pack_exact.TIME_LIMIT}[status], offsets, nodes

    def done(best: np.ndarray, nodes: int, notes: list[str], lower: int
             ) -> tuple[PackResult, int]:
        wall = time.perf_counter() - start
        return PackResult(best, "packed", _height(sizes, best), "minimize", wall, nodes,
                          notes), lower

    # the compiler heuristics get half the time at most (on 10^5 buffers one can take tens
    # of seconds), so the tie-broken orders and the window re-packing get theirs
    status, best, _ = _run(buffers, limit, "best-heuristic",
                           None if time_limit is None else time_limit / 2)
    nodes = 0
    if status != "packed":
        code, best, nodes = solve(limit, time_limit)
        if code != pack_exact.PACKED:
            if code == pack_exact.INFEASIBLE:
                lower = max(lower, limit + 1)
            wall = time.perf_counter() - start
            return PackResult(best, _STATUS[code], 0, "minimize", wall, nodes), lower
    notes = []
    if _height(sizes, best) <= lower:
        return done(best, nodes, notes, lower)
    pairs = _overlapping_pairs(lowers, uppers) if plain else 0
    if plain and pairs <= EXACT_PAIRS:
        # where the bound is the optimum the search often proves it in a few hundred
        # nodes (MiniMalloc's F: 422; ResNet-50: 9,052), long before the anytime search
        # would; the node limit keeps the probe short where it is not (D: 0.2 s)
        left = None if deadline is None else (deadline - time.perf_counter()) / 3
        code, got, used = pack_exact.exact_offsets(sizes, lowers, uppers, aligns, lower, left,
                                                   max_nodes=BOUND_PROBE_NODES)
        nodes += used
        if code == pack_exact.PACKED:
            return done(got, nodes, notes, lower)
        if code == pack_exact.INFEASIBLE:
            lower += granule
    if plain and _height(sizes, best) > lower:
        # anytime: the size order with time tie-breaks, then window re-packing
        # (`anytime`); on large traces all the time, else a share before the exact search
        now = time.perf_counter()
        budget = (deadline - now if deadline is not None else CLIMB_PROBE_S * 10)
        until = now + (budget if pairs > EXACT_PAIRS else budget * ANYTIME_SHARE)
        best, orders = anytime.portfolio(sizes, lowers, uppers, aligns, best, until, lower)
        best, stats = anytime.improve(sizes, lowers, uppers, aligns, best, lower, until)
        notes.append(f"anytime: {orders} tie-broken orders, {stats['kept']} of "
                     f"{stats['steps']} window re-packings kept")
    if _height(sizes, best) <= lower:
        return done(best, nodes, notes, lower)
    if plain and pairs > EXACT_PAIRS:
        # the exact search keeps every overlapping pair: past EXACT_PAIRS its memory grows
        # with them (n^2 on long-lived buffers); the anytime search above had all the time
        notes.append(f"{pairs} overlapping pairs: exact search skipped (memory)")
        return done(best, nodes, notes, lower)
    left = None if deadline is None else deadline - time.perf_counter()
    first_s = None if plain else CLIMB_PROBE_S if left is None else left / 3
    best, upper, lower, used = pack_exact.lowest_height(
        solve, sizes, best, lower, deadline,
        CLIMB_PROBE_S if time_limit is None else time_limit / 20, first_s, granule)
    return done(best, nodes + used, notes, lower)


SEARCH_SEED = 20241
EXACT_PAIRS = 3_000_000  # overlapping pairs beyond which `minimize` skips the exact search
REORDER_SPREAD = 0.3
ANYTIME_SHARE = 0.1  # of minimize's time for the anytime search before the exact one
BOUND_PROBE_NODES = 10_000  # minimize's first exact search, at the bound (F needs 422)


def _overlapping_pairs(lowers: np.ndarray, uppers: np.ndarray) -> int:
    """How many ordered pairs of buffers share a time (two sorted searches, O(n log n))."""
    n = lowers.size
    before = np.searchsorted(np.sort(uppers), lowers, side="right")
    after = n - np.searchsorted(np.sort(lowers), uppers, side="left")
    return int((n - 1 - before - after).sum())


def _reorder_heuristics(sizes, lowers, uppers, aligns, best, bound, deadline, seed=SEARCH_SEED,
                        capacity=None) -> tuple[np.ndarray, int]:
    """An anytime search for large traces: first fit and best fit over randomly perturbed
    priority orders (size, length or area times log-normal noise), each run asked to pack
    one byte under the best height so far; the best packing is kept. Memory O(n), each try
    O(n log n). Returns (offsets, tries)."""
    rng = np.random.default_rng(seed)
    # with `capacity`, `best` may be unplaced: stop at the first packing within it
    height = capacity + 1 if capacity is not None and (best < 0).any() else _height(sizes, best)
    bound = max(bound, height - 1) if capacity is not None and (best < 0).any() else bound
    keys = (sizes.astype(float), (uppers - lowers).astype(float),
            sizes.astype(float) * (uppers - lowers))
    tries = 0
    took = 0.0
    while height > bound and time.perf_counter() + took < deadline:
        began = time.perf_counter()
        key = keys[tries % 3] * rng.lognormal(0.0, REORDER_SPREAD, sizes.size)
        order = np.argsort(-key, kind="stable").astype(np.int64)
        rule = (tries // 3) % 2
        offsets = place_in_order(order, sizes, lowers, uppers, aligns, height - 1, rule,
                                 deadline)
        tries += 1
        if (offsets >= 0).all():
            best, height = offsets, _height(sizes, offsets)
        took = time.perf_counter() - began  # stop before a try would overrun the deadline
    return best, tries

def budgeted_packer(exact_budget_s: float = 5.0, heuristic_budget_s: float | None = None) -> Packer:
    """A packer for many calls in a row (a placement's addressed levels, solve after
    solve): the best compiler heuristic, then the exact search alone (the heuristics
    already failed) sharing `exact_budget_s` seconds over all calls (at most 2 s a call);
    "failed" when neither packs.

    With `heuristic_budget_s`, the heuristics get that many seconds over all calls (None:
    no limit; they take milliseconds on levels of a few thousand tensors, so only huge
    levels reach a budget of seconds): rectify packs again after each tensor it moves
    down, so on a large level (10^5 tensors) that fails to pack they would otherwise run
    once per tensor moved. Once both budgets are spent the packer fails at once and says
    so (`run.first_fit_only`), and rectify falls back to its canonical first-fit and
    moves every unplaced tensor down at once, as it does without a packer."""
    best, search = PACKERS["best-heuristic"], PACKERS["exact-search"]
    left = [exact_budget_s]
    heuristics_left = [math.inf if heuristic_budget_s is None else heuristic_budget_s]

    def run(sizes, lowers, uppers, aligns, capacity, time_limit):
        status, offsets, nodes = "failed", np.full(sizes.size, -1, np.int64), 0
        if heuristics_left[0] > 0:
            began = time.perf_counter()
            status, offsets, nodes = best(sizes, lowers, uppers, aligns, capacity, None)
            heuristics_left[0] -= time.perf_counter() - began
            if status == "packed":
                return status, offsets, nodes
        if left[0] > 0.05:
            began = time.perf_counter()
            status, offsets, nodes = search(sizes, lowers, uppers, aligns, capacity, min(left[0], 2.0))
            left[0] -= time.perf_counter() - began
            if status == "packed":
                return status, offsets, nodes
        run.first_fit_only = heuristics_left[0] <= 0 and left[0] <= 0.05
        return "failed", offsets, nodes
    run.first_fit_only = False
    return run
