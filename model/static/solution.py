"""`memplace-solution/1` files (docs/spec.md section 7) and the validator that checks them."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from memplace.model.static import kernels
from memplace.model.static.cost import latency as compute_latency
from memplace.model.static.cost import load_profile
from memplace.model.core.errors import SolutionError
from memplace.model.core.solution_file import (read_claims, read_placement, solution_dict,
                                               write_solution)
from memplace.model.core.reading import read_json
from memplace.model.instance import Instance

FORMAT = "memplace-solution/1"
LATENCY_RTOL = 1e-9  # docs/spec.md section 7: a claim beyond this relative error is rejected


@dataclass
class Solution:
    """A placement by level index, offsets (-1 off addressed levels) and the solver's claims."""

    instance: str
    placement: np.ndarray
    offsets: np.ndarray | None
    latency: float
    lower_bound: float | None = None
    status: str = "feasible"
    solver: dict[str, Any] = field(default_factory=dict)
    # As read from a file: which tensors had an integer offset (None when built in code).
    offsets_given: list[bool] | None = field(default=None, repr=False, compare=False)

    def to_dict(self, instance: Instance) -> dict[str, Any]:
        fields = {}
        if self.offsets is not None:
            fields["offsets"] = [o if instance.addressed[l] else None
                                 for o, l in zip(self.offsets.tolist(), self.placement.tolist())]
        return solution_dict(FORMAT, self, instance.level_names, fields)

    def write(self, path: str | Path, instance: Instance) -> None:
        """Write atomically: a crash never leaves a half-written solution behind."""
        write_solution(path, self.to_dict(instance))

    @classmethod
    def from_dict(cls, data: Any, instance: Instance) -> "Solution":
        """Check a solution's fields (docs/spec.md section 7) and build it; a broken field raises
        SolutionError naming the tensor or field."""
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise SolutionError(f"solution format must be {FORMAT!r}")
        placement, offsets, offsets_given = read_placement(data, instance)
        c = read_claims(data)
        return cls(c.instance, placement, offsets, c.latency, c.lower_bound, c.status, c.solver,
                   offsets_given)

    @classmethod
    def read(cls, path: str | Path, instance: Instance) -> "Solution":
        """Read and check a solution file; any problem raises SolutionError naming the file."""
        data = read_json(path, "solution file", SolutionError)
        try:
            return cls.from_dict(data, instance)
        except SolutionError as exc:
            raise SolutionError(f"solution file {path}: {exc}") from None


@dataclass
class Validation:
    valid: bool  # the placement (and offsets) obey the spec
    latency: float  # recomputed (docs/spec.md section 4)
    errors: list[str]  # why it is invalid, or why the claim does not hold

    @property
    def ok(self) -> bool:
        return not self.errors


def placement_errors(instance: Instance, placement: np.ndarray,
                     offsets: np.ndarray | None, limit: int = 10) -> list[str]:
    """Everything that makes a placement invalid: capacity at every step and,
    on addressed levels, offsets, alignment and overlaps (docs/spec.md sections 3 and 5)."""
    i = instance
    errors: list[str] = []
    errors.extend(message for _, _, message in i.capacity_overflows(load_profile(i, placement)))
    for l, level in enumerate(i.levels):
        if not level.addressed:
            continue
        members = np.flatnonzero(placement == l)
        if members.size == 0:
            continue
        if offsets is None:
            errors.append(f"level {l} {level.name!r} is addressed but the solution has no offsets")
            continue
        errors += _offset_errors(i, l, members, offsets)
    return errors[:limit]


def _offset_errors(i: Instance, l: int, members: np.ndarray, offsets: np.ndarray) -> list[str]:
    level = i.levels[l]
    errors = []
    for t in members.tolist():
        o = int(offsets[t])
        if o < 0:
            errors.append(f"{i.tensor_label(t)} is in addressed level {level.name!r} without an offset")
        elif o % level.alignment:
            errors.append(f"{i.tensor_label(t)}: offset {o} is not a multiple of {level.name!r}'s alignment {level.alignment}")
        elif o + i.size[t] > level.capacity:
            errors.append(f"{i.tensor_label(t)}: offset {o} + size {i.size[t]} exceeds {level.name!r}'s capacity {level.capacity}")
    if errors:
        return errors
    # Sweep over live-range starts (Numba); report the first overlapping pair.
    order = members[np.lexsort((members, i.start[members]))].astype(np.int64)
    u, t = kernels.first_overlap_kernel(order, offsets, i.size, i.start, i.end)
    if u >= 0:
        errors.append(f"{i.tensor_label(int(t))} and {i.tensor_label(int(u))} are live at the same "
                      f"step in {level.name!r} and their addresses overlap")
    return errors


def validate(instance: Instance, solution: Solution) -> Validation:
    """Check a solution against the spec and recompute its latency."""
    i = instance
    errors = []
    if solution.instance and solution.instance != i.name:
        errors.append(f"solution is for instance {solution.instance!r}, not {i.name!r}")
    given = solution.offsets_given
    if given is not None:
        for t, l in enumerate(solution.placement.tolist()):
            if given[t] and not i.addressed[l]:
                errors.append(f"{i.tensor_label(t)} has an offset but level {i.level_names[l]!r} is not addressed")
                break
    invalid = placement_errors(i, solution.placement, solution.offsets)
    recomputed = compute_latency(i, solution.placement)
    errors += invalid
    if not math.isclose(solution.latency, recomputed, rel_tol=LATENCY_RTOL, abs_tol=0.0):
        errors.append(f"claimed latency {solution.latency!r} s differs from the recomputed "
                      f"{recomputed!r} s by more than relative {LATENCY_RTOL}")
    if solution.lower_bound is not None and solution.lower_bound > recomputed * (1 + LATENCY_RTOL):
        errors.append(f"claimed lower bound {solution.lower_bound!r} s is above the latency {recomputed!r} s")
    return Validation(valid=not invalid, latency=recomputed, errors=errors)
