"""The runs file: one JSON record per line in `runs.jsonl`, appended as runs finish.

Record schema (every key is always present; `null` where a value does not apply):

    instance         str    the instance's name (`resnet50@nnpi`)
    instance_source  str    what loads it again (bench/instance_source.py): a built-in name,
                            a file of memplace by its path relative to the package (the
                            repository's root), any other file by its absolute path
    instance_sha256  str    sha256 of the canonical instance file (memplace.instances.dumps,
                            UTF-8); for a built-in instance, the committed file's bytes
    solver           str    registered solver name
    params           dict   every solver parameter, defaults filled in
    seed             int
    time_limit       float  seconds the solver was given
    status           str    "optimal" | "feasible" (a valid placement was found and checked)
                            or "error" | "timeout" | "killed" | "oom" (no result)
    latency          float  seconds (docs/spec.md section 4) of the placement; null on failure
    lower_bound      float  a proven lower bound, or null
    wall_s           float  seconds the solve took (for a failure: until it was seen)
    evaluations      int    placements evaluated; null on failure
    trace            list   the anytime trace [[seconds, evaluations, best latency], ...]
    placement        list   level name of every tensor (as in solution files); null on failure
    offsets          list   offset per tensor (null off addressed levels); null when the
                            instance has no addressed level or on failure
    notes            dict   the solver's extra facts (e.g. hard_stop, no_incumbent); an
                            infinite or NaN number in them is stored as null
    error            str    what went wrong (status error/timeout/killed/oom), else null
    version          str    memplace version that made the record
    code             dict   {commit, dirty, package}: the git commit of the checkout that
                            ran it and whether its tree (results/ aside) was dirty, or
                            null commit outside a git checkout (optional: older files lack it)
    machine          dict   {hostname, cpu, cores, python} of the machine that ran it

A run's identity (its key) is (instance, instance_sha256, solver, params, seed,
time_limit). The file may hold several records of one key (a failed run retried
with --retry-failed); readers keep the last one.

Only the parent process writes, one `os.write` of a whole line per record on a
descriptor opened with O_APPEND, then fsync, so a killed batch leaves whole lines.
A line that is not a complete record is reported with its line number, never skipped.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Iterable

from memplace.bench.task import run_key
from memplace.model.core.errors import MemplaceError
from memplace.model.core.reading import decode_utf8, is_int, is_number, parse_json, read_bytes, shown

RUNS_FILE = "runs.jsonl"
OK_STATUSES = ("optimal", "feasible")
FAIL_STATUSES = ("error", "timeout", "killed", "oom")
FIELDS = ("instance", "instance_source", "instance_sha256", "solver", "params", "seed",
          "time_limit", "status", "latency", "lower_bound", "wall_s", "evaluations", "trace",
          "placement", "offsets", "notes", "error", "version", "machine", "problem",
          "code")
# Fields a record written before they existed may lack (a missing `problem` means static).
LATER_FIELDS = ("problem", "code")  # code: which commit made the run


class RunsFileError(MemplaceError):
    """A runs file with a line that is not a complete record."""


def record_key(record: dict[str, Any]) -> tuple:
    return run_key(record["instance"], record["instance_sha256"], record["solver"],
                   record["params"], record["seed"], record["time_limit"])


def is_ok(record: dict[str, Any]) -> bool:
    return record["status"] in OK_STATUSES


def read_runs(path: str | Path) -> list[dict[str, Any]]:
    """Every record of a runs file, in file order; a torn or corrupted line raises
    RunsFileError naming the line (and how to get past it). Nothing is ever written here."""
    path = Path(path)
    if not path.exists():
        raise RunsFileError(f"no runs file {path}")
    data = read_bytes(path, "runs file", RunsFileError)
    records = []
    lines = data.split(b"\n")
    for number, raw in enumerate(lines, start=1):
        last = number == len(lines)
        if last and raw == b"":
            break
        problem = None
        if last:
            problem = "the line is not terminated (a write cut short)"
        else:
            try:
                record = parse_json(decode_utf8(raw, "the line", RunsFileError), "the line",
                                    RunsFileError, raw)
            except RunsFileError as exc:
                problem = str(exc).removeprefix("the line: ")
            else:
                problem = _record_problem(record)
        if problem:
            raise RunsFileError(
                f"{path}:{number}: corrupted run record: {problem}. Delete that line "
                f"(e.g. sed -i '{number}d' {path}) and run `memplace bench ... --resume` "
                "to redo the run it held")
        records.append(record)
    return records


def _number_or_none(value: Any) -> bool:
    return value is None or is_number(value)


# What each field must hold (the schema in the module docstring).
_FIELD_RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "instance": (lambda v: isinstance(v, str), "a string"),
    "instance_source": (lambda v: isinstance(v, str), "a string"),
    "instance_sha256": (lambda v: isinstance(v, str), "a string"),
    "solver": (lambda v: isinstance(v, str), "a string"),
    "params": (lambda v: isinstance(v, dict), "an object"),
    "seed": (lambda v: is_int(v) and 0 <= v < 1 << 63, "an integer in 0..2**63-1"),
    "time_limit": (lambda v: is_number(v) and v > 0, "a number > 0"),
    "status": (lambda v: v in OK_STATUSES + FAIL_STATUSES,
               f"one of {', '.join(OK_STATUSES + FAIL_STATUSES)}"),
    "latency": (_number_or_none, "a number or null"),
    "lower_bound": (_number_or_none, "a number or null"),
    "wall_s": (lambda v: is_number(v) and v >= 0, "a number >= 0"),
    "evaluations": (lambda v: v is None or (is_int(v) and v >= 0), "an integer >= 0 or null"),
    "trace": (lambda v: isinstance(v, list) and all(
        isinstance(p, list) and len(p) == 3 and all(map(is_number, p)) for p in v),
        "a list of [seconds, evaluations, latency] numbers"),
    "placement": (lambda v: v is None or (isinstance(v, list) and all(isinstance(n, str) for n in v)),
                  "a list of level names or null"),
    "offsets": (lambda v: v is None or (isinstance(v, list) and all(
        o is None or is_int(o) for o in v)), "a list of integers and nulls, or null"),
    "notes": (lambda v: isinstance(v, dict), "an object"),
    "error": (lambda v: v is None or isinstance(v, str), "a string or null"),
    "version": (lambda v: isinstance(v, str), "a string"),
    "machine": (lambda v: isinstance(v, dict), "an object"),
    "problem": (lambda v: isinstance(v, str), "a problem's name (a string)"),
    "code": (lambda v: isinstance(v, dict), "an object (commit, dirty, package)"),
}


def _record_problem(record: Any) -> str | None:
    if not isinstance(record, dict):
        return "not a JSON object"
    missing = [key for key in FIELDS if key not in record and key not in LATER_FIELDS]
    if missing:
        return f"missing field {missing[0]!r}"
    for key in FIELDS:
        check, meaning = _FIELD_RULES[key]
        if key in record and not check(record[key]):
            return f"field {key!r} must be {meaning}, got {shown(record[key])}"
    if record["status"] in OK_STATUSES and (record["latency"] is None or record["placement"] is None):
        return f"status {record['status']!r} needs a latency and a placement"
    if "problem" in record:
        from memplace.model.core.problem import problem
        try:
            problem(record["problem"])
        except MemplaceError as exc:
            return str(exc)
    return None


def latest_by_key(records: Iterable[dict[str, Any]]) -> dict[tuple, dict[str, Any]]:
    """The last record of every run key, in order of first appearance."""
    return {record_key(record): record for record in records}  # a later one replaces, in place


class RunStore:
    """Appends records to `runs.jsonl` in one folder (the single writer)."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self.path = self.folder / RUNS_FILE

    def records(self) -> list[dict[str, Any]]:
        return read_runs(self.path) if self.path.is_file() else []  # an empty file reads as []

    def append(self, record: dict[str, Any]) -> None:
        line = (json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n").encode("utf-8")
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)  # less the umask
        try:
            written = os.write(fd, line)
            if written != len(line):  # a full disk; leave a torn line for read_runs to report
                raise OSError(f"short write to {self.path}: {written} of {len(line)} bytes")
            os.fsync(fd)
        finally:
            os.close(fd)
