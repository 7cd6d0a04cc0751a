"""`submit`: solution files found elsewhere recorded as best knowns, like a MIPLIB update.

`improve` records what memplace's own solvers find; a better solution can also come from
outside (a learned policy, another tool, a longer run on someone's cluster). A submitted
file is matched to its entry as `score` matches it (the instance name it carries, or a
packing CSV's file name), validated against the library's instance and its objective
recomputed here (nothing it claims is trusted); the best file per entry is kept if it
beats the best known, with the solver, parameters and seed the file names and the file's
sha256 as its provenance. Every file is checked before anything is written: one that is
not a valid solution of its entry stops the whole submission, naming it.
"""
from __future__ import annotations

import hashlib
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from memplace.bench.library import store
from memplace.bench.library.check import load_entry_instance, solution_objective
from memplace.bench.library.runs import write_submissions
from memplace.bench.library.score import match_entry
from memplace.bench.library.tables import figure, unit
from memplace.bench.store import read_runs
from memplace.instances.library import Entry, Library
from memplace.model.core.errors import MemplaceError


@dataclass
class Submitted:
    entry: Entry
    path: Path
    objective: float


def files_of(paths: Iterable[str | Path]) -> list[Path]:
    """The solution files named: each path a file, or a folder whose .json and .csv files
    are taken (sorted by name)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out += sorted(f for f in p.iterdir() if f.is_file() and f.suffix in (".json", ".csv"))
        elif p.is_file():
            out.append(p)
        else:
            raise MemplaceError(f"{p}: no such solution file or folder")
    if not out:
        raise MemplaceError("no solution files (.json or .csv) in " + ", ".join(map(str, paths)))
    return out


def checked(lib: Library, files: list[Path], names: dict[Path, str] | None = None) -> list[Submitted]:
    """Every file matched and validated, its objective recomputed; a MemplaceError naming
    the first file that is not a valid solution of its entry (as `names` has it, if given:
    files written from a runs file are named by their run)."""
    entries = {e.id: e for e in lib.entries}
    instances: dict[str, Any] = {}
    out = []
    for path in files:
        named = (names or {}).get(path, str(path))
        entry = match_entry(lib, path, entries)
        if entry is None:
            raise MemplaceError(f"{named}: {lib.name} has no packing entry named {path.stem!r}")
        if entry.id not in instances:
            instances[entry.id] = load_entry_instance(lib, entry)
        objective, errors = solution_objective(entry, instances[entry.id], path)
        if objective is None:
            first = errors[0].replace(f"{path}: ", "").replace(f"{path.name}: ", "")
            raise MemplaceError(f"{named}: not a valid solution of {entry.id}: {first}"
                                + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""))
        out.append(Submitted(entry, path, objective))
    return out


def _provenance(path: Path, raw: bytes, runs: str | None = None) -> dict[str, Any]:
    """The solver the file (`raw`, the bytes of `path`) names (a packing CSV names none),
    and the file itself."""
    solver: dict[str, Any] = {}
    if path.suffix == ".json":
        named = json.loads(raw.decode("utf-8")).get("solver")
        solver = named if isinstance(named, dict) else {}
    name = solver.get("name")
    params = solver.get("params")
    seed = solver.get("seed")
    prov = store.provenance(str(name) if name else "submitted",
                            params if isinstance(params, dict) else {},
                            seed if isinstance(seed, int) else None)
    prov["submitted"] = {"file": path.name, "sha256": hashlib.sha256(raw).hexdigest()}
    if runs is not None:
        prov["submitted"]["runs"] = runs
    return prov


def _unfrozen(lib: Library) -> None:
    if lib.manifest.get("frozen"):
        raise MemplaceError(f"{lib.name} is frozen: submit to an unfrozen version or a "
                            "library of your own")


def submit(lib: Library, paths: Iterable[str | Path], runs: str | None = None,
           names: dict[Path, str] | None = None) -> list[str]:
    """Record the best valid file per entry where it beats the best known; one line per
    entry submitted to (recorded, or not better and why). Nothing is written when a file
    is invalid or the library is frozen. `runs`: the runs file the files were written from."""
    _unfrozen(lib)
    found = checked(lib, files_of(paths), names)
    best: dict[str, Submitted] = {}
    for s in found:  # the best per entry; the first file of equal objective
        if s.entry.id not in best or s.objective < best[s.entry.id].objective:
            best[s.entry.id] = s
    lines = []
    for s in best.values():
        e = s.entry
        before = e.best["objective"]
        suffix = ".csv" if e.problem == "packing" else ".json"
        raw = s.path.read_bytes()
        if store.record_solution(lib, e, s.objective, lambda target: target.write_bytes(raw),
                                 _provenance(s.path, raw, runs), suffix):
            lines.append(f"{e.id}: best {figure(e, before)} -> {figure(e, s.objective)} {unit(e)} "
                         f"(submitted {s.path.name})")
        else:
            lines.append(f"{e.id}: {s.path.name} is valid, {figure(e, s.objective)} {unit(e)}, "
                         f"not better than the best known {figure(e, before)}: not recorded")
    store.save(lib)
    return lines


def submit_runs(lib: Library, path: str | Path) -> list[str]:
    """A benchmark's runs file submitted: each solver's best valid run per entry written as
    a solution file naming its run (as `score RUNS` writes them), then `submit` of them all,
    so the best run per entry over every solver is the one that can be recorded."""
    _unfrozen(lib)
    records = read_runs(path)
    with tempfile.TemporaryDirectory() as tmp:
        folders = write_submissions(lib, records, Path(tmp))
        if not folders:
            raise MemplaceError(f"{path}: no valid run on an entry of {lib.name}")
        names = {f: f"{path}: {solver}'s best run on {f.stem.split('-', 1)[1]}"
                 for solver, folder in folders.items() for f in folder.iterdir()}
        return submit(lib, folders.values(), runs=str(path), names=names)
