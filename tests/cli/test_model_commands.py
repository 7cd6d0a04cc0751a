"""solve, evaluate, validate, perf and warmup from the command line."""
from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from memplace.cli import main
from memplace.model.warmup import tiny_instance_dict


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_solve_writes_a_solution_that_validates(tmp_path):
    out = tmp_path / "sol.json"
    result = _run("solve", "resnet50@nnpi", "--solver", "compiler", "-o", out)
    assert result.exit_code == 0, result.output
    assert "speedup vs slowest" in result.output
    assert "speedup vs baseline 1.0000x   (compiler, the static baseline: " in result.output
    data = json.loads(out.read_text())
    assert data["format"] == "memplace-solution/1" and data["instance"] == "resnet50@nnpi"
    assert _run("validate", "resnet50@nnpi", out).exit_code == 0
    evaluated = _run("evaluate", "resnet50@nnpi", out)
    assert "valid: yes" in evaluated.output


def test_solve_evaluate_and_validate_print_the_latency_in_the_same_unit(tmp_path):
    out = tmp_path / "sol.json"
    solved = _run("solve", "resnet50@nnpi", "--solver", "compiler", "-o", out).output
    seconds = json.loads(out.read_text())["latency"]  # the file keeps the spec's seconds
    printed = {
        "solve": next(line.split()[1:] for line in solved.splitlines() if line.startswith("latency ")),
        "evaluate": _run("evaluate", "resnet50@nnpi", out).output.split("latency: ")[1].split(),
        "validate": _run("validate", "resnet50@nnpi", out).output.split("latency ")[1].split(),
    }
    assert {unit for _, unit in printed.values()} == {"µs"}
    for command, (value, _) in printed.items():
        assert float(value) == pytest.approx(seconds * 1e6, abs=5e-4), command


def test_solve_prints_speedups_that_are_the_ratios_of_the_latencies_it_prints():
    """With a solver other than the baseline, so that the ratio is not 1 by construction."""
    result = _run("solve", "resnet50@nnpi", "--solver", "greedy-size")
    assert result.exit_code == 0, result.output
    out = result.output
    latency = float(re.search(r"^latency +([\d.]+) µs$", out, re.M)[1])
    for role, solver in (("slowest", "all-slowest"), ("baseline", "compiler")):
        speedup, named, reference = re.search(
            rf"^speedup vs {role} +([\d.]+)x +\((\S+?),.*: ([\d.]+) µs\)$", out, re.M).groups()
        assert named == solver
        assert float(speedup) == pytest.approx(float(reference) / latency, abs=1e-4), role
    assert float(re.search(r"speedup vs baseline ([\d.]+)x", out)[1]) != 1.0  # a real ratio


def test_validate_exits_1_with_the_reason_when_the_claim_is_wrong(tmp_path):
    out = tmp_path / "sol.json"
    assert _run("solve", "resnet50@nnpi", "-o", out).exit_code == 0
    data = json.loads(out.read_text())
    data["latency"] *= 1.001
    out.write_text(json.dumps(data))
    result = _run("validate", "resnet50@nnpi", out)
    assert result.exit_code == 1
    assert "differs from the recomputed" in result.output


def test_validate_exits_1_on_an_over_capacity_placement(tmp_path):
    inst_path = tmp_path / "tiny.json"
    data = tiny_instance_dict()
    data["hardware"]["levels"][0]["addressed"] = False
    inst_path.write_text(json.dumps(data))
    sol = {"format": "memplace-solution/1", "instance": "tiny@warmup",
           "placement": ["SRAM", "SRAM", "SRAM"], "latency": 3e-06}
    sol_path = tmp_path / "sol.json"
    sol_path.write_text(json.dumps(sol))
    result = _run("validate", inst_path, sol_path)
    assert result.exit_code == 1 and "over its capacity 96" in result.output


def test_broken_instance_file_exits_2_naming_the_offender(tmp_path):
    data = tiny_instance_dict()
    data["workload"]["tensors"][2]["producer"] = 2
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(data))
    result = _run("solve", path)
    assert result.exit_code == 2
    assert "tensor 2 'b': producer op 2 must be the smallest op index" in result.output


def test_unknown_solver_and_bad_param_exit_2():
    result = _run("solve", "resnet50@nnpi", "--solver", "magic")
    assert result.exit_code == 2 and "unknown solver 'magic'" in result.output
    result = _run("solve", "resnet50@nnpi", "--solver", "random-greedy", "--param", "samples")
    assert result.exit_code == 2 and "--param 'samples' is not KEY=VALUE" in result.output


def test_perf_prints_a_machine_readable_last_line():
    result = _run("perf", "resnet50@nnpi", "--population", 16, "--moves", 1000)
    assert result.exit_code == 0, result.output
    last = result.output.strip().splitlines()[-1]
    fields = dict(item.split("=") for item in last.split()[1:])
    assert last.startswith("perf ") and {"single_ns", "batch_ns", "delta_ns", "python_ref_ns"} <= set(fields)
    assert all(float(fields[k]) > 0 for k in ("single_ns", "batch_ns", "delta_ns", "python_ref_ns"))


def test_solvers_list_shows_parameters_with_defaults():
    result = _run("solvers", "list")
    assert result.exit_code == 0
    assert "random-greedy" in result.output and "--param samples=100" in result.output


def test_solvers_list_documents_the_names_both_problems_share_and_the_baselines():
    from memplace.solvers.families import FAMILIES
    out = _run("solvers", "list").output.split("names in both problems, one method family each:")[1]
    assert [line.split()[0] for line in out.strip().splitlines()[:-1]] == list(FAMILIES)
    assert out.strip().splitlines()[-1].endswith("residency: msa; static: compiler")


def test_warmup_says_when_every_part_is_compiled_already(monkeypatch):
    from memplace.solvers import warm
    monkeypatch.setattr(warm, "missing_parts", lambda names=None: [])
    result = _run("warmup")
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"kernels: all {len(warm.PARTS)} parts compiled already, in ")


def test_warmup_compiles_in_one_process_unless_asked(monkeypatch):
    from memplace.model.core import numba_cache
    from memplace.solvers import warm
    from memplace.solvers.warm import PartReport
    seen = []

    def warm_parts(names, jobs, **kwargs):
        seen.append(jobs)
        return [PartReport(name, 1.0, 1.0) for name in names]

    monkeypatch.setattr(warm, "missing_parts", lambda names=None: ["msa's allocator"])  # 4 parts
    monkeypatch.setattr(warm, "warm_parts", warm_parts)
    monkeypatch.setattr(numba_cache, "record_compile_seconds", lambda seconds: None)
    first = _run("warmup")
    assert first.exit_code == 0, first.output
    assert "(4.0 CPU s in 1 processes;" in first.output
    assert _run("warmup", "--jobs", "2").exit_code == 0
    assert seen == [1, 2]
