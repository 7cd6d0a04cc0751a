"""`sa` (residency): simulated annealing over homes and windows together, on the simulator.

The state is a valid residency solution (`layout.Layout`: homes, home offsets, windows,
per-level loads and, on addressed levels, chunks). Each step picks a tensor that has
accesses and one move for it:

- window moves (one window slot changes, evaluated by the incremental re-simulation of
  `memplace.model.residency.Simulation` from the checkpoint before the first op the
  change touches): *add* a window for an access its home serves (a defining window when
  the access is the producer's write, optionally evicted; else a prefetch `lead` ops
  ahead, covering 1-3 consecutive home-served accesses), *drop* one, *shift* a
  prefetch's start, *extend or shorten* its last (or first) access, *change its
  level*, *evict or not* (a defining window);
- home moves (every copy of the tensor changes channel, so the whole solution is
  simulated again): *re-home* the tensor to another level (its windows that are no
  longer faster than the home are dropped), and *stream*: a tensor without a producer
  (a weight) homed in a fast level moves to a slower one and gets a prefetch window
  back in its old level for every access (the move that frees fast memory for others:
  weights out of SRAM/LLC and streamed back gain ~11% on gpt2@nnpi).

Half the moves pick their tensor in proportion to its traffic (bytes accessed), half
uniformly. A move that breaks a rule of section 10 or does not fit is not made (validity is kept
throughout, never penalised). On addressed levels a window or home gets the best-fit
offset over its ops, and a change that finds no gap is refused (no repacking inside a
move). Acceptance is Metropolis on the relative latency change.

Starts: `msa`'s solution (run through `solve()`, homes `seed_homes`) and the static
`sa`'s placement after `static_moves` moves with msa's windows over it (`starts.py`;
0 = msa alone, as on programs where that is fewer than `STATIC_MOVES_PER_TENSOR` moves
a tensor). Both are offered first, so the result is never worse than msa. The
temperature cools geometrically from `t_start` to `t_end` in each of `restarts` anneals:
the first from msa's solution, the second from the static start, the others from the
best so far (with one anneal, from the better start). Each anneal has its share of
`iterations` moves (then a run depends only on its seed, when the moves end before the
time limit) or, with `iterations = 0` (the default), its share of the time left. The
best solution is offered at least every `offer_every` seconds and after each anneal
(latency from a full simulation).

`anneal_moves` (per tensor with traffic; 0, the default, for none) caps an anneal's
length: it then cools over its cap or its share of the time, whichever ends first, and
capped anneals follow each other from the best until the time (or `iterations`) runs
out. On some programs a longer anneal at the same temperatures ends worse, not better:
it wanders further from the start while hot and freezes in a worse basin. From msa's
solution on the BERT-base export (210 ops, 301 tensors; docs/residency-scale.md), one
anneal of 3 M moves ended at its start on 5 seeds of 5, anneals of 1 M moves found 0.5%
better on 3 of 5, so uncapped sa returned its start from 10 s on. `memplace gap` caps at
3,000; the default stays uncapped, as the committed plans were run.
"""
from __future__ import annotations

import math
import time
from typing import Callable

import numpy as np

from memplace.model.instance import Instance
from memplace.model.residency import ResidencySolution, Simulation, Window, lower_bound, simulate
from memplace.solvers import Param, ParameterError, SearchContext, register
from memplace.solvers.residency.machinery import move_loop
from memplace.solvers.residency.machinery.layout import Layout
from memplace.solvers.residency.machinery.starts import finish_seconds, msa_solution, static_start

