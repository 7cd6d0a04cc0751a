"""MiniMalloc's CSV format for offset-assignment problems (spec section 7).

Input rows are `id,lower,upper,size` (half-open lifespans `[lower, upper)`),
with an optional `alignment` column; a solution is the same rows with an
`offset` column added, so files move freely between memplace and MiniMalloc.
Other columns are kept as they are.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from memplace.model.core.errors import MemplaceError
from memplace.model.core.files import atomic_write
from memplace.model.packing.packers import Buffer

REQUIRED = ("id", "lower", "upper", "size")


@dataclass
class PackingFile:
    """The buffers of a CSV file, plus its header and raw rows for writing them back."""

    buffers: list[Buffer]
    fieldnames: list[str]
    rows: list[dict[str, str]]


def _integer(text: str | None, column: str, where: str) -> int:
    try:
        return int(str(text).strip())
    except ValueError:
        raise MemplaceError(f"{where}: {column} {text!r} is not an integer") from None


def read_buffers(path: str | Path) -> PackingFile:
    """Read a MiniMalloc CSV; a malformed row raises MemplaceError naming its line and id."""
    path = Path(path)
    try:
        handle = path.open(newline="", encoding="utf-8")
    except OSError as exc:
        raise MemplaceError(f"{path}: cannot read ({exc.strerror})") from None
    with handle:
        reader = csv.DictReader(handle)
        fieldnames = [f.strip() for f in (reader.fieldnames or [])]
        missing = [c for c in REQUIRED if c not in fieldnames]
        if missing:
            raise MemplaceError(f"{path}: header lacks column(s) {', '.join(missing)} "
                                f"(need {','.join(REQUIRED)})")
        reader.fieldnames = fieldnames
        buffers, rows, ids = [], [], set()
        for row in reader:
            where = f"{path} line {reader.line_num}"
            if None in row or any(row[c] is None for c in fieldnames):
                raise MemplaceError(f"{where}: expected {len(fieldnames)} fields")
            where += f" (buffer {row['id']!r})"
            lower = _integer(row["lower"], "lower", where)
            upper = _integer(row["upper"], "upper", where)
            size = _integer(row["size"], "size", where)
            align = _integer(row["alignment"], "alignment", where) if "alignment" in row else 1
            bid = row["id"].strip()
            if bid in ids:
                raise MemplaceError(f"{where}: id {bid!r} appears twice")
            ids.add(bid)
            try:
                buffers.append(Buffer(bid, lower, upper, size, align))
            except MemplaceError as exc:
                raise MemplaceError(f"{path} line {reader.line_num}: {exc}") from None
            rows.append(row)
    return PackingFile(buffers, fieldnames, rows)


def write_solution(path: str | Path, packing: PackingFile, offsets: Sequence[int]) -> None:
    """Write the rows with their `offset` column, atomically (a temp file renamed into place)."""
    path = Path(path)
    fieldnames = [f for f in packing.fieldnames if f != "offset"] + ["offset"]
    with atomic_write(path, newline="") as out:
        writer = csv.DictWriter(out, fieldnames=fieldnames, lineterminator="\n")
        writer.writeheader()
        for row, offset in zip(packing.rows, offsets):
            writer.writerow({**row, "offset": int(offset)})
