"""A benchmark's runs scored against a library: `memplace bench library-residency` (or any
plan over a library's instances) writes runs; each solver's runs become one submission,
its best valid run per entry over the plan's seeds, written as solution files and scored
by `score` exactly as anyone's submission is. The library's best known is the reference
line, so every figure is measured against the same default, best known and bound as
`memplace lib score` and the library's leaderboard.

Only the entries the runs cover are scored (a plan over the test split is scored on the
test split), and a solver with no valid run on an entry counts as the default there, as a
missing file does in `score`.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Callable, Iterable

from memplace.bench.library.check import load_entry_instance
from memplace.bench.library.score import Score, best_known, score, summary_table
from memplace.bench.library.store import beats_best, file_stem
from memplace.bench.library.tables import figure, percent
from memplace.bench.store import is_ok, latest_by_key
from memplace.instances.library import Entry, Library
from memplace.model.core.errors import MemplaceError
from memplace.model.core.problem import problem as get_problem

REFERENCE = "best known (reference)"


def covered(lib: Library, records: Iterable[dict[str, Any]]) -> dict[str, Entry]:
    """The library's entries (by id) some run of `records` solved, matched by problem,
    instance name and fingerprint (a run on another instance of the same name is not
    the entry's)."""
    entries = {(e.problem, e.name): e for e in lib.entries if e.problem != "packing"}
    out: dict[str, Entry] = {}
    for r in records:
        e = entries.get((r.get("problem") or "static", r["instance"]))
        if e is not None and r["instance_sha256"] == e.sha256:
            out[e.id] = e
    return out


def best_runs(lib: Library, records: Iterable[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """solver -> entry id -> its valid run of lowest latency (over seeds and parameters)."""
    chosen = covered(lib, records)
    by_name = {(e.problem, e.name): e for e in chosen.values()}
    best: dict[str, dict[str, dict[str, Any]]] = {}
    for r in latest_by_key(records).values():
        e = by_name.get((r.get("problem") or "static", r["instance"]))
        if e is None or r["instance_sha256"] != e.sha256 or not is_ok(r):
            continue
        mine = best.setdefault(r["solver"], {})
        if e.id not in mine or r["latency"] < mine[e.id]["latency"]:
            mine[e.id] = r
    return best


def write_submissions(lib: Library, records: list[dict[str, Any]], folder: Path) -> dict[str, Path]:
    """One folder of solution files per solver (its best run per entry); solver -> folder."""
    runs = best_runs(lib, records)
    chosen = covered(lib, records)
    instances: dict[str, Any] = {}
    out = {}
    for solver in sorted(runs):
        sub = folder / file_stem(solver)
        sub.mkdir(parents=True, exist_ok=True)
        for key, record in runs[solver].items():
            e = chosen[key]
            if key not in instances:
                instances[key] = load_entry_instance(lib, e)
            inst = instances[key]
            solution = get_problem(e.problem).from_record(inst, record).to_dict(inst)
            # the run that found it, so that `lib submit` of the file keeps its provenance
            solution["solver"] = {"name": record["solver"], "params": record.get("params", {}),
                                  "seed": record.get("seed")}
            (sub / f"{e.problem}-{file_stem(e.name)}.json").write_text(
                json.dumps(solution, indent=1) + "\n", encoding="utf-8")
        out[solver] = sub
    return out


def score_runs(lib: Library, records: list[dict[str, Any]], folder: Path,
               echo: Callable[[str], None] = lambda line: None) -> dict[str, list[Score]]:
    """solver -> its scores on the entries the runs cover (best known last, as reference)."""
    chosen = covered(lib, records)
    if not chosen:
        names = sorted({r["instance"] for r in records})[:5]
        raise MemplaceError(f"no run is on an entry of {lib.name} (instances such as "
                            f"{', '.join(names) or 'none'}; same name and fingerprint needed)")
    named: dict[str, list[Score]] = {}
    for solver, sub in write_submissions(lib, records, folder).items():
        scores = [s for s in score(lib, sub) if s.entry.id in chosen]
        named[solver] = scores
        bad = [s for s in scores if s.file and s.objective is None]
        for s in bad:
            echo(f"{solver} on {s.entry.id}: invalid ({s.error})")
    named[REFERENCE] = [s for s in best_known(lib) if s.entry.id in chosen]
    return named


def entry_table(named: dict[str, list[Score]]) -> str:
    """Per entry: the best run of any solver against the default, the best known and the
    bound (the headline's shape), then the geometric mean speedup."""
    solvers = {n: {s.entry.id: s for s in scores} for n, scores in named.items() if n != REFERENCE}
    entries = [s.entry for s in named[REFERENCE]]
    lines = ["| entry | split | ops | default | default (µs) | best run (µs) | best solver | "
             "speedup over default | gap to best known % | best known (µs) | bound (µs) | "
             "gap to bound % | library status |",
             "|---|---|---:|---|---:|---:|---|---:|---:|---:|---:|---:|---|"]
    speedups = []
    for e in sorted(entries, key=lambda e: e.id):
        runs = [(n, s) for n, by in solvers.items() if (s := by.get(e.id)) and s.objective]
        if not runs:
            continue
        solver, best = min(runs, key=lambda x: (x[1].objective, x[0]))
        speedups.append(best.speedup)
        lines.append(f"| {e.id} | {e.split} | {e.ops} | {e.default['solver']} | "
                     f"{figure(e, e.default['objective'])} | {figure(e, best.objective)} | {solver} | "
                     f"{best.speedup:.4f} | {percent(best.gap(e.best['objective']))} | "
                     f"{figure(e, e.best['objective'])} | {figure(e, e.bound)} | "
                     f"{percent(best.gap(e.bound))} | {e.status} |")
    if speedups:
        geo = math.exp(sum(map(math.log, speedups)) / len(speedups))
        lines.append(f"| geometric mean |  |  |  |  |  |  | {geo:.4f} |  |  |  |  |  |")
    return "\n".join(lines) + "\n"


def better_than_best_known(named: dict[str, list[Score]]) -> list[str]:
    """The entries some submission beats the best known on (ids, sorted): `lib submit` would
    record them."""
    return sorted({s.entry.id for name, scores in named.items() if name != REFERENCE
                   for s in scores if s.objective is not None
                   and beats_best(s.entry, s.objective)})


def report(lib: Library, records: list[dict[str, Any]], folder: Path, command: str,
           echo: Callable[[str], None] = lambda line: None,
           better: list[str] | None = None) -> str:
    """The Markdown page of a runs file scored against the library; `better`, if given,
    gets the entries a run beats the best known on."""
    named = score_runs(lib, records, folder, echo)
    if better is not None:
        better += better_than_best_known(named)
    runs = latest_by_key(records).values()
    seeds = sorted({r["seed"] for r in runs})
    limits = sorted({r["time_limit"] for r in runs})
    problems = sorted({s.entry.problem for s in named[REFERENCE]})
    return (f"**{', '.join(problems).capitalize()} runs scored against {lib.name}**\n\n"
            f"Written by `{command}`. Each solver's best valid run per entry (seeds "
            f"{', '.join(map(str, seeds))}; {', '.join(f'{t:g}' for t in limits)} s per run) is "
            f"written as a solution file and scored by `memplace lib score`: speedup over the "
            f"entry's default, gap to the library's best known and to its best proven bound; "
            f"a solver without a valid run on an entry counts as the default there.\n\n"
            + summary_table(named) + "\n" + entry_table(named))