HOMES = ("slowest", "compiler", "best")
ENGINES = ("compiled", "python")
START_SHARE = 0.3  # of the time left, at most, for each start (msa's, the static one)
PARAMS = {
    "iterations": Param(0, int, 0, doc="moves tried over all anneals (0: cool over the time "
                                       "limit instead; a budget makes the run depend only on the seed)"),
    "restarts": Param(3, int, 1, doc="anneals: from msa, from the static start, then from "
                                      "the best so far"),
    "anneal_moves": Param(0, int, 0, doc="the most moves one anneal makes, per tensor with "
                                         "traffic (0: no cap); with a cap, capped anneals "
                                         "follow each other from the best until the time or "
                                         "`iterations` run out (at least `restarts` of them "
                                         "share the time)"),
    "t_start": Param(3e-3, float, 0.0, doc="start temperature, relative to the latency (on "
                                          "programs of up to 1,000 ops: see `temperature_scale`)"),
    "t_end": Param(1e-6, float, 0.0, "t_start", doc="final temperature, relative to the latency "
                                                    "(as t_start)"),
    "home_rate": Param(0.1, float, 0.0, 1.0, doc="share of moves that change a home (re-home, stream)"),
    "lead": Param(4.0, float, 0.0, doc="mean extra ops a new prefetch starts ahead of its first use"),
    "seed_homes": Param("best", str, choices=HOMES, doc="homes of the msa run the search starts from"),
    "static_moves": Param(200_000, int, 0, doc="moves of the static sa whose placement is the "
                                               "other start (0, or fewer than "
                                               "STATIC_MOVES_PER_TENSOR a tensor: msa alone)"),
    "offer_every": Param(1.0, float, 0.0, doc="seconds between offers of the best solution"),
    "engine": Param("compiled", str, choices=ENGINES,
                    doc="the move loop: compiled (move_loop.py, Numba end to end) or python (the "
                        "reference Annealer below, one Python call per move)"),
}


SCALE_OPS = 1000  # programs up to this size anneal at the temperatures given
# The static start only when its static sa has at least this many moves a tensor: on
# synth-10000@nnpi (12 a tensor) its start was 0.07% below msa's, and its anneal (the
# second of three, 72 s at load 10) ended 2.8% above the first one's, from msa's solution;
# without it that third of the time anneals from the best (synth-1000: 125 a tensor)
STATIC_MOVES_PER_TENSOR = 50


def temperature_scale(instance: Instance) -> float:
    """What `t_start` and `t_end` are multiplied by on this program: 1 up to `SCALE_OPS` ops,
    then (SCALE_OPS / n_ops)^2. A move changes one window or home, so the latency it adds or
    saves is a share of the whole that falls as 1 / n_ops; and in a given time each tensor
    gets a share of the moves that falls as 1 / n_ops, leaving less time to undo a worsening
    move once accepted. At a temperature relative to the whole latency alone, the anneal
    walked to 1.6x msa's latency at 10^4 ops before the cooling caught up, and at 10^5 ops
    never got back below msa's; the square measured best of 1 / n_ops and its square at
    10^4 and 10^5 ops (docs/residency-scale.md)."""
    return min(1.0, SCALE_OPS / max(1, instance.n_ops)) ** 2


