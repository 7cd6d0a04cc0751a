"""`sa`: simulated annealing on the exact latency delta, in Numba.

Moves: one tensor to another level; or (probability `swap_fraction`) a swap of two
tensors on different levels, of which a fraction `group_fraction` swaps one tensor
against 2..`group_max` tensors of the other level (one big weight out, several
smaller in: the exchanges the optima of resnet101@nnpi (one 589824-byte weight for
two of 262144) and of the transformers (one 2359296-byte weight for four of 589824)
need, which single moves and swaps reach only over worse states). The latency change of a move is the model's delta kernel
(`move_delta_kernel`, once per tensor moved), so the latency tracked during the
search is the spec latency up to rounding; it is recomputed exactly after every chunk.

Capacity bookkeeping (`sa_kernels.py`): weights are live at every step, so each level
keeps their bytes as one number; activations live a few steps and go into a per-step
load with a max tree, so the peak of a level is O(1) to read and an activation move
costs O(live range + log steps).

Capacity handling, `penalty=True` (default): an adaptive penalty. The energy is
latency + lam x (sum over levels of the bytes by which the level's peak exceeds its
capacity); lam starts at the median latency saved per byte of the instance and after
every move grows by 0.02% if the placement overflows and shrinks by 0.002% if not,
so the chain spends about 9% of its moves slightly over capacity and can cross
between feasible regions. Only capacity-valid placements are recorded as best; after
every chunk an overflowing current state is also repaired by the canonical rectify
and kept if better. `penalty=False`: feasibility throughout (a move is tried only if
every level that gains bytes still fits), no group swaps. Either way what is offered
is valid. Addressed levels are searched by capacity; the placement offered is given
offsets by the canonical rectify (tensors that cannot be packed move down).

Schedule: the start temperature T0 is set from the instance so that a fraction
`t0_accept` of the uphill moves sampled from the start placement would be accepted
(mean of exp(-delta/T0) over the sample); the temperature cools geometrically over
each anneal to `t_final` x the start latency. The first anneal starts from the best
compiler heuristic; of the following `restarts - 1`, the odd ones start afresh from
it at T0 (an independent chain, which may settle in another basin) and the even
ones from the best placement found so far, at `reheat` x T0; each anneal ends with a local search over single moves and
swaps (`polish`). With a move budget (`moves` > 0) it is split evenly over the
anneals and the result depends only on the seed; without one the time limit is split
evenly and each anneal's length is re-estimated from the measured speed. Moves run
in chunks of `chunk` per Numba call (Numba's generator seeded per chunk from the
solver's generator); between chunks the context is checked, counted and offered the
best placement.

Notes: `moves_per_s` (moves per second of kernel wall time), `moves_per_cpu_s` (per
CPU second of the solver thread: the figure on a loaded machine), `sa_accepted`,
`sa_infeasible` (penalty: fraction of moves that left the placement overflowing;
feasible: fraction of moves refused as infeasible); `memplace solve INSTANCE --solver sa`
prints them.
"""
from __future__ import annotations

import math
import time

import numpy as np

from memplace.model import Instance, capacity_ok, latency, rectify_capacity
from memplace.model.static.load_tree import tree_leaves
from memplace.solvers import Param, SearchContext, register
from memplace.solvers.static.heuristics import gains_to_fastest
from memplace.solvers.static.placements import capacity_starts, offer_valid
from memplace.solvers.static.sa_kernels import (anneal_kernel, anneal_penalty_kernel, build_state,
                                                max_gain_kernel, polish_kernel, sample_uphill_kernel)

MOVES_WITHOUT_LIMIT = 20_000_000  # total budget when neither `moves` nor a time limit is given
UPHILL_SAMPLES = 2000


