"""Bad input never ends in a traceback: mutated versions of REAL files (a committed
instance, a solution a solver wrote, a MiniMalloc CSV, a shipped plan, a runs.jsonl of
a tiny run) fed to each reader and to the command line either load and are valid, or
give one `error:` line naming the item and exit status 2; a failing command never
loses what was already written (an -o file, a runs.jsonl)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memplace.cli import main
from memplace.bench.plan import PlanError, load_plan
from memplace.bench.results import Results
from memplace.bench.store import RunsFileError, read_runs
from memplace.instances import builtin_path
from memplace.model import Instance, InstanceError, Solution, SolutionError
from memplace.model.core.errors import MemplaceError
from memplace.model.core.reading import shown
from memplace.model.packing import BENCHMARKS
from memplace.model.packing.minimalloc_csv import read_buffers
from memplace.solvers import solve

ROOT = Path(__file__).resolve().parents[2]
MINIMALLOC_CSV = BENCHMARKS / "minimalloc" / "examples" / "input.12.csv"
INSTANCES = ("vgg16@edge-npu", "vgg16@nnpi")  # small; edge-npu has an addressed level
FUZZ = settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", 30)), deadline=None, derandomize=not os.environ.get("FUZZ_EXAMPLES"),
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# ---------------------------------------------------------------------- mutations
# Values that a reader must refuse or accept cleanly wherever they turn up.
NASTY = [10**30, 2**63, 2**64, -(2**63) - 1, 2**53 + 1, -1, 0, 1.5, True, False, None,
         "", "x", [], {}, [[0, 1]], {"name": 1}, float("nan"), float("inf"), -float("inf")]


def _paths(value: Any, path: tuple = ()) -> list[tuple]:
    """Every path into a JSON value (keys and indices), the root included."""
    out = [path]
    if isinstance(value, dict):
        for key, child in value.items():
            out += _paths(child, path + (key,))
    elif isinstance(value, list):
        for index, child in enumerate(value[:4]):  # the first few items stand for the rest
            out += _paths(child, path + (index,))
    return out


def _replace(value: Any, path: tuple, new: Any, delete: bool = False) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    copy = dict(value) if isinstance(value, dict) else list(value)
    if delete and not rest:
        del copy[head]
    else:
        copy[head] = _replace(value[head], rest, new, delete)
    return copy


def every_field_swap(data: Any) -> list[tuple[tuple, Any]]:
    """(path, value) for every nasty value (or a deletion, value `...`) at every path
    that goes through the first item of each list: exhaustive where the random
    mutations are sparse."""
    paths = [p for p in _paths(data) if p and all(k == 0 for k in p if isinstance(k, int))]
    return [(path, value) for path in paths for value in NASTY + [...]]


def apply_swap(data: Any, path: tuple, value: Any) -> str:
    return json.dumps(_replace(data, path, None, delete=True) if value is ... else
                      _replace(data, path, value))


@st.composite
def json_mutation(draw, data: Any) -> str:
    """A JSON text of `data` with one value swapped for a nasty one, a key or item
    deleted, or a value nested deep."""
    paths = _paths(data)
    depth = draw(st.integers(0, max(map(len, paths))))  # a depth first: shallow keys get their share
    path = draw(st.sampled_from([p for p in paths if len(p) == depth] or paths))
    kind = draw(st.sampled_from(["swap", "delete", "nest"]))
    if kind == "delete" and path:
        mutated = _replace(data, path, None, delete=True)
    elif kind == "nest":  # spliced in as text: Python's json cannot write it that deep
        depth = draw(st.sampled_from([3, 70, 990, 5000]))
        text = json.dumps(_replace(data, path, "@nest@"))
        return text.replace('"@nest@"', "[" * depth + "1" + "]" * depth)
    else:
        mutated = _replace(data, path, draw(st.sampled_from(NASTY)))
    return json.dumps(mutated)  # NaN and Infinity come out as Python's non-standard literals


@st.composite
def byte_mutation(draw, raw: bytes) -> bytes:
    """The bytes with a few flipped, a cut, or non-UTF-8 bytes spliced in."""
    kind = draw(st.sampled_from(["flip", "truncate", "splice", "empty"]))
    if kind == "empty":
        return b""
    at = draw(st.integers(0, len(raw) - 1))
    if kind == "truncate":
        return raw[:at]
    if kind == "splice":
        return raw[:at] + draw(st.sampled_from([b"\xff\xfe", b"\x00", b"\xc3", b"]]]", b"{"])) + raw[at:]
    out = bytearray(raw)
    for _ in range(draw(st.integers(1, 3))):
        out[draw(st.integers(0, len(raw) - 1))] = draw(st.integers(0, 255))
    return bytes(out)


def mutated(raw: bytes, as_json: bool = True) -> st.SearchStrategy[bytes]:
    strategies = [byte_mutation(raw)]
    if as_json:
        strategies.append(json_mutation(json.loads(raw)).map(str.encode))
    return st.one_of(*strategies)


# ---------------------------------------------------------------------- outcomes
def assert_clean_error(exc: BaseException, kind: type[MemplaceError]) -> None:
    assert isinstance(exc, kind), f"{type(exc).__name__}: {exc}"
    text = str(exc)
    assert text and "\n" not in text and "Traceback" not in text


def run_cli(*args: Any) -> Any:
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{type(result.exception).__name__}: {result.exception}")
    assert "Traceback" not in result.output
    if result.exit_code == 2:
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return result


def assert_cli_refuses(*args: Any) -> str:
    """The command fails with one error line and exit status 2; returns that line."""
    result = run_cli(*args)
    assert result.exit_code == 2, result.output
    return result.stderr.strip()


def read_or_refused(path: Path, read: Any, kind: type[MemplaceError], *commands: tuple) -> Any:
    """What `read(path)` returns, or None when it raises `kind`: then that error must be one
    clean line naming the file once, and each command (a tuple of arguments) must refuse
    the file with one error line and exit status 2."""
    try:
        return read(path)
    except kind as exc:
        assert_clean_error(exc, kind)
        assert str(exc).count(str(path)) == 1  # names the file, once
        for command in commands:
            assert_cli_refuses(*command)
        return None


# ---------------------------------------------------------------------- instances
@pytest.mark.parametrize("name", INSTANCES)
def test_mutated_instance_loads_valid_or_gives_one_error_line(name, tmp_path):
    raw = builtin_path(name).read_bytes()
    path = tmp_path / "instance.json"

    @FUZZ
    @given(mutated(raw))
    def check(data: bytes) -> None:
        path.write_bytes(data)
        inst = read_or_refused(path, Instance.from_file, InstanceError, ("instances", "show", path))
        if inst is not None:
            assert inst.n_tensors == inst.size.size and (inst.size > 0).all()
            assert run_cli("instances", "show", path).exit_code == 0

    check()


def test_every_field_of_an_instance_swapped_loads_or_gives_one_error_line(tmp_path):
    data = json.loads(builtin_path("vgg16@edge-npu").read_bytes())
    path = tmp_path / "instance.json"
    for field, value in every_field_swap(data):
        path.write_text(apply_swap(data, field, value))
        if read_or_refused(path, Instance.from_file, InstanceError) is not None:
            # it loads: the command that prints every part of it must too
            assert run_cli("instances", "show", path).exit_code == 0, (field, value)


@pytest.mark.parametrize("field, value, words", [
    (("workload", "tensors", 0, "size"), 10**30, ["tensor 0", "size"]),
    (("workload", "tensors", 1, "accesses", 0, 1), 2**64, ["tensor 1", "bytes"]),
    (("workload", "tensors", 1, "accesses", 0, 0), 10**30, ["tensor 1", "op index"]),
    (("workload", "tensors", 2, "producer"), -(2**63) - 1, ["tensor 2", "producer"]),
    (("workload", "ops", 3, "flops"), 10**400, ["op 3", "flops"]),
    (("workload", "ops", 3, "flops"), True, ["op 3", "flops"]),
    (("workload", "tensors", 0, "size"), True, ["tensor 0", "size"]),
    (("hardware", "levels", 0, "capacity"), 2**63, ["level 0", "capacity"]),
    (("hardware", "levels", 0, "bandwidth"), 10**400, ["level 0", "bandwidth"]),
    (("hardware", "compute_rate"), 10**400, ["compute_rate"]),
], ids=lambda v: "/".join(map(str, v)) if isinstance(v, tuple) else shown(v)[:20].replace(" ", ""))
def test_out_of_range_values_name_the_item(field, value, words, tmp_path):
    data = json.loads(builtin_path("vgg16@nnpi").read_bytes())
    path = tmp_path / "instance.json"
    path.write_text(json.dumps(_replace(data, field, value)))
    line = assert_cli_refuses("instances", "show", path)
    assert all(word in line for word in words), line


@pytest.mark.parametrize("text, words", [
    ('{"format": NaN}', ["NaN"]),
    ('{"format": -Infinity}', ["Infinity"]),
    ('[' * 100000 + ']' * 100000, ["nested"]),
    ('', ["not valid JSON", "line 1"]),
    ('{"a": 1' + '0' * 5000 + '}', ["digits"]),
], ids=["NaN", "-Infinity", "deep", "empty", "5001-digits"])
def test_non_standard_json_is_refused(text, words, tmp_path):
    path = tmp_path / "instance.json"
    path.write_text(text)
    line = assert_cli_refuses("instances", "show", path)
    assert all(word in line for word in words), line


def test_folders_missing_and_huge_files_are_refused(tmp_path, monkeypatch):
    assert "is a folder" in assert_cli_refuses("instances", "show", tmp_path)
    assert "no such file" in assert_cli_refuses("instances", "show", tmp_path / "none.json")
    huge = tmp_path / "huge.json"
    with huge.open("wb") as handle:  # sparse: takes no disk space
        handle.truncate((1 << 30) + 1)
    assert "over the limit" in assert_cli_refuses("instances", "show", huge)


def test_bad_bytes_and_huge_size_exit_2_in_a_real_process(tmp_path):
    """The two inputs of the issue, through the installed command in a process of its own."""
    data = json.loads(builtin_path("vgg16@nnpi").read_bytes())
    huge = tmp_path / "huge-size.json"
    huge.write_text(json.dumps(_replace(data, ("workload", "tensors", 0, "size"), 10**30)))
    latin = tmp_path / "utf16.json"
    latin.write_bytes(b"\xff\xfe" + builtin_path("vgg16@nnpi").read_bytes())
    for path, word in ((huge, "size"), (latin, "not UTF-8")):
        run = subprocess.run([sys.executable, "-m", "memplace.cli", "instances", "show",
                              str(path)], capture_output=True, text=True)
        assert run.returncode == 2, run.stderr
        assert run.stdout == "" and len(run.stderr.splitlines()) == 1
        assert run.stderr.startswith("error: ") and word in run.stderr


def test_a_bad_hardware_file_for_import_gives_one_error_line(tmp_path):
    model, hardware = tmp_path / "model.onnx", tmp_path / "hardware.json"
    model.write_bytes(b"not read: the hardware file is checked first")
    for data, words in ((b"\xff\xfe{}", "not UTF-8"), (b'{"compute_rate": NaN}', "NaN"),
                        (b"[" * 3000 + b"]" * 3000, "nested")):
        hardware.write_bytes(data)
        line = assert_cli_refuses("import", model, "--hardware", hardware, "-o", tmp_path / "x.json")
        assert "hardware file" in line and words in line, line


# ---------------------------------------------------------------------- solutions
@pytest.fixture(scope="module")
def solved(tmp_path_factory):
    """A solution file written by a solver, with its instance."""
    folder = tmp_path_factory.mktemp("solution")
    inst = Instance.from_file(builtin_path("vgg16@edge-npu"))
    result = solve(inst, "compiler", time_limit=None)
    path = folder / "solution.json"
    result.to_solution().write(path, inst)
    return inst, path.read_bytes()


def test_mutated_solution_evaluates_or_gives_one_error_line(solved, tmp_path):
    inst, raw = solved
    path = tmp_path / "solution.json"

    @FUZZ
    @given(mutated(raw))
    def check(data: bytes) -> None:
        path.write_bytes(data)
        if read_or_refused(path, lambda p: Solution.read(p, inst), SolutionError,
                           ("evaluate", "vgg16@edge-npu", path),
                           ("validate", "vgg16@edge-npu", path)) is not None:
            assert run_cli("evaluate", "vgg16@edge-npu", path).exit_code == 0
            assert run_cli("validate", "vgg16@edge-npu", path).exit_code in (0, 1)

    check()


def test_every_field_of_a_solution_swapped_reads_or_gives_one_error_line(solved, tmp_path):
    inst, raw = solved
    data = json.loads(raw)
    path = tmp_path / "solution.json"
    for field, value in every_field_swap(data):
        path.write_text(apply_swap(data, field, value))
        if read_or_refused(path, lambda p: Solution.read(p, inst), SolutionError) is not None:
            assert run_cli("validate", "vgg16@edge-npu", path).exit_code in (0, 1), (field, value)


def test_failing_solve_keeps_the_output_file(tmp_path):
    out = tmp_path / "kept.json"
    out.write_text("already here")
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\xff\xfe{}")
    assert_cli_refuses("solve", bad, "-o", out)
    assert_cli_refuses("solve", "vgg16@nnpi", "--time-limit", "nan", "-o", out)
    assert_cli_refuses("solve", "vgg16@nnpi", "--seed", str(10**30), "-o", out)
    assert_cli_refuses("solve", "vgg16@nnpi", "-o", tmp_path / "no" / "such" / "folder.json")
    assert out.read_text() == "already here"


# ---------------------------------------------------------------------- MiniMalloc CSV
def test_mutated_minimalloc_csv_packs_or_gives_one_error_line(tmp_path):
    raw = MINIMALLOC_CSV.read_bytes()
    path, out = tmp_path / "input.csv", tmp_path / "out.csv"

    @FUZZ
    @given(st.one_of(
        byte_mutation(raw),
        st.tuples(st.integers(1, raw.count(b"\n") - 1), st.integers(0, 3),
                  st.sampled_from(["10" * 20, "-5", "1.5", "", "x", "1_0", "٣", str(2**63)])).map(
            lambda change: _csv_cell(raw, *change))))
    def check(data: bytes) -> None:
        path.write_bytes(data)
        out.write_text("already here")
        try:
            buffers = read_buffers(path).buffers
        except MemplaceError as exc:
            assert_clean_error(exc, MemplaceError)
            assert str(path) in str(exc)
            assert_cli_refuses("pack", path, "--capacity", 12, "-o", out, "--time-limit", 5)
            assert out.read_text() == "already here"
        else:
            assert all(b.size >= 0 and b.upper > b.lower for b in buffers)
            result = run_cli("pack", path, "--capacity", 12, "-o", out, "--time-limit", 5)
            assert result.exit_code in (0, 1, 3)

    check()


def _csv_cell(raw: bytes, row: int, column: int, value: str) -> bytes:
    lines = raw.decode().splitlines()
    cells = lines[row].split(",")
    cells[column] = value
    lines[row] = ",".join(cells)
    return ("\n".join(lines) + "\n").encode()


# ---------------------------------------------------------------------- plans
def test_mutated_plan_loads_or_gives_one_error_line(tmp_path):
    raw = builtin_path("vgg16@nnpi").parent.parent.parent.joinpath(
        "bench", "plans", "quick.toml").read_bytes()
    path = tmp_path / "plan.toml"

    @FUZZ
    @given(st.one_of(byte_mutation(raw), st.tuples(
        st.sampled_from(["seeds", "time_limit", "kill_margin", "instances", "solvers",
                         "memory_limit_mb", "one_seed"]),
        st.sampled_from(["nan", "inf", "-inf", "1e400", str(10**30), "true", "[[[[1]]]]",
                         '"x"', "[]", "{a = 1}", "[" * 5000 + "]" * 5000, "-1", "0"])).map(
            lambda change: _toml_key(raw, *change))))
    def check(data: bytes) -> None:
        path.write_bytes(data)
        try:
            plan = load_plan(str(path))
        except PlanError as exc:
            assert_clean_error(exc, PlanError)
            assert str(path) in str(exc)
            assert_cli_refuses("bench", path, "--out", tmp_path / "out")
        else:
            assert plan.tasks and all(t.time_limit > 0 for t in plan.tasks)

    check()


def _toml_key(raw: bytes, key: str, value: str) -> bytes:
    lines = [line for line in raw.decode().splitlines() if not line.startswith(f"{key} =")]
    return ("\n".join([f"{key} = {value}"] + lines) + "\n").encode()


# ---------------------------------------------------------------------- runs.jsonl
@pytest.fixture(scope="module")
def runs_file(tmp_path_factory) -> bytes:
    """The runs.jsonl of a tiny benchmark run (two heuristics on one small instance)."""
    folder = tmp_path_factory.mktemp("tiny-run")
    plan = folder / "tiny.toml"
    plan.write_text('instances = ["vgg16@nnpi"]\nsolvers = ["compiler", "all-slowest"]\n'
                    "seeds = [0]\ntime_limit = 5.0\n")
    result = CliRunner().invoke(main, ["bench", str(plan), "--out", str(folder / "out"),
                                       "--jobs", "1"])
    assert result.exit_code == 0, result.output
    raw = (folder / "out" / "runs.jsonl").read_bytes()
    assert raw.count(b"\n") == 2
    return raw


def test_corrupted_runs_line_is_named_and_nothing_is_lost(runs_file, tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    path = folder / "runs.jsonl"
    first, second = runs_file.splitlines(keepends=True)

    @FUZZ
    @given(st.one_of(byte_mutation(second), json_mutation(json.loads(second)).map(
        lambda text: text.encode() + b"\n")))
    def check(line: bytes) -> None:
        data = first + line
        path.write_bytes(data)
        try:
            records = read_runs(path)
        except RunsFileError as exc:
            assert_clean_error(exc, RunsFileError)
            assert f"{path}:2:" in str(exc) or f"{path}:3:" in str(exc) or "runs file" in str(exc)
            assert_cli_refuses("report", path, "--out", tmp_path / "report")
            assert_cli_refuses("validate-results", path)
        else:
            assert len(records) >= 1
            assert run_cli("validate-results", path).exit_code in (0, 1)
            results = Results(records)  # what `memplace report` tabulates (its plots aside)
            assert len(results.summaries()) == len(results.solvers) and results.cells()
        assert path.read_bytes() == data  # the good line and the bad one are still there

    check()


def test_every_field_of_a_run_record_swapped_reads_or_gives_one_error_line(runs_file, tmp_path):
    path = tmp_path / "runs.jsonl"
    first, second = runs_file.splitlines(keepends=True)
    record = json.loads(second)
    for field, value in every_field_swap(record):
        path.write_bytes(first + apply_swap(record, field, value).encode() + b"\n")
        try:
            records = read_runs(path)
        except RunsFileError as exc:
            assert_clean_error(exc, RunsFileError)
        else:
            results = Results(records)  # what `memplace report` tabulates (its plots aside)
            assert len(results.summaries()) == len(results.solvers), (field, value)
            assert results.cells()


def test_resume_on_a_corrupted_runs_file_refuses_and_keeps_it(runs_file, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    damaged = runs_file + b'{"instance": "vgg16@nnpi", "seed": NaN}\n'
    (out / "runs.jsonl").write_bytes(damaged)
    plan = tmp_path / "tiny.toml"
    plan.write_text('instances = ["vgg16@nnpi"]\nsolvers = ["compiler"]\nseeds = [0]\n'
                    "time_limit = 5.0\n")
    line = assert_cli_refuses("bench", plan, "--out", out, "--resume")
    assert "runs.jsonl:3:" in line and "NaN" in line
    assert (out / "runs.jsonl").read_bytes() == damaged


# ---------------------------------------------------------------------- command-line values
@pytest.mark.parametrize("args", [
    ["solve", "vgg16@nnpi", "--time-limit", "inf"],
    ["solve", "vgg16@nnpi", "--time-limit", "-1"],
    ["solve", "vgg16@nnpi", "--seed", "-1"],
    ["perf", "vgg16@nnpi", "--population", str(10**12)],
    ["pack", "x.csv", "--capacity", str(2**64)],
    ["pack", "x.csv", "--capacity", "12", "--time-limit", "nan"],
    ["bench", "quick", "--jobs", "0"],
    ["instances", "export", "synth-100@nnpi", "--seed", str(2**64), "-o", "x.json"],
    ["instances", "export", "synth-1000000000000@nnpi", "-o", "x.json"],
    ["instances", "export", "vgg16@nnpi", "--batch", "0", "-o", "x.json"],
    ["solve", "synth-1@nnpi", "--problem", "residency", "-o", "x.json"],
    ["solve", "synth-99999999999@nnpi", "--problem", "residency", "-o", "x.json"],
    ["solve", "vgg16@nnpi", "--no-such-option"],
    ["no-such-command"],
], ids=lambda args: " ".join(args)[:40])
def test_bad_command_line_values_give_one_error_line(args, tmp_path):
    line = assert_cli_refuses(*[str(tmp_path / a) if a.endswith(".json") else a for a in args])
    assert not (tmp_path / "x.json").exists()
    assert line.startswith("error: ")
