"""Solvers behind one interface: `solve(instance, solver=..., time_limit=..., seed=..., **params)`.

The interface itself (registration, parameter specs, the search context, `solve()`)
is the problem-neutral core, `memplace.model.core`; this package holds the solvers,
one subpackage per problem. Every module here that registers a solver is imported
on first use of the registry, so a new solver is one new module.
"""
from __future__ import annotations

import memplace.model.core.numba_cache  # noqa: F401  first: Numba's cache folder before any kernel
import importlib
import pkgutil

from memplace.model.core.errors import ParameterError
from memplace.model.core.params import Param
from memplace.model.core.search import (Result, SearchContext, SolverInfo, add_solver_loader,
                                        register, registry, solve, solver_info, solvers_of)
from memplace.solvers.warm import builtin_solvers, load_kernels, warm_solvers

__all__ = ["Param", "ParameterError", "Result", "SearchContext", "SolverInfo", "register",
           "registry", "solve", "solver_info", "solvers_of", "load_solver_modules", "warm_solvers",
           "builtin_solvers", "load_kernels"]


def load_solver_modules() -> None:
    """Import every module of this package, so each registers its solvers (the registry
    calls it once; importing again is a no-op)."""
    for module in pkgutil.walk_packages(__path__, prefix=f"{__name__}."):
        if not module.name.rsplit(".", 1)[-1].startswith("_"):
            importlib.import_module(module.name)


add_solver_loader(load_solver_modules)