class Annealer:
    """One search state: placement, tracked latency, temperature, capacity bookkeeping,
    penalty weight, and the best valid placement seen since the last `reset` (which
    must be given a valid placement). `penalty` picks the kernel (see the module
    docstring); `lam` is the start penalty weight in seconds per overflowing byte."""

    def __init__(self, instance: Instance, placement: np.ndarray, penalty: bool = False,
                 lam: float = 0.0, lam_up: float = 1.0002, lam_down: float = 0.99998):
        self.inst = instance
        self.penalty = penalty
        self.lam = (lam_up, lam_down, lam * 1e-3, lam * 1e3)
        self.lam0 = lam
        self.max_gain = max_gain_kernel(instance.access_time, instance.tensor_ptr,
                                        instance.tensor_access)
        self.leaves = tree_leaves(instance.n_ops)
        self.stats = np.zeros(4, np.int64)  # moves, infeasible, accepted, improved best
        self.kernel_s = 0.0  # wall seconds inside the kernels
        self.kernel_cpu_s = 0.0  # CPU seconds of this thread inside the kernels
        self.reset(placement)

    def reset(self, placement: np.ndarray) -> None:
        i = self.inst
        self.place = np.array(placement, np.int64, copy=True)
        self.book = build_state(self.place, i.arrays, self.leaves)
        self.weight_bytes, self.act_load, self.tree_max = self.book[:3]  # views, for checks
        lat = latency(i, self.place)
        # latency, temperature, best (valid) latency, penalty weight (seconds per byte)
        self.state = np.array([lat, 0.0, lat, self.lam0])
        self.best_place = self.place.copy()

    @property
    def latency(self) -> float:
        """The latency tracked incrementally (sum of accepted deltas)."""
        return float(self.state[0])

    @property
    def best_latency(self) -> float:
        return float(self.state[2])

    def run(self, n_moves: int, temperature: float, alpha: float, swap_fraction: float,
            seed: int, group_fraction: float = 0.0, group_max: int = 4) -> None:
        """n_moves moves from `temperature`, multiplied by `alpha` before each move."""
        self.state[1] = temperature
        t = time.perf_counter()
        cpu = time.thread_time()
        if self.penalty:
            anneal_penalty_kernel(self.place, self.state, self.best_place, self.book, n_moves,
                                  alpha, swap_fraction, group_fraction, group_max, seed,
                                  *self.lam, self.max_gain, self.stats, self.inst.arrays)
        else:
            anneal_kernel(self.place, self.state, self.best_place, self.book, n_moves, alpha,
                          swap_fraction, seed, self.stats, self.inst.arrays)
        self.kernel_s += time.perf_counter() - t
        self.kernel_cpu_s += time.thread_time() - cpu

    def resync(self) -> None:
        """Replace the tracked latencies by exact evaluations (rounding drift)."""
        self.state[0] = latency(self.inst, self.place)
        self.state[2] = latency(self.inst, self.best_place)

    def sample_uphill(self, n_samples: int, swap_fraction: float, seed: int) -> np.ndarray:
        return sample_uphill_kernel(self.place, n_samples, swap_fraction, seed, self.book,
                                    self.inst.arrays)


def polish(inst: Instance, placement: np.ndarray, max_passes: int = 50,
           max_pairs: int = 2_000_000) -> tuple[np.ndarray, float]:
    """The placement after a local search over single moves and swaps (valid in, valid
    out; at most `max_pairs` swaps looked at), and its exact latency."""
    place = np.array(placement, np.int64, copy=True)
    threshold = 1e-12 * latency(inst, place)
    polish_kernel(place, build_state(place, inst.arrays, tree_leaves(inst.n_ops)), threshold,
                  max_passes, max_pairs, inst.arrays)
    return place, latency(inst, place)


def byte_value(inst: Instance) -> float:
    """Median latency saved per byte by moving one tensor from the slowest placement to
    the fastest level: the scale of the capacity penalty (seconds per overflowing byte)."""
    density = gains_to_fastest(inst.slowest_placement(), inst.arrays) / inst.size
    positive = density[density > 0]
    return float(np.median(positive)) if positive.size else 1e-18


def start_temperature(uphill: np.ndarray, accept: float) -> float | None:
    """The T with mean(exp(-delta/T)) = accept over the sampled uphill deltas (None if none)."""
    if uphill.size == 0:
        return None
    lo, hi = math.log(uphill.min()) - 12.0, math.log(uphill.max()) + 12.0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if np.exp(-uphill / math.exp(mid)).mean() < accept:
            lo = mid
        else:
            hi = mid
    return math.exp(0.5 * (lo + hi))


@register("sa", "simulated annealing: level moves, swaps and 1-for-2 swaps on the exact delta, "
          "adaptive capacity penalty, calibrated geometric cooling, restarts from the best",
          params={"moves": Param(0, int, 0, doc="move budget (0: until the time limit)"),
                  "restarts": Param(4, int, 1, doc="anneals"),
                  "t0_accept": Param(0.1, float, 1e-6, 1 - 1e-6, doc="share of sampled uphill moves accepted at T0"),
                  "t_final": Param(1e-6, float, 1e-15, 1.0, doc="final temperature / start latency"),
                  "swap_fraction": Param(0.3, float, 0.0, 1.0, doc="share of moves that are swaps"),
                  "reheat": Param(0.3, float, 1e-6, 10.0, doc="start temperature of a reheat / T0"),
                  "chunk": Param(200_000, int, 1, doc="moves per kernel call"),
                  "penalty": Param(True, doc="adaptive capacity penalty (else feasible moves only)"),
                  "group_fraction": Param(0.5, float, 0.0, 1.0, doc="share of swaps that are group swaps"),
                  "group_max": Param(4, int, 2, 16, doc="most tensors swapped in for one")})
