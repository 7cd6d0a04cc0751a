"""One interface for every solver: a registry, a search context, and a validated `Result`.

A solver is a function `fn(ctx: SearchContext, **params) -> None` registered with
`@register(name, description, params={...defaults})`. It reports every placement
it wants kept with `ctx.offer(...)` (the context keeps the best, the anytime
trace and the evaluation count), checks `ctx.should_stop()` in its loops, and
may set `ctx.lower_bound` / `ctx.proven_optimal`. `solve()` runs it under a
hard wall-clock limit, then validates the best placement against the spec
(offsets assigned on addressed levels) before returning it.
"""
from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from memplace.model import (Instance, Solution, latency, placement_errors, rectify)
from memplace.model.core.errors import MemplaceError
from memplace.model.static.rectification import Packer

# callback(elapsed_s, evaluations, best_latency) -> True to stop the search early
Callback = Callable[[float, int, float], Any]
GRACE_S = 0.25  # how long past the limit a solver is given to notice and return


class ParameterError(MemplaceError):
    """An unknown solver or a parameter out of range; names the offending item."""


@dataclass(frozen=True)
class SolverInfo:
    name: str
    description: str
    params: dict[str, Any]
    fn: Callable[..., None]
    deterministic: bool = False  # same result whatever the seed: benchmarks run it once


_REGISTRY: dict[str, SolverInfo] = {}


def register(name: str, description: str, params: dict[str, Any] | None = None,
             deterministic: bool = False):
    """Decorator: add a solver under `name`, with its parameters and their defaults."""
    def wrap(fn: Callable[..., None]) -> Callable[..., None]:
        if name in _REGISTRY and _REGISTRY[name].fn is not fn:
            raise RuntimeError(f"solver name {name!r} registered twice")
        _REGISTRY[name] = SolverInfo(name, description, dict(params or {}), fn, deterministic)
        return fn
    return wrap


def registry() -> dict[str, SolverInfo]:
    """Every registered solver (all solver modules are imported on first call)."""
    from memplace.solvers import load_solver_modules
    load_solver_modules()
    return dict(sorted(_REGISTRY.items()))


def solver_info(name: str) -> SolverInfo:
    solvers = registry()
    if name not in solvers:
        raise ParameterError(f"unknown solver {name!r}; known: {', '.join(solvers)}")
    return solvers[name]


def coerce_params(info: SolverInfo, params: dict[str, Any]) -> dict[str, Any]:
    """Defaults overlaid by `params`; strings (from the CLI or TOML) converted to the
    default's type. Unknown names raise ParameterError naming them."""
    out = dict(info.params)
    for key, value in params.items():
        if key not in info.params:
            known = ", ".join(info.params) or "none"
            raise ParameterError(f"solver {info.name!r} has no parameter {key!r} (parameters: {known})")
        out[key] = _coerce(info.name, key, value, info.params[key])
    return out


def _coerce(solver: str, key: str, value: Any, default: Any) -> Any:
    if not isinstance(value, str) or isinstance(default, str):
        if isinstance(default, bool) and not isinstance(value, bool):
            raise ParameterError(f"solver {solver!r}: parameter {key!r} must be true or false, got {value!r}")
        if isinstance(default, int) and not isinstance(default, bool) and isinstance(value, float):
            if not value.is_integer():
                raise ParameterError(f"solver {solver!r}: parameter {key!r} must be an integer, got {value!r}")
            value = int(value)
        return value
    try:
        if isinstance(default, bool):
            if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError
            return value.lower() in ("true", "1", "yes")
        if isinstance(default, int):
            return int(value)
        if isinstance(default, float) or default is None:
            if value.lower() == "none":
                return None
            return float(value) if default is not None or any(c in value for c in ".eE") else int(value)
    except ValueError:
        raise ParameterError(f"solver {solver!r}: parameter {key!r} cannot be {value!r} "
                             f"(expected {type(default).__name__})") from None
    return value


def check_range(solver: str, key: str, value: Any, low: float | None = None,
                high: float | None = None) -> None:
    """Raise ParameterError unless low <= value <= high."""
    if value is None:
        return
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"[{low if low is not None else '-inf'}, {high if high is not None else 'inf'}]"
        raise ParameterError(f"solver {solver!r}: parameter {key!r}={value!r} is outside {bounds}")


