"""`multistart` (residency): `sa`'s compiled move loop from more starts, then restarts from the best.

`sa` anneals from msa's solution and from the static `sa`'s placement with msa's windows
over it. On several library programs its best never beat the static problem's optimum
(xla-train, albert-base, deit-small and xla-cnn-deep@nnpi in memplace-lib/2: the best
known there was the static `milp`'s placement, offered as a residency solution without
windows): the anneals start from the compiler's homes or a heuristic static placement
and do not reach the optimum's homes by single re-homing moves. So this solver adds the
static MILP optimum as a start (`starts.milp_start`: the static `milp` within a share of
the time, with msa's allocator adding windows over its homes when they help), and then
swaps and demotes homes from the best start (`home_swaps.descend`: two tensors of one size
exchange homes, or one moves to a slower level, msa's allocator re-deriving the windows
over each candidate's homes: the moves that free fast memory for copies, which single
re-homing moves of the anneal cannot make without first losing), and then spends the
rest of the time in anneals (`move_loop.anneal`, Numba end to end):

1. one anneal from each start (the swapped one first, the rotation second), at `t_start`;
2. then anneals from the best solution so far (an iterated local search: the best is
   the only state kept between anneals), their start temperatures cycling through
   `t_start`, `t_start / 10`, `t_start / 100` (a reheat that is small enough to keep the
   best's structure and large enough to leave its local minimum).

Every start and every anneal's best is offered (validated by `solve()` before it is
returned), so the result is never worse than msa, the static MILP's placement or any
start.

With `exchange_share` > 0 (off by default), the best start then goes through
`home_exchanges.exchange`: one fast weight homed in the last level and read there directly,
last-level weights filling its space homed where it was, every other window kept
(memplace-lib/6's deeplabv3-mobilenet-v3-large@nnpi: 311.193 -> 307.859 µs, the time its
DRAM channel cannot overlap cut from 11.87 to 8.40 µs).

`start` adds a given solution (a file of the same instance; `memplace lib improve
--from-best` passes the entry's best known) to the starts, so runs build on each other as
MIPLIB updates do. A start found by search keeps windows the anneals grew one move at a
time; msa's allocator re-deriving the windows over its homes can do better (memplace-lib/3's
albert-base@nnpi: 943.155 -> 939.140 µs), so the given start's homes with msa's windows
over them are another start (`rewindow`; the other starts have msa's windows already).

With `stream_share` > 0 (off by default), the best start then goes through
`streaming.search`: every weight homed below the fastest level copied into it in read
order, each copy as early as the level's room and the channel's order allow, and an
annealed climb over homes and which weights are streamed (the eighth round of unseen architectures,
docs/zoo.md: BigBird's best known 11.540 -> 9.891 µs, ESM's 8.302 -> 7.782, small
transformers whose 1 MB projections the anneals leave in the LLC, read directly).

`rehome` moves named tensors of the given start to other levels first (their windows
dropped; the result must still be valid), for home changes no single anneal move or
same-size swap reaches: on deeplabv3-mobilenet-v3-large@nnpi, memplace-lib/7's best known
with its two 921,600-byte weights in LLC and the 2.36 MB one in DRAM, as the delivery
relaxation homes them, and then this solver from it (docs/library.md, memplace-lib/7).

`plan_share` (off by default) re-plans the given start first: a schedule MILP
(`channel_plan.plan`) chooses again the homes, direct reads and prefetch starts of its
large weights read once, with at most `plan_slow` of its slow-homed bytes slow, and the
plan replaces the given start among the starts (the given start is still offered, so the
result is never worse). On levit-128s@nnpi, whose latency is its DRAM channel's work, that
took memplace-lib/9's best known from 77.395 to 73.679 µs in two runs (memplace-lib/10).

The second start (`rotate`): the best start with two weights of one size taking turns in
one slot of a fast level (`shared_slots.rotations`: one of them homed slower so that both
are copied in while other ops run). On albert-base@nnpi, whose shared layer weights fill
fast memory but one, it is 3% slower than the best start at first, and the anneal from
it gains 3.5% over memplace-lib/3's best (943.155 -> 910.158 µs in a 90 s run). With the
slot taken from a third weight of the same size homed faster, which moves down (the pair's
reads then faster), the start is 904.591 µs from memplace-lib/4's best (929.651 µs), and
a 150 s run from it reached 900.347 µs.
"""
from __future__ import annotations

