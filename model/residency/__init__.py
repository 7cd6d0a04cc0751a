"""The residency problem (docs/spec.md sections 9-12): homes plus windows, copies on channels.

A sibling of `memplace.model.static`; it shares only the `Instance` with it.
"""
from memplace.model.residency.bounds import channel_bound, fastest_bound, lower_bound, op_capacity_bound
from memplace.model.residency.reference import Timeline
from memplace.model.residency.simulation import Details, Simulation, details, simulate, simulate_batch, timeline
from memplace.model.residency.solution import (FORMAT, NO_OFFSET, STATIC_FORMAT, ResidencySolution,
                                               Window, read_json)
from memplace.model.residency.validation import (RULES, ResidencyValidation, Violation, is_defining,
                                                 load_with_windows, producer_of, valid_from,
                                                 validate, violations)

__all__ = [
    "FORMAT", "STATIC_FORMAT", "NO_OFFSET", "ResidencySolution", "Window", "read_json",
    "RULES", "ResidencyValidation", "Violation", "validate", "violations", "valid_from",
    "is_defining", "producer_of", "load_with_windows", "simulate", "timeline", "Timeline",
    "simulate_batch", "details", "Details", "Simulation",
    "lower_bound", "fastest_bound", "op_capacity_bound", "channel_bound",
]
