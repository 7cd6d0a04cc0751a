"""The frame every problem's solution file shares (spec sections 7 and 10): `format`,
`instance`, `solver` and the placement by level name first, the problem's own fields
next, the claims (`latency`, `lower_bound` when there is one, `status`) last; written
whole or not at all; the claims read back and checked; and the frame rebuilt from a
runs-file record.

A solution here is any object with the attributes `instance`, `solver`, `placement`
(level indices), `latency`, `lower_bound` and `status`, as both problems' are.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, NamedTuple, Sequence

from memplace.model.core.errors import SolutionError
from memplace.model.core.files import write_atomically
from memplace.model.core.reading import is_number, shown


def solution_dict(format_name: str, solution: Any, level_names: Sequence[str],
                  fields: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON object of `solution` with the problem's own `fields` in the middle."""
    data: dict[str, Any] = {
        "format": format_name,
        "instance": solution.instance,
        "solver": solution.solver,
        "placement": [level_names[l] for l in solution.placement.tolist()],
        **fields,
        "latency": solution.latency,
    }
    if solution.lower_bound is not None:
        data["lower_bound"] = solution.lower_bound
    data["status"] = solution.status
    return data


def write_solution(path: str | Path, data: Mapping[str, Any]) -> None:
    """Write a solution's JSON atomically: a crash never leaves a half-written file behind."""
    write_atomically(path, json.dumps(data, indent=1) + "\n", "solution file", SolutionError)


def record_solution(format_name: str, record: Mapping[str, Any],
                    fields: Mapping[str, Any]) -> dict[str, Any]:
    """The solution file's JSON of a runs-file record (for the problem's `from_dict`):
    the frame's fields the record has, `offsets` and `lower_bound` only when not null."""
    data = {"format": format_name, "instance": record.get("instance", ""),
            "placement": record.get("placement"), "latency": record.get("latency"),
            "status": record.get("status", "feasible"), **fields}
    data.update({key: record[key] for key in ("offsets", "lower_bound") if record.get(key) is not None})
    return data


class Claims(NamedTuple):
    """What a solution file says of itself, besides the solution."""

    instance: str
    latency: float
    lower_bound: float | None
    status: str
    solver: dict[str, Any]


def read_claims(data: Mapping[str, Any]) -> Claims:
    """The claims of a solution file's JSON (spec section 7; section 10 takes them as they
    are), checked: a broken one raises SolutionError naming the field."""
    lat = data.get("latency")
    if not is_number(lat) or lat < 0:
        raise SolutionError(f"latency must be a number >= 0 (seconds), got {shown(lat)}")
    bound = data.get("lower_bound")
    if bound is not None and not is_number(bound):
        raise SolutionError(f"lower_bound must be a number or null, got {shown(bound)}")
    status = data.get("status", "feasible")
    if status not in ("optimal", "feasible"):
        raise SolutionError(f"status must be 'optimal' or 'feasible', got {shown(status)}")
    name = data.get("instance", "")
    if not isinstance(name, str):
        raise SolutionError(f"instance must be the instance's name (a string), got {shown(name)}")
    solver = data.get("solver") or {}
    if not isinstance(solver, dict):
        raise SolutionError(f"solver must be an object, got {shown(solver)}")
    return Claims(name, float(lat), None if bound is None else float(bound), status, solver)
