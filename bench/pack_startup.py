"""How fast `memplace pack` starts, measured as a user meets it: whole processes.

Each figure is the wall time of a fresh `memplace` process (interpreter start,
imports, reading the CSV, packing, checking, writing), and its peak resident
memory (from `os.wait4`'s rusage). "Cold" runs give the process a fresh, empty
bytecode cache (`PYTHONPYCACHEPREFIX`) and Numba cache (`NUMBA_CACHE_DIR`), as
after a fresh install that was never run; "warm" runs reuse what earlier runs left.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Startup:
    """One measured command: its wall times over the runs and the largest peak memory."""

    label: str
    argv: tuple[str, ...]
    seconds: tuple[float, ...]
    peak_mb: float
    exit_codes: tuple[int, ...]


def _memplace() -> list[str]:
    """The `memplace` console script beside this interpreter, else `python -m memplace.cli`."""
    script = Path(sys.executable).with_name("memplace")
    return [str(script)] if script.exists() else [sys.executable, "-m", "memplace.cli"]


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_maxrss / 1024.0, proc.returncode  # ru_maxrss is in KiB on Linux


def measure(label: str, args: list[str], runs: int, cold: bool = False) -> Startup:
    """Run `memplace ARGS` `runs` times; with `cold`, each run gets empty caches."""
    seconds, peaks, codes = [], [], []
    for _ in range(runs):
        env = dict(os.environ)
        scratch = tempfile.mkdtemp(prefix="memplace-cold-") if cold else None
        if scratch is not None:
            env["PYTHONPYCACHEPREFIX"] = os.path.join(scratch, "pycache")
            env["NUMBA_CACHE_DIR"] = os.path.join(scratch, "numba")
        try:
            wall, peak, code = _run(_memplace() + args, env)
        finally:
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)
        seconds.append(wall)
        peaks.append(peak)
        codes.append(code)
    return Startup(label, tuple(args), tuple(seconds), max(peaks), tuple(codes))


def startup_figures(instances: dict[str, tuple[Path, int]], runs: int = 5) -> list[Startup]:
    """The figures of issue 24's start-up goals: warm `memplace --help`, warm `memplace pack`
    on each named instance (a warm-up run first), and a cold first `memplace pack` on the
    first instance. `instances` maps a name to (MiniMalloc CSV, capacity)."""
    measure("warm-up", ["--help"], 1)  # fills the bytecode cache
    out = [measure("memplace --help (warm)", ["--help"], runs)]
    first = next(iter(instances))
    path, capacity = instances[first]
    out.append(measure(f"memplace pack {first} (cold: empty caches)",
                       ["pack", str(path), "--capacity", str(capacity)], max(1, runs // 2),
                       cold=True))
    for name, (path, capacity) in instances.items():
        args = ["pack", str(path), "--capacity", str(capacity)]
        measure("warm-up", args, 1)
        out.append(measure(f"memplace pack {name} (warm)", args, runs))
    return out
