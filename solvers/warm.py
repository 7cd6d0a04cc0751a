"""Compile every solver's Numba code once, by solving a tiny instance with each, and
choose which solvers a run needs warm (`load_kernels`): the command line's `solve` and
the harness both call it, so neither reaches the other to warm."""
from __future__ import annotations

import time

from memplace.model import Instance
from memplace.model.core.search import DEFAULT_PROBLEM
from memplace.model.warmup import tiny_instance_dict, warmup


def warm_solvers(names: list[str] | None = None) -> list[str]:
    """Run each solver (all registered ones by default) on a three-op instance, stopping
    at its first incumbent, so its kernels are compiled and cached on disk."""
    from memplace.solvers import registry, solve
    warmup()
    inst = Instance.from_dict(tiny_instance_dict())
    done = []
    for name in names or list(registry()):
        solve(inst, name, time_limit=120.0, seed=0, callback=lambda *_: True)
        done.append(name)
    _warm_allocator()
    _warm_packers()
    return done


def builtin_solvers(problem_name: str = DEFAULT_PROBLEM) -> list[str]:
    """The solvers of `problem_name` that memplace itself registers (not those of a
    plan's own modules)."""
    from memplace.solvers import registry
    return [name for name, info in registry(problem_name).items()
            if info.fn.__module__.startswith("memplace.solvers.")]


def load_kernels(solvers: list[str], problem: str = DEFAULT_PROBLEM) -> float:
    """Load the compiled kernels of the model and of the built-in solvers among `solvers`
    from the disk cache now (compiling them if they are not there yet), so that a run's
    clock and trace measure the search, not the loading. A residency solver starts from
    the static solvers of `RESIDENCY_STARTS`, so for it those are loaded (not every static
    solver: on a cold cache the others' compile took minutes of a `memplace gap` budget).
    Returns the seconds it took."""
    began = time.perf_counter()
    warmup()
    builtin = builtin_solvers()  # the static problem's
    wanted = solvers if problem == DEFAULT_PROBLEM else RESIDENCY_STARTS
    names = [name for name in wanted if name in builtin]
    if names:  # (an empty list would mean every registered solver)
        warm_solvers(names)
    if problem != DEFAULT_PROBLEM:
        _warm_allocator()
    if problem != DEFAULT_PROBLEM and (not solvers or set(solvers) & MOVE_LOOP_SOLVERS):
        _warm_move_loop()
    return time.perf_counter() - began


# the static solvers whose placements the residency solvers start from or fall back to
# (solvers/residency/machinery/starts.py, baselines.py, evolution.py, planner.py)
RESIDENCY_STARTS = ("all-slowest", "compiler", "sa", "milp")

# the residency solvers whose search runs sa's compiled move loop (hybrid runs sa; the
# certified gap runs sa and the bound; multistart anneals with it)
MOVE_LOOP_SOLVERS = {"sa", "hybrid", "bound", "multistart"}


def _warm_move_loop() -> None:
    """Compile (or load) the residency sa's compiled move loop: `sa` by name with a budget
    of a few moves on the three-op instance. `warm_solvers` cannot reach it (a solver
    stopped at its first incumbent, msa's start, never anneals), and its first compile
    takes minutes of CPU: inside a solver's clock it used up the whole time limit."""
    from memplace.solvers import solve
    inst = Instance.from_dict(tiny_instance_dict())
    solve(inst, "sa", time_limit=None, seed=0, problem="residency", iterations=8, restarts=1)


def _warm_allocator() -> None:
    """Compile (or load) msa's compiled allocator (`allocation_kernel.py`), which every
    residency solver runs (msa itself, or msa's start): `msa` on the three-op instance."""
    from memplace.solvers import solve
    solve(Instance.from_dict(tiny_instance_dict()), "msa", time_limit=None, problem="residency")


def _warm_packers() -> None:
    """Compile the offset packers: every method on a five-buffer example."""
    from memplace.model.packing.packers import PACKERS, Buffer, pack
    buffers = [Buffer(str(i), lo, hi, size) for i, (lo, hi, size) in
               enumerate([(0, 3, 4), (3, 9, 4), (0, 9, 4), (9, 21, 4), (0, 21, 4)])]
    for method in PACKERS:
        pack(buffers, 12, method=method, time_limit=30.0)
