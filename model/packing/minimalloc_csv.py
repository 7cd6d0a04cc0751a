"""MiniMalloc's CSV format for offset-assignment problems, read whole (docs/spec.md section 7).

Columns, with MiniMalloc's meaning (its `converter.cc`):

- `id` (aliases `buffer`, `buffer_id`): the buffer's name;
- `lower` (aliases `start`, `begin`) and `upper`: the half-open lifespan
  `[lower, upper)`; an `end` column instead of `upper` is *inclusive*: the
  lifespan is `[lower, end + 1)`, and so are the gaps' upper ends;
- `size`; `alignment` (default 1);
- `gaps`: space-separated `lo-hi` (inactive over `[lo, hi)`) or `lo-hi@wl:wu`
  (only the bytes `[offset + wl, offset + wu)` held), `hi` inclusive under `end`;
- `offset`: a pinned offset (an empty cell: not pinned);
- `hint`: a suggested offset (negative or empty: none).

Any other column is refused by name, as are two columns meaning the same thing;
nothing is ignored. A solution is the same rows, in the same columns and
spellings, with the `offset` column filled in (added last when absent), so files
move freely between memplace and MiniMalloc.
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
from memplace.model.packing.buffers import Buffer, Gap

REQUIRED = ("id", "lower", "upper", "size")
ALIASES = {"id": "id", "buffer": "id", "buffer_id": "id", "lower": "lower", "start": "lower",
           "begin": "lower", "upper": "upper", "end": "upper", "size": "size",
           "alignment": "alignment", "gaps": "gaps", "offset": "offset", "hint": "hint"}


@dataclass
class PackingFile:
    """The buffers of a CSV file, plus its header and raw rows for writing them back."""

    buffers: list[Buffer]
    fieldnames: list[str]
    rows: list[dict[str, str]]

    @property
    def column(self) -> dict[str, str]:
        """MiniMalloc's column name -> the spelling this file uses."""
        return {ALIASES[f]: f for f in self.fieldnames}


_INTEGER = re.compile(r"-?[0-9]+")
_GAP = re.compile(r"(-?[0-9]+)-(-?[0-9]+)(?:@(-?[0-9]+):(-?[0-9]+))?")


def _integer(text: str | None, column: str, where: str, low: int, high: int) -> int:
    """A decimal integer in low..high (the limits keep every sum of them inside int64)."""
    value = str(text).strip()
    if not _INTEGER.fullmatch(value) or len(value) > 20:
        raise MemplaceError(f"{where}: {column} {shown(text)} is not an integer")
    number = int(value)
    if not low <= number <= high:
        raise MemplaceError(f"{where}: {column} {number} is outside {low}..{high}")
    return number


def _gaps(text: str, addend: int, where: str) -> tuple[Gap, ...]:
    out = []
    for token in text.split():
        m = _GAP.fullmatch(token)
        if not m or any(len(g) > 20 for g in m.groups() if g):
            raise MemplaceError(f"{where}: gap {shown(token)} is not lo-hi or lo-hi@wl:wu")
        lo, hi = int(m[1]), int(m[2]) + addend
        window = None if m[3] is None else (int(m[3]), int(m[4]))
        for value in (lo, hi, *(window or ())):
            if abs(value) > MAX_BYTES:
                raise MemplaceError(f"{where}: gap {shown(token)} is outside "
                                    f"{-MAX_BYTES}..{MAX_BYTES}")
        out.append(Gap(lo, hi, window))
    return tuple(out)


def _header(fieldnames: list[str], path: Path) -> dict[str, str]:
    """MiniMalloc's name -> this file's column, refusing unknown and doubled columns."""
    seen: dict[str, str] = {}
    for name in fieldnames:
        meaning = ALIASES.get(name)
        if meaning is None:
            raise MemplaceError(f"{path}: column {shown(name)} is not one of MiniMalloc's "
                                "(id|buffer|buffer_id, lower|start|begin, upper|end, size, "
                                "alignment, gaps, offset, hint)")
        if meaning in seen:
            raise MemplaceError(f"{path}: columns {shown(seen[meaning])} and {shown(name)} "
                                f"both give the {meaning}")
        seen[meaning] = name
    missing = [c for c in REQUIRED if c not in seen]
    if missing:
        raise MemplaceError(f"{path}: header lacks column(s) {', '.join(missing)} "
                            f"(need {','.join(REQUIRED)} or their aliases)")
    return seen


def read_buffers(path: str | Path) -> PackingFile:
    """Read a MiniMalloc CSV; a malformed row raises MemplaceError naming its line and id."""
    path = Path(path)
    text = read_text(path, "MiniMalloc CSV file")
    reader = csv.DictReader(io.StringIO(text, newline=""))
    buffers, rows, ids, total = [], [], set(), 0
    try:
        fieldnames = [f.strip() for f in (reader.fieldnames or [])]
        col = _header(fieldnames, path)
        addend = 1 if col["upper"] == "end" else 0
        reader.fieldnames = fieldnames
        for row in reader:
            where = f"{path} line {reader.line_num}"
            if None in row or any(row[c] is None for c in fieldnames):
                raise MemplaceError(f"{where}: expected {len(fieldnames)} fields")
            bid = row[col["id"]].strip()
            where += f" (buffer {shown(bid)})"
            lower = _integer(row[col["lower"]], col["lower"], where, -MAX_BYTES, MAX_BYTES)
            upper = _integer(row[col["upper"]], col["upper"], where, -MAX_BYTES, MAX_BYTES) + addend
            size = _integer(row[col["size"]], "size", where, 0, MAX_BYTES)
            align = (_integer(row["alignment"], "alignment", where, 1, MAX_BYTES)
                     if "alignment" in col else 1)
            gaps = _gaps(row["gaps"], addend, where) if "gaps" in col else ()
            offset = hint = None
            if "offset" in col and row["offset"].strip():
                offset = _integer(row["offset"], "offset", where, 0, MAX_BYTES)
            if "hint" in col and row["hint"].strip():
                hint = _integer(row["hint"], "hint", where, -MAX_BYTES, MAX_BYTES)
                hint = None if hint < 0 else hint
            if bid in ids:
                raise MemplaceError(f"{where}: id {shown(bid)} appears twice")
            ids.add(bid)
            total += size
            if total >= MAX_TOTAL:
                raise MemplaceError(f"{where}: the sizes add up to over the limit of 2**62")
            try:
                buffers.append(Buffer(bid, lower, upper, size, align, gaps, offset, hint))
            except MemplaceError as exc:
                raise MemplaceError(f"{path} line {reader.line_num}: {exc}") from None
            rows.append(row)
    except csv.Error as exc:
        raise MemplaceError(f"{path} line {reader.line_num}: not valid CSV ({exc})") from None
    return PackingFile(buffers, fieldnames, rows)


def write_solution(path: str | Path, packing: PackingFile, offsets: Sequence[int]) -> None:
    """Write the rows, columns and spellings as read, with the `offset` column filled in
    (added last when the input had none), atomically (a temp file renamed into place)."""
    fieldnames = list(packing.fieldnames)
    if "offset" not in fieldnames:
        fieldnames.append("offset")
    with atomic_write(path, "packing file", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=fieldnames, lineterminator="\n")
        writer.writeheader()
        for row, offset in zip(packing.rows, offsets):
            writer.writerow({**row, "offset": int(offset)})
