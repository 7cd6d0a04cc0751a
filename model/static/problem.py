"""The static placement problem (docs/spec.md sections 1-8) behind the core's `Problem` seam.

A solution is a `Placed`: a level per tensor and, on instances with addressed
levels, an offset per tensor (-1 off addressed levels; None until assigned).
Repair is the canonical rectify (section 6), finishing assigns offsets with the
given packer where they are missing or invalid, and the baselines are the
all-slowest placement and the XLA-style `compiler` heuristic.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping, NamedTuple, Sequence

import numpy as np

from memplace.model.core.errors import SolutionError
from memplace.model.core.problem import PROBLEMS
from memplace.model.core.solution_file import record_solution
from memplace.model.instance import Instance
from memplace.model.static.cost import latency, latency_batch
from memplace.model.packing.packers import Packer, budgeted_packer
from memplace.model.static.rectification import rectify
from memplace.model.static.solution import FORMAT, Solution, placement_errors, validate


class Placed(NamedTuple):
    """A static solution: level per tensor (int64) and offsets (int64, -1 off addressed
    levels) or None while not assigned."""

    placement: np.ndarray
    offsets: np.ndarray | None


class StaticProblem:
    """Tensor placement with one level per tensor for its whole live range."""

    name = "static"
    baselines = {"slowest": "all-slowest", "baseline": "compiler"}

    def load(self, source: str | Path | Mapping[str, Any]) -> Instance:
        return Instance.load(source)

    def fingerprint(self, instance: Instance) -> str:
        return instance.fingerprint()

    def make_solution(self, placement: Any, offsets: np.ndarray | None = None) -> Placed:
        if isinstance(placement, Placed):
            return placement
        return Placed(np.array(placement, np.int64, copy=True),
                      None if offsets is None else np.array(offsets, np.int64, copy=True))

    def evaluate(self, instance: Instance, solution: Placed) -> float:
        return latency(instance, solution.placement)

    def evaluate_batch(self, instance: Instance, solutions: Sequence[Placed]) -> np.ndarray:
        return latency_batch(instance, np.array([s.placement for s in solutions], np.int64))

    def validate(self, instance: Instance, solution: Placed) -> list[str]:
        return placement_errors(instance, solution.placement, solution.offsets)

    def repair(self, instance: Instance, solution: Placed, packer: Packer | None = None) -> Placed:
        fixed = rectify(instance, solution.placement, packer=packer)
        return Placed(fixed.placement, fixed.offsets)

    def fallback(self, instance: Instance) -> Placed:
        return Placed(instance.slowest_placement(), None)

    def default_packer(self, time_limit: float | None) -> Packer:
        """The packer for addressed levels: compiler heuristics, then the exact search with
        a budget of a tenth of the time limit (at most 5 s), the heuristics with the same
        budget of their own; where both fail, rectify's canonical first-fit says what moves down."""
        budget = 5.0 if time_limit is None else min(5.0, 0.1 * time_limit)
        return budgeted_packer(budget, heuristic_budget_s=budget)

    def finish(self, instance: Instance, solution: Placed, packer: Packer | None,
               notes: dict[str, Any]) -> tuple[Placed, list[str], bool]:
        """Offsets assigned (by `packer`, tensors that cannot be packed move down) where
        they are missing or invalid; `changed` when a tensor had to move."""
        errors = self.validate(instance, solution)
        if not instance.has_addressed_levels or (solution.offsets is not None and not errors):
            return solution, errors, False
        fixed = self.repair(instance, solution, packer)
        moved = int((fixed.placement != solution.placement).sum())
        if moved:
            notes["moved_to_pack"] = moved
        return fixed, self.validate(instance, fixed), moved > 0

    def solution_file(self, result: Any) -> Solution:
        return Solution(result.instance, result.placement, result.offsets, result.latency,
                        result.lower_bound, result.status,
                        {"name": result.solver, "params": result.params, "seed": result.seed})

    def to_record(self, instance: Instance, solution: Placed) -> dict[str, Any]:
        """Placement by level name; offsets (null off addressed levels) or None."""
        data = Solution(instance.name, *solution, math.nan).to_dict(instance)
        return {"placement": data["placement"],
                "offsets": data.get("offsets") if instance.has_addressed_levels else None}

    def from_record(self, instance: Instance, record: Mapping[str, Any]) -> Solution:
        """The solution of a runs-file record, with its claims (raises SolutionError)."""
        solution = Solution.from_dict(record_solution(FORMAT, record, {}), instance)
        if solution.offsets is None and instance.has_addressed_levels:
            solution.offsets = np.full(instance.n_tensors, -1, np.int64)
        return solution

    def check_record(self, instance: Instance, record: Mapping[str, Any]) -> list[str]:
        """Why a stored result does not hold (unreadable, invalid, latency claim off)."""
        try:
            solution = self.from_record(instance, record)
        except SolutionError as exc:
            return [f"unreadable placement: {exc}"]
        return validate(instance, solution).errors


STATIC = PROBLEMS.add("static", StaticProblem())
