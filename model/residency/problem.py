"""The residency problem (docs/spec.md sections 9-12) behind the core's `Problem` seam.

A solution is a `ResidencySolution` (homes, home offsets, windows). Evaluation is the
section-11 simulation; validation every rule of section 10. Repair keeps what it can:
homes made capacity-valid by the canonical rectify (section 6) of the homes alone, then
windows dropped, in a fixed order, until no rule is broken (a window is never moved or
shortened: dropping one always keeps a solution well-formed, and with no windows left
the rectified homes are valid). Baselines: every tensor homed in the slowest level with
no windows (the reference), and `msa`, XLA's memory-space assignment (the default that
speedups of this problem are measured against, docs/spec.md section 12).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from memplace.model.core.errors import SolutionError
from memplace.model.core.problem import PROBLEMS, problem
from memplace.model.core.solution_file import record_solution
from memplace.model.instance import Instance
from memplace.model.residency.simulation import simulate
from memplace.model.residency.solution import FORMAT, NO_OFFSET, ResidencySolution, Window
from memplace.model.residency.validation import Violation, validate, violations


class ResidencyProblem:
    """Homes plus windows: tensors copied between levels while the program runs."""

    name = "residency"
    baselines = {"slowest": "all-slowest", "baseline": "msa"}

    def load(self, source: str | Path | Mapping[str, Any]) -> Instance:
        return Instance.load(source)

    def fingerprint(self, instance: Instance) -> str:
        return instance.fingerprint()

    def make_solution(self, solution: Any, offsets: np.ndarray | None = None,
                      windows: Sequence[Window] = ()) -> ResidencySolution:
        """A copy of a `ResidencySolution`, or one built from homes (and offsets, windows)."""
        if isinstance(solution, ResidencySolution):
            s = solution
            return ResidencySolution(s.instance, np.array(s.placement, np.int64, copy=True),
                                     None if s.offsets is None else np.array(s.offsets, np.int64, copy=True),
                                     tuple(s.windows), s.latency, s.lower_bound, s.status, dict(s.solver))
        return ResidencySolution("", np.array(solution, np.int64, copy=True),
                                 None if offsets is None else np.array(offsets, np.int64, copy=True),
                                 tuple(windows))

    def evaluate(self, instance: Instance, solution: ResidencySolution) -> float:
        return simulate(instance, solution)

    def evaluate_batch(self, instance: Instance, solutions: Sequence[ResidencySolution]) -> np.ndarray:
        return np.array([simulate(instance, s) for s in solutions], np.float64)

    def validate(self, instance: Instance, solution: ResidencySolution) -> list[str]:
        return [str(v) for v in violations(instance, solution)]

    def repair(self, instance: Instance, solution: ResidencySolution, packer: Any = None
               ) -> ResidencySolution:
        """Capacity-valid homes (rectify, offsets by `packer`), then windows dropped until valid."""
        i = instance
        sol = self.make_solution(solution)
        homes_only = sol.with_windows(())
        if violations(i, homes_only):
            fixed = _rectified(i, sol.placement, packer)
            sol.placement = fixed.placement
            sol.offsets = fixed.offsets if i.has_addressed_levels else None
            sol.offsets_given = None
        windows = list(sol.windows)
        while windows:
            found = violations(i, sol.with_windows(windows))
            if not found:
                break
            drop = _windows_to_drop(i, windows, found)
            windows = [w for j, w in enumerate(windows) if j not in drop]
        sol.windows = tuple(windows)
        sol.latency, sol.lower_bound = math.nan, None
        return sol

    def fallback(self, instance: Instance) -> ResidencySolution:
        if instance.has_addressed_levels:
            fixed = _rectified(instance, instance.slowest_placement())
            return ResidencySolution(instance.name, fixed.placement, fixed.offsets)
        return ResidencySolution(instance.name, instance.slowest_placement(), None)

    def default_packer(self, time_limit: float | None) -> Any:
        """None: rectify's canonical first-fit offsets for homes that need them."""
        return None

    def finish(self, instance: Instance, solution: ResidencySolution, packer: Any,
               notes: dict[str, Any]) -> tuple[ResidencySolution, list[str], bool]:
        """The solution as it is when valid; else repaired, with what was dropped in `notes`."""
        errors = self.validate(instance, solution)
        if not errors:
            return solution, [], False
        fixed = self.repair(instance, solution, packer)
        notes["windows_dropped"] = len(solution.windows) - len(fixed.windows)
        notes["homes_moved"] = int((fixed.placement != solution.placement).sum())
        return fixed, self.validate(instance, fixed), True

    def solution_file(self, result: Any) -> ResidencySolution:
        s = result.solution
        return ResidencySolution(result.instance, s.placement, s.offsets, s.windows, result.latency,
                                 result.lower_bound, result.status,
                                 {"name": result.solver, "params": result.params, "seed": result.seed})

    def to_record(self, instance: Instance, solution: ResidencySolution) -> dict[str, Any]:
        """Homes by level name, home offsets (null off addressed levels) or None, windows."""
        data = solution.to_dict(instance)
        return {"placement": data["placement"], "offsets": data.get("offsets"),
                "windows": data["windows"]}

    def from_record(self, instance: Instance, record: Mapping[str, Any]) -> ResidencySolution:
        """The solution of a runs-file record, with its claims (raises SolutionError)."""
        data = record_solution(FORMAT, record, {"windows": record.get("windows", [])})
        return ResidencySolution.from_dict(data, instance)

    def check_record(self, instance: Instance, record: Mapping[str, Any]) -> list[str]:
        """Why a stored result does not hold (unreadable, invalid, latency claim off)."""
        try:
            solution = self.from_record(instance, record)
        except SolutionError as exc:
            return [f"unreadable solution: {exc}"]
        return validate(instance, solution).errors


def _rectified(instance: Instance, homes: np.ndarray, packer: Any = None) -> Any:
    """Homes made valid by the static problem's canonical repair (docs/spec.md section 6), reached
    through the problem registry: the two problems never import each other."""
    static = problem("static")
    return static.repair(instance, static.make_solution(homes), packer)


def _windows_to_drop(instance: Instance, windows: list[Window], found: list[Violation]) -> set[int]:
    """Indices of windows to drop for these violations: the windows they name; for a home
    read before it is valid, the tensor's windows; for a level over capacity or an overlap
    without a named window, the windows in that level occupying that op."""
    drop = {v.window for v in found if v.window >= 0}
    for v in found:
        if v.window >= 0:
            continue
        if v.rule == "home-not-valid":
            drop |= {j for j, w in enumerate(windows) if w.tensor == v.tensor}
        elif v.op >= 0 and v.level >= 0:
            drop |= {j for j, w in enumerate(windows) if w.level == v.level and w.start <= v.op <= w.hold}
    if not drop:  # nothing named: drop them all (the rectified homes are valid alone)
        drop = set(range(len(windows)))
    return drop


RESIDENCY = PROBLEMS.add("residency", ResidencyProblem())
__all__ = ["ResidencyProblem", "RESIDENCY", "NO_OFFSET"]
