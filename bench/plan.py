"""Benchmark plans: small TOML files naming instances, solvers, seeds and limits.

A plan (`bench/plans/quick.toml` is the shipped default) reads::

    description = "every solver on a handful of small instances"
    instances = ["resnet50@nnpi", "mobilenetv2@*"]   # built-in names, glob patterns
                                                    # over them, or instance file paths
    solvers = ["*"]                                 # registered names or glob patterns
    seeds = [0, 1]
    time_limit = 5.0                                # seconds per run (a hard limit)
    kill_margin = 10.0                              # optional, seconds past the limit
                                                    # before the worker is killed
    memory_limit_mb = 4096                          # optional, per worker (address space)
    solver_modules = ["my_solvers"]                 # optional: modules (or .py files)
                                                    # that register extra solvers
    one_seed = ["milp"]                             # optional: solvers to run with the
                                                    # first seed only (see below)
    problem = "static"                              # optional: the problem the solvers
                                                    # solve ("static" or "residency")

    [params.random-greedy]                          # optional parameter overrides
    samples = 50

Rules, all checked before anything runs (an error names the offending entry):

- Solver names and patterns are looked up among the plan's problem's solvers
  (`problem`, default "static"); every task carries the problem.
- Glob patterns over solver names match built-in solvers only (those defined in
  `memplace.solvers`); a solver from `solver_modules` or from the environment
  variable MEMPLACE_EXTRA_SOLVER_MODULES (comma-separated modules or .py paths,
  imported by the harness and by every worker) must be named exactly.
- Instance paths (entries with a `/` or ending in `.json`) are relative to the
  plan file's folder.
- A deterministic solver runs once per instance, with the plan's first seed, even
  if the plan lists several seeds: its result does not depend on the seed. A
  solver counts as deterministic when its registration says so
  (`SolverInfo.deterministic`). `one_seed` adds
  solvers whose result does not depend on the seed but that take parameters
  (an exact MILP, whose runs differ by timing only).
"""
from __future__ import annotations

import fnmatch
import importlib
import importlib.util
import os
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memplace.bench.task import DEFAULT_KILL_MARGIN_S, Task
from memplace.model.core.problem import problem
from memplace.model.core.search import DEFAULT_PROBLEM
from memplace.model.core.errors import MemplaceError
from memplace.model.core.reading import is_int, is_number, read_text, shown

PLANS_DIR = Path(__file__).resolve().parent / "plans"
EXTRA_MODULES_ENV = "MEMPLACE_EXTRA_SOLVER_MODULES"
MAX_PLAN_BYTES = 1 << 20  # a plan is a few lines of TOML
MAX_SECONDS = 1e7  # a time limit or kill margin (about 4 months): finite, and a valid timer
MAX_SEED = (1 << 63) - 1
MAX_MEMORY_MB = 1 << 30  # a petabyte
PLAN_KEYS = {"description", "instances", "solvers", "seeds", "time_limit", "kill_margin",
             "memory_limit_mb", "solver_modules", "one_seed", "params", "problem"}


class PlanError(MemplaceError):
    """A plan that cannot run: names the plan file and the offending entry."""


@dataclass
class Plan:
    name: str
    path: Path
    text: str  # the TOML as read, copied next to the results
    description: str
    tasks: list[Task] = field(default_factory=list)
    instances: list[str] = field(default_factory=list)
    solvers: list[str] = field(default_factory=list)
    problem: str = DEFAULT_PROBLEM

    def runs_breakdown(self) -> str:
        """Where the number of runs comes from, e.g. `72 runs = 4 instances x (5 solvers x
        2 seeds + 8 solvers x 1 seed: compiler, dp, ...)`: a deterministic solver, or one
        in `one_seed`, runs with the first seed only."""
        seeds: dict[str, int] = {}  # per solver: the same on every instance
        for task in self.tasks:
            if task.instance == self.instances[0]:
                seeds[task.solver] = seeds.get(task.solver, 0) + 1
        by_count: dict[int, list[str]] = {}
        for solver in self.solvers:
            by_count.setdefault(seeds[solver], []).append(solver)
        head = f"{_count(len(self.tasks), 'run')} = {_count(len(self.instances), 'instance')} x "
        if len(by_count) == 1:
            [(k, names)] = by_count.items()
            return head + f"{_count(len(names), 'solver')} x {_count(k, 'seed')}"
        parts = [f"{_count(len(names), 'solver')} x {_count(k, 'seed')}"
                 + (f": {', '.join(names)}" if k == 1 else "")
                 for k, names in sorted(by_count.items(), reverse=True)]
        return head + f"({' + '.join(parts)})"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def shipped_plans() -> list[str]:
    return sorted(p.stem for p in PLANS_DIR.glob("*.toml"))