def solve_sa(ctx: SearchContext, moves: int, restarts: int, t0_accept: float, t_final: float,
             swap_fraction: float, reheat: float, chunk: int, penalty: bool,
             group_fraction: float, group_max: int) -> None:
    inst = ctx.instance

    seeds = capacity_starts(inst)
    ctx.count(len(seeds))
    lats = {name: latency(inst, place) for name, place in seeds.items()}
    for name, place in seeds.items():
        offer_valid(ctx, place, lats[name])
    start = min(seeds, key=lambda name: (lats[name], name))
    best_place, best_lat = seeds[start].copy(), lats[start]
    ctx.notes["sa_start"] = start

    ann = Annealer(inst, best_place, penalty=penalty, lam=byte_value(inst) if penalty else 0.0)
    ann.run(0, 1.0, 1.0, swap_fraction, 0)  # compile both kernels now, also when stopped early
    polish(inst, best_place, max_passes=0)  # (`memplace warmup` stops at the first offer)
    ann.kernel_s = ann.kernel_cpu_s = 0.0  # speed figures without the compile time
    uphill = ann.sample_uphill(UPHILL_SAMPLES, swap_fraction, _draw(ctx))
    t_end = t_final * best_lat
    t0 = start_temperature(uphill, t0_accept) or t_end
    t_end = min(t_end, t0)
    ctx.notes.update(sa_t0=t0, sa_t_end=t_end)

    budget = moves or (MOVES_WITHOUT_LIMIT if ctx.time_limit is None else 0)
    reserve = 0.0 if ctx.time_limit is None else min(0.5, 0.02 * ctx.time_limit)
    rate = None  # measured moves per second of kernel time
    anneals = 0
    while not ctx.should_stop():
        r = anneals
        if budget:
            if r >= restarts:
                break
            length = budget // restarts + (budget % restarts if r == restarts - 1 else 0)
            deadline = math.inf
        else:
            left = ctx.deadline - reserve - time.perf_counter()
            if left <= 0.0:
                break
            deadline = time.perf_counter() + left / max(1, restarts - r)
            length = None
        # Odd anneals start afresh from the heuristic seed at T0 (another basin),
        # even ones reheat the best placement found so far.
        fresh = r % 2 == 1
        temp0 = t0 if r == 0 or fresh else min(t0, reheat * t0)
        if r > 0:
            ann.reset(seeds[start] if fresh else best_place)
        anneals += 1
        done = 0
        while not ctx.should_stop():
            if length is None:  # time mode: the anneal ends at its deadline
                left = deadline - time.perf_counter()
                if done > 0 and left <= 0.0:
                    break
                planned = done + (rate * max(left, 0.0) if rate else 1e12)
                n = int(min(chunk, max(1, planned - done)))
            else:
                planned = length
                if done >= length:
                    break
                n = min(chunk, length - done)
            ratio = t_end / temp0
            temperature = temp0 * ratio ** (done / planned)
            alpha = ratio ** (1.0 / planned)
            before = ann.kernel_s
            ann.run(n, temperature, alpha, swap_fraction, _draw(ctx), group_fraction, group_max)
            spent = ann.kernel_s - before
            if spent > 0:
                rate = n / spent
            done += n
            ctx.count(n)
            ann.resync()
            if ann.best_latency < best_lat:
                best_lat = ann.best_latency
                best_place = ann.best_place.copy()
                offer_valid(ctx, best_place, best_lat)
            if penalty and ann.latency < best_lat and not capacity_ok(inst, ann.place):
                fixed = rectify_capacity(inst, ann.place)  # an overflowing state, repaired
                fixed_lat = latency(inst, fixed)
                ctx.count(1)
                if fixed_lat < best_lat:
                    best_lat, best_place = fixed_lat, fixed
                    offer_valid(ctx, best_place, best_lat)
        if ctx.should_stop() and time.perf_counter() > ctx.deadline + 0.05:
            break
        polished, polished_lat = polish(inst, best_place)
        ctx.count(1)
        if polished_lat < best_lat:
            best_lat, best_place = polished_lat, polished
            offer_valid(ctx, best_place, best_lat)
    if inst.has_addressed_levels and ctx.packer is not None and not ctx.should_stop():
        offer_valid(ctx, best_place, best_lat, packer=ctx.packer)
    moved = int(ann.stats[0])
    ctx.notes.update(sa_anneals=anneals, sa_moves=moved,
                     moves_per_s=moved / ann.kernel_s if ann.kernel_s > 0 else 0.0,
                     moves_per_cpu_s=moved / ann.kernel_cpu_s if ann.kernel_cpu_s > 0 else 0.0,
                     sa_accepted=int(ann.stats[2]) / max(1, moved),
                     sa_infeasible=int(ann.stats[1]) / max(1, moved),
                     sa_best_latency=best_lat)


def _draw(ctx: SearchContext) -> int:
    """A seed for Numba's generator, drawn from the solver's own generator."""
    return int(ctx.rng.integers(0, 2**31 - 1))