import math
import time

import numpy as np

from memplace.model.core.errors import SolutionError
from memplace.model.instance import Instance
from memplace.model.residency import ResidencySolution, lower_bound, simulate, violations
from memplace.solvers import Param, ParameterError, SearchContext, register
from memplace.solvers.residency.machinery import move_loop
from memplace.solvers.residency.machinery.channel_plan import plan
from memplace.solvers.residency.machinery.allocation import assign_windows
from memplace.solvers.residency.machinery.home_exchanges import exchange
from memplace.solvers.residency.machinery.home_swaps import descend
from memplace.solvers.residency.machinery.shared_slots import rotations
from memplace.solvers.residency.machinery.streaming import search as stream
from memplace.solvers.residency.machinery.starts import (finish_seconds, milp_start, msa_solution,
                                                         static_homes, static_start)

PARAMS = {
    "anneals": Param(8, int, 1, doc="anneals in all: one from each start, the others from the "
                                    "best so far"),
    "t_start": Param(3e-3, float, 0.0, doc="start temperature of the first anneals, relative "
                                           "to the latency (the later ones divide it by 10, 100)"),
    "t_end": Param(1e-6, float, 0.0, doc="final temperature, relative to the latency"),
    "home_rate": Param(0.1, float, 0.0, 1.0, doc="share of moves that change a home"),
    "lead": Param(4.0, float, 0.0, doc="mean extra ops a new prefetch starts ahead of its first use"),
    "milp_share": Param(0.2, float, 0.0, 1.0, doc="share of the time limit for the static MILP "
                                                  "start (0: no MILP start)"),
    "swap_share": Param(0.25, float, 0.0, 1.0, doc="share of the time left after the starts "
                                                   "for swaps and demotions of homes from the best "
                                                   "start (home_swaps.py; 0: none)"),
    "exchange_share": Param(0.0, float, 0.0, 1.0, doc="share of the time left after the "
                                                       "swaps for exchanges of a fast weight's home "
                                                       "with last-level weights filling its space, "
                                                       "windows kept (home_exchanges.py; 0: none)"),
    "stream_share": Param(0.0, float, 0.0, 1.0, doc="share of the time left after the "
                                                     "exchanges for streaming weights from the best "
                                                     "start: copies into the fastest level in read "
                                                     "order, as early as room allows, and an "
                                                     "annealed climb over homes (streaming.py; 0: none)"),
    "static_moves": Param(200_000, int, 0, doc="moves of the static sa whose placement is "
                                               "another start (0: none)"),
    "offer_every": Param(1.0, float, 0.0, doc="seconds between offers of the best solution"),
    "rotate": Param(True, bool, doc="also anneal from the best start with two weights of one "
                                    "size taking turns in one fast slot (shared_slots.py)"),
    "start": Param("", str, doc="a residency solution file of this instance to start from as "
                                "well (\"\": none; `lib improve --from-best` passes the best known)"),
    "rehome": Param("", str, doc="TENSOR=LEVEL,... (tensor names or indices): the given start "
                                 "with these homes moved and their windows dropped (needs start)"),
    "plan_share": Param(0.0, float, 0.0, 1.0, doc="share of the time left for re-planning the "
                        "given start by the schedule MILP of channel_plan.py (its large weights' "
                        "homes, direct reads and prefetch starts), which then replaces it among the "
                        "starts (0: off; needs start)"),
    "plan_slow": Param(0.975, float, 0.0, 1.0, doc="the re-planned start keeps at most this share "
                       "of the given start's slow-homed large-weight bytes slow"),
}
START_SHARE = 0.15  # of the time left, at most, for msa's start and the static sa's
REHEAT = (1.0, 0.1, 0.01)  # start temperatures of the anneals from the best, times t_start
# The static milp start only up to this many ops: on synth-10000@nnpi the static milp's
# thread ran on after its 4 s limit (model build and HiGHS past the deadline), taking a
# core from the anneals; at 10^3 ops it stops in time
MILP_MAX_OPS = 2000


def given_start(instance: Instance, path: str) -> ResidencySolution:
    """The solution in file `path` (memplace-solution/1 or /2) as a start, its latency
    simulated; ParameterError when it is not a valid solution of `instance`."""
    try:
        sol = ResidencySolution.read(path, instance)
    except SolutionError as exc:
        raise ParameterError(f"solver 'multistart': start {path}: {exc}") from None
    problems = violations(instance, sol)
    if problems:
        raise ParameterError(f"solver 'multistart': start {path} is not a valid solution of "
                             f"{instance.name}: {problems[0]}")
    sol.latency = simulate(instance, sol)
    return sol


