"""One run in a process of its own, under hard limits; whatever happens, a record.

Two ways to start that process, running the same `worker.run`:

- `run_forked` (the local pool): forked from a multiprocessing 'forkserver' that
  has imported memplace and loaded the model's compiled kernels once
  (`bench.preload`), so a run starts in milliseconds instead of the second an
  interpreter with NumPy and Numba takes;
- `run_in_subprocess` (Dask workers, which are daemonic processes that may not
  start multiprocessing children): `python -m memplace.bench.worker`, task on
  stdin, record on stdout.

Both give the worker NUMBA_NUM_THREADS=1 (the pool supplies the parallelism) and
the caller's NUMBA_CACHE_DIR (so every process reads one cache, which the harness
fills before fanning out). Limits, in order of precedence:

1. the solver's own time limit, enforced in-process by `solvers.solve`;
2. the worker's interval timer at time_limit + kill_margin (see `worker`);
3. the parent's wait: time_limit + kill_margin + STARTUP_S, then the worker's
   process group is killed (SIGKILL).

A worker that dies by a signal is "killed" (by SIGALRM or the parent's wait:
"timeout"); a MemoryError is "oom"; an exception is "error" with its text.
Workers run in sessions of their own (a Ctrl-C on the terminal does not reach
them); `kill_running` ends those still running.
"""
from __future__ import annotations

import contextlib
import json
import multiprocessing
import multiprocessing.forkserver
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

from memplace.bench.task import Task
from memplace.bench.worker import failure_record

STARTUP_S = 60.0  # interpreter start, imports and instance load before the timer is armed
STDERR_TAIL = 2000  # characters of a failed worker's output kept in the record
WORKER_ENV = {"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
              "MKL_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}

_running: dict[int, Any] = {}  # pid -> live worker process started here
_running_lock = threading.Lock()
_forkserver_lock = threading.Lock()


def run_in_subprocess(task: Task) -> dict[str, Any]:
    """Run one task (a `Task`) in a fresh interpreter; always returns a record."""
    began = time.perf_counter()
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen([sys.executable, "-m", "memplace.bench.worker"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                env={**os.environ, **WORKER_ENV}, start_new_session=True)
        _track(proc.pid, proc)
        try:
            out, _ = proc.communicate(json.dumps(task.to_dict()).encode("utf-8"), timeout=_wait(task))
            timed_out = False
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
            out, _ = proc.communicate()
            timed_out = True
        finally:
            _untrack(proc.pid)
        log.seek(0)
        tail = log.read().decode("utf-8", "replace")[-STDERR_TAIL:].strip()
    lines = out.decode("utf-8", "replace").strip().splitlines()
    return classify(task, proc.returncode, timed_out, lines[-1] if lines else "", tail,
                    time.perf_counter() - began)


def run_forked(task: Task) -> dict[str, Any]:
    """Run one task in a process forked from the warm forkserver; always returns a record."""
    began = time.perf_counter()
    ctx = forkserver_context()
    receive, send = ctx.Pipe(duplex=False)
    fd, log_path = tempfile.mkstemp(prefix="memplace-run-", suffix=".log")
    os.close(fd)
    try:
        proc = ctx.Process(target=_forked_child, args=(task, send, log_path),
                           name=f"memplace-{task.solver}")
        proc.start()
        send.close()
        _track(proc.pid, proc)
        try:
            data, timed_out = "", False
            if receive.poll(_wait(task)):  # a record, or the end of the pipe if it died
                with contextlib.suppress(EOFError):
                    data = receive.recv_bytes().decode("utf-8")
            else:
                _kill_group(proc.pid)
                timed_out = True
            proc.join(5.0)
            if proc.exitcode is None:  # sent its record but did not exit
                _kill_group(proc.pid)
                proc.join()
        finally:
            _untrack(proc.pid)
            receive.close()
        with open(log_path, encoding="utf-8", errors="replace") as fh:
            tail = fh.read()[-STDERR_TAIL:].strip()
    finally:
        os.unlink(log_path)
    code = 0 if data else proc.exitcode  # with the record in, how it ended does not matter
    return classify(task, code, timed_out, data, tail, time.perf_counter() - began)


def _forked_child(task: Task, send, log_path: str) -> None:
    from memplace.bench.worker import run
    os.setsid()
    log = os.open(log_path, os.O_WRONLY | os.O_TRUNC)
    os.dup2(log, 1)  # solver chatter to the log, not to the harness's terminal
    os.dup2(log, 2)
    record = run(task)
    signal.setitimer(signal.ITIMER_REAL, 0)
    send.send_bytes(json.dumps(record, allow_nan=False).encode("utf-8"))
    send.close()
    os._exit(0)  # skip waiting for a solver thread that ignored its limit


def forkserver_context():
    """The 'forkserver' context, its server started (once per process) with the
    worker environment and memplace preloaded."""
    ctx = multiprocessing.get_context("forkserver")
    with _forkserver_lock:
        ctx.set_forkserver_preload(["memplace.bench.preload"])
        saved = {key: os.environ.get(key) for key in WORKER_ENV}
        os.environ.update(WORKER_ENV)  # the server (and every run) inherits these
        try:
            multiprocessing.forkserver.ensure_running()
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
    return ctx


def classify(task: Task, code: int | None, timed_out: bool, output: str, tail: str,
             wall: float) -> dict[str, Any]:
    """The record of a finished worker: its own, or a failure record saying why not."""
    if timed_out or code == -signal.SIGALRM:
        return failure_record(task, "timeout", f"no result {wall:.1f} s after start (limit "
                              f"{task.time_limit:g} s + margin {task.kill_margin:g} s); "
                              "worker killed", wall)
    if code is not None and code < 0:
        name = signal.Signals(-code).name
        hint = " (out of memory?)" if -code == signal.SIGKILL else ""
        return failure_record(task, "killed", f"worker killed by {name}{hint}"
                              + (f"; output: {tail}" if tail else ""), wall)
    try:
        return json.loads(output)
    except ValueError:
        return failure_record(task, "error", f"worker exited with status {code} and no record"
                              + (f"; output: {tail}" if tail else ""), wall)


def _wait(task: Task) -> float:
    return task.time_limit + task.kill_margin + STARTUP_S


def _track(pid: int, proc: Any) -> None:
    with _running_lock:
        _running[pid] = proc


def _untrack(pid: int) -> None:
    with _running_lock:
        _running.pop(pid, None)


def kill_running() -> None:
    """Kill every worker this process started that is still running."""
    with _running_lock:
        pids = list(_running)
    for pid in pids:
        _kill_group(pid)


def _kill_group(pid: int) -> None:
    for kill in (os.killpg, os.kill):  # its own session, unless it has not got that far
        try:
            kill(pid, signal.SIGKILL)
            return
        except (ProcessLookupError, PermissionError):
            continue