@dataclass
class Result:
    """What a solver found, validated against the spec."""

    instance: str
    solver: str
    params: dict[str, Any]
    seed: int
    placement: np.ndarray  # int64 level per tensor
    offsets: np.ndarray | None  # int64 per tensor, -1 off addressed levels
    latency: float
    lower_bound: float | None
    status: str  # "optimal" only when proven
    wall_s: float
    evaluations: int
    trace: list[tuple[float, int, float]]  # (seconds, evaluations, best latency so far)
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def gap(self) -> float | None:
        if self.lower_bound is None or self.lower_bound <= 0:
            return None
        return max(0.0, self.latency / self.lower_bound - 1.0)

    def to_solution(self) -> Solution:
        return Solution(self.instance, self.placement, self.offsets, self.latency,
                        self.lower_bound, self.status,
                        {"name": self.solver, "params": self.params, "seed": self.seed})


class SearchContext:
    """What a running solver sees: the instance, its budget, an RNG, and the incumbent."""

    def __init__(self, instance: Instance, time_limit: float | None, seed: int,
                 callback: Callback | None = None, packer: Packer | None = None):
        self.instance = instance
        self.time_limit = time_limit
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.callback = callback
        self.packer = packer
        self.started = time.perf_counter()
        self.deadline = math.inf if time_limit is None else self.started + time_limit
        self.evaluations = 0
        self.best_placement: np.ndarray | None = None
        self.best_offsets: np.ndarray | None = None
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
        """Add to the number of placements evaluated."""
        self.evaluations += int(evaluations)

    def offer(self, placement: np.ndarray, latency_s: float | None = None,
              offsets: np.ndarray | None = None) -> bool:
        """Propose a valid placement (offsets on addressed levels, or None to have them
        assigned at the end). Keeps it if it beats the incumbent; returns True then.
        `latency_s` must be the spec latency of the placement when given."""
        if self.frozen:
            return False
        lat = latency(self.instance, placement) if latency_s is None else float(latency_s)
        with self._lock:
            if lat >= self.best_latency:
                return False
            self.best_latency = lat
            self.best_placement = np.array(placement, np.int64, copy=True)
            self.best_offsets = None if offsets is None else np.array(offsets, np.int64, copy=True)
            self.trace.append((self.elapsed(), self.evaluations, lat))
        if self.callback is not None and self.callback(self.elapsed(), self.evaluations, lat):
            self._stop.set()
        return True


def solve(instance: Instance, solver: str = "compiler", time_limit: float | None = 60.0,
          seed: int = 0, callback: Callback | None = None, packer: Packer | None = None,
          **params: Any) -> Result:
    """Run a registered solver under a hard wall-clock limit and return its validated result."""
    info = solver_info(solver)
    params = coerce_params(info, params)
    if time_limit is not None and not (time_limit > 0):
        raise ParameterError(f"time_limit must be > 0 seconds, got {time_limit!r}")
    if not isinstance(seed, int) or seed < 0:
        raise ParameterError(f"seed must be an integer >= 0, got {seed!r}")
    ctx = SearchContext(instance, time_limit, seed, callback, packer or default_packer(time_limit))
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


def default_packer(time_limit: float | None) -> Packer:
    """The packer for addressed levels: compiler heuristics, then the exact search with
    a budget of a tenth of the time limit (at most 5 s), then first-fit."""
    from memplace.model.packing.packers import placement_packer
    return placement_packer(5.0 if time_limit is None else min(5.0, 0.1 * time_limit))


def _finish(ctx: SearchContext, name: str, params: dict[str, Any]) -> Result:
    inst = ctx.instance
    wall = ctx.elapsed()
    place = ctx.best_placement
    offsets = ctx.best_offsets
    status = "optimal" if ctx.proven_optimal else "feasible"
    if place is None:  # nothing found in time: the always-valid slowest placement
        place = inst.slowest_placement()
        ctx.notes["no_incumbent"] = True
        status = "feasible"
    errors = placement_errors(inst, place, offsets)
    if inst.has_addressed_levels and (offsets is None or errors):
        fixed = rectify(inst, place, packer=ctx.packer)
        if fixed.placement.tolist() != place.tolist():
            ctx.notes["moved_to_pack"] = int((fixed.placement != place).sum())
        place, offsets = fixed.placement, fixed.offsets
        errors = placement_errors(inst, place, offsets)
    if errors:
        raise RuntimeError(f"solver {name!r} produced an invalid placement: {errors[0]}")
    lat = latency(inst, place)
    bound = ctx.lower_bound
    if bound is not None and bound > lat * (1 + 1e-9):
        raise RuntimeError(f"solver {name!r} claims bound {bound} above its latency {lat}")
    if status == "optimal" and ctx.notes.get("moved_to_pack"):
        status = "feasible"  # the proven placement could not be packed as it was
    if not ctx.trace or ctx.trace[-1][2] != lat:
        ctx.trace.append((wall, ctx.evaluations, lat))
    return Result(inst.name, name, params, ctx.seed, place, offsets, lat, bound, status,
                  wall, ctx.evaluations, list(ctx.trace), ctx.notes)
