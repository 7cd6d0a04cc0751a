"""The instance model: instances, solutions, validation, the cost model and rectify.

The names below are loaded on first use (PEP 562), so that importing a light part of
the model (the packing library, the errors) does not import Numba and its kernels:
`memplace pack` starts in a fraction of a second.
"""
# First: points Numba's cache at a user folder before any kernel module imports numba.
from memplace.model.core import numba_cache  # noqa: F401  isort: skip
import importlib

# Bound now, not on first use: a submodule has the same name, and importing it (as
# `from memplace.model.warmup import tiny_instance_dict` does) would leave the package's
# `warmup` bound to the module, never reaching __getattr__. The module imports nothing heavy.
from memplace.model.warmup import warmup

_HOMES = {
    "capacity_ok": "memplace.model.static.cost", "latency": "memplace.model.static.cost",
    "latency_batch": "memplace.model.static.cost", "load_profile": "memplace.model.static.cost",
    "move_delta": "memplace.model.static.cost", "slowest_latency": "memplace.model.static.cost",
    "InstanceError": "memplace.model.core.errors", "MemplaceError": "memplace.model.core.errors",
    "SolutionError": "memplace.model.core.errors", "Instance": "memplace.model.instance",
    "rectify": "memplace.model.static.rectification",
    "rectify_capacity": "memplace.model.static.rectification",
    "repair_latency_batch": "memplace.model.static.rectification",
    "Solution": "memplace.model.static.solution",
    "placement_errors": "memplace.model.static.solution",
    "validate": "memplace.model.static.solution",
    "validate_solution_file": "memplace.model.solution_files",
    "STATIC": "memplace.model.static.problem", "Placed": "memplace.model.static.problem",
}

__all__ = [*_HOMES, "warmup"]


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'memplace.model' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))
