"""The instance model: instances, solutions, validation, the cost model and rectify."""
# First: points Numba's cache at a user folder before any kernel module imports numba.
from memplace.model.core import numba_cache  # noqa: F401  isort: skip
from memplace.model.static.cost import (capacity_ok, latency, latency_batch, load_profile, move_delta,
                                        slowest_latency)
from memplace.model.core.errors import InstanceError, MemplaceError, SolutionError
from memplace.model.instance import Instance
from memplace.model.static.rectification import rectify, rectify_capacity, repair_latency_batch
from memplace.model.static.solution import Solution, placement_errors, validate
from memplace.model.warmup import warmup
from memplace.model.solution_files import validate_solution_file
from memplace.model.static.problem import STATIC, Placed  # registers the static problem

__all__ = [
    "Instance", "Solution", "InstanceError", "MemplaceError", "SolutionError",
    "capacity_ok", "latency", "latency_batch", "load_profile", "move_delta", "slowest_latency",
    "rectify", "rectify_capacity", "repair_latency_batch", "STATIC", "Placed",
    "placement_errors", "validate", "validate_solution_file", "warmup",
]
