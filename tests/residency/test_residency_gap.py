"""`memplace gap`: search and bound in one budget; the best solution valid, its latency the
one printed, the bound at most every valid latency met, within the time limit."""
from __future__ import annotations

import re

from click.testing import CliRunner

from memplace.cli import main
from memplace.instances import load
from memplace.model.residency import ResidencySolution, simulate, validate
from memplace.solvers import solve


def test_gap_prints_a_valid_best_a_bound_below_it_and_who_found_each(tmp_path):
    out = tmp_path / "best.json"
    table = tmp_path / "gap.md"
    result = CliRunner().invoke(main, ["gap", "synth-100@nnpi", "--time-limit", "6", "-o", str(out),
                                       "--table", str(table)])
    assert result.exit_code == 0, result.output
    best = float(re.search(r"best valid\s+([\d.]+) us\s+found by (\S+)", result.output).group(1))
    bound = float(re.search(r"best bound\s+([\d.]+) us\s+proven by (\S+)", result.output).group(1))
    seconds = float(re.search(r"\(([\d.]+) s in all", result.output).group(1))
    assert seconds <= 6 + 5
    inst = load("synth-100@nnpi", problem="residency")
    sol = ResidencySolution.read(out, inst)
    assert validate(inst, sol).valid
    assert abs(simulate(inst, sol) * 1e6 - best) <= 1e-3
    assert bound <= best
    row = table.read_text(encoding="utf-8").splitlines()[-1].split(" | ")
    assert row[0] == "| synth-100@nnpi" and float(row[2]) == best and float(row[4]) == bound
    # no valid latency met here is below the bound: the compiler's and msa's
    for solver in ("compiler", "msa"):
        assert bound <= solve(inst, solver, time_limit=None, problem="residency").latency * 1e6 + 1e-3


def test_gap_refuses_a_problem_other_than_residency():
    result = CliRunner().invoke(main, ["gap", "synth-100@nnpi", "--problem", "static"])
    assert result.exit_code == 2 and "static" in result.output


def test_gap_refuses_one_output_file_for_two_programs(tmp_path):
    result = CliRunner().invoke(main, ["gap", "synth-100@nnpi", "synth-200@nnpi", "-o", str(tmp_path / "x")])
    assert result.exit_code == 2 and "one instance" in result.output
