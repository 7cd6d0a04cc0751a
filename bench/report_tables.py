"""Result tables as Markdown, LaTeX (booktabs) and CSV, from `Results`.

Two tables: `instances` (one row per instance and solver) and `solvers` (one row
per solver, over all instances). CSV cells hold full-precision raw values
(seconds, ratios, fractions); Markdown and LaTeX hold rounded, human units.
"""
from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from memplace.bench.results import GAP_SHIFT, TARGETS, TIME_SHIFT, Results, shifted_geomean
from memplace.model.core.errors import MemplaceError
from memplace.model.core.files import write_atomically

Format = Callable[[Any], str]
TEXT_KEYS = ("instance", "solver")  # left-aligned columns; the rest are numbers


def _num(fmt: str, scale: float = 1.0, unit: str = "") -> Format:
    def render(value: Any) -> str:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return "–"
        return f"{value * scale:{fmt}}{unit}"
    return render


US = _num(".3f", 1e6)
RATIO = _num(".3f", unit="x")
PERCENT = _num(".3f", 100.0)
SECONDS = _num(".3g")
COUNT = _num(".3g")


@dataclass
class Column:
    title: str  # for Markdown and LaTeX
    key: str  # CSV header
    render: Format


@dataclass
class Table:
    name: str
    caption: str
    columns: list[Column]
    rows: list[list[Any]]  # raw values

    def markdown(self) -> str:
        lines = [f"**{self.caption}**", "",
                 "| " + " | ".join(c.title for c in self.columns) + " |",
                 "|" + "|".join("---" if c.key in TEXT_KEYS else "---:" for c in self.columns) + "|"]
        for row in self.rows:
            lines.append("| " + " | ".join(c.render(v) for c, v in zip(self.columns, row)) + " |")
        return "\n".join(lines) + "\n"

    def latex(self) -> str:
        spec = "".join("l" if c.key in TEXT_KEYS else "r" for c in self.columns)
        lines = [r"\begin{table}", r"\centering", rf"\caption{{{_tex(self.caption)}}}",
                 rf"\label{{tab:{self.name}}}", rf"\begin{{tabular}}{{{spec}}}", r"\toprule",
                 " & ".join(_tex(c.title) for c in self.columns) + r" \\", r"\midrule"]
        for row in self.rows:
            lines.append(" & ".join(_tex(c.render(v)) for c, v in zip(self.columns, row)) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
        return "\n".join(lines) + "\n"

    def csv(self) -> str:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow([c.key for c in self.columns])
        for row in self.rows:
            writer.writerow(["" if v is None or (isinstance(v, float) and math.isnan(v)) else
                             csv_float(v) if isinstance(v, float) else v for v in row])
        return buffer.getvalue()

    def write(self, folder: Path) -> list[Path]:
        paths = []
        for suffix, text in (("md", self.markdown()), ("tex", self.latex()), ("csv", self.csv())):
            path = folder / f"table_{self.name}.{suffix}"
            write_atomically(path, text, "table")
            paths.append(path)
        return paths


def csv_float(value: float) -> str:
    """`value` to 12 significant digits: a mean's last bits depend on the numpy release
    summing it (numpy 2.4.6 and an earlier one differed in the 17th digit), a table's do
    not."""
    return f"{value:.12g}"


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
        "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
        "–": "--", "µ": r"$\mu$"}


def _tex(text: str) -> str:
    return "".join(_TEX.get(ch, ch) for ch in text)


def _pct(eps: float) -> str:
    return f"{eps * 100:g}%"


RESIDENCY_NOTES = ("windows", "prefetches", "evictions", "waits")  # of the best run, as noted


def instance_table(results: Results) -> Table:
    baseline = results.problem.baselines["baseline"]
    columns = [Column("instance", "instance", str), Column("solver", "solver", str),
               Column("runs", "runs", str), Column("failed", "failed", str),
               Column("best (µs)", "best_latency_s", US), Column("mean (µs)", "mean_latency_s", US),
               Column(f"vs {baseline}", "speedup_vs_baseline", RATIO),
               Column("vs slowest", "speedup_vs_slowest", RATIO),
               Column("gap to bound (%)", "gap_to_bound", PERCENT)]
    if results.is_residency:
        columns.append(Column("vs static optimum", "speedup_vs_static_optimum", RATIO))
        columns += [Column(key, f"best_run_{key}", COUNT) for key in RESIDENCY_NOTES]
    for eps in TARGETS:
        columns.append(Column(f"s to {_pct(eps)}", f"seconds_to_{eps:g}", SECONDS))
        columns.append(Column(f"evals to {_pct(eps)}", f"evaluations_to_{eps:g}", COUNT))
    rows = []
    for c in results.cells():
        row = [c.instance, c.solver, c.runs, c.failed, c.best, c.mean, c.speedup_baseline,
               c.speedup_slowest, c.gap_bound]
        if results.is_residency:
            row.append(c.speedup_static_optimum)
            row += [c.notes.get(key) for key in RESIDENCY_NOTES]
        for eps in TARGETS:
            row += [c.time_to[eps], c.evals_to[eps]]
        rows.append(row)
    caption = ("Per instance and solver: best and mean latency over seeds; speedup of the best "
               f"over the baseline ({baseline}) and over all tensors in the slowest "
               "level; gap of the best to the best proven lower bound of any run; ")
    if results.is_residency:
        caption += ("speedup over the static optimum of the same instance (milp on the static "
                    "problem, 60 s); windows, prefetches, evictions and ops that waited in the "
                    "best run (as its solver noted them, – : not noted); ")
    caption += ("median seconds and evaluations "
                f"to come within {', '.join(_pct(e) for e in TARGETS)} of the best known latency "
                "(– : not reached by half the runs, or nothing to compare with).")
    return Table("instances", caption + provenance_note(results), columns, rows)


