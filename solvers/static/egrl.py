"""`egrl-ea` and `hybrid`: EGRL's evolutionary half, without any neural network.

EGRL (Khadka et al., "Optimizing Memory Placement using Evolutionary Graph
Reinforcement Learning", ICLR 2021) evolves Boltzmann chromosomes
(`boltzmann.py`) alongside its graph-network learners. Every generation each
chromosome samples one placement, all samples are rectified and timed in one
batch of kernel calls (`placements.offer_repaired`), and the next population keeps the
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

from memplace.solvers import Param, ParameterError, SearchContext, register, solve
from memplace.solvers.static import boltzmann
from memplace.solvers.static.heuristics import randomized_greedy
from memplace.solvers.static.lp_relaxation import lp_round
from memplace.solvers.static.placements import heuristic_starts, offer_repaired

EGRL_DEFAULTS = {
    "population": Param(40, int, 2, doc="chromosomes"),
    "generations": Param(None, int, 0, doc="budget (none: until the time limit)"),
    "elite": Param(0.1, float, 0.0, 1.0, doc="share kept unchanged"),
    "tournament": Param(3, int, 1, doc="tournament size"),
    "cxpb": Param(0.3, float, 0.0, 1.0, doc="crossover probability of a pair"),
    "mutpb": Param(0.85, float, 0.0, 1.0, doc="mutation probability of a chromosome")}
Policy = Callable[[np.random.Generator], np.ndarray]


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
    inst, rng = ctx.instance, ctx.rng
    seeds = heuristic_starts(inst)
    dp = run_registered(ctx, "dp", dp_share)
    if dp is not None:
        seeds.append(dp)
    if lp_samples:  # the largest-fraction rounding, then random ones
        seeds += [lp_round(inst, None)] + [lp_round(inst, rng) for _ in range(lp_samples - 1)]
    seeds += [randomized_greedy(inst, rng, noise) for _ in range(greedy_samples)]
    return seeds


def run_registered(ctx: SearchContext, name: str, share: float) -> np.ndarray | None:
    """The placement of another registered solver run through `solve()` (its limit and
    validation) with `share` of the remaining time; its evaluations are counted here.
    None if `share` is 0 or it found nothing."""
    if share <= 0:
        return None
    limit = None if ctx.time_limit is None else max(0.05, share * ctx.remaining())
    child = solve(ctx.instance, name, time_limit=limit, seed=int(ctx.rng.integers(2**31)),
                  packer=ctx.packer, problem=ctx.problem)
    ctx.count(child.evaluations)
    return None if child.notes.get("no_incumbent") else child.placement


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
        offer_repaired(ctx, rows)
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
        lat = offer_repaired(ctx, samples)
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


def _need_budget(name: str, generations: int | None, ctx: SearchContext) -> None:
    if generations is None and ctx.time_limit is None:
        raise ParameterError(f"solver {name!r}: parameter 'generations' is needed without a time limit")


@register("egrl-ea", "EGRL's evolutionary half alone: Boltzmann chromosomes from random priors",
          params=EGRL_DEFAULTS)
def solve_egrl_ea(ctx: SearchContext, population: int, generations: int | None, elite: float,
                  tournament: int, cxpb: float, mutpb: float) -> None:
    """EGRL's EA baseline; `generations` is the budget (None: until the time limit)."""
    _need_budget("egrl-ea", generations, ctx)
    ctx.notes["generations"] = run_ea(ctx, population, generations, elite, tournament, cxpb, mutpb)


@register("hybrid", "EGRL's EA guided by fast stateless policies (heuristics, greedy, LP rounding, DP)",
          params={**EGRL_DEFAULTS,
                  "inject": Param(4, int, 0, "population", doc="policy samples per generation"),
                  "noise": Param(0.3, float, 0.0, doc="sigma of the greedy fills' score noise"),
                  "lp_samples": Param(4, int, 0, doc="LP roundings in the first population"),
                  "greedy_samples": Param(8, int, 0, doc="greedy fills in the first population"),
                  "seed_temperature": Param(0.15, float, boltzmann.T_MIN, boltzmann.T_MAX,
                                            doc="temperature of a seeded chromosome"),
                  "dp_share": Param(0.1, float, 0.0, 1.0, doc="share of the time the DP seed may take")})
def solve_hybrid(ctx: SearchContext, population: int, generations: int | None, elite: float,
                 tournament: int, cxpb: float, mutpb: float, inject: int, noise: float,
                 lp_samples: int, greedy_samples: int, seed_temperature: float,
                 dp_share: float) -> None:
    """The EA seeded by the policies' placements and receiving `inject` fresh policy
    samples per generation (replacing the weakest chromosomes). `dp_share` is the
    share of the time limit the DP seed may take (0: no DP)."""
    _need_budget("hybrid", generations, ctx)
    started = time.perf_counter()
    seeds = policy_seeds(ctx, lp_samples, greedy_samples, noise, dp_share)
    ctx.notes.update(seeds=len(seeds), seed_s=round(time.perf_counter() - started, 3),
                     lp_rounding=True)
    inst = ctx.instance
    # The policies sampled afresh every generation: randomised greedy and LP rounding.
    policies = [lambda rng: randomized_greedy(inst, rng, noise), lambda rng: lp_round(inst, rng)]
    ctx.notes["generations"] = run_ea(ctx, population, generations, elite, tournament, cxpb,
                                      mutpb, seeds, policies, inject, seed_temperature)
