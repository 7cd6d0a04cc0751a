"""How the residency problem's steps grow with the program: `memplace perf --scaling
--problem residency`.

One row per size, on synth-N@nnpi (the synthetic generator), each in a fresh process so
that its peak memory (the process's maximum resident set) is its own:

- load: reading and checking the instance file;
- msa: `solve(..., "msa")` (XLA's memory-space assignment; validation included), with
  its windows and whether it fell back to the static compiler placement;
- sa: `solve(..., "sa")` within `seconds`, one anneal from msa's solution (validated by
  solve()): its moves over the seconds spent annealing (msa's start left out), and its
  latency against msa's;
- bound: `solve(..., "bound")` within `seconds` (msa start, model build, HiGHS, decoding),
  its wall time, the proven bound and the gap of the best valid latency found by any of
  the three (msa, sa, bound) to it;
- peak memory of the whole row.

Kernels are compiled (or loaded from Numba's cache) by a warm-up on a small instance in
each process before anything is timed.
"""
from __future__ import annotations

import json
import multiprocessing
import resource
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

WARM_OPS = 100  # the warm-up instance's size


@dataclass
class ResidencyScaleRow:
    n_ops: int
    n_tensors: int
    load_s: float
    msa_s: float
    msa_windows: int
    msa_fallback: bool
    msa_latency: float
    sa_seconds: float
    sa_evaluations: int
    sa_latency: float
    bound_s: float
    bound: float
    bound_latency: float
    best_latency: float
    best_by: str
    peak_mb: float

    @property
    def sa_per_s(self) -> float:
        return self.sa_evaluations / self.sa_seconds if self.sa_seconds > 0 else 0.0

    @property
    def gap(self) -> float:
        return self.best_latency / self.bound - 1.0


def _warm() -> None:
    from memplace.instances import load
    from memplace.solvers import solve
    small = load(f"synth-{WARM_OPS}@nnpi")
    for solver in ("msa", "sa", "bound"):
        solve(small, solver, time_limit=3.0, problem="residency")


def measure_row(n_ops: int, folder: str, seconds: float) -> dict:
    """One row (run in its own process by `rows`)."""
    from memplace.bench.perf import _synthetic_file
    from memplace.instances import load
    from memplace.solvers import solve

    path = _synthetic_file(n_ops, Path(folder))
    _warm()
    began = time.perf_counter()
    inst = load(path)
    load_s = time.perf_counter() - began
    began = time.perf_counter()
    msa = solve(inst, "msa", time_limit=None, problem="residency")
    msa_s = time.perf_counter() - began
    # one anneal from msa's solution (no static start): its moves over its own seconds
    sa = solve(inst, "sa", time_limit=seconds, problem="residency", restarts=1, static_moves=0)
    sa_s, tried, sa_latency = sa.notes.get("anneal_s", 0.0), sa.notes.get("moves", 0), sa.latency
    began = time.perf_counter()
    bound = solve(inst, "bound", time_limit=seconds, problem="residency")
    bound_s = time.perf_counter() - began
    found_by = {"msa": msa.latency, "sa": sa_latency, "bound": bound.latency}
    best_by = min(found_by, key=found_by.get)
    lb = bound.lower_bound
    if lb > min(found_by.values()) * (1 + 1e-9):
        raise RuntimeError(f"bound {lb} above a valid latency on {inst.name}")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    row = ResidencyScaleRow(inst.n_ops, inst.n_tensors, load_s, msa_s,
                            int(msa.notes.get("windows", 0)), bool(msa.notes.get("fallback")),
                            msa.latency, sa_s, int(tried), sa_latency, bound_s, float(lb),
                            bound.latency, found_by[best_by], best_by, peak_mb)
    return asdict(row)


def rows(sizes: list[int], folder: Path, seconds: float, progress=None) -> list[ResidencyScaleRow]:
    """A row per size, each measured in a fresh process."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    ctx = multiprocessing.get_context("spawn")
    for n in sizes:
        if progress is not None:
            progress(n)
        with ctx.Pool(1, maxtasksperchild=1) as pool:
            out.append(ResidencyScaleRow(**pool.apply(measure_row, (n, str(folder), seconds))))
    return out


def table(rows_: list[ResidencyScaleRow], seconds: float) -> str:
    """The rows as a Markdown table."""
    head = ("| ops | tensors | load s | msa s | msa windows | sa evaluations/s | sa / msa | "
            "bound s | gap to bound | best by | peak MB |")
    lines = [head, "|" + "---:|" * 9 + "---|---:|"]
    for r in rows_:
        windows = f"{r.msa_windows}" + (" (fell back)" if r.msa_fallback else "")
        lines.append(f"| {r.n_ops:,} | {r.n_tensors:,} | {r.load_s:.3g} | {r.msa_s:.3g} | {windows} | "
                     f"{r.sa_per_s:,.0f} | {r.msa_latency / r.sa_latency:.4f}x | {r.bound_s:.3g} | "
                     f"{r.gap:.2%} | {r.best_by} | {r.peak_mb:,.0f} |")
    return "\n".join(lines) + (
        f"\n\nsynth-N@nnpi; sa: `sa` with --time-limit {seconds:g}, one anneal from msa's solution "
        f"(`sa / msa`: msa's latency over sa's); bound: `bound` with --time-limit {seconds:g} "
        "(wall seconds, all phases); gap: best valid latency of msa, sa and bound over the "
        "proven bound; peak: maximum resident set of the row's process (kernels loaded).\n")


def write(rows_: list[ResidencyScaleRow], seconds: float, out: Path) -> list[Path]:
    """`table.md` and `rows.json` into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    md, js = out / "table.md", out / "rows.json"
    md.write_text(table(rows_, seconds))
    js.write_text(json.dumps({"seconds": seconds, "python": sys.version.split()[0],
                              "rows": [asdict(r) for r in rows_]}, indent=1) + "\n")
    return [md, js]
