"""XLA's heap as a packing baseline: the temp buffers of XLA's buffer assignment as a
MiniMalloc CSV (spec section 7), and XLA's own offsets for them.

Read from a dump (`XLA_FLAGS=--xla_dump_to=DIR --xla_dump_hlo_as_text`, or the
same options passed to `.compile()`): `*-buffer-assignment.txt` gives each
allocation and, for every HLO value in it, its offset and size;
`*-live-range.txt` gives each value's live range on XLA's flattened schedule
(`name{index}:start-end`, inclusive steps of `HloLiveRange`, the sequence the
heap simulator packs over).

The packing problem holds the values of XLA's temp allocations (not
parameters, outputs or what may be live out, constants or thread-local scalars: the
allocations whose sizes add up to `memory_analysis().temp_size_in_bytes`), on XLA's time axis:
`lower = start`, `upper = end + 1`. XLA shares one buffer between values
where a value is defined in place of another (a while loop's state and its
body's parameter and root, a tuple and its elements' phis, an output written
over an operand that dies at that instruction, a dynamic-update-slice's
buffer): such values sit at the same offset with overlapping live ranges. The
CSV cannot express two buffers at one address at one time, so values of one
temp allocation at the same offset whose live ranges overlap are merged into
one row (their union range, their largest size); `merged` in the JSON beside
the CSV lists each such group. After merging, XLA's offsets must be a valid
packing of the CSV, which `heap_baseline` checks.

Alignment: every row carries XLA's alignment for the CPU (`XLA_CPU_ALIGNMENT`,
checked: every offset XLA chose is a multiple of it).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memplace.instances.xla.errors import XlaImportError
from memplace.model.packing.packers import Buffer, check_packing, peak_live_size

XLA_CPU_ALIGNMENT = 64  # bytes; XLA's CPU backend aligns every buffer offset to this
_ALLOCATION = re.compile(r"^allocation (\d+): size (\d+)(.*):\s*$")
_VALUE = re.compile(r"^\s*value: <\d+ (\S+)(?: \(phi\))? @\d+> \(size=(\d+),offset=(\d+)\)")
_RANGE = re.compile(r"^\s*(\S+?\{[0-9,]*\}):(\d+)-(\d+)\s*$")


@dataclass
class HeapBaseline:
    """The packing problem of XLA's temp buffers and XLA's own solution to it."""

    buffers: list[Buffer]
    offsets: list[int]
    heap_size: int  # bytes of XLA's temp allocations (its `temp_size_in_bytes`)
    alignment: int
    allocations: list[dict[str, int]]
    merged: list[list[str]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        """Why XLA's offsets are not a packing of the CSV ([] when they are)."""
        return check_packing(self.buffers, self.offsets, self.heap_size)

    def record(self, source: str) -> dict[str, Any]:
        return {"format": "memplace-xla-heap/1", "source": source,
                "heap_size": self.heap_size, "alignment": self.alignment,
                "buffers": len(self.buffers), "peak_live_size": peak_live_size(self.buffers),
                "allocations": self.allocations, "merged": self.merged,
                "values_without_live_range": self.skipped}


def _key(value_name: str) -> str:
    return value_name if "{" in value_name else value_name + "{}"


def read_live_ranges(text: str, where: str) -> dict[str, tuple[int, int]]:
    ranges: dict[str, tuple[int, int]] = {}
    inside = False
    for line in text.splitlines():
        if line.strip().startswith("BufferLiveRange"):
            inside = True
            continue
        if inside:
            match = _RANGE.match(line)
            if match is None:
                if line.strip() and not line.startswith("    "):
                    inside = False
                continue
            ranges[match.group(1)] = (int(match.group(2)), int(match.group(3)))
    if not ranges:
        raise XlaImportError(f"{where}: no BufferLiveRange entries (not an XLA live-range dump)")
    return ranges


