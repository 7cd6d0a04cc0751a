"""`ga` (residency): the DEAP genetic algorithm over a decoder encoding, seeded with msa.

The chromosome (a priority order of buffers, a per-buffer prefetch lead, the homes),
its decoding by msa's allocator and the operators are in `evolution.py`.
"""
from __future__ import annotations

from memplace.solvers import SearchContext, register
from memplace.solvers.residency.machinery.evolution import PARAMS, evolve, offer_msa


@register("ga", "DEAP genetic algorithm over a decoder encoding (buffer priority order, per-buffer "
          "prefetch lead, homes) decoded by msa's allocator; seeded with msa", params=PARAMS,
          problem="residency")
def solve_ga(ctx: SearchContext, population: int, generations: int, elite: int, tournament: int,
             cxpb: float, moves: float, lead_indpb: float, lead_sigma: float,
             static_moves: int, engine: str) -> None:
    offer_msa(ctx)
    ctx.notes["generations"] = evolve(ctx, population, generations, elite, tournament, cxpb, moves,
                                      lead_indpb, lead_sigma, static_moves, engine)
