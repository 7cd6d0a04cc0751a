"""The harness for the residency problem: plans, records, reports and the CLI carry the
problem; the residency table adds the static optimum."""
from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from memplace.cli.main import main
from memplace.bench.plan import PlanError, load_plan
from memplace.bench.replay import recheck
from memplace.bench.report_tables import instance_table
from memplace.bench.results import STATIC_OPTIMUM_FILE, Results
from memplace.bench.task import Task
from memplace.bench.worker import run
from memplace.instances import load, residency_names
from memplace.model.residency import ResidencySolution, validate
from memplace.solvers import solvers_of

SMALL = "mobilenetv2@edge-npu"  # addressed SRAM; msa makes windows there


@pytest.fixture(scope="module")
def runner():
    return CliRunner()


def test_the_residency_plan_runs_msa_once_per_instance_as_the_residency_problem():
    plan = load_plan("residency-msa")
    assert plan.problem == "residency" and plan.solvers == ["msa"]
    assert set(residency_names()) <= set(plan.instances) and len(residency_names()) >= 10
    assert all(t.problem == "residency" and t.seed == 0 for t in plan.tasks)
    assert len(plan.tasks) == len(plan.instances)  # msa is deterministic


def test_a_plan_names_solvers_of_its_own_problem(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text('problem = "residency"\ninstances = ["resnet50@nnpi"]\nsolvers = ["milp"]\n'
                    "seeds = [0]\ntime_limit = 1.0\n")
    with pytest.raises(PlanError, match="milp"):
        load_plan(str(path))
    path.write_text('problem = "dynamic"\ninstances = ["resnet50@nnpi"]\nsolvers = ["msa"]\n'
                    "seeds = [0]\ntime_limit = 1.0\n")
    with pytest.raises(PlanError, match="dynamic"):
        load_plan(str(path))


def test_solve_residency_with_msa_writes_a_solution_2_file(runner, tmp_path):
    out = tmp_path / "sol.json"
    result = runner.invoke(main, ["solve", SMALL, "--problem", "residency", "--solver", "msa",
                                  "-o", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["format"] == "memplace-solution/2" and data["solver"]["name"] == "msa"
    inst = load(SMALL)
    solution = ResidencySolution.read(out, inst)
    assert len(solution.windows) > 0
    check = validate(inst, solution)
    assert check.ok, check.errors[:3]


def test_solvers_list_shows_one_problem(runner):
    result = runner.invoke(main, ["solvers", "list", "--problem", "residency"])
    assert result.exit_code == 0, result.output
    names = [line.split()[0] for line in result.output.splitlines() if not line.startswith(" ")]
    assert names == sorted(solvers_of("residency").names())  # the residency ones, in order
    assert {"all-slowest", "compiler", "msa"} <= set(names) and "dp" not in names  # dp: static only
    result = runner.invoke(main, ["solvers", "list", "--problem", "dynamic"])
    assert result.exit_code == 2 and "dynamic" in result.output


def test_residency_records_carry_the_problem_and_report_the_static_optimum(tmp_path):
    inst = load(SMALL)  # a generous limit: a cold Numba cache compiles inside it
    task = Task(inst.name, SMALL, inst.fingerprint(), "msa",
                {"min_overlap": 0.8, "preferred_overlap": 1.5, "max_overlap": 10.0,
                 "max_repacks": 16, "homes": "slowest"}, 0, 600.0, problem="residency")
    record = run(task)
    assert record["status"] == "feasible", record["error"]
    assert record["problem"] == "residency" and len(record["windows"]) == record["notes"]["windows"]
    assert recheck([record]) == (1, [])
    # a known static optimum in the cache is used as it is
    (tmp_path / STATIC_OPTIMUM_FILE).write_text(json.dumps({inst.name: {
        "latency": 2 * record["latency"], "status": "optimal", "sha256": inst.fingerprint()}}))
    results = Results([record], cache_folder=tmp_path)
    assert results.is_residency
    cell = results.cell(inst.name, "msa")
    assert math.isclose(cell.speedup_static_optimum, 2.0)
    table = instance_table(results)
    assert "vs static optimum" in table.markdown() and "2.000x" in table.markdown()
    assert cell.notes["prefetches"] == sum(1 for w in record["windows"] if w["start"] < w["first"])


def test_the_headline_compares_the_best_run_with_msa_and_draws_its_windows(tmp_path):
    from memplace.bench.report_plots import placement_plot
    from memplace.bench.report_tables import headline_table
    inst = load(SMALL)
    params = {"min_overlap": 0.8, "preferred_overlap": 1.5, "max_overlap": 10.0,
              "max_repacks": 16, "homes": "slowest"}
    records = [run(Task(inst.name, SMALL, inst.fingerprint(), solver, p, 0, 600.0,
                        problem="residency"))
               for solver, p in (("msa", params), ("all-slowest", {}))]
    assert all(r["status"] == "feasible" for r in records)
    msa, slowest = (r["latency"] for r in records)
    (tmp_path / STATIC_OPTIMUM_FILE).write_text(json.dumps({inst.name: {
        "latency": 3 * msa, "status": "optimal", "sha256": inst.fingerprint()}}))
    results = Results(records, cache_folder=tmp_path)
    table = headline_table(results)
    row, mean = table.rows
    assert row[:5] == [inst.name, inst.n_ops, msa, msa, "msa"]
    assert math.isclose(row[5], 1.0) and math.isclose(row[6], 3.0)
    assert math.isclose(row[7], slowest / msa)
    assert mean[0] == "geometric mean" and math.isclose(mean[6], 3.0)
    assert "msa (µs)" in table.markdown()
    assert records[0]["windows"], "msa makes windows on this instance: the panel has bars"
    paths = placement_plot(results, tmp_path, inst.name)
    svg = next(p for p in paths if p.suffix == ".svg").read_text()
    assert "windows over their occupancy" in svg


def test_a_runs_file_mixing_problems_is_refused():
    from memplace.model.core.errors import MemplaceError
    base = {"instance": "a", "solver": "s", "params": {}, "seed": 0, "time_limit": 1.0,
            "instance_sha256": "x"}
    with pytest.raises(MemplaceError, match="one problem"):
        Results([base | {"problem": "static"}, base | {"problem": "residency", "seed": 1}])


def test_residency_table_checks_msa_and_writes_the_table(runner, tmp_path):
    (tmp_path / STATIC_OPTIMUM_FILE).write_text(json.dumps({"unet@nnpi": {
        "latency": 5e-3, "status": "optimal", "sha256": load("unet@nnpi").fingerprint()}}))
    result = runner.invoke(main, ["residency-table", "unet@nnpi", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "0 problems" in result.output
    rows = (tmp_path / "table_residency_msa.csv").read_text().splitlines()
    assert rows[0].startswith("instance,lower_bound_s") and rows[1].startswith("unet@nnpi,")
