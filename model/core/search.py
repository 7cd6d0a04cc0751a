"""One interface for every solver of every problem: registration, the search context,
the hard time limit and a validated `Result`.

A solver is a function `fn(ctx: SearchContext, **params) -> None` registered with
`@register(name, description, params={name: Param(...)}, problem="static")`. It
reports every solution it wants kept with `ctx.offer(...)` (the context asks the
problem to build and evaluate it, and keeps the best, the anytime trace and the
evaluation count), checks `ctx.should_stop()` in its loops, and may set
`ctx.lower_bound` / `ctx.proven_optimal`. `solve()` checks the parameters against
their specs, runs the solver under a hard wall-clock limit, then has the problem
finish and validate the best solution before returning it.
"""
from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from memplace.model.core.errors import ParameterError
from memplace.model.core.params import Param, as_param, check_params
from memplace.model.core.problem import Problem, problem as get_problem
from memplace.model.core.registry import Registry

# callback(elapsed_s, evaluations, best_latency) -> True to stop the search early
Callback = Callable[[float, int, float], Any]
GRACE_S = 0.25  # how long past the limit a solver is given to notice and return
DEFAULT_PROBLEM = "static"  # the problem of a solver or solve() that names none


@dataclass(frozen=True)
class SolverInfo:
    name: str
    description: str
    params: dict[str, Param]
    fn: Callable[..., None]
    deterministic: bool = False  # same result whatever the seed: benchmarks run it once
    problem: str = DEFAULT_PROBLEM

    def check(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Every parameter (defaults filled in) converted and checked against its spec."""
        return check_params(f"solver {self.name!r}", self.params, params)


_LOADERS: list[Callable[[], None]] = []
_SOLVERS: dict[str, Registry[SolverInfo]] = {}


def add_solver_loader(loader: Callable[[], None]) -> None:
    """Have `loader` called before solvers are first looked up (it imports the modules
    that register them)."""
    _LOADERS.append(loader)


def _load_solvers() -> None:
    while _LOADERS:
        _LOADERS.pop(0)()


def solvers_of(problem: str = DEFAULT_PROBLEM) -> Registry[SolverInfo]:
    """The registry of one problem's solvers."""
    if problem not in _SOLVERS:
        _SOLVERS[problem] = Registry(f"{problem} solver" if problem != DEFAULT_PROBLEM
                                     else "solver", loader=_load_solvers)
    return _SOLVERS[problem]


def register(name: str, description: str, params: Mapping[str, Any] | None = None,
             deterministic: bool = False, problem: str = DEFAULT_PROBLEM):
    """Decorator: add a solver of `problem` under `name` with its parameter specs
    (`Param`s, or plain defaults whose type is taken from the default)."""
    specs = {key: as_param(spec) for key, spec in (params or {}).items()}

    def wrap(fn: Callable[..., None]) -> Callable[..., None]:
        info = SolverInfo(name, description, specs, fn, deterministic, problem)
        solvers_of(problem).add(name, info, same=lambda old, new: old.fn is new.fn)
        return fn
    return wrap


def registry(problem: str = DEFAULT_PROBLEM) -> dict[str, SolverInfo]:
    """Every registered solver of a problem, by name."""
    return solvers_of(problem).items()


def solver_info(name: str, problem: str = DEFAULT_PROBLEM) -> SolverInfo:
    """A registered solver; ParameterError naming an unknown one."""
    return solvers_of(problem).get(name)


@dataclass
class Result:
    """What a solver found, finished and validated by its problem.

    The solution's own fields read through the result (`result.placement` for a
    static solution)."""

    instance: str
    solver: str
    params: dict[str, Any]
    seed: int
    solution: Any
    latency: float
    lower_bound: float | None
    status: str  # "optimal" only when proven
    wall_s: float
    evaluations: int
    trace: list[tuple[float, int, float]]  # (seconds, evaluations, best latency so far)
    notes: dict[str, Any] = field(default_factory=dict)
    problem: Problem | None = None

    def __getattr__(self, name: str) -> Any:
        solution = self.__dict__.get("solution")
        if name.startswith("_") or solution is None:
            raise AttributeError(name)
        return getattr(solution, name)

    @property
    def gap(self) -> float | None:
        if self.lower_bound is None or self.lower_bound <= 0:
            return None
        return max(0.0, self.latency / self.lower_bound - 1.0)

    def to_solution(self) -> Any:
        """The problem's solution file object (with `.write(path, instance)`)."""
        return self.problem.solution_file(self)


class SearchContext:
    """What a running solver sees: the instance, its budget, an RNG, and the incumbent.

    `packer` is the problem's repair option for the end of the search (for static
    placement: the offset packer of addressed levels), passed through untouched."""

    def __init__(self, instance: Any, time_limit: float | None, seed: int,
                 callback: Callback | None = None, packer: Any = None,
                 problem: str | Problem = DEFAULT_PROBLEM):
        self.instance = instance
        self.problem = get_problem(problem)
        self.time_limit = time_limit
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.callback = callback
        self.packer = packer
        self.started = time.perf_counter()
        self.deadline = math.inf if time_limit is None else self.started + time_limit
        self.evaluations = 0
        self.best: Any = None
        self.best_latency = math.inf
        self.lower_bound: float | None = None
        self.proven_optimal = False
        self.trace: list[tuple[float, int, float]] = []
        self.notes: dict[str, Any] = {}
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.frozen = False  # set once solve() has taken the result

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def remaining(self) -> float:
        return self.deadline - time.perf_counter()

    def should_stop(self) -> bool:
        """True once the time limit has passed, the caller asked to stop, or solve() gave up."""
        if self._stop.is_set():
            return True
        if time.perf_counter() >= self.deadline:
            self._stop.set()
            return True
        return False

    def stop(self) -> None:
        self._stop.set()

    def count(self, evaluations: int) -> None:
        """Add to the number of solutions evaluated."""
        self.evaluations += int(evaluations)

    def offer(self, solution: Any, latency_s: float | None = None, **parts: Any) -> bool:
        """Propose a solution (`problem.make_solution(solution, **parts)`: for static
        placement a level array and `offsets=` on addressed levels, or None to have them
        assigned at the end). Keeps it if it beats the incumbent; returns True then.
        `latency_s` must be the solution's latency when given."""
        if self.frozen:
            return False
        made = self.problem.make_solution(solution, **parts)
        lat = self.problem.evaluate(self.instance, made) if latency_s is None else float(latency_s)
        with self._lock:
            if lat >= self.best_latency:
                return False
            self.best_latency = lat
            self.best = made
            self.trace.append((self.elapsed(), self.evaluations, lat))
        if self.callback is not None and self.callback(self.elapsed(), self.evaluations, lat):
            self._stop.set()
        return True


def solve(instance: Any, solver: str = "compiler", time_limit: float | None = 60.0,
          seed: int = 0, callback: Callback | None = None, packer: Any = None,
          problem: str | Problem = DEFAULT_PROBLEM, **params: Any) -> Result:
    """Run a registered solver of `problem` under a hard wall-clock limit and return its
    finished, validated result. Parameters are checked against the solver's specs."""
    prob = get_problem(problem)
    info = solver_info(solver, prob.name)
    params = info.check(params)
    if time_limit is not None and not (time_limit > 0):
        raise ParameterError(f"time_limit must be > 0 seconds, got {time_limit!r}")
    if not isinstance(seed, int) or seed < 0:
        raise ParameterError(f"seed must be an integer >= 0, got {seed!r}")
    ctx = SearchContext(instance, time_limit, seed, callback,
                        packer or prob.default_packer(time_limit), prob)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            info.fn(ctx, **params)
        except BaseException as exc:  # re-raised in the caller's thread
            errors.append(exc)

    worker = threading.Thread(target=run, name=f"memplace-{solver}", daemon=True)
    worker.start()
    worker.join(None if time_limit is None else time_limit + GRACE_S)
    if worker.is_alive():  # a library ignored its limit: take the incumbent and go
        ctx.stop()
        worker.join(GRACE_S)
        ctx.notes["hard_stop"] = True
    ctx.frozen = True
    if errors:
        raise errors[0]
    return _finish(ctx, info.name, params)


def _finish(ctx: SearchContext, name: str, params: dict[str, Any]) -> Result:
    prob, inst = ctx.problem, ctx.instance
    wall = ctx.elapsed()
    solution = ctx.best
    status = "optimal" if ctx.proven_optimal else "feasible"
    if solution is None:  # nothing found in time: the problem's always-valid solution
        solution = prob.fallback(inst)
        ctx.notes["no_incumbent"] = True
        status = "feasible"
    solution, errors, changed = prob.finish(inst, solution, ctx.packer, ctx.notes)
    if errors:
        raise RuntimeError(f"solver {name!r} produced an invalid placement: {errors[0]}")
    lat = prob.evaluate(inst, solution)
    bound = ctx.lower_bound
    if bound is not None and bound > lat * (1 + 1e-9):
        raise RuntimeError(f"solver {name!r} claims bound {bound} above its latency {lat}")
    if status == "optimal" and changed:
        status = "feasible"  # the proven solution could not be kept as it was
    if not ctx.trace or ctx.trace[-1][2] != lat:
        ctx.trace.append((wall, ctx.evaluations, lat))
    # wall_s: until the result is finished and validated (at 10^5 ops the validation
    # alone takes 0.2 s of CPU, seconds on a loaded machine), so a run's recorded wall
    # time is what its time limit must hold
    return Result(inst.name, name, params, ctx.seed, solution, lat, bound, status,
                  ctx.elapsed(), ctx.evaluations, list(ctx.trace), ctx.notes, prob)
