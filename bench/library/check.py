"""Checking what a library stores: an entry's instance, a solution file's objective, a bound
from its certificate. `verify` and `score` use these; nothing here trusts a stored number.

The objective of an entry is the latency in seconds (static: spec section 4; residency:
section 11's simulation) or, for packing, the height in bytes (the highest `offset + size`
of a valid packing, every buffer placed: spec section 5's offset assignment).
"""
from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from memplace.instances import load
from memplace.instances.library import BOUND_KINDS, Entry, Library
from memplace.model.core.errors import MemplaceError
from memplace.model.core.problem import problem as get_problem
from memplace.model.packing.minimalloc_csv import read_buffers
from memplace.model.packing.packers import Buffer, check_packing, peak_live_size
from memplace.model.solution_files import validate_solution_file

RTOL = 1e-9  # how far a stored objective or bound may differ from its recomputation
SOLUTION_FORMATS = {"static": "memplace-solution/1", "residency": "memplace-solution/2"}


def load_entry_instance(lib: Library, entry: Entry) -> Any:
    """The entry's instance (an `Instance`, or the buffers of a packing file), checked
    against the sha256 the library recorded."""
    source = lib.instance_source(entry)
    if entry.problem == "packing":
        path = Path(source)
        digest = _sha256(path.read_bytes())
        instance: Any = read_buffers(path).buffers
    else:
        instance = load(source, entry.problem)
        digest = instance.fingerprint()
    if digest != entry.sha256:
        raise MemplaceError(f"{entry.id}: instance {entry.instance} has changed (sha256 "
                            f"{digest[:12]}, the library recorded {entry.sha256[:12]})")
    return instance


def _sha256(data: bytes) -> str:
    import hashlib
    return hashlib.sha256(data).hexdigest()


def packing_height(buffers: list[Buffer], path: str | Path) -> tuple[int | None, list[str]]:
    """The height of a packing file (MiniMalloc CSV with offsets) of these buffers, or None
    with what is wrong (rows that are not the instance's, overlaps, missing offsets)."""
    solved = read_buffers(path)
    if "offset" not in solved.fieldnames:
        return None, [f"{path}: no offset column"]
    if [(b.id, b.lower, b.upper, b.size) for b in solved.buffers] != \
            [(b.id, b.lower, b.upper, b.size) for b in buffers]:
        return None, [f"{path}: its buffers are not the instance's (same rows, same order)"]
    offsets = []
    for row in solved.rows:
        text = str(row["offset"]).strip()
        if not text.lstrip("-").isdigit():
            return None, [f"{path}: buffer {row['id']!r} has offset {text!r}, not an integer"]
        offsets.append(int(text))
    sizes = np.array([b.size for b in buffers], np.int64)
    offs = np.array(offsets, np.int64)
    height = int((offs + sizes).max()) if len(buffers) else 0
    errors = check_packing(buffers, offsets, max(height, 1))
    return (None, errors) if errors else (height, [])


def solution_objective(entry: Entry, instance: Any, path: str | Path) -> tuple[float | None, list[str]]:
    """The objective of a solution file for the entry's problem, recomputed; None with the
    reasons when the file is not a valid solution of this instance and problem."""
    if entry.problem == "packing":
        height, errors = packing_height(instance, path)
        return (None if height is None else float(height)), errors
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    want = SOLUTION_FORMATS[entry.problem]
    if not isinstance(data, dict) or data.get("format") != want:
        got = data.get("format") if isinstance(data, dict) else None
        return None, [f"{path}: format {got!r}, a {entry.problem} solution is {want!r}"]
    try:
        report = validate_solution_file(instance, path)
    except MemplaceError as exc:  # not a solution of this instance at all (a level it lacks,
        # a tensor count that differs): that entry's submission is invalid, the rest still count
        return None, [f"{Path(path).name}: {exc}"]
    if report.errors:
        return None, list(report.errors)
    return float(report.latency), []


def read_certificate(lib: Library, relative: str) -> dict[str, Any]:
    path = lib.path(relative)
    return decode_certificate(path, path.read_bytes())


def decode_certificate(path: Path, raw: bytes) -> dict[str, Any]:
    """A stored certificate file's content (`raw`, the bytes of `path`, gzipped JSON when
    its name ends in .gz)."""
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    return json.loads(raw.decode("utf-8"))


def recompute_bound(lib: Library, entry: Entry, instance: Any, bound: dict[str, Any]) -> float | None:
    """The value a checkable bound's certificate proves, recomputed; None for a kind that
    is not cheaply checkable."""
    kind = bound["kind"]
    if not BOUND_KINDS[kind][0]:
        return None
    if kind == "peak-live":
        return float(peak_live_size(instance))
    from memplace.solvers.certificate import check_lp_dual, closed_form
    if kind == "closed-form":
        return closed_form(instance)
    if kind == "lp-dual":
        # the access relaxation's ceiling must be a valid latency: the entry's best known,
        # whose file verify re-checks
        return check_lp_dual(instance, read_certificate(lib, bound["certificate"]),
                             valid_latency=entry.best.get("objective"))
    raise MemplaceError(f"{entry.id}: no check for bound kind {kind!r}")


def holds(stored: float, recomputed: float) -> bool:
    """A stored bound holds when its recomputation is at least as high (up to RTOL)."""
    return math.isfinite(recomputed) and stored <= recomputed + RTOL * abs(recomputed)