class Annealer:
    """The search state and its moves; `step()` tries one move and keeps it or not."""

    def __init__(self, instance: Instance, start: ResidencySolution, rng: np.random.Generator,
                 home_rate: float = 0.1, lead: float = 4.0):
        i = self.instance = instance
        self.rng = rng
        self.home_rate, self.lead = home_rate, lead
        self.layout = Layout(i, start.placement, start.offsets, start.windows)
        self.sim = Simulation(i, self.layout.homes.copy(), self.layout.windows)
        self.tensors = np.array([t for t in range(i.n_tensors) if self.layout.access_ops[t]], np.int64)
        # half the moves pick a tensor by its traffic (where the latency is), half uniformly
        traffic = np.asarray(i.traffic, np.float64)[self.tensors]
        self.by_traffic = np.cumsum(traffic) / traffic.sum() if traffic.sum() > 0 else None
        self.accepted = 0

    @property
    def latency(self) -> float:
        return self.sim.latency

    # ------------------------------------------------------------------ helpers
    def _free_slot(self) -> int:
        for s, w in enumerate(self.layout.windows):  # reuse a hole: keeps the encoding small
            if w is None:
                return s
        return len(self.layout.windows)

    def _served_by_home(self, t: int) -> list[int]:
        ws = self.layout.tensor_windows(t)
        return [k for k in self.layout.access_ops[t] if not any(w.first <= k <= w.last for w in ws)]

    def _lead(self) -> int:
        return 1 + int(self.rng.exponential(self.lead)) if self.lead > 0 else 1

    def _new_window(self, t: int) -> Window | None:
        """A window for a random access of t its home serves, in a random faster level."""
        lay, rng = self.layout, self.rng
        home = int(lay.homes[t])
        served = self._served_by_home(t)
        if home == 0 or not served:
            return None
        j = int(rng.integers(len(served)))
        k = served[j]
        level = int(rng.integers(home))
        last = served[min(len(served) - 1, j + int(rng.integers(3)))]
        # consecutive home-served accesses only: a window may not cover another window
        ws = lay.tensor_windows(t)
        if any(k < w.first and w.first <= last for w in ws):
            last = k
        p = int(lay.producer[t])
        if k == p:
            evict = None
            later = [a for a in served if a > last]
            if later or rng.random() < 0.5:
                issue = p + 1
                hi = later[0] if later else int(self.instance.end[t])
                if issue < hi:
                    evict = (issue, int(rng.integers(issue + 1, hi + 1)))
                elif later:
                    return None
            return Window(t, level, p, p, last, None, evict)
        start = max(k - self._lead(), int(self.instance.start[t]))
        return Window(t, level, start, k, last, None, None) if start < k else None

    def _changed_window(self, w: Window) -> Window | None:
        """One random edit of window w: shift, resize, change level, evict or not."""
        i, rng, lay = self.instance, self.rng, self.layout
        t, home = w.tensor, int(lay.homes[w.tensor])
        kind = int(rng.integers(4))
        if kind == 0 and w.start < w.first:  # shift the start
            d = self._lead() * (1 if rng.random() < 0.5 else -1)
            s = min(max(w.start + d, int(i.start[t])), w.first - 1)
            return Window(t, w.level, s, w.first, w.last, None, w.evict) if s != w.start else None
        if kind == 1:  # extend or shorten: move `last` (or a prefetch's `first`) one access
            acc = lay.access_ops[t]
            if rng.random() < 0.5:
                nxt = [a for a in acc if a > w.last] if rng.random() < 0.5 else \
                      [a for a in acc if w.first <= a < w.last][-1:]
                pick = nxt[0] if nxt and nxt[0] > w.last else (nxt[-1] if nxt else None)
                if pick is None or pick == w.last or pick < w.first:
                    return None
                due_ok = w.evict is None or w.evict[1] > pick
                evict = w.evict if due_ok else None
                return Window(t, w.level, w.start, w.first, pick, None, evict)
            if w.start < w.first:
                cand = [a for a in acc if w.start < a <= w.last and a != w.first]
                if not cand:
                    return None
                f = int(cand[int(rng.integers(len(cand)))])
                return Window(t, w.level, w.start, f, max(f, w.last), None, None)
            return None
        if kind == 2 and home > 1:  # another faster level
            level = int(rng.integers(home - 1))
            level += level >= w.level
            return Window(t, level, w.start, w.first, w.last, None, w.evict)
        if kind == 3 and w.start == w.first == int(lay.producer[t]):  # evict or not
            if w.evict is not None:
                return Window(t, w.level, w.start, w.first, w.last, None, None)
            hi = int(i.end[t])
            issue = w.start + 1
            if issue + 1 > hi:
                return None
            due = int(rng.integers(issue + 1, hi + 1))
            return Window(t, w.level, w.start, w.first, w.last, None, (issue, due))
        return None

    # ------------------------------------------------------------------ moves
    def _window_move(self, t: int) -> tuple[int, Window | None] | None:
        lay, rng = self.layout, self.rng
        slots = lay.by_tensor.get(t, [])
        r = rng.random()
        if not slots or r < 0.35:
            w = self._new_window(t)
            return None if w is None else (self._free_slot(), w)
        slot = slots[int(rng.integers(len(slots)))]
        if r < 0.5:
            return slot, None
        w = self._changed_window(lay.windows[slot])
        return None if w is None else (slot, w)

    def _home_move(self, t: int) -> bool:
        """Re-home or stream tensor t on a copy of the layout; True if the result is valid."""
        i, lay, rng = self.instance, self.layout, self.rng
        home = int(lay.homes[t])
        L = i.n_levels
        if L < 2:
            return False
        if lay.producer[t] < 0 and home < L - 1 and rng.random() < 0.5:  # stream
            new_home = int(rng.integers(home + 1, L))
            for s in list(lay.by_tensor.get(t, [])):
                if lay.set_window(s, None) is False:
                    return False
            if not lay.set_home(t, new_home):
                return False
            for k in lay.access_ops[t]:
                start = max(k - self._lead(), 0)
                if start < k and not any(w.first <= k <= w.last for w in lay.tensor_windows(t)):
                    lay.set_window(self._free_slot(), Window(t, home, start, k, k))
            return True
        new_home = int(rng.integers(L - 1))
        new_home += new_home >= home
        for s in list(lay.by_tensor.get(t, [])):
            if lay.windows[s].level >= new_home and lay.set_window(s, None) is False:
                return False
        return lay.set_home(t, new_home)

    def step(self, temperature: float) -> bool:
        """Try one move; keep it by the Metropolis rule. True when it was kept."""
        lay, rng = self.layout, self.rng
        if self.by_traffic is not None and rng.random() < 0.5:
            j = min(int(np.searchsorted(self.by_traffic, rng.random(), "right")), self.tensors.size - 1)
        else:
            j = int(rng.integers(self.tensors.size))
        t = int(self.tensors[j])
        cur = self.sim.latency
        if rng.random() < self.home_rate:
            snap = lay.snapshot(t)
            if not self._home_move(t):
                lay.restore(snap)
                return False
            sim = Simulation(self.instance, lay.homes.copy(), lay.windows)
            if self._accept(sim.latency, cur, temperature):
                self.sim = sim
                self.accepted += 1
                return True
            lay.restore(snap)
            return False
        move = self._window_move(t)
        if move is None:
            return False
        slot, new = move
        old = lay.windows[slot] if slot < len(lay.windows) else None
        booked = lay.set_window(slot, new)
        if booked is False:
            return False
        lat = self.sim.try_change(slot, booked)
        if self._accept(lat, cur, temperature):
            self.sim.accept()
            self.accepted += 1
            return True
        self.sim.reject()
        lay.set_window(slot, old)
        return False

    def _accept(self, new: float, cur: float, temperature: float) -> bool:
        if new <= cur:
            return True
        if temperature <= 0:
            return False
        return self.rng.random() < math.exp(-(new - cur) / (temperature * cur))

    def solution(self) -> ResidencySolution:
        return self.layout.solution()