def plan_path(name_or_path: str) -> Path:
    """A shipped plan by name (`quick`) or a TOML file by path."""
    shipped = PLANS_DIR / f"{name_or_path}.toml"
    if "/" not in name_or_path and not name_or_path.endswith(".toml") and shipped.is_file():
        return shipped
    path = Path(name_or_path)
    if path.is_file():
        return path
    raise PlanError(f"no plan {name_or_path!r}: not a shipped plan ({', '.join(shipped_plans())}) "
                    "nor a file")


def load_plan(name_or_path: str) -> Plan:
    """Read and check a plan, expanding it into its tasks; raises PlanError before
    anything runs if an instance, solver or parameter is unknown."""
    path = plan_path(name_or_path)
    text = read_text(path, "plan", PlanError, max_bytes=MAX_PLAN_BYTES)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PlanError(f"plan {path}: not valid TOML ({exc})") from None
    except RecursionError:
        raise PlanError(f"plan {path}: not valid TOML (arrays or tables nested too deeply)") from None
    try:
        return _expand(path, text, data)
    except MemplaceError as exc:
        raise PlanError(f"plan {path}: {exc}") from None


def _expand(path: Path, text: str, data: dict[str, Any]) -> Plan:
    unknown = sorted(set(data) - PLAN_KEYS)
    if unknown:
        raise PlanError(f"unknown key {unknown[0]!r} (keys: {', '.join(sorted(PLAN_KEYS))})")
    for key in ("instances", "solvers", "seeds", "time_limit"):
        if key not in data:
            raise PlanError(f"missing key {key!r}")
    modules = tuple(_strings(data.get("solver_modules", []), "solver_modules"))
    modules = tuple(_absolute_module(m, path.parent) for m in modules) + env_solver_modules()
    import_solver_modules(modules)

    seeds = data["seeds"]
    if not (isinstance(seeds, list) and seeds
            and all(is_int(s) and 0 <= s <= MAX_SEED for s in seeds)):
        raise PlanError(f"seeds must be a non-empty list of integers in 0..2**63-1, got {shown(seeds)}")
    time_limit = _positive(data["time_limit"], "time_limit")
    margin = _positive(data.get("kill_margin", DEFAULT_KILL_MARGIN_S), "kill_margin")
    memory = data.get("memory_limit_mb")
    if memory is not None and not (is_int(memory) and 0 < memory <= MAX_MEMORY_MB):
        raise PlanError(f"memory_limit_mb must be an integer in 1..{MAX_MEMORY_MB}, got {shown(memory)}")

    prob = data.get("problem", DEFAULT_PROBLEM)
    if not isinstance(prob, str):
        raise PlanError(f"problem must be a problem's name, got {shown(prob)}")
    prob = problem(prob).name  # raises, naming the known problems
    sources = resolve_instances(_strings(data["instances"], "instances", empty=False), path.parent,
                                prob)
    solver_names = resolve_solvers(_strings(data["solvers"], "solvers", empty=False), prob)
    params = _solver_params(data.get("params", {}), solver_names, prob)
    one_seed = set(_strings(data.get("one_seed", []), "one_seed"))
    stray = sorted(one_seed - set(solver_names))
    if stray:
        raise PlanError(f"one_seed: solver {stray[0]!r} is not among the plan's solvers")

    from memplace.solvers import solver_info
    instances = [(source, *fingerprint(source, prob)) for source in sources]
    tasks = []
    for source, name, sha in instances:
        for solver in solver_names:
            single = solver in one_seed or solver_info(solver, prob).deterministic
            for seed in (seeds[:1] if single else seeds):
                tasks.append(Task(name, source, sha, solver, params[solver], int(seed),
                                  time_limit, margin, memory, modules, prob))
    return Plan(path.stem, path, text, str(data.get("description", "")),
                tasks, [name for _, name, _ in instances], solver_names, prob)


def _strings(value: Any, key: str, empty: bool = True) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PlanError(f"{key} must be a list of strings, got {shown(value)}")
    if not value and not empty:
        raise PlanError(f"{key} must name at least one entry")
    return value


def _positive(value: Any, key: str) -> float:
    if not (is_number(value) and 0 < value <= MAX_SECONDS):
        raise PlanError(f"{key} must be a number of seconds in (0, {MAX_SECONDS:g}], got {shown(value)}")
    return float(value)


