"""Compile memplace's Numba kernels ahead of the runs that need them.

The kernels come in parts (`PARTS`), each compiled by running its code once on a
three-op instance; on an empty cache `warm_parts` compiles them one after another in this
process, or (`jobs` > 1, `memplace warmup --jobs 2`) in spawned worker processes, each part
compiled by one process only: two processes compiling the
same kernel write the same cache index file, and Numba's cache was seen corrupted by
concurrent writers. A part starts once the parts whose kernels it calls are compiled
(`Part.after`), so that it loads them from the cache instead of compiling (and writing)
them again; what that order misses (a callee two parts reach) is saved in turn
(`_take_turns_saving`). `load_kernels` is what a run calls before its clock starts: the parts its
solvers need, compiled (in parallel when several are missing) or loaded.
"""
from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import time
from dataclasses import dataclass, field
from typing import Callable

from memplace.model import Instance
from memplace.model.core.search import DEFAULT_PROBLEM
from memplace.model.warmup import tiny_instance_dict


@dataclass(frozen=True)
class Part:
    """Kernels compiled together: `warm` ("module:function", a function of the problem's
    own package where it is one problem's: the solvers of one problem import none of
    another's) runs them on the three-op instance; `kernels` ("module:function") are those
    whose cache entries say whether the part is compiled."""

    name: str
    warm: str
    after: tuple[str, ...]
    kernels: tuple[str, ...]
    cpu_s: float  # CPU seconds of its cold compile (docs/residency-scale.md, "Cold start")


def _warm_static() -> None:
    from memplace.model.warmup import warm_static
    warm_static()


def _warm_residency() -> None:
    from memplace.model.warmup import warm_residency
    warm_residency()


def _warm_packers() -> None:
    """Every offset packer on a five-buffer example."""
    from memplace.model.packing.packers import PACKERS, Buffer, pack
    buffers = [Buffer(str(i), lo, hi, size) for i, (lo, hi, size) in
               enumerate([(0, 3, 4), (3, 9, 4), (0, 9, 4), (9, 21, 4), (0, 21, 4)])]
    for method in PACKERS:
        pack(buffers, 12, method=method, time_limit=30.0)


def _warm_static_solvers() -> None:
    """Every built-in static solver, stopped at its first incumbent."""
    warm_solvers(builtin_solvers())


_MOVES = "memplace.solvers.residency.machinery.move_loop"
_ALLOCATOR = "memplace.solvers.residency.machinery.allocation_kernel"
_RESIDENCY = "memplace.solvers.residency.machinery.warm_kernels"
_HERE = __name__
# cpu_s: each part's CPU seconds in `NUMBA_CACHE_DIR=$(mktemp -d) memplace warmup --profile 5`
# (docs/residency-scale.md, "Cold start"): the estimates printed before a compile
PARTS: dict[str, Part] = {p.name: p for p in (
    Part("static cost model", f"{_HERE}:_warm_static", (),
         # (the rectify kernel is not a marker: _warm_static never calls it, so it stayed
         # "missing" after every warmup and each run compiled this part again)
         ("memplace.model.static.kernels:latency_kernel",), 17.0),
    Part("residency simulator", f"{_HERE}:_warm_residency", (),
         ("memplace.model.residency.kernels:try_change_kernel",
          "memplace.model.residency.kernels:batch_kernel"), 16.0),
    # (no kernel tells: with the C packing core built, which pip does where it can, the
    # packers compile nothing; without it, the other parts compile the heuristics they call)
    Part("offset packers", f"{_HERE}:_warm_packers", ("static cost model",), (), 1.0),
    Part("static solvers", f"{_HERE}:_warm_static_solvers", ("static cost model", "offset packers"),
         ("memplace.solvers.static.sa_kernels:anneal_penalty_kernel",), 15.0),
    Part("msa's allocator", f"{_RESIDENCY}:warm_allocator", ("residency simulator", "offset packers"),
         (f"{_ALLOCATOR}:assign_kernel",), 33.0),
    Part("sa's move loop", f"{_RESIDENCY}:warm_move_loop", ("residency simulator",), (f"{_MOVES}:run_moves",),
         35.0),
)}


def _named(function: str) -> Callable:
    """The function "module:function" names."""
    import importlib
    module, name = function.split(":")
    return getattr(importlib.import_module(module), name)


def run_part(name: str) -> None:
    """Run one part's code (compiling, or loading, its kernels) in this process."""
    _named(PARTS[name].warm)()


