"""What a runs file says: runs grouped by instance and solver, compared with the best
known latency, the best proven bound and the two reference placements.

Definitions every table and plot shares (per instance):

- best known = the lowest latency of any run; best bound = the highest proven
  lower bound of any run (None if no run proved one);
- the references are the problem's baselines (`Problem.baselines`: `slowest` = the
  all-slowest placement; `baseline` = the `compiler` heuristic for static placement,
  `msa` for residency): the best latency of that solver's runs in the file, or, if the file
  has none, of the solver run here;
- speedup of a solver = reference latency / the solver's best latency;
- gap to bound = best latency / best bound - 1; gap to best = latency / best known - 1;
- time (evaluations) to within eps of the best known, for one run: the first trace
  point with latency <= best known x (1 + eps); never reached (or no result) is
  infinite. Per solver the median over its runs is reported (infinite: not reached
  by half of them).

A runs file holds one problem's runs (records say which: `problem`, static when
absent). For the residency problem every instance also has its *static optimum*
(docs/spec.md section 12): the latency `milp` proves for the static problem on the same
instance, solved here with a `STATIC_OPTIMUM_LIMIT_S` limit (its status says whether
it was proven) and cached in `static_optimum.json` beside the report, keyed by the
instance's fingerprint; speedup vs static optimum = that latency / the solver's best.

Only the last record of each run key counts (a retried failure is replaced).
"""
from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from memplace.bench.instance_source import load_recorded
from memplace.bench.store import is_ok, latest_by_key
from memplace.model.core.errors import MemplaceError
from memplace.model.core.files import write_atomically
from memplace.model.core.problem import problem
from memplace.model.core.search import DEFAULT_PROBLEM

TARGETS = (1e-2, 1e-3)  # within 1% and 0.1% of the best known
GAP_SHIFT = 1e-4  # shifted geometric mean of gaps: shift 0.01%
TIME_SHIFT = 1.0  # ... of times: shift 1 s
STATIC_OPTIMUM_SOLVER = "milp"
STATIC_OPTIMUM_LIMIT_S = 60.0
STATIC_OPTIMUM_FILE = "static_optimum.json"


def shifted_geomean(values: list[float], shift: float) -> float:
    """exp(mean(log(v + shift))) - shift; nan for no values."""
    if not values:
        return math.nan
    return float(np.exp(np.mean(np.log(np.asarray(values, np.float64) + shift))) - shift)


def reach(record: dict[str, Any], target: float) -> tuple[float, float]:
    """(seconds, evaluations) at which a run's trace first gets to <= target; inf if never."""
    if is_ok(record):
        for seconds, evaluations, latency in record["trace"]:
            if latency <= target:
                return float(seconds), float(evaluations)
    return math.inf, math.inf


def relative_gap(latency: float, known: float) -> float:
    """latency / known - 1, at least 0; infinite above a best known latency of 0 (an
    instance with no compute and no traffic)."""
    if latency <= known:
        return 0.0
    return latency / known - 1.0 if known > 0 else math.inf


def median_or_none(values: list[float]) -> float | None:
    if not values:
        return None
    value = float(np.median(np.asarray(values, np.float64)))
    return None if math.isinf(value) or math.isnan(value) else value


@dataclass
class Cell:
    """One solver on one instance, over its seeds."""

    instance: str
    solver: str
    runs: int
    failed: int
    best: float | None
    mean: float | None
    speedup_baseline: float | None
    speedup_slowest: float | None
    gap_bound: float | None
    time_to: dict[float, float | None]  # eps -> median seconds
    evals_to: dict[float, float | None]  # eps -> median evaluations
    speedup_static_optimum: float | None = None  # residency only
    notes: dict[str, Any] = field(default_factory=dict)  # of the best run


@dataclass
class SolverSummary:
    solver: str
    runs: int
    failed: int
    wins: int  # instances where its best equals the best known (rel 1e-9)
    instances: int
    sgm_gap: float  # shifted geomean of gap to best over runs with a result
    sgm_time: float  # shifted geomean of time to within 1%, unreached = time limit


def code_label(code: Any) -> str:
    """One line for a record's `code` field (see `memplace.bench.provenance`)."""
    if not isinstance(code, dict):
        return "unrecorded"
    if code.get("commit"):
        return f"commit {code['commit']}" + (" (dirty)" if code.get("dirty") else "")
    version = code.get("package")
    return f"memplace {version}" if version and version != "unknown" else "memplace, version unknown"


