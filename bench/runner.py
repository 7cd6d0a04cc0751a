"""Running a plan: every task in a fresh worker process under hard limits, on a local
pool or a Dask cluster, each record appended to the runs file as soon as it is in.

A run is `python -m memplace.bench.worker` in a process (and session) of its own,
the same on every executor: a fresh interpreter per run (what a multiprocessing
'spawn' context would start, without re-importing the caller's __main__), so a
crash, a hang or a memory blow-up ends that run only. The worker gets
NUMBA_NUM_THREADS=1 (one thread per worker; the pool supplies the parallelism)
and the caller's NUMBA_CACHE_DIR, and the harness compiles every kernel before
fanning out, so workers load compiled code from one warm cache instead of
compiling (and racing to write) it at once. Limits, in order of precedence:

1. the solver's own time limit, enforced in-process by `solvers.solve`;
2. the worker's interval timer at time_limit + kill_margin (see `worker`);
3. the parent's wait: time_limit + kill_margin + STARTUP_S, then the process
   group is killed (SIGKILL).

A worker that dies by a signal is "killed" (by SIGALRM or the parent's wait:
"timeout"); a MemoryError is "oom"; an exception is "error" with its text.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from memplace.bench.plan import Plan, Task
from memplace.bench.store import RunStore, is_ok, latest_by_key, record_key
from memplace.bench.worker import failure_record
from memplace.model.errors import MemplaceError

STARTUP_S = 60.0  # interpreter start, imports and instance load before the timer is armed
STDERR_TAIL = 2000  # characters of a failed worker's stderr kept in the record
_running: set[subprocess.Popen] = set()  # this process's live workers (killed on interrupt)
_running_lock = threading.Lock()


def worker_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    return env


def run_isolated(task: dict[str, Any]) -> dict[str, Any]:
    """Run one task (`Task.to_dict()`) in a fresh worker process; always returns a record."""
    began = time.perf_counter()
    wait = task["time_limit"] + task["kill_margin"] + STARTUP_S
    with tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "memplace.bench.worker"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                env=worker_env(), start_new_session=True)
        with _running_lock:
            _running.add(proc)
        try:
            out, _ = proc.communicate(json.dumps(task).encode("utf-8"), timeout=wait)
            timed_out = False
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            out, _ = proc.communicate()
            timed_out = True
        finally:
            with _running_lock:
                _running.discard(proc)
        wall = time.perf_counter() - began
        stderr.seek(0)
        tail = stderr.read().decode("utf-8", "replace")[-STDERR_TAIL:].strip()
    code = proc.returncode
    if timed_out or code == -signal.SIGALRM:
        return failure_record(task, "timeout", f"no result {wall:.1f} s after start (limit "
                              f"{task['time_limit']:g} s + margin {task['kill_margin']:g} s); "
                              "worker killed", wall)
    if code is not None and code < 0:
        name = signal.Signals(-code).name
        hint = " (out of memory?)" if -code == signal.SIGKILL else ""
        return failure_record(task, "killed", f"worker killed by {name}{hint}"
                              + (f"; stderr: {tail}" if tail else ""), wall)
    try:
        return json.loads(out.decode("utf-8").strip().splitlines()[-1])
    except (IndexError, ValueError, UnicodeDecodeError):
        return failure_record(task, "error", f"worker exited with status {code} and no record"
                              + (f"; stderr: {tail}" if tail else ""), wall)


def kill_running() -> None:
    """Kill every worker this process started that is still running (after an interrupt;
    workers live in sessions of their own, so a Ctrl-C does not reach them)."""
    with _running_lock:
        procs = list(_running)
    for proc in procs:
        _kill_group(proc)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


# ---------------------------------------------------------------------- executors
Runner = Callable[[dict[str, Any]], dict[str, Any]]


def local_results(tasks: list[Task], jobs: int, run: Runner = run_isolated) -> Iterator[dict[str, Any]]:
    """Records as they finish, `jobs` workers at a time on this machine."""
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="memplace-run") as pool:
        futures = [pool.submit(run, task.to_dict()) for task in tasks]
        try:
            for future in as_completed(futures):
                yield future.result()
        finally:
            for future in futures:
                future.cancel()
            kill_running()  # nothing left running when the caller stops early


def dask_results(tasks: list[Task], address: str, jobs: int,
                 run: Runner = run_isolated) -> Iterator[dict[str, Any]]:
    """Records as they finish on a Dask cluster (`local`: a LocalCluster of `jobs`
    single-threaded worker processes on this machine). Each task still runs in a
    fresh worker process of its own, started by the Dask worker that picks it up."""
    try:
        from distributed import Client, LocalCluster, as_completed as dask_completed
    except ImportError:
        raise MemplaceError("--dask needs the optional 'distributed' package: "
                            "pip install 'memplace[dask]'") from None
    cluster = None
    if address == "local":
        cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    else:
        client = Client(address)
    try:
        futures = client.map(run, [task.to_dict() for task in tasks], pure=False)
        for future in dask_completed(futures):
            yield future.result()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


# ---------------------------------------------------------------------- a batch
@dataclass
class Batch:
    """What a bench call will do: the tasks to run and those it skips."""

    todo: list[Task]
    done: int  # recorded with a result
    failed_skipped: int  # recorded as failed, not retried


def pending(plan: Plan, store: RunStore, resume: bool, retry_failed: bool) -> Batch:
    """The plan's tasks less those already recorded (with --resume)."""
    records = store.records()  # raises on a corrupted line, before anything runs
    if records and not (resume or retry_failed):
        raise MemplaceError(f"{store.path} already holds {len(records)} runs: pass --resume to "
                            "continue that batch, or --out to start a new one elsewhere")
    latest = latest_by_key(records)
    todo, done, failed = [], 0, 0
    for task in plan.tasks:
        record = latest.get(task.key)
        if record is None:
            todo.append(task)
        elif is_ok(record):
            done += 1
        elif retry_failed:
            todo.append(task)
        else:
            failed += 1
    return Batch(todo, done, failed)


def warm_up(plan: Plan) -> None:
    """Compile every kernel the plan's built-in solvers use, once, in this process, so
    the workers find them in the disk cache."""
    from memplace.bench.plan import builtin_solvers
    from memplace.model import warmup
    from memplace.solvers.warm import warm_solvers
    warmup()
    builtin = set(builtin_solvers())
    names = [name for name in plan.solvers if name in builtin]
    if names:  # (an empty list would mean every registered solver)
        warm_solvers(names)


def run_batch(plan: Plan, batch: Batch, store: RunStore, jobs: int, dask: str | None = None,
              on_record: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """Run the batch's tasks, appending each record to the store as it comes in."""
    if not batch.todo:
        return []
    store.folder.mkdir(parents=True, exist_ok=True)
    (store.folder / "plan.toml").write_text(plan.text, encoding="utf-8")
    warm_up(plan)
    expected = {task.key for task in batch.todo}
    results = (dask_results(batch.todo, dask, jobs) if dask
               else local_results(batch.todo, jobs))
    records = []
    for record in results:
        if record_key(record) not in expected:  # a worker that misread its task
            raise RuntimeError(f"worker returned a record for an unknown run: {record_key(record)}")
        store.append(record)
        records.append(record)
        if on_record is not None:
            on_record(record)
    return records
