"""How fast `memplace pack` starts, measured as a user meets it: whole processes.

Each figure is a fresh `memplace` process, run through the console script a user
types (interpreter start, imports, reading the CSV, packing, checking, writing):
its wall time, its CPU time (user + system, from `os.wait4`'s rusage) and its peak
resident memory. On a machine shared with other jobs the wall time grows with the
load average while the CPU time barely does, so both are printed beside the load.

"Warm" runs share one bytecode cache (`PYTHONPYCACHEPREFIX`), filled by a run
before the timed ones, as on any second run of an installed program;
`PYTHONDONTWRITEBYTECODE`, if set, is dropped for them, or every run would compile
memplace's sources again. "Cold" runs each get an empty bytecode cache for
everything they import (numpy and the standard library included) and an empty Numba
cache: harsher than a fresh install, where pip compiles the bytecode.

The goals are issue 24's: warm `memplace --help` under 0.2 s, warm `memplace pack`
on F under 0.25 s, a cold first `memplace pack` on A under 5 s, and on each of A-F a
warm `memplace pack` faster than MiniMalloc's published time for it.
"""
from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from memplace.bench.pack_table import CHALLENGING, MINIMALLOC_SECONDS
from memplace.model.core.files import atomic_write

CAPACITY = 1048576  # the challenging set's capacity (1 MiB)
HELP_GOAL_S = 0.2
PACK_F_GOAL_S = 0.25
COLD_GOAL_S = 5.0


@dataclass(frozen=True)
class Startup:
    """One measured command: wall and CPU seconds of each run, the largest peak memory,
    and the goal it is held to (None: none)."""

    label: str
    argv: tuple[str, ...]
    seconds: tuple[float, ...]
    cpu_seconds: tuple[float, ...]
    peak_mb: float
    exit_codes: tuple[int, ...]
    goal_s: float | None = None


def _memplace() -> list[str]:
    """The `memplace` console script beside this interpreter, else `python -m memplace.cli`."""
    script = Path(sys.executable).with_name("memplace")
    return [str(script)] if script.exists() else [sys.executable, "-m", "memplace.cli"]


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, float, float, int]:
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    return wall, cpu, usage.ru_maxrss / 1024.0, proc.returncode  # ru_maxrss: KiB on Linux


def _environment(pycache: str, numba_cache: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = pycache
    if numba_cache is not None:
        env["NUMBA_CACHE_DIR"] = numba_cache
    return env


def measure(label: str, args: list[str], runs: int, cold: bool = False,
            warm_cache: str | None = None, goal_s: float | None = None) -> Startup:
    """Run `memplace ARGS` `runs` times. With `cold`, each run gets empty caches; else
    the runs share the bytecode cache `warm_cache` (a fresh one if None)."""
    walls, cpus, peaks, codes = [], [], [], []
    shared = None if cold or warm_cache is not None else tempfile.mkdtemp(prefix="memplace-warm-")
    try:
        for _ in range(runs):
            scratch = tempfile.mkdtemp(prefix="memplace-cold-") if cold else None
            env = (_environment(os.path.join(scratch, "pycache"), os.path.join(scratch, "numba"))
                   if scratch is not None else _environment(warm_cache or shared))
            try:
                wall, cpu, peak, code = _run(_memplace() + args, env)
            finally:
                if scratch is not None:
                    shutil.rmtree(scratch, ignore_errors=True)
            walls.append(wall)
            cpus.append(cpu)
            peaks.append(peak)
            codes.append(code)
    finally:
        if shared is not None:
            shutil.rmtree(shared, ignore_errors=True)
    return Startup(label, tuple(args), tuple(walls), tuple(cpus), max(peaks), tuple(codes),
                   goal_s)


def startup_figures(runs: int = 5, names: tuple[str, ...] = tuple(MINIMALLOC_SECONDS)
                    ) -> Iterator[Startup]:
    """Issue 24's start-up figures, one at a time: warm `memplace --help`, a cold first
    `memplace pack` on A, and a warm `memplace pack` on each of `names` (MiniMalloc's
    challenging instances at 1 MiB), each held to its goal."""
    cache = tempfile.mkdtemp(prefix="memplace-warm-")
    try:
        measure("warm-up", ["--help"], 1, warm_cache=cache)
        yield measure("memplace --help (warm)", ["--help"], runs, warm_cache=cache,
                      goal_s=HELP_GOAL_S)
        first = names[0]
        yield measure(f"memplace pack {first} (cold: empty caches)", _pack_args(first),
                      max(1, runs // 2), cold=True, goal_s=COLD_GOAL_S)
        for name in names:
            measure("warm-up", _pack_args(name), 1, warm_cache=cache)
            goal = MINIMALLOC_SECONDS.get(name)
            if name == "F":
                goal = min(goal, PACK_F_GOAL_S) if goal is not None else PACK_F_GOAL_S
            yield measure(f"memplace pack {name} (warm)", _pack_args(name), runs,
                          warm_cache=cache, goal_s=goal)
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def _pack_args(name: str) -> list[str]:
    return ["pack", str(CHALLENGING / f"{name}.{CAPACITY}.csv"), "--capacity", str(CAPACITY)]


def load_average() -> str:
    """The 1-, 5- and 15-minute load averages and the number of cores, as `uptime` says."""
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "load average unknown"
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} cores"


HEADER = (f"{'command':<38} {'runs':>4} {'wall min':>8} {'median':>7} {'cpu min':>8} "
          f"{'median':>7} {'peak MB':>8} {'goal s':>7}  met")


def text_line(fig: Startup) -> str:
    """One row of the table: seconds as min and median of the runs; `met` compares the
    fastest wall time with the goal (the CPU time in brackets when only it is below)."""
    wall, cpu = sorted(fig.seconds), sorted(fig.cpu_seconds)
    goal = f"{fig.goal_s:>7.3f}" if fig.goal_s is not None else f"{'-':>7}"
    if fig.goal_s is None:
        met = "-"
    elif wall[0] < fig.goal_s:
        met = "yes"
    else:
        met = "no (cpu yes)" if cpu[0] < fig.goal_s else "no"
    bad = "" if all(c == 0 for c in fig.exit_codes) else f"  exit {fig.exit_codes}"
    return (f"{fig.label:<38} {len(wall):>4} {wall[0]:>8.3f} {statistics.median(wall):>7.3f} "
            f"{cpu[0]:>8.3f} {statistics.median(cpu):>7.3f} {fig.peak_mb:>8.1f} {goal}  "
            f"{met}{bad}")


def write_results(folder: Path, lines: list[str], command: str) -> Path:
    """`startup.md` in `folder`: the printed table, with the command, the date and the
    interpreter it ran on."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "startup.md"
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    text = [f"Written by `{command}` on {when}, Python {sys.version.split()[0]}, "
            f"{os.cpu_count()} cores (seconds are wall and CPU time of whole processes; "
            "`met` compares the fastest wall time with the goal).", "", "```", *lines, "```"]
    with atomic_write(path, "results file") as out:
        out.write("\n".join(text) + "\n")
    return path
