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

from memplace.bench.report_tables import COUNT, RATIO, SECONDS, US, Column, Table, _text
from memplace.bench.results import (STATIC_OPTIMUM_FILE, STATIC_OPTIMUM_LIMIT_S, _read_cache,
                                    _write_cache, solve_static_optimum)
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

    @property
    def speedup_compiler(self) -> float:
        return self.compiler / self.msa

    @property
    def speedup_static_optimum(self) -> float:
        return self.static_optimum / self.msa

    def problems(self) -> list[str]:
        """Why the row breaks a rule msa must keep ([] = none)."""
        out = [f"{self.instance}: invalid: {e}" for e in self.errors[:3]]
        if self.msa > self.compiler * (1 + 1e-12):
            out.append(f"{self.instance}: msa {self.msa!r} s slower than compiler {self.compiler!r} s")
        return out


def measure(instance: Instance, static_optimum: dict[str, Any], **params: Any) -> Row:
    """Run msa on one instance and compare it with the static baselines."""
    from memplace.model.residency import lower_bound, validate
    from memplace.solvers.residency.msa import _static, msa_solution
    began = time.perf_counter()
    sol, stats = msa_solution(instance, **params)
    seconds = time.perf_counter() - began
    check = validate(instance, sol)
    return Row(instance.name, lower_bound(instance),
               latency(instance, instance.slowest_placement()),
               latency(instance, _static(instance, "compiler")[0]),
               static_optimum["latency"], static_optimum["status"], sol.latency, stats.windows,
               stats.prefetches, stats.evictions, stats.waits, stats.fallback, seconds,
               check.ok, check.errors)


def static_optimum(instance: Instance, cache: dict[str, dict[str, Any]], folder: Path | None
                   ) -> dict[str, Any]:
    """The cached static optimum of an instance (recomputed when its fingerprint changed)."""
    sha = instance.fingerprint()
    entry = cache.get(instance.name)
    if entry is None or entry.get("sha256") != sha:
        entry = solve_static_optimum(instance) | {"sha256": sha}
        cache[instance.name] = entry
        _write_cache(folder, cache)
    return entry


def residency_rows(instances: list[Instance], folder: Path | None,
                   progress: Callable[[Row], None] | None = None, **params: Any) -> list[Row]:
    cache = _read_cache(folder)
    rows = []
    for inst in instances:
        row = measure(inst, static_optimum(inst, cache, folder), **params)
        rows.append(row)
        if progress is not None:
            progress(row)
    return rows


def residency_table(rows: list[Row]) -> Table:
    columns = [Column("instance", "instance", _text),
               Column("lower bound (µs)", "lower_bound_s", US),
               Column("all-slowest (µs)", "slowest_latency_s", US),
               Column("compiler (µs)", "compiler_latency_s", US),
               Column("static optimum (µs)", "static_optimum_latency_s", US),
               Column("opt. status", "static_optimum_status", _text),
               Column("msa (µs)", "msa_latency_s", US),
               Column("msa vs compiler", "msa_speedup_vs_compiler", RATIO),
               Column("msa vs static optimum", "msa_speedup_vs_static_optimum", RATIO),
               Column("windows", "windows", COUNT), Column("prefetches", "prefetches", COUNT),
               Column("evictions", "evictions", COUNT), Column("waits", "waits", COUNT),
               Column("fallback", "fallback", _text), Column("msa s", "msa_seconds", SECONDS)]
    body = [[r.instance, r.bound, r.slowest, r.compiler, r.static_optimum, r.static_status,
             r.msa, r.speedup_compiler, r.speedup_static_optimum, r.windows, r.prefetches,
             r.evictions, r.waits, "yes" if r.fallback else "no", r.msa_s] for r in rows]
    caption = ("msa (XLA's memory-space assignment, residency problem) per instance: the "
               "model's lower bound (the best of the trivial bounds), the latency of all "
               "tensors in the slowest level, of the static compiler placement, of the static "
               f"optimum (milp, {STATIC_OPTIMUM_LIMIT_S:g} s; status 'feasible' = not proven) and "
               "of msa; msa's speedups; its windows, prefetches, evictions and ops that waited "
               "for a copy; 'fallback': the compiler placement was faster than XLA's assignment "
               "and was returned; msa's wall time (one run, static baselines included).")
    return Table("residency_msa", caption, columns, body)


def write_residency_table(rows: list[Row], folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    return residency_table(rows).write(folder)


__all__ = ["Row", "measure", "residency_rows", "residency_table",
           "write_residency_table", "STATIC_OPTIMUM_FILE"]
