"""`memplace lib bounds`: the certificate bounds of chosen entries solved again, before and
after, without writing the library (a frozen version included).

Each entry's certificate LPs (`improve.certify_task`, with the models asked for) run with
the entry's best known as the ceiling; every bound a task returns has been recomputed
from its certificate by the same check `verify` uses (`certificate.check_lp_dual`). The
table says, per entry, the certified bound the library stores, the best one now and the
model that gave it, and the certified gap before and after. `--certificates DIR` keeps
the new certificates (gzipped JSON, as a library stores them) for a later version.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any, Callable, Iterable

from memplace.bench.library.improve import certify_task, results
from memplace.bench.library.store import file_stem
from memplace.bench.library.tables import TARGET_GAP, figure, percent
from memplace.instances.library import Entry, Library


def rebound(lib: Library, entries: Iterable[Entry], time_limit: float,
            models: Iterable[str] | None = None, certificates: Path | None = None,
            echo: Callable[[str], None] = print,
            on_row: Callable[[list[dict[str, Any]]], None] | None = None) -> list[dict[str, Any]]:
    """One row per entry: its certified bound before and after the LPs are solved again
    (`on_row` sees the rows so far after each entry)."""
    rows = []
    for e in entries:
        before = e.certified_bound
        best, via = before, "stored"
        for outcome in results(certify_task(lib, e, time_limit, models)):
            if "error" in outcome:
                echo(f"{e.id}: {outcome['error']}")
                continue
            for b in outcome["bounds"]:
                if b["kind"] != "lp-dual":
                    continue
                echo(f"{e.id}: {b['label']} {b['value'] * 1e6:.3f} us ({outcome['wall_s']:.0f} s)")
                if certificates is not None:
                    path = certificates / f"{file_stem(e.name)}.{b['label']}.lp-dual.json.gz"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_bytes(gzip.compress(json.dumps(b["certificate"]).encode(), mtime=0))
                if best is None or b["value"] > best:
                    best, via = b["value"], b["label"]
        after = None if not best or best <= 0 else max(0.0, e.best["objective"] / best - 1.0)
        rows.append({"entry": e.id, "ops": e.ops, "best known us": figure(e, e.best["objective"]),
                     "bound before us": figure(e, before), "bound after us": figure(e, best),
                     "by": via, "gap before %": percent(e.certified_gap), "gap after %": percent(after),
                     "within target": "yes" if after is not None and after <= TARGET_GAP else "no"})
        if on_row is not None:
            on_row(rows)
    return rows