def rehomed(instance: Instance, sol: ResidencySolution, spec: str) -> ResidencySolution:
    """`sol` with the homes `spec` names ("TENSOR=LEVEL,...": a tensor's name or index, a
    level's name) moved and those tensors' windows dropped, its latency simulated;
    ParameterError naming the item when a tensor or level is unknown or the result is not
    valid."""
    by_name = {str(t["name"]): k for k, t in enumerate(instance.tensors)}
    levels = list(instance.level_names)
    placement = np.array(sol.placement, np.int64)
    moved = set()
    for item in (part.strip() for part in spec.split(",") if part.strip()):
        tensor, sep, level = (x.strip() for x in item.rpartition("="))
        if not sep:
            raise ParameterError(f"solver 'multistart': rehome {item!r} is not TENSOR=LEVEL")
        t = by_name.get(tensor, int(tensor) if tensor.isdigit() else -1)
        if not 0 <= t < instance.n_tensors:
            raise ParameterError(f"solver 'multistart': rehome {item!r}: no tensor {tensor!r} in "
                                 f"{instance.name} (TENSOR=LEVEL, a name or an index)")
        if level not in levels:
            raise ParameterError(f"solver 'multistart': rehome {item!r}: no level {level!r} "
                                 f"(levels: {', '.join(levels)})")
        placement[t] = levels.index(level)
        moved.add(t)
    out = ResidencySolution(sol.instance, placement, sol.offsets,
                            tuple(w for w in sol.windows if w.tensor not in moved))
    problems = violations(instance, out)
    if problems:
        raise ParameterError(f"solver 'multistart': rehome {spec!r} leaves no valid start: {problems[0]}")
    out.latency = simulate(instance, out)
    return out


def rewindow(instance: Instance, sol: ResidencySolution,
             deadline: float = math.inf) -> ResidencySolution | None:
    """msa's allocator's windows over `sol`'s homes (its latency set), or None when they are
    not valid or not faster than `sol`."""
    offsets = None if sol.offsets is None else np.asarray(sol.offsets, np.int64)
    found, _ = assign_windows(instance, np.asarray(sol.placement, np.int64), offsets,
                              deadline=deadline)
    if violations(instance, found):
        return None
    found.latency = simulate(instance, found)
    return found if found.latency < sol.latency * (1 - 1e-9) else None


@register("multistart", "sa's compiled move loop from msa, the static MILP optimum (with "
          "msa's windows over its homes), the static sa's placement and swaps of same-size "
          "homes, then reheated anneals from the best (iterated local search)", params=PARAMS, problem="residency")
def solve_multistart(ctx: SearchContext, anneals: int, t_start: float, t_end: float,
                     home_rate: float, lead: float, milp_share: float, swap_share: float,
                     exchange_share: float, stream_share: float, static_moves: int,
                     offer_every: float, rotate: bool, start: str, rehome: str, plan_share: float,
                     plan_slow: float) -> None:
    if ctx.time_limit is None:
        raise ParameterError("solver 'multistart' (residency) needs a time limit")
    if rehome and not start:
        raise ParameterError("solver 'multistart': rehome moves homes of the given start; give start too")
    if plan_share > 0 and not start:
        raise ParameterError("solver 'multistart': plan_share re-plans the given start; give start too")
    ctx.lower_bound = lower_bound(ctx.instance)
    starts = _starts(ctx, milp_share, swap_share, static_moves, rotate, start, exchange_share,
                     rehome, plan_share, plan_slow, stream_share)
    _anneal_all(ctx, starts, anneals, t_start, t_end, home_rate, lead, offer_every)