def heap_baseline(assignment: str, live_ranges: str, where: str = "buffer assignment",
                  alignment: int = XLA_CPU_ALIGNMENT) -> HeapBaseline:
    """XLA's temp buffers as packing rows and XLA's offsets, from the two dump texts."""
    ranges = read_live_ranges(live_ranges, f"{where} (live ranges)")
    allocations: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for number, line in enumerate(assignment.splitlines(), 1):
        match = _ALLOCATION.match(line)
        if match:
            tags = match.group(3)
            temp = not any(t in tags for t in ("parameter", "output shape", "maybe-live-out",
                                               "constant", "thread-local"))
            current = {"index": int(match.group(1)), "size": int(match.group(2)),
                       "temp": temp, "values": []}
            allocations.append(current)
            continue
        value = _VALUE.match(line)
        if value and current is not None:
            current["values"].append((value.group(1), int(value.group(2)), int(value.group(3))))
        elif line.startswith(" value:"):
            raise XlaImportError(f"{where} line {number}: cannot read {line.strip()[:80]!r}")
        elif line.strip() and not line.startswith(("BufferAssignment", "allocation", " ")):
            current = None  # the statistics and value listings after the allocations
    if not allocations:
        raise XlaImportError(f"{where}: no allocations (not an XLA buffer-assignment dump)")
    buffers, offsets, merged, skipped, base, temps = [], [], [], [], 0, []
    for allocation in (a for a in allocations if a["temp"]):
        temps.append({"index": allocation["index"], "size": allocation["size"], "base": base})
        by_offset: dict[int, list[tuple[int, int, int, str]]] = {}
        for name, size, offset in allocation["values"]:
            found = ranges.get(_key(name))
            if found is None:
                skipped.append(name)
                continue
            if offset % alignment:
                raise XlaImportError(f"{where}: value {name} at offset {offset} breaks the "
                                     f"alignment {alignment} assumed for XLA's CPU heap")
            by_offset.setdefault(offset, []).append((found[0], found[1], size, name))
        for offset, values in sorted(by_offset.items()):
            values.sort()
            group: list[tuple[int, int, int, str]] = []
            for value in values + [None]:
                if group and (value is None or value[0] > max(v[1] for v in group)):
                    lo, hi = group[0][0], max(v[1] for v in group)
                    size = max(v[2] for v in group)
                    ident = group[0][3] if len(group) == 1 else f"{group[0][3]}+{len(group) - 1}"
                    if len(group) > 1:
                        merged.append([v[3] for v in group])
                    if size > 0:
                        buffers.append(Buffer(ident, lo, hi + 1, size, alignment))
                        offsets.append(base + offset)
                    group = []
                if value is not None:
                    group.append(value)
        base += allocation["size"]
    return HeapBaseline(buffers, offsets, base, alignment, temps, merged, skipped)


def write_baseline(baseline: HeapBaseline, csv_path: str | Path, source: str) -> tuple[Path, Path]:
    """Write the CSV (`id,lower,upper,size,alignment`), XLA's solution beside it
    (`NAME.xla.csv`: the same rows with XLA's `offset`) and `NAME.xla.json` (heap size,
    alignment, temp allocations, merged groups). Returns the two paths written beside."""
    csv_path = Path(csv_path)
    stem = csv_path.with_suffix("")
    solution, record = Path(f"{stem}.xla.csv"), Path(f"{stem}.xla.json")
    header = "id,lower,upper,size,alignment"
    rows = [f"{b.id},{b.lower},{b.upper},{b.size},{b.alignment}" for b in baseline.buffers]
    try:
        csv_path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
        solution.write_text("\n".join([header + ",offset", *(f"{r},{o}" for r, o in
                                                               zip(rows, baseline.offsets))]) + "\n",
                            encoding="utf-8")
        record.write_text(json.dumps(baseline.record(source), indent=1) + "\n", encoding="utf-8")
    except OSError as exc:
        raise XlaImportError(f"cannot write {exc.filename}: {exc.strerror}") from None
    return solution, record


@dataclass
class HeapComparison:
    """memplace's packing of XLA's temp buffers against XLA's own heap."""

    buffers: int
    xla_height: int
    xla_valid: list[str]  # problems of XLA's offsets as a packing of the CSV ([] = valid)
    height: int
    lower_bound: int
    status: str
    seconds: float
    check: list[str]  # problems of memplace's packing ([] = valid)

    @property
    def saving(self) -> float:
        """Fraction of XLA's heap memplace's packing saves."""
        return 1.0 - self.height / self.xla_height if self.xla_height else 0.0


def compare_heap(csv_path: str | Path, time_limit: float = 10.0) -> HeapComparison:
    """Pack the CSV (memplace's `minimize`, no higher than XLA's heap) and check both
    packings; XLA's offsets and heap size are read from `NAME.xla.csv` and `NAME.xla.json`."""
    from memplace.model.packing.minimalloc_csv import read_buffers
    from memplace.model.packing.packers import minimize
    csv_path = Path(csv_path)
    stem = csv_path.with_suffix("")
    problem = read_buffers(csv_path)
    solution = read_buffers(f"{stem}.xla.csv")
    try:
        record = json.loads(Path(f"{stem}.xla.json").read_text(encoding="utf-8"))
        xla_height = int(record["heap_size"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise XlaImportError(f"{stem}.xla.json: cannot read XLA's heap size ({exc})") from None
    if [b.id for b in solution.buffers] != [b.id for b in problem.buffers]:
        raise XlaImportError(f"{stem}.xla.csv does not hold the rows of {csv_path.name}")
    try:
        xla_offsets = [int(row["offset"]) for row in solution.rows]
    except (KeyError, ValueError):
        raise XlaImportError(f"{stem}.xla.csv: every row needs an integer offset") from None
    xla_problems = check_packing(problem.buffers, xla_offsets, xla_height)
    if not problem.buffers:  # XLA keeps nothing in its heap: nothing to pack
        return HeapComparison(0, xla_height, xla_problems, 0, 0, "packed", 0.0, [])
    result, lower = minimize(problem.buffers, time_limit=time_limit, capacity=xla_height)
    if result.status != "packed":
        return HeapComparison(len(problem.buffers), xla_height, xla_problems, xla_height, lower,
                              result.status, result.wall_s, ["memplace found no packing"])
    check = check_packing(problem.buffers, result.offsets, result.height)
    return HeapComparison(len(problem.buffers), xla_height, xla_problems, int(result.height),
                          int(lower), result.status, result.wall_s, check)
