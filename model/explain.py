"""A placement in the model's own words: which tensor went where, and when it moves.

For every tensor of an instance, by the names its file gives (an imported ONNX
model keeps its tensor and node names), a solution of either problem says:

- its *home* level (and offset, on an addressed level) for its whole live range,
  which runs from the first op that touches it to the last (docs/spec.md section 3);
- its *windows* (residency solutions only, section 10): copies in a faster level,
  each named by ops: issued at op X (a prefetch) or written there by its producer,
  serving ops Y .. Z, and evicted back home at op U, done before op V;
- the bytes its ops move (its traffic, section 2) and the bytes its copies move
  (its size per prefetch and per eviction, section 11).

`explain` builds the rows; `text_table` and `csv_text` print them. A static solution
(`memplace-solution/1`) is read as a residency solution without windows, which it is.
"""
from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memplace.model.instance import Instance
from memplace.model.residency.solution import NO_OFFSET, ResidencySolution, Window, read_json
from memplace.model.solution_files import validate_solution_file


@dataclass(frozen=True)
class Residence:
    """Where a tensor is over some ops (op indices; `Explanation.ops` names them): its home
    over its live range, or one of its windows."""

    role: str  # "home", "prefetch" (copied in) or "defining" (written there by its producer)
    level: int
    offset: int | None  # on an addressed level
    start: int  # the first op it occupies: a prefetch's copy is issued just before it
    first: int  # the first op it serves
    last: int  # the last op it serves
    hold: int  # the last op it occupies (an evicted window waits for its copy home)
    evict: tuple[int, int] | None = None  # (issued before op, done before op)
    bytes_copied: int = 0

    def describe(self, ops: tuple[str, ...], levels: tuple[str, ...]) -> str:
        """One phrase, e.g. 'SRAM: prefetch at conv2, serves conv3..fc'."""
        where = levels[self.level] if self.offset is None else f"{levels[self.level]}@{self.offset}"
        serves = span(ops, self.first, self.last)
        if self.role == "prefetch":
            text = f"{where}: prefetch at {ops[self.start]}, serves {serves}"
        else:
            text = f"{where}: written by {ops[self.first]}, serves {serves}"
        if self.evict is not None:
            text += f", evict at {ops[self.evict[0]]} (done by {ops[self.evict[1]]})"
        return text


def span(ops: tuple[str, ...], first: int, last: int) -> str:
    """Ops first..last by name ('conv1..fc', or one name)."""
    return ops[first] if first == last else f"{ops[first]}..{ops[last]}"


@dataclass(frozen=True)
class TensorRow:
    """One tensor of the instance, its home and windows, and the bytes it moves."""

    index: int
    name: str
    kind: str
    size: int
    home: Residence
    windows: tuple[Residence, ...]
    bytes_accessed: int  # by its ops (its traffic)

    @property
    def bytes_copied(self) -> int:
        return sum(w.bytes_copied for w in self.windows)


@dataclass(frozen=True)
class Explanation:
    """A solution of one instance, tensor by tensor."""

    instance: str
    solver: str
    problem: str  # "static" (format 1) or "residency" (format 2)
    valid: bool
    latency: float  # seconds, recomputed
    addressed: bool  # whether any level has offsets (then the offset column is shown)
    ops: tuple[str, ...]  # op names in schedule order
    levels: tuple[str, ...]  # level names, fastest first
    rows: tuple[TensorRow, ...]


def explain(instance: Instance, path: str | Path) -> Explanation:
    """Read the solution file in `path` (either format) and describe every tensor."""
    data = read_json(path)
    report = validate_solution_file(instance, path)  # validity and the recomputed latency
    solution = ResidencySolution.from_dict(data, instance)
    solver = data.get("solver", {}).get("name", "") if isinstance(data.get("solver"), dict) else ""
    problem = "residency" if data.get("format") == "memplace-solution/2" else "static"
    return Explanation(instance.name, str(solver), problem, bool(report.valid),
                       float(report.latency), instance.has_addressed_levels,
                       tuple(o["name"] for o in instance.ops), tuple(instance.level_names),
                       tuple(_rows(instance, solution)))


