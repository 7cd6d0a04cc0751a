"""`ga`: a DEAP genetic algorithm over placements, the population evaluated in one Numba call.

An individual is an `array.array('b')` of levels, one gene per tensor. Each
generation's unevaluated individuals go through `toolbox.map` as one batch: they
are stacked into a 2-D array, every row is repaired by the canonical rectify
(spec section 6, offsets first-fit on addressed levels) and its latency computed
in one kernel call, and the repaired genes are written back (Lamarckian repair:
what survives is always a valid placement). Selection is a tournament, crossover
uniform; a mutation either moves single genes to another level or (with
probability `swappb`) makes an exchange: one tensor up a level, one tensor of that
level live at the same time down. The best `elite` individuals pass unchanged.

The operators are plain functions over a NumPy view of the individual, drawing
from the solver's own `numpy.random.Generator` (DEAP's stock operators draw from
the global `random` module, which solvers running in parallel threads would
share), so a seed fixes the result.

The initial population is random, plus (with `seed_heuristics`) one individual
per compiler heuristic of `memplace.solvers.static.heuristics` and `greedy_seeds`
randomised greedy fills (noise 0.3). Seeding happens once; `hybrid` (egrl.py) is
where policies keep guiding the search every generation. The exchange move is
there because the canonical repair evicts by traffic/size, not by benefit: on
resnet101@nnpi, a GA with single-gene moves only stalled 1.1% above the optimum
at a placement that no pair of gene moves improves (the optimum differed from it
in 65 genes, trading LLC weights of 3x3 convolutions for those of 1x1 ones).
"""
from __future__ import annotations

import array
import math
from typing import Callable, Sequence

import numpy as np
from deap import base, creator, tools
from numba import njit

from memplace.model import Instance, rectify
from memplace.model.static import kernels
from memplace.model.static.rectification import rectify_tables
from memplace.solvers.base import ParameterError, SearchContext, check_range, register

# DEAP's creator classes live in its module namespace: made once, whoever imports first.
if not hasattr(creator, "LatencyFitness"):
    creator.create("LatencyFitness", base.Fitness, weights=(-1.0,))
if not hasattr(creator, "PlacementIndividual"):
    creator.create("PlacementIndividual", array.array, typecode="b",
                   fitness=creator.LatencyFitness)


# ---------------------------------------------------------------------- batch repair + latency
@njit(cache=True, nogil=True)
def repair_latency_batch_kernel(population, compute, op_ptr, op_tensor, access_time, size,
                                start, end, capacity, addressed, alignment, weights_by_rank,
                                step_ptr, step_tensor, rank, by_rank_desc, out):
    """For every row of `population` (int64[P, T], changed in place): the canonical
    rectify (capacity loop level by level; on an addressed level, first-fit offsets
    by decreasing rank and the tensors left without one moved a level down), then
    the latency into `out[p]` (inf if an addressed last level cannot take a tensor)."""
    n_pop, n_tensors = population.shape
    n_levels = capacity.shape[0]
    n_ops = compute.shape[0]
    offsets = np.empty(n_tensors, np.int64)
    order = np.empty(n_tensors, np.int64)
    for p in range(n_pop):
        place = population[p]
        load = kernels.load_kernel(place, size, start, end, n_levels, n_ops)
        feasible = True
        for l in range(n_levels):
            if l < n_levels - 1:
                kernels.rectify_level_kernel(place, load, l, capacity, size, start, end,
                                             weights_by_rank, step_ptr, step_tensor, rank)
            if addressed[l]:
                m = 0
                for i in range(n_tensors):
                    t = by_rank_desc[i]
                    if place[t] == l:
                        order[m] = t
                        offsets[t] = -1
                        m += 1
                kernels.first_fit_offsets_kernel(order[:m], size, start, end, alignment[l],
                                                 capacity[l], offsets)
                for i in range(m):
                    t = order[i]
                    if offsets[t] < 0:
                        if l == n_levels - 1:
                            feasible = False
                        else:
                            place[t] = l + 1
                            for k in range(start[t], end[t] + 1):
                                load[l, k] -= size[t]
                                load[l + 1, k] += size[t]
        if feasible:
            out[p] = kernels.latency_kernel(place, compute, op_ptr, op_tensor, access_time)
        else:
            out[p] = np.inf
    return out