def anneal(instance: Instance, start: ResidencySolution, rng: np.random.Generator,
           iterations: int, t_start: float, t_end: float, home_rate: float = 0.1,
           lead: float = 4.0, should_stop: Callable[[], bool] = lambda: False,
           on_best: Callable[[ResidencySolution, float], None] | None = None,
           on_accept: Callable[[Annealer], None] | None = None,
           seconds: float | None = None) -> tuple[ResidencySolution, int]:
    """Anneal from `start` (valid); returns the best solution seen and the moves tried.

    The temperature cools from `t_start` to `t_end` (relative to the latency) over
    `iterations` moves, or, with `iterations == 0`, over `seconds` of wall time (until
    `should_stop`); given both, over whichever runs out first. `on_best(solution, latency)` hears every new best,
    `on_accept(annealer)` every kept move."""
    if iterations <= 0 and not seconds:
        raise ValueError("anneal needs iterations > 0 or seconds")
    run = Annealer(instance, start, rng, home_rate, lead)
    best, best_lat = run.solution(), run.latency
    ratio = (t_end / t_start) if t_start > 0 and t_end > 0 else 0.0
    began = time.perf_counter()
    it = 0
    frac = 0.0
    by_clock = 0.0
    while iterations <= 0 or it < iterations:
        if it % 16 == 0:  # a home move simulates everything again: check the clock often
            if should_stop():
                break
            if seconds:
                by_clock = (time.perf_counter() - began) / seconds
                if by_clock >= 1.0:
                    break
        frac = max(it / iterations if iterations > 0 else 0.0, by_clock)
        temp = t_start * ratio ** frac if ratio > 0 else 0.0
        it += 1
        if run.step(temp):
            if on_accept is not None:
                on_accept(run)
            if run.latency < best_lat * (1 - 1e-12):
                best, best_lat = run.solution(), run.latency
                if on_best is not None:
                    on_best(best, best_lat)
    return best, it


@register("sa", "simulated annealing over homes and windows together (re-home, stream a "
          "weight, add / drop / shift / resize / re-level / evict a window) on the incremental "
          "simulator, from msa's solution", params=PARAMS, problem="residency")
