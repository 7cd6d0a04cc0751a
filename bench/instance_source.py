"""A run's `instance_source`: what a record stores to load its instance again, and how
a reader finds the instance from it.

A record names its instance the way that works in any checkout or install:

- a built-in or catalog name (`resnet50@nnpi`, `zoo/resnet18@nnpi`, `synth-1000@nnpi`);
- for a file inside memplace (a library's copy of an instance, a committed program),
  its path relative to the package root, which is the repository's root in a checkout
  (`instances/library/memplace-lib-2/instances/xla-mlp@nnpi.json`);
- for any other file, its absolute path.

Records written before this held absolute paths into the checkout that ran them (a
worktree since removed, a clone elsewhere). A reader still takes them: when the file
is gone, the file of this package at the same tail of the path is the instance if its
fingerprint is the recorded one. `relocate_runs` rewrites such records to the
relative form.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memplace.bench.store import RunsFileError, read_runs
from memplace.model import Instance
from memplace.model.core.errors import MemplaceError
from memplace.model.core.files import write_atomically
from memplace.model.core.problem import problem
from memplace.model.core.search import DEFAULT_PROBLEM

PACKAGE = Path(__file__).resolve().parents[1]  # holds bench/, instances/ ... (the checkout)


def record_problem(record: dict[str, Any]):
    """The problem a record was solved as (records written before problems existed: static)."""
    return problem(record.get("problem", DEFAULT_PROBLEM))


def recorded_source(source: str | Path) -> str:
    """What a record stores for an instance loaded from `source` (a name or a path):
    a path inside the package becomes relative to it; anything else is kept."""
    path = Path(source)
    if path.is_absolute() and path.resolve().is_relative_to(PACKAGE):
        return path.resolve().relative_to(PACKAGE).as_posix()
    return str(source)


def loadable(source: str) -> str:
    """What `memplace.instances.load` takes for a recorded source: a relative path of a
    file in the package resolved against the package, anything else as it is."""
    path = Path(source)
    if not path.is_absolute() and (PACKAGE / path).is_file():
        return str(PACKAGE / path)
    return source


def moved(source: str) -> list[str]:
    """The files of this package whose path is a tail of an absolute recorded one
    (`.../instances/library/memplace-lib-2/instances/X.json`), longest tail first: where
    the instance may be when the checkout that ran it is gone. The caller checks the
    fingerprint."""
    path = Path(source)
    if not path.is_absolute():
        return []
    parts = path.parts[1:]
    tails = (PACKAGE.joinpath(*parts[i:]) for i in range(1, len(parts)))
    return [str(t) for t in tails if t.is_file()]


def load_recorded(record: dict[str, Any]) -> Instance:
    """The instance a record ran on: loaded from its source (its fingerprint is the
    caller's to check), or, when that fails, a file of this package at a tail of the
    recorded path whose fingerprint is the recorded one. Raises the MemplaceError of
    loading the recorded source when neither gives it."""
    from memplace.instances import load
    source = record["instance_source"]
    try:
        return load(loadable(source))
    except MemplaceError as exc:
        copy = None if Path(source).is_file() else _moved_copy(record)  # a file there is no move
        if copy is None:
            raise
        return copy[1]


def _moved_copy(record: dict[str, Any]) -> tuple[str, Instance] | None:
    """(path, instance) of the first file of `moved(source)` with the recorded fingerprint."""
    from memplace.instances import load
    for candidate in moved(record["instance_source"]):
        try:
            inst = load(candidate)
        except MemplaceError:
            continue
        if record_problem(record).fingerprint(inst) == record["instance_sha256"]:
            return candidate, inst
    return None


def _relocated(record: dict[str, Any]) -> str | None:
    """The relative source of a record that holds an absolute path, when its instance
    is a file of this package: the recorded path itself, or a moved copy with the
    recorded fingerprint. None when nothing here is it."""
    path = Path(record["instance_source"])
    if not path.is_absolute():
        return None
    if path.resolve().is_relative_to(PACKAGE) and path.is_file():
        return recorded_source(path)
    copy = _moved_copy(record)
    return None if copy is None else recorded_source(copy[0])


@dataclass
class Relocation:
    """What `relocate_runs` did to a runs file."""

    records: int  # records in the file
    rewritten: int  # absolute paths made relative to the package
    left: list[str]  # absolute sources of no file here (kept as they are), in file order


def relocate_runs(path: str | Path) -> Relocation:
    """Rewrite a runs file's absolute instance paths of files in this package (found by
    their fingerprint when the recorded checkout is gone) to paths relative to the
    package, as new records store them. Every other byte of the file stays; the file is
    replaced whole. Not to be run while a batch appends to the file."""
    path = Path(path)
    records = read_runs(path)
    lines = path.read_bytes().split(b"\n")[:len(records)]
    rewritten, left = 0, []
    for number, record in enumerate(records):
        source = _relocated(record)
        if source is None:
            if Path(record["instance_source"]).is_absolute():
                left.append(record["instance_source"])
            continue
        line = json.dumps(record, separators=(",", ":"), allow_nan=False).encode("utf-8")
        if line != lines[number]:
            raise RunsFileError(f"{path}:{number + 1}: the record is not in the form memplace "
                                "writes; not rewritten")
        record["instance_source"] = source
        lines[number] = json.dumps(record, separators=(",", ":"), allow_nan=False).encode("utf-8")
        rewritten += 1
    if rewritten:
        write_atomically(path, b"".join(line + b"\n" for line in lines), "runs file", RunsFileError)
    return Relocation(len(records), rewritten, list(dict.fromkeys(left)))
