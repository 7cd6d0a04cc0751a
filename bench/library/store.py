"""Writing a library version: adding entries, recording better solutions and bounds with
their provenance (a MIPLIB-style update), dropping pairs where placement does not matter.

Only an unfrozen version is written; `freeze` pins it (its manifest says `frozen: true`,
and a test pins its content hash), after which every change is a new version.
"""
from __future__ import annotations

import contextlib
import datetime
import gzip
import json
import math
import os
import shutil
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from memplace.bench.provenance import code_version
from memplace.instances.library import (BOUND_KINDS, FORMAT, MANIFEST, Entry, Library, canonical_entry,
                                        entry_of, folder_of, read_library, split_of)
from memplace.model.core.errors import MemplaceError
from memplace.model.core.files import write_atomically

SAFE = str.maketrans({"/": "_", "\\": "_", " ": "_", ":": "_"})


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()


def provenance(solver: str, params: dict[str, Any] | None = None, seed: int | None = None,
               time_limit: float | None = None, wall_s: float | None = None) -> dict[str, Any]:
    """Who found a solution or a bound: the solver run and the memplace commit that ran it."""
    code = code_version()
    return {"solver": solver, "params": dict(params or {}), "seed": seed, "time_limit": time_limit,
            "wall_s": None if wall_s is None else round(float(wall_s), 3),
            "commit": code["commit"], "dirty": code["dirty"], "date": now()}


def create(version: int, description: str, folder: Path | None = None) -> Library:
    """An empty, unfrozen library version folder (by default the package's own)."""
    folder = folder_of(version) if folder is None else Path(folder)
    if (folder / MANIFEST).exists():
        raise MemplaceError(f"{FORMAT.format(version=version)} exists already ({folder})")
    folder.mkdir(parents=True, exist_ok=True)
    manifest = {"format": FORMAT.format(version=version), "frozen": False,
                "description": description, "bound_kinds": {k: {"checkable": c, "certificate": d}
                                                            for k, (c, d) in BOUND_KINDS.items()},
                "entries": [], "dropped": []}
    _write_manifest(folder, manifest)
    return read_library(folder)


def _write_manifest(folder: Path, manifest: dict[str, Any]) -> None:
    manifest["entries"].sort(key=lambda e: (e["problem"], e["name"]))
    write_atomically(folder / MANIFEST, json.dumps(manifest, indent=1, sort_keys=False) + "\n",
                     "library manifest")


def save(lib: Library) -> None:
    """Write the manifest. Several `improve` runs may record into one version at once (one
    per entry, say): under a lock on the folder, the manifest on disk is read again and
    only the entries this process changed (or dropped) since it read them are written over
    it, so no run loses another's records; the others are taken from disk, in memory too."""
    if lib.manifest.get("frozen"):
        raise MemplaceError(f"{lib.name} is frozen: a change is a new version")
    with _locked(lib.folder):
        mine = {e.id: e for e in lib.entries}
        changed = {i for i, e in mine.items() if lib.loaded.get(i) != canonical_entry(e.data)}
        removed = set(lib.loaded) - set(mine)
        merged = {i: e.data for i, e in mine.items()}
        dropped = list(lib.dropped)
        on_disk = _manifest_on_disk(lib.folder)
        if on_disk is not None:
            for raw in on_disk.get("entries", []):
                i = raw.get("id")
                if i in removed or i in changed:
                    continue
                merged[i] = raw
                if i in mine:  # another run's records, taken in memory too
                    mine[i].__dict__.update(entry_of(raw).__dict__)
                else:
                    lib.entries.append(entry_of(raw))
            on_disk_ids = {raw.get("id") for raw in on_disk.get("entries", [])}
            for i in [i for i in merged if i in lib.loaded and i not in changed and i not in on_disk_ids]:
                del merged[i]  # dropped by another run since this one read it
                lib.entries.remove(mine[i])
            ids = {d.get("id") for d in dropped}
            dropped += [d for d in on_disk.get("dropped", []) if d.get("id") not in ids]
        lib.dropped[:] = dropped
        lib.manifest["entries"] = list(merged.values())
        lib.manifest["dropped"] = dropped
        lib.manifest["bound_kinds"] = {k: {"checkable": c, "certificate": d}
                                       for k, (c, d) in BOUND_KINDS.items()}
        _write_manifest(lib.folder, lib.manifest)
        lib.loaded = {i: canonical_entry(data) for i, data in merged.items()}


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """An exclusive lock on the library folder (POSIX `flock` on the directory; where there
    is none, no lock)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _manifest_on_disk(folder: Path) -> dict[str, Any] | None:
    try:
        return json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def entry_id(problem: str, name: str) -> str:
    return f"{problem}/{name}"


def file_stem(name: str) -> str:
    return name.translate(SAFE)


def add_entry(lib: Library, *, problem: str, instance_ref: str, name: str, sha256: str,
              workload: str, ops: int, default: dict[str, Any]) -> Entry:
    """A new entry whose best known is the default's solution (recorded next)."""
    key = entry_id(problem, name)
    if any(e.id == key for e in lib.entries):
        raise MemplaceError(f"{lib.name} has {key} already")
    data = {"id": key, "problem": problem, "instance": instance_ref, "name": name, "sha256": sha256,
            "workload": workload, "split": split_of(workload), "ops": ops, "default": default,
            "best": {"objective": math.inf, "file": None, "provenance": None}, "bounds": []}
    entry = Entry(key, problem, instance_ref, name, sha256, data["split"], ops, data["default"],
                  data["best"], data["bounds"], data)
    lib.entries.append(entry)
    return entry


