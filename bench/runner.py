"""Running a plan: every task in a fresh worker process under hard limits (see
`isolation`), on a local pool or a Dask cluster, each record appended to the runs
file by this process as soon as it is in.
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from memplace.bench.cluster import connect, local_cluster
from memplace.bench.isolation import kill_running, run_forked, run_in_subprocess
from memplace.bench.plan import Plan
from memplace.bench.task import Task
from memplace.bench.store import RunStore, is_ok, latest_by_key, record_key
from memplace.bench.worker import failure_record
from memplace.model.core.errors import MemplaceError
from memplace.model.core.files import write_atomically


# ---------------------------------------------------------------------- executors
Runner = Callable[[dict[str, Any]], dict[str, Any]]


def local_results(tasks: list[Task], jobs: int, run: Runner = run_forked) -> Iterator[dict[str, Any]]:
    """Records as they finish, `jobs` workers at a time on this machine."""
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="memplace-run") as pool:
        futures = [pool.submit(run, task) for task in tasks]
        try:
            for future in as_completed(futures):
                yield future.result()
        finally:
            for future in futures:
                future.cancel()
            kill_running()  # nothing left running when the caller stops early


def dask_results(tasks: list[Task], address: str, jobs: int,
                 run: Runner = run_in_subprocess) -> Iterator[dict[str, Any]]:
    """Records as they finish on a Dask cluster (`local`: a LocalCluster of `jobs`
    single-threaded worker processes on this machine). Each task still runs in a
    fresh worker process of its own, started by the Dask worker that picks it up."""
    cluster = local_cluster(jobs, "--dask") if address == "local" else None
    try:
        client = connect(address if cluster is None else cluster, "--dask")
    except MemplaceError:
        if cluster is not None:  # started, yet its client did not connect: nothing left running
            cluster.close()
        raise
    from distributed import as_completed as dask_completed
    try:
        futures = client.map(run, tasks, pure=False)
        task_of = {future.key: task for future, task in zip(futures, tasks)}
        for future in dask_completed(futures):
            try:
                yield future.result()
            except Exception as exc:  # the Dask worker itself died (KilledWorker, ...)
                yield failure_record(task_of[future.key], "killed",
                                     f"Dask worker lost the run: {type(exc).__name__}: {exc}", 0.0)
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


def run_batch(plan: Plan, batch: Batch, store: RunStore, jobs: int, dask: str | None = None,
              on_record: Callable[[dict[str, Any]], None] | None = None,
              on_start: Callable[[float], None] | None = None) -> list[dict[str, Any]]:
    """Run the batch's tasks, appending each record to the store as it comes in;
    `on_start(seconds)` once the kernels are loaded (in that many seconds), before the runs."""
    if not batch.todo:
        return []
    store.folder.mkdir(parents=True, exist_ok=True)
    write_atomically(store.folder / "plan.toml", plan.text, "plan")
    from memplace.model.core import numba_cache
    from memplace.solvers import load_kernels
    from memplace.solvers.warm import warm_parts
    began = time.perf_counter()
    empty = not numba_cache.has_kernels()
    if empty:  # a first run compiles every kernel, not only the plan's, so later commands
        # find them all cached; in this process (a spawned compile worker was seen to crash)
        warm_parts(jobs=1)
    seconds = load_kernels(plan.solvers, plan.problem)  # workers find them cached
    seconds = time.perf_counter() - began
    if empty:  # `memplace bench` says how long the last compile took
        numba_cache.record_compile_seconds(seconds)
    if on_start is not None:
        on_start(seconds)
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
