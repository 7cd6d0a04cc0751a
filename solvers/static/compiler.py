"""The compiler-style heuristics as solvers: `all-slowest`, the four greedy fills
(`heuristics.py`), `compiler` (= the XLA-style fill) and `random-greedy`."""
from __future__ import annotations

import numpy as np

from memplace.solvers import Param, SearchContext, register
from memplace.solvers.static.heuristics import COMPILER, ORDERS, _descending, greedy_fill, xla_score


def _run_order(name: str):
    def solve_heuristic(ctx: SearchContext) -> None:
        place, offsets = greedy_fill(ctx.instance, ORDERS[name](ctx.instance))
        ctx.count(1)
        ctx.offer(place, offsets=offsets if ctx.instance.has_addressed_levels else None)
    return solve_heuristic


@register("all-slowest", "every tensor in the slowest level (the reference placement)",
          deterministic=True)
def solve_all_slowest(ctx: SearchContext) -> None:
    ctx.count(1)
    inst = ctx.instance
    offsets = None
    if inst.has_addressed_levels:  # only when the slowest level itself is addressed
        offsets = greedy_fill(inst, np.arange(0))[1]
    ctx.offer(inst.slowest_placement(), offsets=offsets)


DESCRIPTIONS = {
    "greedy-size": "largest tensors first into the fastest level with room (TVM/TFLite style)",
    "xla-msa": "XLA memory-space-assignment style: memory-bound latency saved / sqrt(size)",
    "topo-first-fit": "walk the schedule, give each tensor the fastest level with room",
    "benefit-density": "exact latency saved per byte (delta kernel), densest first",
}
for _name, _description in DESCRIPTIONS.items():
    register(_name, _description, deterministic=True)(_run_order(_name))
register("compiler", f"the compiler-style default placement (= {COMPILER}); the static problem's baseline",
         deterministic=True)(_run_order(COMPILER))


@register("random-greedy", "best of XLA-style fills with log-normally perturbed scores",
          params={"samples": Param(100, int, 1, doc="fills tried"),
                  "noise": Param(0.5, float, 0.0, doc="sigma of the log-normal noise on the scores")})
def solve_random_greedy(ctx: SearchContext, samples: int, noise: float) -> None:
    inst = ctx.instance
    base = xla_score(inst)  # the same every sample: computed once
    for _ in range(samples):
        if ctx.should_stop():
            break
        score = base * np.exp(noise * ctx.rng.standard_normal(inst.n_tensors))
        place, offsets = greedy_fill(inst, _descending(score))
        ctx.count(1)
        ctx.offer(place, offsets=offsets if inst.has_addressed_levels else None)