# ---------------------------------------------------------------------- instances
def resolve_instances(entries: list[str], base: Path, problem_name: str | None = None) -> list[str]:
    """Plan entries to instance sources (built-in names or absolute paths), in plan
    order without repeats; unknown names and patterns that match nothing are errors.
    A library entry (`memplace-lib/N:test`, or `memplace-lib:test` for the newest
    version) gives the instances of its entries for `problem_name`."""
    from memplace.instances import builtin_names, builtin_path
    from memplace.instances.library import instance_set, is_spec
    names = builtin_names()
    out: list[str] = []
    for entry in entries:
        if is_spec(entry):  # a library's split: its program instances
            try:
                found = [str(s) for s in instance_set(entry, problem_name)]
            except MemplaceError as exc:
                raise PlanError(f"instances entry {entry!r}: {exc}") from None
        elif "/" in entry or entry.endswith(".json"):
            file = (base / entry).resolve()
            if not file.is_file():
                raise PlanError(f"instance file {entry!r} not found (looked at {file})")
            found = [str(file)]
        elif entry not in names and any(c in entry for c in "*?["):
            found = fnmatch.filter(names, entry)
            if not found:
                raise PlanError(f"instance pattern {entry!r} matches no built-in instance")
        else:
            builtin_path(entry)  # raises, naming the instance and close matches
            found = [entry]
        out.extend(f for f in found if f not in out)
    return out


def fingerprint(source: str, problem_name: str = DEFAULT_PROBLEM) -> tuple[str, str]:
    """(name, fingerprint) of an instance source."""
    from memplace.instances import load
    inst = load(source)
    return inst.name, problem(problem_name).fingerprint(inst)


# ---------------------------------------------------------------------- solvers
def resolve_solvers(entries: list[str], problem_name: str = DEFAULT_PROBLEM) -> list[str]:
    from memplace.solvers import builtin_solvers, solver_info
    out: list[str] = []
    for entry in entries:
        if any(c in entry for c in "*?["):
            found = fnmatch.filter(builtin_solvers(problem_name), entry)
            if not found:
                raise PlanError(f"solver pattern {entry!r} matches no built-in solver")
        else:
            found = [solver_info(entry, problem_name).name]  # raises ParameterError naming it
        out.extend(f for f in found if f not in out)
    return out


def _solver_params(table: Any, solvers: list[str],
                   problem_name: str = DEFAULT_PROBLEM) -> dict[str, dict[str, Any]]:
    from memplace.solvers import solver_info
    if not isinstance(table, dict):
        raise PlanError("params must be a table of tables: [params.SOLVER]")
    for name, values in table.items():
        if name not in solvers:
            raise PlanError(f"[params.{name}]: solver {name!r} is not among the plan's solvers "
                            f"({', '.join(solvers)})")
        if not isinstance(values, dict):
            raise PlanError(f"[params.{name}] must be a table of parameter = value")
    return {name: solver_info(name, problem_name).check(table.get(name, {})) for name in solvers}


# ---------------------------------------------------------------------- extra solver modules
def env_solver_modules() -> tuple[str, ...]:
    raw = os.environ.get(EXTRA_MODULES_ENV, "")
    return tuple(_absolute_module(m.strip(), Path.cwd()) for m in raw.split(",") if m.strip())


def _absolute_module(entry: str, base: Path) -> str:
    """Module names stay; .py paths become absolute so workers anywhere can import them."""
    if entry.endswith(".py"):
        return str((base / entry).resolve())
    return entry


def import_solver_modules(modules: tuple[str, ...] | list[str]) -> None:
    """Import modules that register extra solvers: dotted names, or paths to .py files."""
    for entry in modules:
        try:
            if entry.endswith(".py"):
                name = f"memplace_extra_{Path(entry).stem}"
                if name in sys.modules or _loaded_from(entry):
                    continue
                spec = importlib.util.spec_from_file_location(name, entry)
                if spec is None or spec.loader is None or not Path(entry).is_file():
                    raise ImportError(f"no such file {entry}")
                module = importlib.util.module_from_spec(spec)
                sys.modules[name] = module
                spec.loader.exec_module(module)
            else:
                importlib.import_module(entry)
        except ImportError as exc:
            raise PlanError(f"cannot import solver module {entry!r}: {exc}") from None


def _loaded_from(path: str) -> bool:
    """Whether a module was already imported from this file (under any name)."""
    target = os.path.realpath(path)
    return any(getattr(m, "__file__", None) and os.path.realpath(m.__file__) == target
               for m in list(sys.modules.values()))