def _compiled(kernel: str) -> bool | None:
    """Whether the disk cache holds a compiled `kernel` ("module:function") for its source
    as it is now; None when that cannot be told (then the caller assumes it does)."""
    try:
        dispatcher = _named(kernel)
        return bool(dispatcher._cache._cache_file._load_index())  # Numba's own staleness check
    except Exception:  # (private API: another Numba version may differ)
        return None


def missing_parts(names: list[str] | None = None) -> list[str]:
    """The parts among `names` (default: every part) whose kernels are not compiled yet."""
    return [name for name in (names or list(PARTS))
            if any(_compiled(k) is False for k in PARTS[name].kernels)]


@dataclass
class PartReport:
    """What compiling (or loading) one part cost, in its own process."""

    name: str
    wall_s: float
    cpu_s: float
    kernels: dict[str, float] = field(default_factory=dict)  # CPU s per kernel compiled


def warm_part(name: str) -> PartReport:
    """Compile (or load) one part's kernels in this process."""
    from memplace.model.core.jit import CompileLog, cpu_seconds
    _take_turns_saving()
    began, cpu = time.perf_counter(), cpu_seconds()
    with CompileLog() as log:
        run_part(name)
    return PartReport(name, time.perf_counter() - began, cpu_seconds() - cpu, log.ours())


_TURNS = []