def repair_latency_batch(inst: Instance, population: np.ndarray) -> np.ndarray:
    """Rectify every row of an int64[P, T] placement array in place; return the latencies."""
    i = inst
    tables = rectify_tables(i)
    by_rank_desc = getattr(i, "_by_rank_desc", None)
    if by_rank_desc is None:
        by_rank_desc = np.argsort(-i.rectify_rank, kind="stable").astype(np.int64)
        i._by_rank_desc = by_rank_desc
    out = np.empty(population.shape[0], np.float64)
    return repair_latency_batch_kernel(population, i.compute, i.op_ptr, i.op_tensor,
                                       i.access_time, i.size, i.start, i.end, i.capacity,
                                       i.addressed, i.alignment, tables.weights_by_rank,
                                       tables.step_ptr, tables.step_tensor, i.rectify_rank,
                                       by_rank_desc, out)


def offer_valid(ctx: SearchContext, placement: np.ndarray, latency_s: float) -> bool:
    """Offer a rectified placement (with canonical offsets on addressed levels)."""
    if not math.isfinite(latency_s) or latency_s >= ctx.best_latency:
        return False
    offsets = None
    if ctx.instance.has_addressed_levels:
        offsets = rectify(ctx.instance, placement).offsets  # already rectified: same placement
    return ctx.offer(placement, latency_s, offsets)


# ---------------------------------------------------------------------- DEAP pieces
class BatchEvaluator:
    """`toolbox.map(toolbox.evaluate, individuals)` as one kernel call over the batch."""

    def __init__(self, ctx: SearchContext):
        self.ctx = ctx

    def evaluate(self, individual: Sequence[int]) -> tuple[float]:
        return self.map(self.evaluate, [individual])[0]

    def map(self, func: Callable, individuals: Sequence) -> list[tuple[float]]:
        individuals = list(individuals)
        if getattr(func, "func", func) != self.evaluate:  # any other mapped function
            return list(map(func, individuals))
        if not individuals:
            return []
        rows = np.stack([np.frombuffer(ind, np.int8) for ind in individuals]).astype(np.int64)
        lat = repair_latency_batch(self.ctx.instance, rows)
        self.ctx.count(len(individuals))
        for ind, row in zip(individuals, rows):
            np.frombuffer(ind, np.int8)[:] = row  # Lamarckian: keep the repaired genes
        best = int(np.argmin(lat))
        offer_valid(self.ctx, rows[best], float(lat[best]))
        return [(float(x),) for x in lat]


def genes(individual: array.array) -> np.ndarray:
    """A writable int8 view of an individual's genes."""
    return np.frombuffer(individual, np.int8)


def make_individual(placement: np.ndarray) -> array.array:
    return creator.PlacementIndividual(np.asarray(placement, np.int8).tobytes())


def random_individual(rng: np.random.Generator, n_tensors: int, n_levels: int) -> array.array:
    return make_individual(rng.integers(0, n_levels, n_tensors))


def cx_uniform(a: array.array, b: array.array, rng: np.random.Generator,
               indpb: float) -> tuple[array.array, array.array]:
    """Swap each gene between the two parents with probability indpb."""
    ga_, gb = genes(a), genes(b)
    swap = rng.random(ga_.shape[0]) < indpb
    tmp = ga_[swap].copy()
    ga_[swap] = gb[swap]
    gb[swap] = tmp
    return a, b


def mut_level(ind: array.array, rng: np.random.Generator, n_levels: int,
              indpb: float) -> tuple[array.array]:
    """Move each gene to another (uniformly chosen) level with probability indpb;
    at least one gene moves."""
    g = genes(ind)
    hit = rng.random(g.shape[0]) < indpb
    if not hit.any():
        hit[rng.integers(0, g.shape[0])] = True
    shift = rng.integers(1, n_levels, int(hit.sum())) if n_levels > 1 else 0
    g[hit] = (g[hit] + shift) % n_levels
    return (ind,)


def mut_swap(ind: array.array, rng: np.random.Generator, start: np.ndarray, end: np.ndarray,
             n_levels: int) -> tuple[array.array]:
    """Exchange move: a random tensor goes one level up and a tensor of that level
    whose live range overlaps its own goes one level down (to make room)."""
    g = genes(ind)
    movable = np.flatnonzero(g > 0)
    if movable.size == 0:
        return mut_level(ind, rng, n_levels, 0.0)
    t = movable[rng.integers(0, movable.size)]
    target = g[t] - 1
    rivals = np.flatnonzero((g == target) & (start <= end[t]) & (end >= start[t]))
    g[t] = target
    if rivals.size:
        g[rivals[rng.integers(0, rivals.size)]] = target + 1
    return (ind,)


def sel_tournament(individuals: list, k: int, rng: np.random.Generator,
                   tournsize: int) -> list:
    """k tournaments of `tournsize` drawn with replacement; the fittest of each."""
    picks = rng.integers(0, len(individuals), (k, tournsize))
    return [max((individuals[j] for j in row), key=lambda ind: ind.fitness) for row in picks]


