"""Reading (and writing) a user's file at the edge: it exists, is a file, is not huge,
is UTF-8 and, for JSON, is strict JSON of bounded nesting.

Every reader of the project (instance and solution JSON, MiniMalloc CSV, plan TOML,
`runs.jsonl`) goes through these functions, so the same bad input gets the same
one-line error (a `MemplaceError` subclass chosen by the caller) naming the file and
what is wrong, never a traceback:

- a missing path, a folder, or anything that is not a regular file;
- a file over `MAX_FILE_BYTES` (read into memory whole, so it must fit);
- bytes that are not UTF-8 (the byte offset is named);
- JSON that Python's parser would accept but the JSON standard does not: `NaN`,
  `Infinity`, `-Infinity`;
- JSON nested more than `MAX_NESTING` levels deep (a RecursionError later, in
  whatever walks or re-serialises the value, otherwise);
- integers with more digits than Python converts (its 4300-digit guard).

`write_atomically` writes an output through a temporary file renamed into place, so
a command that fails never leaves a half-written or clobbered file behind.

Range checks of the values themselves (integers beyond 64 bits, negative sizes, ...)
belong to each reader, which knows what a field means; `shown` formats an offending
value for its message, cut short when it is long or deeply nested.
"""
from __future__ import annotations

import gc
import json
import math
import os
import reprlib
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from memplace.model.core.errors import MemplaceError

MAX_FILE_BYTES = 1 << 30  # 1 GiB: a 100,000-op instance is about 23 MB
MAX_NESTING = 64  # project files go 6 deep; the margin is for unknown keys
# Sizes, byte counts, capacities, alignments and offsets: every one converts to float64
# exactly (the cost model divides bytes by bandwidths in float64).
MAX_BYTES = 1 << 53
# Sums of them (all tensors' sizes, one tensor's traffic, a packing's sizes) stay below
# this, so the int64 arithmetic of loads, offsets and traffic never overflows.
MAX_TOTAL = 1 << 62

_shown = reprlib.Repr()
_shown.maxlevel, _shown.maxstring, _shown.maxother = 3, 60, 60
_shown.maxlist = _shown.maxdict = 6


def is_int(value: Any) -> bool:
    """A JSON integer (a bool is not one)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """A finite JSON number (a bool is not one; an integer too big for a float is not)."""
    if isinstance(value, float):
        return math.isfinite(value)
    if not is_int(value):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def shown(value: Any) -> str:
    """A short repr of a value for an error message (long or deep values are elided)."""
    return _shown.repr(value)


def read_bytes(path: str | Path, what: str, error: type[MemplaceError] = MemplaceError,
               max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file; `what` names it in errors ("instance file")."""
    path = Path(path)
    try:
        info = path.stat()
    except FileNotFoundError:
        raise error(f"{what} {path}: no such file") from None
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        raise error(f"{what} {path}: is a folder, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise error(f"{what} {path}: not a regular file")
    if info.st_size > max_bytes:
        raise error(f"{what} {path}: {info.st_size} bytes, over the limit of {max_bytes} bytes")
    try:
        with path.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    if len(data) > max_bytes:  # grew while being read
        raise error(f"{what} {path}: over the limit of {max_bytes} bytes")
    return data


def decode_utf8(data: bytes, where: str, error: type[MemplaceError] = MemplaceError) -> str:
    """UTF-8 text, or an error naming the first byte that is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{where}: not UTF-8 text (byte {exc.start} is "
                    f"{data[exc.start:exc.start + 1]!r})") from None


def read_text(path: str | Path, what: str, error: type[MemplaceError] = MemplaceError,
              max_bytes: int = MAX_FILE_BYTES) -> str:
    """A UTF-8 text file, checked as `read_bytes` and `decode_utf8` do."""
    return decode_utf8(read_bytes(path, what, error, max_bytes), f"{what} {path}", error)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


@contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic GC runs again and again while a big file's objects are built
    (each run walks every object built so far), though none of them can form a cycle;
    pausing it while a file is parsed and checked makes loading ~3x faster."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


_STRUCTURE = b'[]{}"'
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in _STRUCTURE)


def nesting_depth(text: str | bytes) -> int:
    """The deepest nesting of arrays and objects in JSON text (brackets inside strings
    do not count).

    Fast on big files: escapes are dropped (`\\\\` pairs first, then `\\"`), every byte
    but brackets and quotes is deleted, and adjacent quotes are removed in pairs (which
    leaves every bracket's inside-a-string parity unchanged), so NumPy only sees the
    brackets and the quotes around strings that hold brackets."""
    raw = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    if b"\\" in raw:
        raw = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    kept = raw.translate(None, _NOT_STRUCTURE)
    while b'""' in kept:
        kept = kept.replace(b'""', b"")
    chars = np.frombuffer(kept, np.uint8)
    inside = np.cumsum(chars == ord('"')) % 2 == 1  # after an odd number of quotes
    step = np.zeros(chars.size, np.int8)
    step[(chars == ord("[")) | (chars == ord("{"))] = 1
    step[(chars == ord("]")) | (chars == ord("}"))] = -1
    return int(np.cumsum(step[~inside], dtype=np.int64).max(initial=0))


def parse_json(text: str | bytes, where: str, error: type[MemplaceError] = MemplaceError,
               raw: bytes | None = None) -> Any:
    """Strict JSON: no NaN or Infinity, at most MAX_NESTING levels deep; errors name `where`
    and the line and column. `raw` is the text's UTF-8 bytes when the caller has them."""
    depth = nesting_depth(raw if raw is not None else text)
    if depth > MAX_NESTING:
        raise error(f"{where}: JSON nested {depth} levels deep (the limit is {MAX_NESTING})")
    try:
        with gc_paused():
            return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise error(f"{where}: not valid JSON ({exc.msg} at line {exc.lineno} "
                    f"column {exc.colno})") from None
    except UnicodeDecodeError as exc:  # bytes given: the JSON module decodes them itself
        raise error(f"{where}: not UTF-8 text (byte {exc.start})") from None
    except (ValueError, RecursionError) as exc:  # NaN/Infinity, or an integer too long to convert
        raise error(f"{where}: not valid JSON ({str(exc).split(';')[0]})") from None


def read_json(path: str | Path, what: str, error: type[MemplaceError] = MemplaceError,
              max_bytes: int = MAX_FILE_BYTES) -> Any:
    """A strict JSON file (see `parse_json`), checked as `read_bytes` does."""
    raw = read_bytes(path, what, error, max_bytes)
    where = f"{what} {path}"
    return parse_json(decode_utf8(raw, where, error), where, error, raw)


def write_atomically(path: str | Path, text: str, what: str,
                     error: type[MemplaceError] = MemplaceError) -> None:
    """Write a text file through a temporary file renamed into place: a failure (a
    missing folder, a full disk) leaves whatever was at `path` as it was."""
    path = Path(path)
    if path.is_dir():
        raise error(f"cannot write {what} {path}: is a folder")
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        raise error(f"cannot write {what} {path}: {exc.strerror or exc}") from None
