"""The residency latency (spec section 11) on an `Instance` and a `ResidencySolution`."""
from __future__ import annotations

from memplace.model.instance import Instance
from memplace.model.residency import reference
from memplace.model.residency.solution import ResidencySolution


def simulate(instance: Instance, solution: ResidencySolution) -> float:
    """Latency in seconds of a residency solution whose windows are well-formed."""
    return reference.simulate(instance.data, solution.placement.tolist(), solution.windows)


def timeline(instance: Instance, solution: ResidencySolution) -> reference.Timeline:
    """Per-op clock, waits and elapsed times, and each copy's completion op (the reference)."""
    return reference.timeline(instance.data, solution.placement.tolist(), solution.windows)
