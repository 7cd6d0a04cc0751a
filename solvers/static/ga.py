"""`ga`: a DEAP genetic algorithm over placements, the population evaluated in one Numba call.

An individual is an `array.array('b')` of levels, one gene per tensor. Each
generation's unevaluated individuals go through `toolbox.map` as one batch: they
are stacked into a 2-D array, every row is repaired by the canonical rectify
(docs/spec.md section 6, offsets first-fit on addressed levels) and its latency computed
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
from typing import Callable, Sequence

import numpy as np
from deap import base, creator, tools

from memplace.solvers import Param, ParameterError, SearchContext, register
from memplace.solvers.static.placements import heuristic_starts, offer_repaired

# DEAP's creator classes live in its module namespace: made once, whoever imports first.
if not hasattr(creator, "LatencyFitness"):
    creator.create("LatencyFitness", base.Fitness, weights=(-1.0,))
if not hasattr(creator, "PlacementIndividual"):
    creator.create("PlacementIndividual", array.array, typecode="b",
                   fitness=creator.LatencyFitness)


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
        lat = offer_repaired(self.ctx, rows)
        for ind, row in zip(individuals, rows):
            genes(ind)[:] = row  # Lamarckian: keep the repaired genes
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
    ga_[swap], gb[swap] = gb[swap], ga_[swap]
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


# ---------------------------------------------------------------------- the solver
@register("ga", "DEAP genetic algorithm, rectify as Lamarckian repair, one batch kernel per generation",
          params={"population": Param(100, int, 2, doc="individuals"),
                  "generations": Param(None, int, 0, doc="budget (none: until the time limit)"),
                  "cxpb": Param(0.7, float, 0.0, 1.0, doc="crossover probability of a pair"),
                  "mutpb": Param(0.5, float, 0.0, 1.0, doc="mutation probability of an individual"),
                  "indpb": Param(None, float, 0.0, 1.0, doc="per-gene mutation probability (none: 2 / tensors)"),
                  "tournament": Param(3, int, 1, doc="tournament size"),
                  "elite": Param(2, int, 0, "population-1", doc="best individuals kept unchanged"),
                  "seed_heuristics": Param(True, doc="seed the heuristics' placements"),
                  "greedy_seeds": Param(20, int, 0, doc="randomised greedy fills seeded"),
                  "swappb": Param(0.5, float, 0.0, 1.0, doc="share of mutations that are exchanges")})
def solve_ga(ctx: SearchContext, population: int, generations: int | None, cxpb: float,
             mutpb: float, indpb: float | None, tournament: int, elite: int,
             seed_heuristics: bool, greedy_seeds: int, swappb: float) -> None:
    """`generations` is the budget (None: until the time limit); `indpb` the per-gene
    mutation probability (None: 2 / tensors); with `seed_heuristics` the first
    population holds the heuristics' placements and `greedy_seeds` randomised greedy
    fills, the rest is uniformly random."""
    if generations is None and ctx.time_limit is None:
        raise ParameterError("solver 'ga': parameter 'generations' is needed without a time limit")
    inst = ctx.instance
    if indpb is None:
        indpb = min(1.0, 2.0 / inst.n_tensors)
    tb = build_toolbox(ctx, tournament, 0.5, indpb)

    pop = []
    if seed_heuristics:
        pop = [make_individual(p) for p in
               heuristic_starts(inst, ctx.rng, greedy_seeds, should_stop=ctx.should_stop)][:population]
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