class Results:
    """The latest record of every run in a runs file, and comparisons over them."""

    def __init__(self, records: list[dict[str, Any]], cache_folder: str | Path | None = None):
        self.records = list(latest_by_key(records).values())
        # sorted, so tables and plots do not depend on the order runs finished in
        self.instances = sorted({r["instance"] for r in self.records})
        self.solvers = sorted({r["solver"] for r in self.records})
        self._instance_cache: dict[str, Any] = {}
        self._baseline: dict[tuple[str, str], float | None] = {}
        names = sorted({r.get("problem", DEFAULT_PROBLEM) for r in self.records})
        if len(names) > 1:
            raise MemplaceError(f"a runs file holds one problem's runs; this one has {names}")
        self.problem = problem(names[0] if names else DEFAULT_PROBLEM)
        self.cache_folder = None if cache_folder is None else Path(cache_folder)
        self._static_optimum: dict[str, dict[str, Any]] | None = None

    @property
    def is_residency(self) -> bool:
        return self.problem.name == "residency"

    # ------------------------------------------------------------------ selections
    def runs(self, instance: str | None = None, solver: str | None = None) -> list[dict[str, Any]]:
        return [r for r in self.records if (instance is None or r["instance"] == instance)
                and (solver is None or r["solver"] == solver)]

    def ok_runs(self, instance: str | None = None, solver: str | None = None) -> list[dict[str, Any]]:
        return [r for r in self.runs(instance, solver) if is_ok(r)]

    def best_known(self, instance: str) -> float | None:
        return min((r["latency"] for r in self.ok_runs(instance)), default=None)

    def best_record(self, instance: str) -> dict[str, Any] | None:
        runs = self.ok_runs(instance)
        return min(runs, key=lambda r: (r["latency"], r["solver"], r["seed"])) if runs else None

    def best_bound(self, instance: str) -> float | None:
        bounds = [r["lower_bound"] for r in self.ok_runs(instance) if r["lower_bound"] is not None]
        return max(bounds) if bounds else None

    # ------------------------------------------------------------------ references
    def instance(self, name: str):
        """The Instance of a name as recorded (None if it cannot be loaded any more)."""
        if name not in self._instance_cache:
            try:
                self._instance_cache[name] = load_recorded(self.runs(name)[0])
            except MemplaceError:
                self._instance_cache[name] = None
        return self._instance_cache[name]

    def baseline(self, instance: str, role: str) -> float | None:
        """The latency of the problem's baseline solver for `role` on an instance: its
        best run in the file, else solved here (None if the instance is gone)."""
        key = (instance, role)
        if key not in self._baseline:
            solver = self.problem.baselines[role]
            lats = [r["latency"] for r in self.ok_runs(instance, solver)]
            if lats:
                self._baseline[key] = min(lats)
            elif self.instance(instance) is None:
                self._baseline[key] = None
            else:
                from memplace.solvers import solve
                self._baseline[key] = solve(self.instance(instance), solver, time_limit=None,
                                            problem=self.problem).latency
        return self._baseline[key]

    # ------------------------------------------------------------------ what the file says
    def tied_instances(self, rtol: float = 1e-9) -> list[str]:
        """Instances on which every solver with a result reaches the same best latency
        (within `rtol`), the slowest-placement reference aside: nothing there tells the
        solvers apart. An instance with fewer than two such solvers is not listed."""
        slowest = self.problem.baselines.get("slowest")
        tied = []
        for instance in self.instances:
            bests = {}
            for r in self.ok_runs(instance):
                if r["solver"] != slowest:
                    bests[r["solver"]] = min(bests.get(r["solver"], math.inf), r["latency"])
            if len(bests) >= 2 and max(bests.values()) <= min(bests.values()) * (1 + rtol):
                tied.append(instance)
        return tied

    def code_versions(self) -> dict[str, int]:
        """Which code produced the runs: 'commit <sha>[ (dirty)]' (or 'memplace <version>'
        when neither a checkout nor the install knew the commit, 'unrecorded' for records
        older than this field) -> runs."""
        return dict(sorted(Counter(code_label(r.get("code")) for r in self.records).items()))

    def static_optimum(self, instance: str) -> dict[str, Any] | None:
        """{latency, status, wall_s} of `milp` on the static problem of the instance
        (cached on disk when the results have a folder); None if the instance is gone."""
        if self._static_optimum is None:
            self._static_optimum = read_static_optima(self.cache_folder)
        inst = self.instance(instance)
        if inst is None:
            return None
        return cached_static_optimum(instance, inst, self._static_optimum, self.cache_folder)

    # ------------------------------------------------------------------ comparisons
    def cell(self, instance: str, solver: str) -> Cell:
        runs = self.runs(instance, solver)
        ok = [r for r in runs if is_ok(r)]
        lats = [r["latency"] for r in ok]
        best = min(lats) if lats else None
        known = self.best_known(instance)
        bound = self.best_bound(instance)
        baseline, slowest = self.baseline(instance, "baseline"), self.baseline(instance, "slowest")
        time_to, evals_to = {}, {}
        for eps in TARGETS:
            reached = [reach(r, known * (1 + eps)) for r in runs] if known is not None else []
            time_to[eps] = median_or_none([s for s, _ in reached])
            evals_to[eps] = median_or_none([e for _, e in reached])
        static = self.static_optimum(instance) if self.is_residency and best else None
        notes = min(ok, key=lambda r: (r["latency"], r["seed"]))["notes"] if ok else {}
        return Cell(
            instance, solver, len(runs), len(runs) - len(ok), best,
            float(np.mean(lats)) if lats else None,
            baseline / best if best and baseline else None,
            slowest / best if best and slowest else None,
            max(0.0, best / bound - 1.0) if best and bound else None,
            time_to, evals_to,
            static["latency"] / best if static else None, notes or {})

    def cells(self) -> list[Cell]:
        return [self.cell(i, s) for i in self.instances for s in self.solvers if self.runs(i, s)]

    def summary(self, solver: str) -> SolverSummary:
        runs = self.runs(solver=solver)
        gaps, times, wins = [], [], 0
        instances = list(dict.fromkeys(r["instance"] for r in runs))
        for instance in instances:
            known = self.best_known(instance)
            mine = [r for r in runs if r["instance"] == instance]
            ok = [r for r in mine if is_ok(r)]
            if ok and known is not None:
                wins += math.isclose(min(r["latency"] for r in ok), known, rel_tol=1e-9)
            gaps += [relative_gap(r["latency"], known) for r in ok]
            for r in mine:
                seconds = reach(r, known * (1 + TARGETS[0]))[0] if known is not None else math.inf
                times.append(min(seconds, r["time_limit"]))
        failed = sum(not is_ok(r) for r in runs)
        return SolverSummary(solver, len(runs), failed, wins, len(instances),
                             shifted_geomean(gaps, GAP_SHIFT), shifted_geomean(times, TIME_SHIFT))

    def summaries(self) -> list[SolverSummary]:
        return [self.summary(s) for s in self.solvers]


