"""The LP relaxation of the placement MILP: a lower bound and roundings to placements.

The relaxation is `milp_highs.formulate`'s model with integrality dropped, solved
by HiGHS through highspy (milliseconds on BERT-sized instances). Its optimum is a
proven lower bound on the latency of every valid placement (the MILP's reductions
keep every optimum). A rounding reads each tensor's fractional levels (the slowest
level gets 1 - the rest), picks a level (the largest fraction, or at random in
proportion to the fractions when given an RNG) and makes the result valid with
the canonical rectify (docs/spec.md section 6; offsets by first-fit on addressed levels).
The hybrid solvers seed their searches from these roundings.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from memplace.model import Instance, rectify
from memplace.solvers.highs import new_highs
from memplace.solvers.static.milp_highs import formulate, highs_model


@dataclass(frozen=True)
class LpRelaxation:
    bound: float  # seconds: proven lower bound on the optimal latency (-inf if unsolved)
    fractions: np.ndarray  # (T, L): the LP's share of each tensor in each level
    status: str


def relax(inst: Instance) -> LpRelaxation:
    """Solve the LP relaxation once per instance (kept with the instance)."""
    return inst.derived("lp_relaxation", _solve_relaxation)


def _solve_relaxation(inst: Instance) -> LpRelaxation:
    form = formulate(inst)
    h = new_highs(threads=1, seed=0, time_limit=None)
    h.passModel(highs_model(form, relax=True))
    h.run()
    status = h.modelStatusToString(h.getModelStatus())
    T, L = inst.n_tensors, inst.n_levels
    fractions = np.zeros((T, L))
    fractions[:, L - 1] = 1.0
    bound = -math.inf
    if status == "Optimal":
        values = np.clip(np.array(h.getSolution().col_value)[:form.n_binaries], 0.0, 1.0)
        fractions[form.var_tensor, form.var_level] = values
        fractions[:, L - 1] = np.clip(1.0 - fractions[:, :L - 1].sum(axis=1), 0.0, 1.0)
        bound = max(h.getInfo().objective_function_value / form.scale, inst.compute_floor())
    return LpRelaxation(bound, fractions, status)


def lp_bound(inst: Instance) -> float:
    """The LP relaxation's optimum in seconds: a lower bound on every valid latency."""
    return relax(inst).bound


def lp_round(inst: Instance, rng: np.random.Generator | None = None) -> np.ndarray:
    """A valid placement from the LP solution: each tensor to its largest fraction
    (ties to the faster level), or sampled by the fractions when `rng` is given;
    then the canonical rectify."""
    fractions = relax(inst).fractions
    if rng is None:
        place = np.argmax(fractions, axis=1).astype(np.int64)
    else:
        cumulative = np.cumsum(fractions, axis=1)
        draw = rng.random(inst.n_tensors) * cumulative[:, -1]
        place = (cumulative < draw[:, None]).sum(axis=1).astype(np.int64)
        place = np.minimum(place, inst.n_levels - 1)
    return rectify(inst, place).placement
