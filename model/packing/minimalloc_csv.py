"""MiniMalloc's CSV format for offset-assignment problems (docs/spec.md section 7).

Input rows are `id,lower,upper,size` (half-open lifespans `[lower, upper)`),
with an optional `alignment` column; a solution is the same rows with an
`offset` column added, so files move freely between memplace and MiniMalloc.
Other columns are kept as they are.
"""
from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from memplace.model.core.errors import MemplaceError
from memplace.model.core.files import atomic_write
from memplace.model.core.reading import MAX_BYTES, MAX_TOTAL, read_text, shown
from memplace.model.packing.packers import Buffer

REQUIRED = ("id", "lower", "upper", "size")


@dataclass
class PackingFile:
    """The buffers of a CSV file, plus its header and raw rows for writing them back."""

    buffers: list[Buffer]
    fieldnames: list[str]
    rows: list[dict[str, str]]


_INTEGER = re.compile(r"-?[0-9]+")


def _integer(text: str | None, column: str, where: str, low: int, high: int) -> int:
    """A decimal integer in low..high (the limits keep every sum of them inside int64)."""
    value = str(text).strip()
    if not _INTEGER.fullmatch(value) or len(value) > 20:
        raise MemplaceError(f"{where}: {column} {shown(text)} is not an integer")
    number = int(value)
    if not low <= number <= high:
        raise MemplaceError(f"{where}: {column} {number} is outside {low}..{high}")
    return number


def read_buffers(path: str | Path) -> PackingFile:
    """Read a MiniMalloc CSV; a malformed row raises MemplaceError naming its line and id."""
    path = Path(path)
    text = read_text(path, "MiniMalloc CSV file")
    reader = csv.DictReader(io.StringIO(text, newline=""))
    buffers, rows, ids, total = [], [], set(), 0
    try:
        fieldnames = [f.strip() for f in (reader.fieldnames or [])]
        missing = [c for c in REQUIRED if c not in fieldnames]
        if missing:
            raise MemplaceError(f"{path}: header lacks column(s) {', '.join(missing)} "
                                f"(need {','.join(REQUIRED)})")
        reader.fieldnames = fieldnames
        for row in reader:
            where = f"{path} line {reader.line_num}"
            if None in row or any(row[c] is None for c in fieldnames):
                raise MemplaceError(f"{where}: expected {len(fieldnames)} fields")
            where += f" (buffer {shown(row['id'])})"
            lower = _integer(row["lower"], "lower", where, -MAX_BYTES, MAX_BYTES)
            upper = _integer(row["upper"], "upper", where, -MAX_BYTES, MAX_BYTES)
            size = _integer(row["size"], "size", where, 0, MAX_BYTES)
            align = (_integer(row["alignment"], "alignment", where, 1, MAX_BYTES)
                     if "alignment" in row else 1)
            bid = row["id"].strip()
            if bid in ids:
                raise MemplaceError(f"{where}: id {shown(bid)} appears twice")
            ids.add(bid)
            total += size
            if total >= MAX_TOTAL:
                raise MemplaceError(f"{where}: the sizes add up to over the limit of 2**62")
            try:
                buffers.append(Buffer(bid, lower, upper, size, align))
            except MemplaceError as exc:
                raise MemplaceError(f"{path} line {reader.line_num}: {exc}") from None
            rows.append(row)
    except csv.Error as exc:
        raise MemplaceError(f"{path} line {reader.line_num}: not valid CSV ({exc})") from None
    return PackingFile(buffers, fieldnames, rows)


def write_solution(path: str | Path, packing: PackingFile, offsets: Sequence[int]) -> None:
    """Write the rows with their `offset` column, atomically (a temp file renamed into place)."""
    fieldnames = [f for f in packing.fieldnames if f != "offset"] + ["offset"]
    with atomic_write(path, "packing file", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=fieldnames, lineterminator="\n")
        writer.writeheader()
        for row, offset in zip(packing.rows, offsets):
            writer.writerow({**row, "offset": int(offset)})
