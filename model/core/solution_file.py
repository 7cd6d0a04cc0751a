"""The frame every problem's solution file shares (docs/spec.md sections 7 and 10): `format`,
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

import numpy as np

from memplace.model.core.errors import SolutionError
from memplace.model.core.files import write_atomically
from memplace.model.core.reading import MAX_BYTES, is_int, is_number, shown


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


def read_placement(data: Mapping[str, Any], instance: Any
                   ) -> tuple[np.ndarray, np.ndarray | None, list[bool] | None]:
    """The placement (level indices) and offsets (-1 where null) of a solution file's JSON,
    and which tensors had an offset (None for both without `offsets`), checked against the
    instance: a broken entry raises SolutionError naming the tensor."""
    T = instance.n_tensors
    names = data.get("placement")
    if not isinstance(names, list) or len(names) != T:
        raise SolutionError(f"placement must list a level name for each of the {T} tensors")
    index = {name: l for l, name in enumerate(instance.level_names)}
    if not (set(map(type, names)) <= {str} and set(names) <= index.keys()):
        t = next(t for t, name in enumerate(names) if not (isinstance(name, str) and name in index))
        raise SolutionError(f"{instance.tensor_label(t)}: unknown level {shown(names[t])}")
    placement = np.array([index[name] for name in names], np.int64)
    raw = data.get("offsets")
    if raw is None:
        return placement, None, None
    if not isinstance(raw, list) or len(raw) != T:
        raise SolutionError(f"offsets must have one entry for each of the {T} tensors")
    for t, o in enumerate(raw):
        if o is not None and not (is_int(o) and 0 <= o <= MAX_BYTES):
            raise SolutionError(f"{instance.tensor_label(t)}: offset {shown(o)} is not an "
                                "integer in 0..2**53 or null")
    return placement, np.array([-1 if o is None else o for o in raw], np.int64), [o is not None for o in raw]


class Claims(NamedTuple):
    """What a solution file says of itself, besides the solution."""

    instance: str
    latency: float
    lower_bound: float | None
    status: str
    solver: dict[str, Any]


def read_claims(data: Mapping[str, Any]) -> Claims:
    """The claims of a solution file's JSON (docs/spec.md section 7; section 10 takes them as they
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
