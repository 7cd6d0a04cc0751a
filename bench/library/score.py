"""`score`: submitted solution files checked against a library, and the score table.

A submission is a folder of solution files: `memplace-solution/1` (static) and `/2`
(residency) JSON files, matched to entries by the instance name they carry, and packing
solutions as MiniMalloc CSV with offsets named `ENTRY-NAME.csv`. Each is validated
against the library's instance (nothing it claims is trusted) and scored: speedup over
the entry's default (default objective / objective), gap to the best known and to the
best bound (objective / reference - 1, in %). Per problem, the summary is the geometric
mean speedup and the mean gaps over the entries of the chosen split, a missing or invalid
solution counting as the default (speedup 1).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from memplace.bench.library.check import load_entry_instance, solution_objective
from memplace.bench.library.tables import percent, two_decimals
from memplace.instances.library import Entry, Library
from memplace.model.core.errors import MemplaceError


@dataclass
class Score:
    entry: Entry
    file: str | None
    objective: float | None  # None: missing or invalid
    error: str = ""

    @property
    def speedup(self) -> float:
        return self.entry.default["objective"] / self.objective if self.objective else 1.0

    def gap(self, reference: float | None) -> float | None:
        if self.objective is None or not reference:
            return None
        return self.objective / reference - 1.0


def match_entry(lib: Library, path: Path, entries: dict[str, Entry]) -> Entry | None:
    if path.suffix == ".csv":
        return entries.get(f"packing/{path.stem}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MemplaceError(f"{path}: not a readable solution file ({exc})") from None
    problem = {"memplace-solution/1": "static", "memplace-solution/2": "residency"}.get(
        data.get("format") if isinstance(data, dict) else None)
    if problem is None:
        raise MemplaceError(f"{path}: format {data.get('format') if isinstance(data, dict) else None!r} "
                            "is not memplace-solution/1 or /2")
    key = f"{problem}/{data.get('instance')}"
    if key not in entries:
        raise MemplaceError(f"{path}: {lib.name} has no {problem} entry for instance "
                            f"{data.get('instance')!r}")
    return entries[key]


def score(lib: Library, folder: str | Path, split: str = "all",
          problems: Iterable[str] | None = None) -> list[Score]:
    """One score per entry of the split (and problems): the submitted file's, or missing."""
    folder = Path(folder)
    if not folder.is_dir():
        raise MemplaceError(f"{folder}: not a folder of solution files")
    chosen = {e.id: e for e in lib.split(split) if problems is None or e.problem in set(problems)}
    files: dict[str, Path] = {}
    for path in sorted(folder.iterdir()):
        if path.suffix not in (".json", ".csv") or not path.is_file():
            continue
        entry = match_entry(lib, path, {e.id: e for e in lib.entries})
        if entry is None or entry.id not in chosen:
            continue
        if entry.id in files:
            raise MemplaceError(f"{path}: a second solution for {entry.id} (the first: "
                                f"{files[entry.id].name})")
        files[entry.id] = path
    scores = []
    for key, entry in chosen.items():
        path = files.get(key)
        if path is None:
            scores.append(Score(entry, None, None, "missing"))
            continue
        instance = load_entry_instance(lib, entry)
        objective, errors = solution_objective(entry, instance, path)
        scores.append(Score(entry, path.name, objective, "; ".join(errors)[:200]))
    return scores


def _pct(value: float | None) -> str:
    return percent(value)


def table(scores: list[Score]) -> str:
    """The score table (Markdown): one row per entry, then the summary per problem."""
    lines = ["| entry | split | objective | default | speedup | gap to best known % | "
             "gap to bound % | note |", "|---|---|---:|---:|---:|---:|---:|---|"]
    for s in scores:
        e = s.entry
        unit = (lambda v: f"{v:.0f}") if e.problem == "packing" else (lambda v: f"{v * 1e6:.3f}")
        lines.append(f"| {e.id} | {e.split} | {unit(s.objective) if s.objective else '-'} | "
                     f"{unit(e.default['objective'])} | {s.speedup:.4f} | "
                     f"{_pct(s.gap(e.best['objective']))} | {_pct(s.gap(e.bound))} | "
                     f"{s.error or 'valid'} |")
    return "\n".join(lines) + "\n\n" + summary_table({"submission": scores})


def summary(scores: list[Score]) -> dict[str, dict[str, float]]:
    """Per problem: geometric mean speedup, mean gaps, solutions valid / entries."""
    out = {}
    for problem in dict.fromkeys(s.entry.problem for s in scores):
        mine = [s for s in scores if s.entry.problem == problem]
        valid = [s for s in mine if s.objective is not None]
        gaps = [s.gap(s.entry.best["objective"]) for s in valid]
        bounds = [g for g in (s.gap(s.entry.bound) for s in valid) if g is not None]
        out[problem] = {
            "geomean speedup": math.exp(sum(math.log(s.speedup) for s in mine) / len(mine)),
            "mean gap to best known %": 100 * sum(gaps) / len(gaps) if gaps else math.nan,
            "mean gap to bound %": 100 * sum(bounds) / len(bounds) if bounds else math.nan,
            "valid": len(valid), "entries": len(mine)}
    return out


def summary_table(named: dict[str, list[Score]]) -> str:
    """One row per submission (and problem), best speedup first."""
    lines = ["| submission | problem | geomean speedup over default | mean gap to best known % | "
             "mean gap to bound % | valid / entries |", "|---|---|---:|---:|---:|---:|"]
    rows = [(name, problem, row) for name, scores in named.items()
            for problem, row in summary(scores).items()]
    for name, problem, r in sorted(rows, key=lambda x: (x[1], -x[2]["geomean speedup"])):
        lines.append(f"| {name} | {problem} | {r['geomean speedup']:.4f} | "
                     f"{two_decimals(r['mean gap to best known %'])} | {two_decimals(r['mean gap to bound %'])} | "
                     f"{r['valid']} / {r['entries']} |")
    return "\n".join(lines) + "\n"


def best_known(lib: Library, split: str = "all", problems: Iterable[str] | None = None) -> list[Score]:
    """The library's own best knowns as scores (the leaderboard's reference line)."""
    return [Score(e, e.best.get("file"), e.best["objective"]) for e in lib.split(split)
            if problems is None or e.problem in set(problems)]
