"""The residency figures of issue 10: `msa` against the static baselines on every instance.

One row per instance: latency of all tensors in the slowest level, of the static `compiler`
placement, of the static optimum (`milp` on the static problem, `STATIC_OPTIMUM_LIMIT_S`,
cached in `static_optimum.json` beside the table) and of `msa`; what msa did (windows,
prefetches, evictions, ops that waited, whether it fell back to the compiler placement)
and its time; and the model's lower bound on the residency latency
(`memplace.model.residency.lower_bound`: the best of the trivial bounds). Every msa solution is validated
(section 10) and compared with the compiler placement; `check` lists the rows that break
either rule, so the command that prints the table is also the full check of both.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from memplace.bench.report_tables import COUNT, RATIO, SECONDS, US, Column, Table
from memplace.bench.results import STATIC_OPTIMUM_LIMIT_S, cached_static_optimum, read_static_optima
from memplace.model import Instance, latency


@dataclass
class Row:
    instance: str
    bound: float
    slowest: float
    compiler: float
    static_optimum: float
    static_status: str
    msa: float
    windows: int
    prefetches: int
    evictions: int
    waits: int
    fallback: bool
    msa_s: float
    valid: bool
    errors: list[str]

    def problems(self) -> list[str]:
        """Why the row breaks a rule msa must keep ([] = none)."""
        out = [f"{self.instance}: invalid: {e}" for e in self.errors[:3]]
        if self.msa > self.compiler * (1 + 1e-12):
            out.append(f"{self.instance}: msa {self.msa!r} s slower than compiler {self.compiler!r} s")
        return out


def measure(instance: Instance, static_optimum: dict[str, Any], **params: Any) -> Row:
    """Run msa on one instance and compare it with the static baselines."""
    from memplace.model.residency import lower_bound, validate
    from memplace.solvers import solve
    began = time.perf_counter()
    result = solve(instance, "msa", time_limit=None, problem="residency", **params)
    seconds = time.perf_counter() - began
    sol, stats = result.solution, result.notes
    check = validate(instance, sol)
    return Row(instance.name, lower_bound(instance),
               latency(instance, instance.slowest_placement()),
               solve(instance, "compiler", time_limit=None).latency,
               static_optimum["latency"], static_optimum["status"], result.latency, stats["windows"],
               stats["prefetches"], stats["evictions"], stats["waits"], stats["fallback"], seconds,
               check.ok, check.errors)


def residency_rows(instances: list[Instance], folder: Path | None,
                   progress: Callable[[Row], None] | None = None, **params: Any) -> list[Row]:
    cache = read_static_optima(folder)
    rows = []
    for inst in instances:
        row = measure(inst, cached_static_optimum(inst.name, inst, cache, folder), **params)
        rows.append(row)
        if progress is not None:
            progress(row)
    return rows


def residency_table(rows: list[Row]) -> Table:
    columns = [Column("instance", "instance", str),
               Column("lower bound (µs)", "lower_bound_s", US),
               Column("all-slowest (µs)", "slowest_latency_s", US),
               Column("compiler (µs)", "compiler_latency_s", US),
               Column("static optimum (µs)", "static_optimum_latency_s", US),
               Column("opt. status", "static_optimum_status", str),
               Column("msa (µs)", "msa_latency_s", US),
               Column("msa vs compiler", "msa_speedup_vs_compiler", RATIO),
               Column("msa vs static optimum", "msa_speedup_vs_static_optimum", RATIO),
               Column("windows", "windows", COUNT), Column("prefetches", "prefetches", COUNT),
               Column("evictions", "evictions", COUNT), Column("waits", "waits", COUNT),
               Column("fallback", "fallback", str), Column("msa s", "msa_seconds", SECONDS)]
    body = [[r.instance, r.bound, r.slowest, r.compiler, r.static_optimum, r.static_status,
             r.msa, r.compiler / r.msa, r.static_optimum / r.msa, r.windows, r.prefetches,
             r.evictions, r.waits, "yes" if r.fallback else "no", r.msa_s] for r in rows]
    caption = ("msa (XLA's memory-space assignment, residency problem) per instance: the "
               "model's lower bound (the best of the trivial bounds), the latency of all "
               "tensors in the slowest level, of the static compiler placement, of the static "
               f"optimum (milp, {STATIC_OPTIMUM_LIMIT_S:g} s; status 'feasible' = not proven) and "
               "of msa; msa's speedups; its windows, prefetches, evictions and ops that waited "
               "for a copy; 'fallback': the compiler placement was faster than XLA's assignment "
               "and was returned; msa's wall time (one run, static baselines included).")
    return Table("residency_msa", caption, columns, body)
