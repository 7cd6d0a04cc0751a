"""The instance model: instances, solutions, validation, the cost model and rectify."""
# First: points Numba's cache at a user folder before any kernel module imports numba.
from memplace.model.core import numba_cache  # noqa: F401  isort: skip
from memplace.model.static.cost import (as_placement, capacity_ok, latency, latency_batch,
                                 load_profile, move_delta, slowest_latency)
from memplace.model.core.errors import InstanceError, MemplaceError, SolutionError
from memplace.model.instance import Instance, Level
from memplace.model.static.rectification import (Rectified, first_fit_packer, rectify, rectify_capacity,
                                                 repair_latency_batch)
from memplace.model.static.solution import Solution, Validation, placement_errors, validate
from memplace.model.warmup import warmup
from memplace.model.static.problem import STATIC, Placed  # registers the static problem

__all__ = [
    "Instance", "Level", "Solution", "Validation", "Rectified",
    "InstanceError", "MemplaceError", "SolutionError",
    "as_placement", "capacity_ok", "latency", "latency_batch", "load_profile", "move_delta",
    "slowest_latency", "rectify", "rectify_capacity", "first_fit_packer", "repair_latency_batch",
    "STATIC", "Placed",
    "placement_errors", "validate", "warmup",
]