def clone(ind: array.array) -> array.array:
    out = creator.PlacementIndividual(ind)
    out.fitness.values = ind.fitness.values
    return out


def build_toolbox(ctx: SearchContext, tournament: int, indpb_cx: float,
                  indpb_mut: float) -> base.Toolbox:
    inst, rng = ctx.instance, ctx.rng
    evaluator = BatchEvaluator(ctx)
    tb = base.Toolbox()
    tb.register("individual", random_individual, rng, inst.n_tensors, inst.n_levels)
    tb.register("population", tools.initRepeat, list, tb.individual)
    tb.register("evaluate", evaluator.evaluate)
    tb.register("map", evaluator.map)
    tb.register("mate", cx_uniform, rng=rng, indpb=indpb_cx)
    tb.register("mutate", mut_level, rng=rng, n_levels=inst.n_levels, indpb=indpb_mut)
    tb.register("swap", mut_swap, rng=rng, start=inst.start, end=inst.end,
                n_levels=inst.n_levels)
    tb.register("select", sel_tournament, rng=rng, tournsize=tournament)
    tb.register("clone", clone)
    return tb


def evaluate_invalid(tb: base.Toolbox, individuals: list) -> None:
    invalid = [ind for ind in individuals if not ind.fitness.valid]
    for ind, fit in zip(invalid, tb.map(tb.evaluate, invalid)):
        ind.fitness.values = fit


def heuristic_seeds(inst: Instance, rng: np.random.Generator, greedy: int,
                    noise: float = 0.3) -> list[np.ndarray]:
    """Placements of the compiler heuristics and `greedy` randomised greedy fills."""
    from memplace.solvers.static.heuristics import heuristic_placements, randomized_greedy
    seeds = list(heuristic_placements(inst).values())
    return seeds + [randomized_greedy(inst, rng, noise) for _ in range(greedy)]


# ---------------------------------------------------------------------- the solver
@register("ga", "DEAP genetic algorithm, rectify as Lamarckian repair, one batch kernel per generation",
          params={"population": 100, "generations": None, "cxpb": 0.7, "mutpb": 0.5,
                  "indpb": None, "tournament": 3, "elite": 2, "seed_heuristics": True,
                  "greedy_seeds": 20, "swappb": 0.5})
def solve_ga(ctx: SearchContext, population: int, generations: int | None, cxpb: float,
             mutpb: float, indpb: float | None, tournament: int, elite: int,
             seed_heuristics: bool, greedy_seeds: int, swappb: float) -> None:
    """`generations` is the budget (None: until the time limit); `indpb` the per-gene
    mutation probability (None: 2 / tensors); with `seed_heuristics` the first
    population holds the heuristics' placements and `greedy_seeds` randomised greedy
    fills, the rest is uniformly random."""
    check_range("ga", "greedy_seeds", greedy_seeds, 0)
    check_range("ga", "swappb", swappb, 0.0, 1.0)
    check_range("ga", "population", population, 2)
    check_range("ga", "generations", generations, 0)
    check_range("ga", "cxpb", cxpb, 0.0, 1.0)
    check_range("ga", "mutpb", mutpb, 0.0, 1.0)
    check_range("ga", "indpb", indpb, 0.0, 1.0)
    check_range("ga", "tournament", tournament, 1)
    check_range("ga", "elite", elite, 0, population - 1)
    if generations is None and ctx.time_limit is None:
        raise ParameterError("solver 'ga': parameter 'generations' is needed without a time limit")
    inst = ctx.instance
    if indpb is None:
        indpb = min(1.0, 2.0 / inst.n_tensors)
    tb = build_toolbox(ctx, tournament, 0.5, indpb)

    pop = []
    if seed_heuristics:
        pop = [make_individual(p) for p in heuristic_seeds(inst, ctx.rng, greedy_seeds)][:population]
    pop += tb.population(n=population - len(pop))
    evaluate_invalid(tb, pop)

    gen = 0
    while (generations is None or gen < generations) and not ctx.should_stop():
        gen += 1
        elites = [tb.clone(ind) for ind in tools.selBest(pop, elite)]
        offspring = [tb.clone(ind) for ind in tb.select(pop, population - elite)]
        for a, b in zip(offspring[::2], offspring[1::2]):
            if ctx.rng.random() < cxpb:
                tb.mate(a, b)
                del a.fitness.values, b.fitness.values
        for ind in offspring:
            u = ctx.rng.random()
            if u < mutpb:
                (tb.swap if u < swappb * mutpb else tb.mutate)(ind)
                del ind.fitness.values
        evaluate_invalid(tb, offspring)
        pop = elites + offspring
    ctx.notes["generations"] = gen
