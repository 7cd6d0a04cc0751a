"""`egrl-ea` and `hybrid`: EGRL's evolutionary half, without any neural network.

EGRL (Khadka et al., "Optimizing Memory Placement using Evolutionary Graph
Reinforcement Learning", ICLR 2021) evolves Boltzmann chromosomes
(`boltzmann.py`) alongside its graph-network learners. Every generation each
chromosome samples one placement, all samples are rectified and timed in one
batch kernel call (`ga.repair_latency_batch`), and the next population keeps the
elite fraction unchanged and fills the rest by tournament selection, uniform
crossover of whole tensor rows and multiplicative mutation (EGRL's published
settings are the defaults). A chromosome's fitness is the latency of its
sample after rectify.

- `egrl-ea` starts from random priors: EGRL's own EA baseline.
- `hybrid` replaces EGRL's learners with "a set of fast, stateless policies"
  that guide the search: the compiler heuristics, randomised greedy fills, LP
  rounding and the DP seed the population (each placement becomes a chromosome
  with a strong prior on its levels), and every generation fresh samples of the
  stochastic policies replace the weakest chromosomes, as EGRL injects its
  learners. Every evaluated placement, policy samples included, is counted.
"""
from __future__ import annotations

import time
from typing import Callable

import numpy as np

from memplace.model import Instance
from memplace.solvers.static import boltzmann
from memplace.solvers.base import (ParameterError, SearchContext, check_range, register,
                                   registry)
from memplace.solvers.static.ga import offer_valid, repair_latency_batch

EGRL_DEFAULTS = {"population": 40, "generations": None, "elite": 0.1, "tournament": 3,
                 "cxpb": 0.3, "mutpb": 0.85}
Policy = Callable[[np.random.Generator], np.ndarray]


def evaluate(ctx: SearchContext, placements: np.ndarray) -> np.ndarray:
    """Rectify the rows in place, count them, offer the best; return the latencies."""
    lat = repair_latency_batch(ctx.instance, placements)
    ctx.count(placements.shape[0])
    best = int(np.argmin(lat))
    offer_valid(ctx, placements[best], float(lat[best]))
    return lat


