"""Test-only solvers that drive the benchmark harness: one that searches a little,
and misbehaving ones (hang, crash, die, blow up memory, fail on demand).

Workers import this file by path (plan key `solver_modules`, or the environment
variable MEMPLACE_EXTRA_SOLVER_MODULES), the tests by name; the harness sees that
both are the same file and registers the solvers once.
"""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import numpy as np

from memplace.model import rectify
from memplace.solvers import register

HERE = Path(__file__).resolve()


@register("test-steps", "test only: `steps` random rectified placements, best kept, after "
          "`pause` seconds", params={"steps": 5, "pause": 0.0})
def solve_steps(ctx, steps: int, pause: float) -> None:
    import numba
    ctx.notes["numba_threads"] = numba.config.NUMBA_NUM_THREADS  # the harness sets 1
    time.sleep(pause)
    inst = ctx.instance
    ctx.count(1)
    ctx.offer(inst.slowest_placement())
    for _ in range(steps):
        place = ctx.rng.integers(0, inst.n_levels, inst.n_tensors)
        fixed = rectify(inst, place)
        ctx.count(1)
        ctx.offer(fixed.placement, offsets=fixed.offsets)


@register("test-hang", "test only: holds the GIL in a C loop, ignoring its limit",
          params={"n": 10**14})
def solve_hang(ctx, n: int) -> None:
    sum(range(n))  # no bytecode runs inside: solve()'s own limit cannot interrupt it


@register("test-sleep", "test only: sleeps past its limit without an incumbent",
          params={"seconds": 1000.0})
def solve_sleep(ctx, seconds: float) -> None:
    time.sleep(seconds)


@register("test-crash", "test only: raises", params={"message": "boom"})
def solve_crash(ctx, message: str) -> None:
    raise RuntimeError(message)


@register("test-die", "test only: the process dies by SIGSEGV", params={"die": True})
def solve_die(ctx, die: bool) -> None:
    os.kill(os.getpid(), signal.SIGSEGV)


@register("test-oom", "test only: allocates `gigabytes` of memory", params={"gigabytes": 8.0})
def solve_oom(ctx, gigabytes: float) -> None:
    block = np.ones(int(gigabytes * 2**30), np.uint8)
    ctx.offer(ctx.instance.slowest_placement())
    del block


@register("test-flaky", "test only: fails while the file `marker` exists, else offers the slowest placement",
          params={"marker": ""})
def solve_flaky(ctx, marker: str) -> None:
    if marker and Path(marker).exists():
        raise RuntimeError(f"marker {marker} exists")
    ctx.count(1)
    ctx.offer(ctx.instance.slowest_placement())
