"""`verify`: re-check everything a library stores, trusting no stored number.

Per entry: the instance is the one recorded (sha256); the best known solution file is a
valid solution of it whose recomputed objective is the recorded one (relative 1e-9) and
no worse than the default's; every checkable bound is recomputed from its certificate
and is at least the recorded value, and no bound exceeds the best known. Bounds that
are not cheaply checkable (branch and bound, exhaustion) are counted, never trusted
silently: the status `verify` prints says which bound it rests on.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from memplace.bench.library.check import (RTOL, holds, load_entry_instance, recompute_bound,
                                          solution_objective)
from memplace.instances.library import Entry, Library, content_hash
from memplace.model.core.errors import MemplaceError


@dataclass
class EntryCheck:
    entry: Entry
    errors: list[str] = field(default_factory=list)
    checked_bounds: int = 0
    unchecked_bounds: int = 0
    seconds: float = 0.0


def verify_entry(lib: Library, entry: Entry) -> EntryCheck:
    began = time.perf_counter()
    report = EntryCheck(entry)
    try:
        instance = load_entry_instance(lib, entry)
    except MemplaceError as exc:
        report.errors.append(str(exc))
        return report
    best = entry.best
    if not best.get("file"):
        report.errors.append("no best known solution file")
    else:
        objective, errors = solution_objective(entry, instance, lib.path(best["file"]))
        report.errors += [f"best known {best['file']}: {e}" for e in errors]
        if objective is not None and not math.isclose(objective, best["objective"], rel_tol=RTOL):
            report.errors.append(f"best known {best['file']}: objective {objective!r}, the library "
                                 f"records {best['objective']!r}")
        if objective is not None and objective > entry.default["objective"] * (1 + RTOL):
            report.errors.append(f"best known {objective!r} is worse than the default "
                                 f"{entry.default['objective']!r}")
    for bound in entry.bounds:
        value = recompute_bound(lib, entry, instance, bound)
        what = f"{bound['kind']} bound{' (' + bound['label'] + ')' if bound.get('label') else ''}"
        if value is None:
            report.unchecked_bounds += 1
        else:
            report.checked_bounds += 1
            if not holds(bound["value"], value):
                report.errors.append(f"{what} {bound['value']!r}: its certificate proves only {value!r}")
        if bound["value"] > best["objective"] * (1 + RTOL):
            report.errors.append(f"{what} {bound['value']!r} is above the best known "
                                 f"{best['objective']!r}")
    report.seconds = time.perf_counter() - began
    return report


def verify(lib: Library, frozen_hash: str | None = None) -> tuple[list[EntryCheck], list[str]]:
    """Every entry checked; plus library-wide errors (a frozen version whose content
    changed)."""
    problems = []
    if lib.manifest.get("frozen") and frozen_hash is not None:
        now = content_hash(lib.folder)
        if now != frozen_hash:
            problems.append(f"{lib.name} is frozen but its content hash is {now}, not {frozen_hash}")
    return [verify_entry(lib, e) for e in lib.entries], problems
