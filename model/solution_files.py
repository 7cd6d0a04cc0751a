"""A solution file of either problem, told apart by its "format": `memplace-solution/2`
(residency: homes and windows, latency simulated) or `/1` (static placement). The CLI's
evaluate and validate read files through this, so they need neither problem's modules."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from memplace.model.instance import Instance
from memplace.model.static.solution import Solution, validate


def validate_solution_file(instance: Instance, path: str | Path) -> Any:
    """The validation report (`.valid`, `.latency`, `.errors`) of the solution in `path`
    for `instance`, by the rules of the problem its format names."""
    from memplace.model import residency
    data = residency.read_json(path)
    if isinstance(data, dict) and data.get("format") == residency.FORMAT:
        return residency.validate(instance, residency.ResidencySolution.from_dict(data, instance))
    return validate(instance, Solution.from_dict(data, instance))