def _starts(ctx: SearchContext, milp_share: float, swap_share: float, static_moves: int,
            rotate: bool, start: str, exchange_share: float = 0.0,
            rehome: str = "", plan_share: float = 0.0,
            plan_slow: float = 1.0, stream_share: float = 0.0) -> list[ResidencySolution]:
    """Every start offered and noted, in the order the anneals take them: the best first,
    a rotation of it (often slower at first) second."""
    inst = ctx.instance
    starts: list[ResidencySolution] = []

    def add(sol: ResidencySolution, name: str) -> None:
        ctx.offer(sol, sol.latency)
        ctx.notes[f"start_{name}"] = round(sol.latency * 1e6, 3)
        starts.append(sol)

    place, offsets = static_homes(inst, "compiler")  # an incumbent before anything slow
    compiler = ResidencySolution(inst.name, place, offsets)
    compiler.latency = simulate(inst, compiler)
    ctx.offer(compiler, compiler.latency)
    start_by = lambda share: time.perf_counter() + share * ctx.remaining()  # noqa: E731 (inf: no limit)
    add(msa_solution(inst, deadline=start_by(START_SHARE))[0], "msa")
    if milp_share > 0 and inst.n_ops <= MILP_MAX_OPS and not ctx.should_stop():
        add(milp_start(inst, start_by(milp_share)), "milp")
    if static_moves > 0 and not ctx.should_stop():
        add(static_start(inst, static_moves, int(ctx.rng.integers(2**31)), start_by(START_SHARE)),
            "static_sa")
    if start:
        given = given_start(inst, start)
        if rehome:
            given = rehomed(inst, given, rehome)
        name = "given"
        if plan_share > 0:
            ctx.offer(given, given.latency)  # the result is never worse than the start
            planned = plan(inst, given, plan_slow, plan_share * ctx.remaining(),
                           int(ctx.rng.integers(2**31)))
            ctx.notes["plan"] = "none found" if planned is None else round(planned.latency * 1e6, 3)
            if planned is not None:
                given, name = planned, "plan"
        add(given, name)
        better = rewindow(inst, given, start_by(START_SHARE))
        if better is not None:
            add(better, "given_rewindow")
    starts.sort(key=lambda s: s.latency)
    # local searches from the best start, in turn; an improvement becomes the best start
    for share, search, kind in ((swap_share, descend, "swap"), (exchange_share, exchange, "exchange"),
                                (stream_share, stream, "stream")):
        if share > 0 and not ctx.should_stop():
            found, tries = search(inst, starts[0], ctx.rng, start_by(share))
            ctx.notes[f"{kind}_tries"] = tries
            if found is not starts[0]:
                add(found, f"{kind}s")
                starts.insert(0, starts.pop())
    if rotate and not ctx.should_stop():
        turned = rotations(inst, starts[0], start_by(START_SHARE))
        if turned:  # often slower at first: the second anneal starts from it
            add(turned[0], "rotation")
            starts.insert(1, starts.pop())
    return starts


def _anneal_all(ctx: SearchContext, starts: list[ResidencySolution], anneals: int,
                t_start: float, t_end: float, home_rate: float, lead: float,
                offer_every: float) -> None:
    """`anneals` anneals in the time left: one from each start, then reheated ones from the
    best so far; each best offered."""
    inst = ctx.instance
    best = min(starts, key=lambda s: s.latency)
    last = [time.perf_counter()]

    def on_best(sol: ResidencySolution, lat: float) -> None:
        if time.perf_counter() - last[0] >= offer_every:
            ctx.offer(sol)
            last[0] = time.perf_counter()

    moves, gains = 0, []
    overhead = finish_seconds(inst)  # an anneal's work outside its clock, measured after the first
    for r in range(anneals):
        if ctx.should_stop():
            break
        left = ctx.remaining() - finish_seconds(inst)
        # fewer, longer anneals where setting one up is slow: each at least its overhead
        share = left / min(anneals - r, max(1, int(left / (2 * overhead)))) - overhead
        if share <= 0:
            break
        began = time.perf_counter()
        origin = starts[r] if r < len(starts) else best
        temp = t_start if r < len(starts) else t_start * REHEAT[(r - len(starts)) % len(REHEAT)]
        found, tried = move_loop.anneal(inst, origin, ctx.rng, 0, temp, min(t_end, temp),
                                        home_rate, lead, ctx.should_stop, on_best, share,
                                        offer_every)
        moves += tried
        ctx.count(tried)
        found.latency = simulate(inst, found)
        ctx.offer(found, found.latency)
        gains.append(round(best.latency / found.latency, 5))
        # setting up the board, the last copy and the offer (seconds at 10^4 ops)
        overhead = max(overhead, time.perf_counter() - began - share)
        if found.latency < best.latency:
            best = found
    ctx.notes.update(moves=moves, anneal_gains=gains)
