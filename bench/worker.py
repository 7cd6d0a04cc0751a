"""One run, in a process of its own: `run(task) -> record` (the `store` schema).

`isolation` calls `run` in a process forked from a warm forkserver, or starts
`python -m memplace.bench.worker`, writes the task as JSON on its stdin and reads
the record back from its stdout (anything a solver prints goes to stderr instead,
so it cannot corrupt the record). Before the solve the worker arms its own hard
limits:

- (first, kernels of the model and of built-in solvers are loaded from the Numba
  disk cache, outside the run's clock);
- a real-time interval timer of time_limit + kill_margin seconds whose SIGALRM is
  left at the default action, so the kernel ends the process even if a solver
  holds the GIL in a C loop (the parent records that as "timeout");
- optionally RLIMIT_AS (address space, interpreter and Numba included) of
  memory_limit_mb; an allocation beyond it is recorded as "oom".
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import platform
import signal
import socket
import sys
import time
import traceback
from typing import Any

from memplace.bench.instance_source import recorded_source
from memplace.bench.provenance import code_version, package_version
from memplace.bench.task import Task


def machine() -> dict[str, Any]:
    """Where a run ran: hostname, CPU model, cores, Python version."""
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {"hostname": socket.gethostname(), "cpu": cpu, "cores": os.cpu_count(),
            "python": platform.python_version()}


def failure_record(task: Task, status: str, error: str, wall_s: float,
                   where: dict[str, Any] | None = None) -> dict[str, Any]:
    """A record for a run that produced no result."""
    return base_record(task) | {
        "status": status, "latency": None, "lower_bound": None, "wall_s": wall_s,
        "evaluations": None, "trace": [], "placement": None, "offsets": None, "notes": {},
        "error": error, "version": package_version(), "code": code_version(),
        "machine": where or machine()}


def base_record(task: Task) -> dict[str, Any]:
    return {"instance": task.instance, "instance_source": recorded_source(task.source),
            "instance_sha256": task.sha256, "solver": task.solver,
            "params": task.params, "seed": task.seed, "time_limit": task.time_limit,
            "problem": task.problem}


def result_record(task: Task, inst, result) -> dict[str, Any]:
    """The record of a result; the solution's fields are the problem's (`to_record`)."""
    return base_record(task) | {
        "status": result.status, "latency": result.latency,
        "lower_bound": _finite(result.lower_bound), "wall_s": result.wall_s,
        "evaluations": int(result.evaluations),
        "trace": [[float(s), int(e), float(lat)] for s, e, lat in result.trace],
        **result.problem.to_record(inst, result.solution),
        "notes": _jsonable(result.notes), "error": None, "version": package_version(),
        "code": code_version(), "machine": machine()}


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _jsonable(value: Any) -> Any:
    """`value` as plain JSON, its structure kept: NumPy scalars become Python numbers, an
    infinite or NaN float becomes null (JSON has none; a bound of -inf is "no bound"), keys
    and anything else JSON cannot hold become strings."""
    if isinstance(value, dict):
        return {str(key): _jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(item) for item in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # a NumPy scalar
        with contextlib.suppress(TypeError, ValueError):
            value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def run(task: Task) -> dict[str, Any]:
    """Load the instance, arm the limits, solve; a record whatever happens."""
    began = time.perf_counter()
    try:
        from memplace.bench.plan import import_solver_modules
        from memplace.instances import load
        from memplace.model.core.problem import problem
        from memplace.solvers import load_kernels, solve
        import_solver_modules(task.solver_modules)
        prob = problem(task.problem)
        inst = load(task.source)
        sha = prob.fingerprint(inst)
        if sha != task.sha256:
            return failure_record(task, "error", f"instance {task.source} changed since the "
                                  f"plan was read (sha256 {sha[:12]}, expected {task.sha256[:12]})",
                                  time.perf_counter() - began)
        load_kernels([task.solver], task.problem)
        _arm_limits(task)
        try:
            result = solve(inst, task.solver, time_limit=task.time_limit, seed=task.seed,
                           problem=prob, **task.params)
        finally:  # a run in the caller's own process must not leave its alarm armed
            signal.setitimer(signal.ITIMER_REAL, 0)
        return result_record(task, inst, result)
    except MemoryError:
        return failure_record(task, "oom", f"out of memory (limit {task.memory_limit_mb} MB)"
                              if task.memory_limit_mb else "out of memory",
                              time.perf_counter() - began)
    except Exception as exc:  # recorded: the batch carries on
        last = traceback.extract_tb(exc.__traceback__)[-1:]
        where = f" at {last[0].filename}:{last[0].lineno}" if last else ""
        return failure_record(task, "error", f"{type(exc).__name__}: {exc}{where}",
                              time.perf_counter() - began)


def _arm_limits(task: Task) -> None:
    if task.memory_limit_mb:
        import resource
        limit = int(task.memory_limit_mb) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.setitimer(signal.ITIMER_REAL, task.time_limit + task.kill_margin)


def main() -> None:
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # solver chatter goes to stderr; stdout carries the record only
    sys.stdout = sys.stderr
    task = Task.from_dict(json.loads(sys.stdin.read()))
    record = run(task)
    out.write(json.dumps(record, allow_nan=False) + "\n")
    out.flush()
    sys.stderr.flush()
    os._exit(0)  # skip waiting for a solver thread that ignored its limit


if __name__ == "__main__":
    main()