def tournament(fitness: np.ndarray, k: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """Indices of k tournament winners (lowest latency of `size` drawn with replacement)."""
    picks = rng.integers(0, fitness.shape[0], (k, size))
    return picks[np.arange(k), np.argmin(fitness[picks], axis=1)]


def next_generation(priors: np.ndarray, temps: np.ndarray, fitness: np.ndarray, n_elite: int,
                    tournament_size: int, cxpb: float, mutpb: float,
                    rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Elites unchanged; the rest tournament-selected copies, crossed over in pairs with
    probability cxpb and mutated with probability mutpb."""
    n = fitness.shape[0]
    elite = np.argsort(fitness, kind="stable")[:n_elite]
    chosen = np.concatenate([elite, tournament(fitness, n - n_elite, tournament_size, rng)])
    priors, temps = priors[chosen].copy(), temps[chosen].copy()
    for a in range(n_elite, n - 1, 2):
        if rng.random() < cxpb:
            boltzmann.crossover(priors[a], temps[a], priors[a + 1], temps[a + 1], rng)
    for a in range(n_elite, n):
        if rng.random() < mutpb:
            boltzmann.mutate(priors[a], temps[a], rng)
    return priors, temps


# ---------------------------------------------------------------------- the policies of `hybrid`
def policy_seeds(ctx: SearchContext, lp_samples: int, greedy_samples: int, noise: float,
                 dp_share: float) -> list[np.ndarray]:
    """Placements of the cheap policies for the first population: every compiler
    heuristic, the DP's placement, LP roundings and randomised greedy fills."""
    from memplace.solvers.static.heuristics import heuristic_placements, randomized_greedy
    inst, rng = ctx.instance, ctx.rng
    seeds = list(heuristic_placements(inst).values())
    dp = run_registered(ctx, "dp", dp_share)
    if dp is not None:
        seeds.append(dp)
    lp = lp_rounding()
    if lp is not None and lp_samples:  # the largest-fraction rounding, then random ones
        seeds += [lp(inst, None)] + [lp(inst, rng) for _ in range(lp_samples - 1)]
    seeds += [randomized_greedy(inst, rng, noise) for _ in range(greedy_samples)]
    return seeds


def stochastic_policies(ctx: SearchContext, noise: float) -> list[Policy]:
    """The policies sampled afresh every generation: randomised greedy, and LP
    rounding when it is available."""
    from memplace.solvers.static.heuristics import randomized_greedy
    inst = ctx.instance
    policies: list[Policy] = [lambda rng: randomized_greedy(inst, rng, noise)]
    lp = lp_rounding()
    if lp is not None:
        policies.append(lambda rng: lp(inst, rng))
    return policies


def lp_rounding() -> Callable[[Instance, np.random.Generator], np.ndarray] | None:
    """`lp_relaxation.lp_round` (None while that module does not exist: documented
    degradation, hybrid then runs on the heuristics and greedy fills alone)."""
    try:
        from memplace.solvers.static.lp_relaxation import lp_round
    except ImportError:
        return None
    return lp_round


def run_registered(ctx: SearchContext, name: str, share: float) -> np.ndarray | None:
    """The best placement of another registered solver, run in a child context with
    `share` of the remaining time; its evaluations are counted here. None if no
    solver of that name is registered or it found nothing."""
    info = registry().get(name)
    if info is None or share <= 0:
        return None
    limit = None if ctx.time_limit is None else max(0.05, share * ctx.remaining())
    child = SearchContext(ctx.instance, limit, int(ctx.rng.integers(2**31)), packer=ctx.packer)
    info.fn(child, **info.params)
    ctx.count(child.evaluations)
    return child.best_placement


# ---------------------------------------------------------------------- the solvers
def run_ea(ctx: SearchContext, population: int, generations: int | None, elite: float,
           tournament_size: int, cxpb: float, mutpb: float, seeds: list[np.ndarray] | None = None,
           policies: list[Policy] | None = None, inject: int = 0,
           seed_temperature: float = 0.15) -> int:
    """EGRL's EA; with `seeds` in the first population and `inject` fresh policy
    samples per generation. Returns the number of generations run."""
    inst, rng = ctx.instance, ctx.rng
    priors, temps = boltzmann.random_chromosomes(rng, population, inst.n_tensors, inst.n_levels)
    if seeds:
        rows = np.array(seeds[:population], np.int64)
        evaluate(ctx, rows)
        for j, row in enumerate(rows):
            priors[j], temps[j] = boltzmann.from_placement(row, inst.n_levels,
                                                           temperature=seed_temperature)
    n_elite = max(1, int(round(elite * population)))
    gen = 0
    while (generations is None or gen < generations) and not ctx.should_stop():
        samples = boltzmann.sample(priors, temps, rng)
        if inject and policies:
            fresh = np.array([policies[j % len(policies)](rng) for j in range(inject)], np.int64)
            samples = np.concatenate([samples, fresh])
        lat = evaluate(ctx, samples)
        fitness = lat[:population].copy()
        if inject and policies:  # the fresh samples replace the weakest chromosomes
            weakest = np.argsort(fitness, kind="stable")[::-1][:inject]
            for j, w in enumerate(weakest):
                priors[w], temps[w] = boltzmann.from_placement(samples[population + j],
                                                               inst.n_levels,
                                                               temperature=seed_temperature)
                fitness[w] = lat[population + j]
        gen += 1
        priors, temps = next_generation(priors, temps, fitness, n_elite, tournament_size,
                                        cxpb, mutpb, rng)
    return gen


def _check(name: str, population: int, generations: int | None, elite: float, tournament: int,
           cxpb: float, mutpb: float, ctx: SearchContext) -> None:
    check_range(name, "population", population, 2)
    check_range(name, "generations", generations, 0)
    check_range(name, "elite", elite, 0.0, 1.0)
    check_range(name, "tournament", tournament, 1)
    check_range(name, "cxpb", cxpb, 0.0, 1.0)
    check_range(name, "mutpb", mutpb, 0.0, 1.0)
    if generations is None and ctx.time_limit is None:
        raise ParameterError(f"solver {name!r}: parameter 'generations' is needed without a time limit")


@register("egrl-ea", "EGRL's evolutionary half alone: Boltzmann chromosomes from random priors",
          params=dict(EGRL_DEFAULTS))
def solve_egrl_ea(ctx: SearchContext, population: int, generations: int | None, elite: float,
                  tournament: int, cxpb: float, mutpb: float) -> None:
    """EGRL's EA baseline; `generations` is the budget (None: until the time limit)."""
    _check("egrl-ea", population, generations, elite, tournament, cxpb, mutpb, ctx)
    ctx.notes["generations"] = run_ea(ctx, population, generations, elite, tournament, cxpb, mutpb)


@register("hybrid", "EGRL's EA guided by fast stateless policies (heuristics, greedy, LP rounding, DP)",
          params={**EGRL_DEFAULTS, "inject": 4, "noise": 0.3, "lp_samples": 4,
                  "greedy_samples": 8, "seed_temperature": 0.15, "dp_share": 0.1})
def solve_hybrid(ctx: SearchContext, population: int, generations: int | None, elite: float,
                 tournament: int, cxpb: float, mutpb: float, inject: int, noise: float,
                 lp_samples: int, greedy_samples: int, seed_temperature: float,
                 dp_share: float) -> None:
    """The EA seeded by the policies' placements and receiving `inject` fresh policy
    samples per generation (replacing the weakest chromosomes). `dp_share` is the
    share of the time limit the DP seed may take (0: no DP)."""
    _check("hybrid", population, generations, elite, tournament, cxpb, mutpb, ctx)
    check_range("hybrid", "inject", inject, 0, population)
    check_range("hybrid", "noise", noise, 0.0)
    check_range("hybrid", "lp_samples", lp_samples, 0)
    check_range("hybrid", "greedy_samples", greedy_samples, 0)
    check_range("hybrid", "seed_temperature", seed_temperature, boltzmann.T_MIN, boltzmann.T_MAX)
    check_range("hybrid", "dp_share", dp_share, 0.0, 1.0)
    started = time.perf_counter()
    seeds = policy_seeds(ctx, lp_samples, greedy_samples, noise, dp_share)
    ctx.notes["seeds"] = len(seeds)
    ctx.notes["seed_s"] = round(time.perf_counter() - started, 3)
    ctx.notes["lp_rounding"] = lp_rounding() is not None
    policies = stochastic_policies(ctx, noise)
    ctx.notes["generations"] = run_ea(ctx, population, generations, elite, tournament, cxpb,
                                      mutpb, seeds, policies, inject, seed_temperature)
