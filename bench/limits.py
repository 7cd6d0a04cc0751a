"""Time limits that hold: every registered solver of both problems, and `memplace gap`, run
at a short time limit on a few programs, their wall time against the limit
(`memplace perf --limits`).

A run holds its limit when the `solve()` call returned, and the solver's thread ended,
within `MARGIN_S` of `time_limit`. `solve()` gives up on a thread that ignores its limit
(a hard stop) and returns the incumbent, but the thread runs on: it still holds a core,
and in `memplace gap` it slowed the stages after it. So the sweep waits for the thread
and reports both times. Each solver runs on an instance loaded once (its load time in its
own column); kernels are compiled or loaded before the first run and never timed.

`memplace gap` is run as the user runs it: a command in a fresh process, its wall time
from start to exit (Python's start-up, the instance's load and the kernels' load from the
disk cache included) against its `--time-limit`.
"""
from __future__ import annotations

import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from typing import Callable

MARGIN_S = 5.0  # the tolerance: no run exceeds its time limit by more than this
THREAD_WAIT_S = 600.0  # how long the sweep waits for a solver's thread after solve() returned


@dataclass
class LimitRow:
    """One run: a solver (or the `gap` command) on one program at one time limit."""

    problem: str
    solver: str
    instance: str
    n_ops: int
    limit: float
    returned_s: float  # until solve() returned (the command's exit for `gap`)
    ended_s: float  # until the solver's thread ended (>= returned_s)
    hard_stop: bool  # solve() gave up on the thread
    error: str = ""

    @property
    def over_s(self) -> float:
        """Seconds past the limit, of whichever came last: the return or the thread's end."""
        return max(self.returned_s, self.ended_s) - self.limit

    @property
    def holds(self) -> bool:
        return not self.error and self.over_s <= MARGIN_S


def timed_solve(inst, solver: str, problem: str, limit: float, seed: int = 0, **params) -> LimitRow:
    """Run one solver through `solve()` (with `params`) and time its return and its
    thread's end (the threads it started, waited for up to `THREAD_WAIT_S`)."""
    from memplace.solvers import solve
    inst.forget_derived()  # what an earlier run derived (the closed-form bounds) is not given
    before = set(threading.enumerate())
    began = time.perf_counter()
    error, hard = "", False
    try:
        result = solve(inst, solver, time_limit=limit, seed=seed, problem=problem, **params)
        hard = bool(result.notes.get("hard_stop"))
    except Exception as exc:  # reported in the row; the sweep goes on
        error = f"{type(exc).__name__}: {exc}"[:200]
    returned = time.perf_counter() - began
    for thread in set(threading.enumerate()) - before:
        thread.join(THREAD_WAIT_S)
    ended = time.perf_counter() - began
    return LimitRow(problem, solver, inst.name, int(inst.n_ops), limit, returned, ended, hard, error)


def timed_gap(name: str, limit: float, problem: str = "residency") -> LimitRow:
    """`memplace gap NAME --time-limit LIMIT` in a fresh process: its wall time to exit."""
    began = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "memplace.cli", "gap", name, "--time-limit", f"{limit:g}"],
                          capture_output=True, text=True)
    wall = time.perf_counter() - began
    error = "" if proc.returncode == 0 else (proc.stderr.strip().splitlines() or ["exit %d" % proc.returncode])[-1]
    n_ops = 0
    for line in proc.stdout.splitlines():
        if " ops, " in line and ": " in line:
            n_ops = int(line.split(": ", 1)[1].split(" ops", 1)[0])
            break
    return LimitRow(problem, "gap (command)", name, n_ops, limit, wall, wall, False, error[:200])


def sweep(names: list[str], limit: float, problems: tuple[str, ...] = ("static", "residency"),
          solvers: list[str] | None = None, gap_limit: float | None = None,
          progress: Callable[[LimitRow], None] | None = None) -> list[LimitRow]:
    """Every built-in solver of `problems` (or those named in `solvers`) on each program of
    `names` at `limit` seconds, then `memplace gap` on each program at `gap_limit` seconds
    (None: not run); a row per run."""
    from memplace.instances import load
    from memplace.solvers import builtin_solvers, load_kernels
    chosen = {p: [s for s in builtin_solvers(p) if solvers is None or s in solvers] for p in problems}
    for problem, names_ in chosen.items():
        load_kernels(names_, problem)
    out: list[LimitRow] = []

    def add(row: LimitRow) -> None:
        out.append(row)
        if progress is not None:
            progress(row)

    for name in names:
        for problem, names_ in chosen.items():
            inst = load(name, problem=problem)
            for solver in names_:
                add(timed_solve(inst, solver, problem, limit))
        if gap_limit is not None and "residency" in problems:
            add(timed_gap(name, gap_limit))
    return out


def record_rows(records: list[dict]) -> list[LimitRow]:
    """The runs of a runs file (a plan run by `memplace bench`) as rows: each run's recorded
    `wall_s` (its `solve()` call until the result was validated) against its time limit; a
    run that failed ("timeout", "killed", "error") does not hold, whatever its time."""
    rows = []
    for r in records:
        error = "" if r["status"] in ("optimal", "feasible") else f"{r['status']}: {r.get('error') or ''}"
        wall = float(r["wall_s"])
        rows.append(LimitRow(r.get("problem") or "static", r["solver"], r["instance"], 0,
                             float(r["time_limit"]), wall, wall,
                             bool((r.get("notes") or {}).get("hard_stop")), error[:200]))
    return rows


def table(rows: list[LimitRow]) -> str:
    """The rows as a Markdown table, runs past the margin first."""
    head = ("| problem | solver | program | ops | limit s | returned s | thread ended s | over s | "
            "hard stop | holds |\n|---|---|---|---:|---:|---:|---:|---:|---|---|\n")
    ordered = sorted(rows, key=lambda r: (r.holds, -r.over_s))
    body = "".join(
        f"| {r.problem} | {r.solver} | {r.instance} | {f'{r.n_ops:,}' if r.n_ops else '-'} | {r.limit:g} | {r.returned_s:.2f} | "
        f"{r.ended_s:.2f} | {r.over_s:+.2f} | {'yes' if r.hard_stop else ''} | "
        f"{'yes' if r.holds else 'NO ' + r.error}".rstrip() + " |\n" for r in ordered)
    held = sum(r.holds for r in rows)
    return head + body + (f"\n{held} of {len(rows)} runs within {MARGIN_S:g} s of their limit "
                          f"(the later of solve()'s return and its thread's end).\n")


def as_dicts(rows: list[LimitRow]) -> list[dict]:
    return [asdict(r) | {"over_s": r.over_s, "holds": r.holds} for r in rows]