def _rows(inst: Instance, sol: ResidencySolution) -> list[TensorRow]:
    windows: dict[int, list[Window]] = {}
    for w in sol.windows:
        windows.setdefault(w.tensor, []).append(w)
    rows = []
    for t, tensor in enumerate(inst.tensors):
        level = int(sol.placement[t])
        offset = None
        if sol.offsets is not None and inst.addressed[level] and sol.offsets[t] != NO_OFFSET:
            offset = int(sol.offsets[t])
        first, last = int(inst.start[t]), int(inst.end[t])
        home = Residence("home", level, offset, first, first, last, last)
        mine = tuple(_residence(inst, w) for w in sorted(windows.get(t, []), key=lambda w: w.start))
        rows.append(TensorRow(t, tensor["name"], tensor["kind"], int(inst.size[t]), home, mine,
                              int(inst.traffic[t])))
    return rows


def _residence(inst: Instance, w: Window) -> Residence:
    copies = int(w.is_prefetch) + int(w.evict is not None)
    return Residence("prefetch" if w.is_prefetch else "defining", w.level, w.offset, w.start,
                     w.first, w.last, w.hold, w.evict, copies * int(inst.size[w.tensor]))


# ---------------------------------------------------------------------- printing
def _header(e: Explanation) -> list[str]:
    latency = "not simulable" if math.isnan(e.latency) else f"{e.latency * 1e6:.3f} µs"
    return [f"{e.instance}: {e.problem} solution by {e.solver or 'an unnamed solver'}, "
            f"{'valid' if e.valid else 'INVALID'}, latency {latency}",
            f"{len(e.rows)} tensors; {sum(len(r.windows) for r in e.rows)} windows; "
            f"bytes accessed by ops {sum(r.bytes_accessed for r in e.rows)}, "
            f"copied {sum(r.bytes_copied for r in e.rows)}"]


def text_table(e: Explanation) -> str:
    """The explanation as an aligned text table, one row per tensor in file order."""
    heads = ["tensor", "kind", "bytes", "level"] + (["offset"] if e.addressed else [])
    heads += ["live (ops)", "live", "accessed", "copied", "windows"]
    body = []
    for r in e.rows:
        row = [r.name, r.kind, str(r.size), e.levels[r.home.level]]
        if e.addressed:
            row.append("" if r.home.offset is None else str(r.home.offset))
        row += [f"{r.home.first}-{r.home.last}",
                "every op" if r.kind == "weight" else span(e.ops, r.home.first, r.home.last),
                str(r.bytes_accessed), str(r.bytes_copied),
                "; ".join(w.describe(e.ops, e.levels) for w in r.windows) or "-"]
        body.append(row)
    numeric = {"bytes", "offset", "accessed", "copied"}
    widths = [max(len(h), *(len(b[j]) for b in body)) if body else len(h) for j, h in enumerate(heads)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if h in numeric else c.ljust(w)
                         for c, w, h in zip(cells, widths, heads)).rstrip()
    return "\n".join(_header(e) + ["", line(heads), line(["-" * w for w in widths]),
                                   *(line(b) for b in body)]) + "\n"


CSV_COLUMNS = ("tensor", "kind", "bytes", "role", "level", "offset", "first_op", "last_op",
               "copy_at", "evict_at", "evict_due", "bytes_accessed", "bytes_copied")


def csv_text(e: Explanation) -> str:
    """One CSV row per residence: each tensor's home (with the bytes its ops move), then
    each of its windows (with the bytes its copies move). Empty cells: not applicable."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for r in e.rows:
        for where in (r.home, *r.windows):
            home = where is r.home
            ops = e.ops
            evict = where.evict
            writer.writerow([r.name, r.kind, r.size, where.role, e.levels[where.level],
                             _cell(where.offset), ops[where.first], ops[where.last],
                             ops[where.start] if where.role == "prefetch" else "",
                             "" if evict is None else ops[evict[0]],
                             "" if evict is None else ops[evict[1]],
                             r.bytes_accessed if home else "", "" if home else where.bytes_copied])
    return out.getvalue()


def _cell(value: Any) -> Any:
    return "" if value is None else value