def solve_sa(ctx: SearchContext, iterations: int, restarts: int, anneal_moves: int,
             t_start: float, t_end: float, home_rate: float, lead: float, seed_homes: str,
             static_moves: int, offer_every: float, engine: str) -> None:
    inst = ctx.instance
    if iterations == 0 and ctx.time_limit is None:
        raise ParameterError("solver 'sa' (residency): parameter 'iterations' is needed without "
                             "a time limit")
    ctx.lower_bound = lower_bound(inst)
    starts = _starts(ctx, seed_homes, static_moves, restarts)
    last = [time.perf_counter()]  # when the best was last offered

    def on_best(sol: ResidencySolution, lat: float) -> None:
        if time.perf_counter() - last[0] >= offer_every:
            ctx.offer(sol)
            last[0] = time.perf_counter()

    scale = temperature_scale(inst)
    temps = (t_start * scale, t_end * scale)
    best, best_lat = starts[0], math.inf
    tally = _Tally()
    cap = anneal_moves * int(np.count_nonzero(inst.traffic)) if anneal_moves else 0
    r = 0
    while r < restarts or (cap and (ctx.time_limit is not None or tally.moves < iterations)):
        origin = starts[r] if r < len(starts) else best  # each start once, then the best
        if ctx.should_stop():
            break
        share = None if iterations > 0 else \
            (ctx.remaining() - finish_seconds(inst)) / max(1, restarts - r)
        if share is not None and share <= 0:
            break
        if cap:  # capped anneals until the moves (or the time) run out
            budget = min(cap, iterations - tally.moves) if iterations else cap
            if budget <= 0:
                break
        else:
            budget = max(1, iterations // restarts) if iterations else 0
        began = time.perf_counter()
        found, tried = _anneal_with(engine, ctx, origin, budget, temps, home_rate, lead, on_best,
                                    share, offer_every)
        tally.add(ctx, time.perf_counter() - began, tried)
        ctx.offer(found)
        found_lat = simulate(inst, found)
        if found_lat < best_lat:  # the first anneal always (best_lat starts at inf)
            best, best_lat = found, found_lat
        r += 1
        if ctx.should_stop():
            break


def _starts(ctx: SearchContext, seed_homes: str, static_moves: int,
            restarts: int) -> list[ResidencySolution]:
    """The anneals' starts, each offered: msa's solution, then (with enough `static_moves`)
    the static start; the better one alone when there is a single anneal. Each takes at
    most START_SHARE of the time left."""
    inst = ctx.instance
    start_by = lambda: time.perf_counter() + START_SHARE * ctx.remaining()  # noqa: E731 (inf: no limit)
    starts = [msa_solution(inst, homes=seed_homes, deadline=start_by())[0]]
    ctx.offer(starts[0], starts[0].latency)
    if static_moves >= max(1, STATIC_MOVES_PER_TENSOR * inst.n_tensors) and not ctx.should_stop():
        starts.append(static_start(inst, static_moves, int(ctx.rng.integers(2**31)), start_by()))
        ctx.offer(starts[1], starts[1].latency)
    if restarts < len(starts):  # one anneal: from the better start
        starts = [min(starts, key=lambda s: s.latency)]
    return starts


def _anneal_with(engine: str, ctx: SearchContext, origin: ResidencySolution, budget: int,
                 temps: tuple[float, float], home_rate: float, lead: float, on_best,
                 share: float | None, offer_every: float) -> tuple[ResidencySolution, int]:
    """One anneal from `origin` by the compiled move loop or the Python one."""
    t_start, t_end = temps
    if engine == "compiled":
        return move_loop.anneal(ctx.instance, origin, ctx.rng, budget, t_start, t_end, home_rate,
                                lead, ctx.should_stop, on_best, share, offer_every)
    return anneal(ctx.instance, origin, ctx.rng, budget, t_start, t_end, home_rate, lead,
                  ctx.should_stop, on_best, seconds=share)


class _Tally:
    """The anneals' seconds and moves so far, kept in the run's notes and count."""

    def __init__(self) -> None:
        self.seconds, self.moves = 0.0, 0  # inside the anneals (the moves' own rate, starts left out)
        self.anneals = 0

    def add(self, ctx: SearchContext, seconds: float, tried: int) -> None:
        self.seconds += seconds
        self.moves += tried
        self.anneals += 1
        ctx.notes.update(anneals=self.anneals, anneal_s=round(self.seconds, 3), moves=self.moves,
                         moves_per_s=round(self.moves / self.seconds) if self.seconds > 0 else 0)
        ctx.count(tried)