def provenance_note(results: Results) -> str:
    """What the caption adds: instances where all solvers tie, and which code made the runs."""
    note = ""
    tied = results.tied_instances()
    if tied:
        note += (f" All solvers tie (the {results.problem.baselines['slowest']} reference aside) "
                 f"on {', '.join(tied)}: nothing there tells them apart.")
    versions = results.code_versions()
    note += " Runs made by " + "; ".join(f"{label} ({n} runs)" for label, n in versions.items()) + "."
    return note


def solver_table(results: Results) -> Table:
    columns = [Column("solver", "solver", str), Column("instances", "instances", str),
               Column("runs", "runs", str), Column("failed", "failed", str),
               Column("wins", "wins", str),
               Column("sgm gap to best (%)", "sgm_gap_to_best", PERCENT),
               Column(f"sgm s to {_pct(TARGETS[0])}", f"sgm_seconds_to_{TARGETS[0]:g}", SECONDS)]
    rows = [[s.solver, s.instances, s.runs, s.failed, s.wins, s.sgm_gap, s.sgm_time]
            for s in results.summaries()]
    caption = (f"Per solver over all instances: shifted geometric mean of the gap of each run to "
               f"the best known latency (shift {GAP_SHIFT:g} = {GAP_SHIFT * 100:g}%; runs without "
               f"a result left out and counted as failed) and of the seconds to come within "
               f"{_pct(TARGETS[0])} of it (shift {TIME_SHIFT:g} s; a run that never does counts "
               "as its time limit); wins: instances where the solver's best equals the best known.")
    return Table("solvers", caption, columns, rows)


def headline_table(results: Results) -> Table:
    """Residency: per instance, the best solution of any solver against msa, the static
    optimum and all-slowest, and its gap to the best proven lower bound; a last row with
    the geometric means of the speedups."""
    base = results.problem.baselines
    columns = [Column("instance", "instance", str), Column("ops", "ops", str),
               Column(f"{base['baseline']} (µs)", "baseline_latency_s", US),
               Column("best (µs)", "best_latency_s", US), Column("best solver", "solver", str),
               Column(f"vs {base['baseline']}", "speedup_vs_baseline", RATIO),
               Column("vs static optimum", "speedup_vs_static_optimum", RATIO),
               Column(f"vs {base['slowest']}", "speedup_vs_slowest", RATIO),
               Column("lower bound (µs)", "lower_bound_s", US),
               Column("gap to bound (%)", "gap_to_bound", PERCENT)]
    rows = []
    for instance in results.instances:
        record = results.best_record(instance)
        inst = results.instance(instance)
        if record is None or inst is None:
            continue
        c = results.cell(instance, record["solver"])  # the best solver's cell: its best is the best
        rows.append([instance, inst.n_ops, results.baseline(instance, "baseline"), c.best, c.solver,
                     c.speedup_baseline, c.speedup_static_optimum, c.speedup_slowest,
                     results.best_bound(instance), c.gap_bound])
    if rows:
        ratios = [[r[j] for r in rows if r[j] is not None] for j in (5, 6, 7)]
        mean = [shifted_geomean(v, 0.0) if v else None for v in ratios]
        rows.append(["geometric mean", "", None, None, "", *mean, None, None])
    caption = (f"Residency headline: per instance, the best solution of any solver and seed "
               f"against the baseline {base['baseline']} (XLA's memory-space assignment), the static optimum "
               f"of the same instance (milp on the static problem, 60 s) and all tensors in the "
               f"slowest level ({base['slowest']}); the best proven lower bound of any run and "
               f"the best solution's gap to it.")
    return Table("headline", caption + provenance_note(results), columns, rows)


def against_table(results: Results, reference: Results) -> Table:
    """Per instance the two runs files share, the best run of each and the change: a rerun
    of a plan (or of the solvers holding its bests) held against the committed runs.
    Runs at a different time limit are not comparable: the caption names the limits."""
    if results.problem.name != reference.problem.name:
        raise MemplaceError(f"--against: the reference runs are {reference.problem.name} runs, "
                            f"these are {results.problem.name} runs")
    columns = [Column("instance", "instance", str),
               Column("best here (µs)", "best_latency_s", US), Column("by", "solver", str),
               Column("reference (µs)", "reference_latency_s", US),
               Column("reference by", "reference_solver", str),
               Column("change (%)", "change", PERCENT)]
    rows = []
    for instance in results.instances:
        here, there = results.best_record(instance), reference.best_record(instance)
        if here is None or there is None:
            continue
        rows.append([instance, here["latency"], _by(here), there["latency"], _by(there),
                     here["latency"] / there["latency"] - 1.0])
    worse = sum(1 for row in rows if row[5] > 0.0)
    limits = sorted({r["time_limit"] for r in results.records + reference.records},
                    key=lambda t: (t is None, t))
    caption = (f"Best run per instance against the reference runs file: {len(rows)} instances "
               f"in both, {worse} worse here; a negative change is better here. Time limits "
               f"in the two files: {', '.join('none' if t is None else f'{t:g} s' for t in limits)}.")
    return Table("against", caption, columns, rows)


def _by(record: dict[str, Any]) -> str:
    return f"{record['solver']} seed {record['seed']}"


def write_tables(results: Results, folder: Path) -> list[Path]:
    paths = instance_table(results).write(folder) + solver_table(results).write(folder)
    if results.is_residency:
        paths += headline_table(results).write(folder)
    return paths
