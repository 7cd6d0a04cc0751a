"""evaluate and validate read both solution formats (told apart by "format"); perf
--problem residency prints the simulator's figures."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from memplace.cli import main
from memplace.model.residency import Window, simulate
from residency_cases import LLC, SRAM, small, small_dict, solution


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _files(tmp_path, windows):
    inst = small()
    path = tmp_path / "inst.json"
    path.write_text(json.dumps(small_dict()))
    sol = solution(inst, windows)
    sol.latency = simulate(inst, sol)
    out = tmp_path / "sol.json"
    sol.write(out, inst)
    return path, out, sol


def test_a_residency_solution_validates_and_evaluates(tmp_path):
    inst_path, sol_path, sol = _files(tmp_path, [Window(0, LLC, 0, 2, 2)])
    result = _run("validate", inst_path, sol_path)
    assert result.exit_code == 0, result.output
    assert f"ok: valid, latency {sol.latency * 1e6:.6f} µs" in result.output
    assert "valid: yes" in _run("evaluate", inst_path, sol_path).output


def test_a_broken_window_is_named_with_its_rule(tmp_path):
    inst_path, sol_path, _ = _files(tmp_path, [Window(1, SRAM, 0, 0, 1)])
    result = _run("validate", inst_path, sol_path)
    assert result.exit_code == 1
    assert "invalid: [home-not-valid] op 4 'op4' reads tensor 1 'a' from its home, valid never" in result.output
    evaluated = _run("evaluate", inst_path, sol_path)
    assert "valid: no" in evaluated.output and "[home-not-valid]" in evaluated.output


def test_a_malformed_window_is_one_line_and_status_2(tmp_path):
    inst_path, sol_path, _ = _files(tmp_path, [Window(0, LLC, 0, 2, 2)])
    data = json.loads(sol_path.read_text())
    data["windows"][0]["level"] = "L9"
    sol_path.write_text(json.dumps(data))
    result = _run("validate", inst_path, sol_path)
    assert result.exit_code == 2
    assert "window 0 of tensor 0 'w': unknown level 'L9'" in result.output


def test_a_static_solution_still_validates(tmp_path):
    inst_path, _, _ = _files(tmp_path, [])
    out = tmp_path / "s1.json"
    assert _run("solve", inst_path, "--solver", "compiler", "-o", out).exit_code == 0
    assert json.loads(out.read_text())["format"] == "memplace-solution/1"
    assert _run("validate", inst_path, out).exit_code == 0


@pytest.mark.slow  # compiles perf-only kernels (_repeat, _changes) and a C loop: 204 s cold at load 7, 0.3 s warm
def test_perf_residency_prints_the_simulator_figures():
    result = _run("perf", "resnet50@nnpi", "--problem", "residency", "--changes", "50")
    assert result.exit_code == 0, result.output
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("perf-residency kernel_ns=")
    fields = dict(kv.split("=") for kv in last.split()[1:])
    assert float(fields["kernel_ns"]) > 0 and float(fields["incremental_ns"]) > 0
    assert "kernel/C" in result.output or fields["c_ns"] == "nan"


def test_perf_residency_prints_ga_evaluations_per_second_with_each_decoder():
    result = _run("perf", "unet@nnpi", "--problem", "residency", "--changes", "20",
                  "--ga-seconds", "0.5")
    assert result.exit_code == 0, result.output
    lines = {line.split()[1]: line for line in result.output.splitlines() if line.startswith("ga, ")}
    assert {"python", "compiled", "compiled/python"} <= set(lines)
    assert float(lines["compiled"].split()[4].replace(",", "")) > 0
