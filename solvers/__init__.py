"""Solvers behind one interface: `solve(instance, solver=..., time_limit=..., seed=..., **params)`.

Every module in this package that registers a solver (`@register` in `base.py`) is
imported on first use of the registry, so a new solver is one new module.
"""
from __future__ import annotations

import memplace.model.core.numba_cache  # noqa: F401  first: Numba's cache folder before any kernel
import importlib
import pkgutil

from memplace.solvers.base import (ParameterError, Result, SearchContext, SolverInfo,
                                   register, registry, solve, solver_info)

__all__ = ["ParameterError", "Result", "SearchContext", "SolverInfo", "register",
           "registry", "solve", "solver_info", "load_solver_modules"]

_loaded = False


def load_solver_modules() -> None:
    """Import every module of this package once, so each registers its solvers."""
    global _loaded
    if _loaded:
        return
    for module in pkgutil.walk_packages(__path__, prefix=f"{__name__}."):
        if not module.name.rsplit(".", 1)[-1].startswith("_"):
            importlib.import_module(module.name)
    _loaded = True
