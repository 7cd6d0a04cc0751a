"""`hybrid` (residency): EGRL's hybrid carried over, the GA fed by the planner and the heuristics.

The static `hybrid` (egrl.py) lets fast stateless policies seed EGRL's evolutionary
algorithm and inject fresh samples every generation, as EGRL injects its learners'
placements. Here the population is the GA's decoder chromosomes (`evolution.py`) and, every
`inject_every` generations, fresh solutions of other residency solvers, each run through
`solve()` (so each is validated before it is used), replace the weakest chromosomes:

- the planner (`planner`: a solver searching the mallocGame, `beam` or `mcts`; "auto"
  takes `beam`), `planner_s` seconds a run;
- the annealer `sa` with a new seed each time, for `sa_iterations` moves (then the run
  depends only on the seed) or, with `sa_iterations = 0` (the default), for `sa_share`
  of the time left (a run of the heuristic local search from msa's solution and the
  static start);
- `msa` itself is in the first population (its chromosomes, both homes) and is offered
  first.

Every injected solution is offered as it is (so the result is never worse than any of
them) and enters the population through `Decoder.encode`, an approximate chromosome
(buffers with windows first by their first start, leads from their prefetches' overlap),
whose offspring the GA then decodes with msa's allocator.
"""
from __future__ import annotations

from memplace.model.residency import ResidencySolution
from memplace.solvers import (Param, ParameterError, SearchContext, register, registry, solve,
                              solvers_of)
from memplace.solvers.residency.beam import solve_beam
from memplace.solvers.residency.machinery.evolution import PARAMS as GA_PARAMS
from memplace.solvers.residency.machinery.evolution import evolve, offer_msa
from memplace.solvers.residency.sa import solve_sa

PARAMS = {
    **GA_PARAMS,
    "planner": Param("auto", str, doc="residency solver searching the game whose solutions are "
                                      "injected (beam, mcts, none; auto: beam)"),
    "planner_s": Param(2.0, float, 0.01, doc="seconds of one planner run"),
    "sa_iterations": Param(0, int, 0, doc="moves of one injected sa run (0: sa_share of the "
                                          "time left instead)"),
    "sa_share": Param(0.3, float, 0.0, 1.0, doc="share of the time left one injected sa run "
                                                "takes when sa_iterations is 0 (0: no sa)"),
    "inject_every": Param(1, int, 1, doc="generations between injections"),
}


def registered_name(fn) -> str:
    """The name a residency solver function is registered under (`solve()` takes names)."""
    return next(name for name, info in registry("residency").items() if info.fn is fn)


def planner_name(name: str) -> str | None:
    """The planner to run: None for "none"."""
    known = solvers_of("residency")
    if name == "none":
        return None
    if name == "auto":
        return registered_name(solve_beam)
    if name not in known:
        raise ParameterError(f"hybrid: unknown residency solver {name!r} for 'planner'; "
                             f"known: {', '.join(sorted(known.names()))}")
    return name


@register("hybrid", "EGRL-style hybrid: the residency GA with the planner's and sa's solutions "
          "(run through solve()) injected every generation; seeded with msa", params=PARAMS,
          problem="residency")
def solve_hybrid(ctx: SearchContext, population: int, generations: int, elite: int,
                 tournament: int, cxpb: float, moves: float, lead_indpb: float, lead_sigma: float,
                 static_moves: int, engine: str, planner: str, planner_s: float,
                 sa_iterations: int, sa_share: float, inject_every: int) -> None:
    inst = ctx.instance
    chosen = planner_name(planner)
    ctx.notes["planner"] = chosen or "none"
    offer_msa(ctx)
    injected = {"planner": 0, "sa": 0}
    sa = registered_name(solve_sa)

    def inject(gen: int) -> list[ResidencySolution]:
        if gen % inject_every or ctx.should_stop():
            return []
        out = []
        runs = []
        if chosen is not None:
            limit = planner_s if ctx.time_limit is None else max(0.01, min(planner_s, ctx.remaining()))
            runs.append(("planner", chosen, limit, {}))
        if sa_iterations > 0:
            limit = None if ctx.time_limit is None else max(0.01, ctx.remaining())
            runs.append(("sa", sa, limit, {"iterations": sa_iterations,
                                            "static_moves": static_moves}))
        elif sa_share > 0 and ctx.time_limit is not None:
            runs.append(("sa", sa, max(0.05, sa_share * ctx.remaining()),
                         {"static_moves": static_moves}))
        for key, name, limit, params in runs:
            if ctx.should_stop():
                break
            child = solve(inst, name, time_limit=limit, seed=int(ctx.rng.integers(2**31)),
                          problem="residency", **params)
            ctx.count(child.evaluations)
            sol = child.to_solution()
            ctx.offer(sol, child.latency)
            out.append(sol)
            injected[key] += 1
        return out

    ctx.notes["generations"] = evolve(ctx, population, generations, elite, tournament, cxpb, moves,
                                      lead_indpb, lead_sigma, static_moves, engine, inject)
    ctx.notes["injected"] = dict(injected)