def cached_static_optimum(name: str, inst, cache: dict[str, dict[str, Any]],
                          folder: Path | None) -> dict[str, Any]:
    """The static problem's optimum of instance `name` as `milp` finds it within the limit:
    from `cache`, or solved (and the cache written to `folder`) when it is missing or the
    instance's fingerprint changed."""
    sha = inst.fingerprint()  # the static problem's fingerprint
    entry = cache.get(name)
    if entry is None or entry.get("sha256") != sha:
        from memplace.solvers import solve
        result = solve(inst, STATIC_OPTIMUM_SOLVER, time_limit=STATIC_OPTIMUM_LIMIT_S,
                       problem="static")
        entry = {"latency": result.latency, "status": result.status, "wall_s": result.wall_s,
                 "solver": STATIC_OPTIMUM_SOLVER, "time_limit": STATIC_OPTIMUM_LIMIT_S,
                 "sha256": sha}
        cache[name] = entry
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
            write_atomically(folder / STATIC_OPTIMUM_FILE,
                             json.dumps(cache, indent=1, sort_keys=True) + "\n", "static optima")
    return entry


def read_static_optima(folder: Path | None) -> dict[str, dict[str, Any]]:
    """The static optimum cache in `folder` ({} when there is none or it is unreadable)."""
    path = None if folder is None else folder / STATIC_OPTIMUM_FILE
    if path is None or not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # a cache: recomputed when unreadable
    return data if isinstance(data, dict) else {}