def copy_instance(lib: Library, source: Path, stem: str, suffix: str) -> str:
    """Copy an instance file into the library; its reference (`instances/FILE`)."""
    target = lib.folder / "instances" / f"{file_stem(stem)}{suffix}"
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.resolve() != target.resolve():
        shutil.copyfile(source, target)
    return target.relative_to(lib.folder).as_posix()


def write_instance(lib: Library, data: dict[str, Any]) -> str:
    from memplace.instances import dumps
    target = lib.folder / "instances" / f"{file_stem(data['name'])}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(dumps(data), encoding="utf-8")
    return target.relative_to(lib.folder).as_posix()


def beats_best(entry: Entry, objective: float) -> bool:
    """Whether `objective` beats the entry's best known by more than rounding."""
    return objective < entry.best["objective"] * (1 - 1e-12)


def record_solution(lib: Library, entry: Entry, objective: float, write: Any,
                    prov: dict[str, Any], suffix: str = ".json") -> bool:
    """Keep a solution if it beats the best known (`write(path)` writes its file)."""
    if not beats_best(entry, objective):
        return False
    relative = f"solutions/{entry.problem}/{file_stem(entry.name)}{suffix}"
    path = lib.path(relative)
    path.parent.mkdir(parents=True, exist_ok=True)
    write(path)
    entry.best.update({"objective": objective, "file": relative, "provenance": prov})
    return True


def record_bound(lib: Library, entry: Entry, value: float, kind: str, prov: dict[str, Any],
                 certificate: dict[str, Any] | None = None, label: str = "") -> bool:
    """Keep a bound if it is higher than every bound of its kind (and label) so far."""
    if kind not in BOUND_KINDS:
        raise MemplaceError(f"unknown bound kind {kind!r}")
    if not math.isfinite(value) or value <= 0:
        return False
    same = [b for b in entry.bounds if b["kind"] == kind and b.get("label", "") == label]
    if same and same[0]["value"] >= value:
        return False
    relative = None
    if certificate is not None:
        relative = (f"certificates/{entry.problem}/{file_stem(entry.name)}"
                    f"{'.' + label if label else ''}.{kind}.json.gz")
        path = lib.path(relative)
        path.parent.mkdir(parents=True, exist_ok=True)
        body = json.dumps(certificate, separators=(",", ":")).encode("utf-8")
        path.write_bytes(gzip.compress(body, mtime=0))
    for b in same:
        entry.bounds.remove(b)
    entry.bounds.append({"value": value, "kind": kind, "label": label, "certificate": relative,
                         "checkable": BOUND_KINDS[kind][0], "provenance": prov})
    entry.bounds.sort(key=lambda b: (b["kind"], b.get("label", "")))
    return True


def drop(lib: Library, entry: Entry, reason: str) -> None:
    """Move an entry to the dropped list with the reason; its files go."""
    lib.entries.remove(entry)
    for relative in [entry.best.get("file")] + [b.get("certificate") for b in entry.bounds]:
        if relative and lib.path(relative).exists():
            lib.path(relative).unlink()
    if entry.instance.startswith("instances/") and not any(
            e.instance == entry.instance for e in lib.entries):
        lib.path(entry.instance).unlink(missing_ok=True)
    lib.dropped.append({"id": entry.id, "instance": entry.name, "problem": entry.problem,
                        "reason": reason})


def freeze(lib: Library) -> None:
    lib.manifest["frozen"] = False
    save(lib)
    lib.manifest["frozen"] = True
    _write_manifest(lib.folder, lib.manifest)


def finite(values: np.ndarray) -> bool:
    return bool(np.isfinite(values).all())


def prune_dominated(lib: Library, entry: Entry) -> list[str]:
    """Drop the LP-dual bounds of an entry that another checkable bound matches or beats
    (their certificates would cost `verify` time and prove less), keeping the closed
    form (recomputed in microseconds); the models dropped are remembered in the entry's
    `lp_dominated`, so a refresh does not solve them again. Returns their labels."""
    best = {}
    for b in entry.bounds:
        if BOUND_KINDS[b["kind"]][0]:
            best[id(b)] = b["value"]
    dropped = []
    for b in list(entry.bounds):
        if b["kind"] != "lp-dual":
            continue
        others = [v for k, v in best.items() if k != id(b)]
        if others and max(others) >= b["value"]:
            entry.bounds.remove(b)
            best.pop(id(b))
            if b.get("certificate") and lib.path(b["certificate"]).exists():
                lib.path(b["certificate"]).unlink()
            dropped.append(b.get("label", ""))
    if dropped:
        entry.data["lp_dominated"] = sorted(set(entry.data.get("lp_dominated", [])) | set(dropped))
    return dropped
