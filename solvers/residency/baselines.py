"""The residency problem's baselines: static placements as residency solutions without
windows (docs/spec.md section 9: every static solution is one, with the same latency).

`all-slowest` (every tensor homed in the slowest level) is what every speedup is valid
against; `compiler` is the static compiler-style placement, the homes msa falls back to.
"""
from __future__ import annotations

from memplace.model.residency import ResidencySolution, lower_bound
from memplace.solvers import SearchContext, register, solve


def _static_as_residency(ctx: SearchContext, solver: str) -> None:
    inst = ctx.instance
    result = solve(inst, solver, time_limit=None, problem="static")
    offsets = result.offsets if inst.has_addressed_levels else None
    ctx.count(1)
    ctx.lower_bound = lower_bound(inst)
    ctx.offer(ResidencySolution(inst.name, result.placement, offsets), result.latency)


@register("all-slowest", "every tensor homed in the slowest level, no windows (the reference)",
          deterministic=True, problem="residency")
def solve_all_slowest(ctx: SearchContext) -> None:
    _static_as_residency(ctx, "all-slowest")


@register("compiler", "the static compiler placement as homes, no windows", deterministic=True,
          problem="residency")
def solve_compiler(ctx: SearchContext) -> None:
    _static_as_residency(ctx, "compiler")