def _take_turns_saving() -> None:
    """Make this process's saves into Numba's cache wait for those of the other workers.
    Numba saves a kernel by reading its cache index, adding the entry and writing the index
    back: two processes saving the same kernel at once could lose an entry or give two
    signatures one data file. Parts that call a kernel start after the part that compiles
    it (`Part.after`), so this is for what that ordering misses: a callee two parts reach
    (then it is compiled twice, and saved in turn). Unix only (fcntl); elsewhere, nothing."""
    if _TURNS:
        return
    try:
        import fcntl

        from numba.core import caching
        save = caching.IndexDataCacheFile.save
    except (ImportError, AttributeError):
        return
    from memplace.model.core.numba_cache import cache_dir
    lock = cache_dir() / ".memplace-saves.lock"

    def save_in_turn(self, key, data):
        with open(lock, "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)  # released when the file closes
            return save(self, key, data)

    caching.IndexDataCacheFile.save = save_in_turn
    _TURNS.append(lock)


def compiled_twice(reports: list[PartReport]) -> dict[str, list[str]]:
    """The kernels that more than one part compiled (each part in its own process), with
    the parts: the work a better `Part.after` would have saved."""
    parts: dict[str, list[str]] = {}
    for r in reports:
        for kernel in r.kernels:
            parts.setdefault(kernel, []).append(r.name)
    return {k: v for k, v in parts.items() if len(v) > 1}


def _ancestors(name: str) -> set[str]:
    out: set[str] = set()
    for dep in PARTS[name].after:
        out |= {dep} | _ancestors(dep)
    return out


def with_callees(names: list[str] | None = None) -> list[str]:
    """The parts `names` (default: every part) and the parts they call, callees first."""
    wanted = set(names or PARTS)
    for name in list(wanted):
        wanted |= _ancestors(name)
    return [name for name in PARTS if name in wanted]  # PARTS lists callees first


def warm_parts(names: list[str] | None = None, jobs: int = 1,
               on_start: Callable[[str], None] | None = None,
               on_done: Callable[[PartReport], None] | None = None) -> list[PartReport]:
    """Compile the parts `names` (default: every part) and those they call, in `jobs`
    worker processes: a part starts once the parts it calls are done, the longest ready
    one first. With jobs 1 (the default: a spawned worker was seen to crash, see
    docs/residency-scale.md), in this process."""
    order = with_callees(names)
    reports: list[PartReport] = []
    if jobs <= 1:
        for name in order:
            if on_start:
                on_start(name)
            reports.append(warm_part(name))
            if on_done:
                on_done(reports[-1])
        return reports
    from memplace.model.core import numba_cache
    numba_cache.configure()  # the workers inherit the cache folder
    done: set[str] = set()
    running: dict[cf.Future, str] = {}
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: no Numba state shared
    with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        while len(done) < len(order):
            ready = sorted((n for n in order if n not in done and n not in running.values()
                            and set(PARTS[n].after) <= done),
                           key=lambda n: -PARTS[n].cpu_s)
            for name in ready[:jobs - len(running)]:
                if on_start:
                    on_start(name)
                running[pool.submit(warm_part, name)] = name
            finished, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
            for future in finished:
                name = running.pop(future)
                try:
                    reports.append(future.result())
                except cf.process.BrokenProcessPool:
                    # a worker died (seen: "munmap_chunk(): invalid pointer" in a spawned
                    # worker): compile what is left here, one part after another
                    return reports + warm_parts([n for n in order if n not in done], jobs=1,
                                                on_start=on_start, on_done=on_done)
                done.add(name)
                if on_done:
                    on_done(reports[-1])
    return reports


def warm_solvers(names: list[str] | None = None) -> list[str]:
    """Run each solver (all registered ones by default) on a three-op instance, stopping
    at its first incumbent, so its kernels are compiled and cached on disk."""
    from memplace.solvers import registry, solve
    inst = Instance.from_dict(tiny_instance_dict())
    done = []
    for name in names or list(registry()):
        solve(inst, name, time_limit=120.0, seed=0, callback=lambda *_: True)
        done.append(name)
    return done


def builtin_solvers(problem_name: str = DEFAULT_PROBLEM) -> list[str]:
    """The solvers of `problem_name` that memplace itself registers (not those of a
    plan's own modules)."""
    from memplace.solvers import registry
    return [name for name, info in registry(problem_name).items()
            if info.fn.__module__.startswith("memplace.solvers.")]


# the residency solvers whose search runs sa's compiled move loop (hybrid runs sa; the
# certified gap runs sa and the bound; multistart anneals with it)
MOVE_LOOP_SOLVERS = {"sa", "hybrid", "bound", "multistart"}


def needed_parts(solvers: list[str], problem: str = DEFAULT_PROBLEM) -> list[str]:
    """The parts a run of `solvers` on `problem` needs (an empty list: any solver). A
    residency solver starts from msa and from static solvers (starts.py, baselines.py):
    every residency run needs the static solvers and msa's allocator."""
    parts = ["static cost model", "residency simulator"]
    if problem == DEFAULT_PROBLEM:
        builtin = set(builtin_solvers())
        if not solvers or set(solvers) & builtin:
            parts.append("static solvers")
        return parts
    parts += ["static solvers", "msa's allocator"]
    if not solvers or set(solvers) & MOVE_LOOP_SOLVERS:
        parts.append("sa's move loop")
    return parts


def compile_estimate(parts: list[str], jobs: int = 2) -> float:
    """Seconds that compiling `parts` takes on `jobs` idle cores, about (the CPU seconds of
    each part, measured, shared among the workers)."""
    cpu = sum(PARTS[name].cpu_s for name in parts)
    return cpu / max(1, min(jobs, len(parts)))


def load_kernels(solvers: list[str], problem: str = DEFAULT_PROBLEM,
                 announce: Callable[[str], None] | None = None) -> float:
    """Load the compiled kernels of the model and of the built-in `solvers` from the disk
    cache now, so that a run's clock and trace measure the search, not the loading. Parts
    not compiled yet are compiled first (in this process, as `memplace warmup` does by default), and
    `announce` is told so once, with about how long it takes. A residency solver starts
    from the static solvers of `RESIDENCY_STARTS`, so for it those are loaded (not every
    static solver: on a cold cache the others' compile took minutes of a `memplace gap`
    budget). Returns the seconds it took."""
    began = time.perf_counter()
    parts = needed_parts(solvers, problem)
    missing = missing_parts(parts)
    jobs = 1  # in this process: a run's compile must not depend on worker processes
    if missing and announce is not None:
        announce(f"compiling kernels once, ~{compile_estimate(missing, jobs):.0f} s "
                 f"({', '.join(missing)}); `memplace warmup` does it ahead")
    _warm_static()
    _warm_residency()
    builtin = builtin_solvers()  # the static problem's
    wanted = solvers if problem == DEFAULT_PROBLEM else RESIDENCY_STARTS
    names = [name for name in wanted if name in builtin]
    if names:  # (an empty list would mean every registered solver)
        warm_solvers(names)
    for name in ("msa's allocator", "sa's move loop"):
        if name in parts:
            run_part(name)
    return time.perf_counter() - began


# the static solvers whose placements the residency solvers start from or fall back to
# (solvers/residency/machinery/starts.py, baselines.py, evolution.py, planner.py)
RESIDENCY_STARTS = ("all-slowest", "compiler", "sa", "milp")
