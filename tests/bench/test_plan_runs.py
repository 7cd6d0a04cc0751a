"""The plan line says where its number of runs comes from: instances x solvers x seeds,
where deterministic solvers and those in `one_seed` run with the first seed only."""
from __future__ import annotations

import tomllib

from memplace.bench.plan import load_plan
from memplace.solvers import solver_info


def test_quick_plan_breakdown_names_the_solvers_that_run_one_seed():
    plan = load_plan("quick")
    line = plan.runs_breakdown()
    one_seed = tomllib.loads(plan.text).get("one_seed", [])
    single = [s for s in plan.solvers
              if s in one_seed or solver_info(s, plan.problem).deterministic]
    several = [s for s in plan.solvers if s not in single]
    assert line == (f"{len(plan.tasks)} runs = {len(plan.instances)} instances x "
                    f"({len(several)} solvers x 2 seeds + {len(single)} solvers x 1 seed: "
                    f"{', '.join(single)})")
    assert len(plan.tasks) == len(plan.instances) * (2 * len(several) + len(single))


def test_a_plan_whose_solvers_all_take_every_seed_says_instances_x_solvers_x_seeds(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text('instances = ["vgg16@nnpi", "vgg16@edge-npu"]\nsolvers = ["sa", "ga"]\n'
                    'seeds = [0, 1, 2]\ntime_limit = 1.0\n', encoding="utf-8")
    plan = load_plan(str(path))
    assert plan.runs_breakdown() == "12 runs = 2 instances x 2 solvers x 3 seeds"
    assert len(plan.tasks) == 12


def test_one_instance_one_solver_one_seed_is_singular(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text('instances = ["vgg16@nnpi"]\nsolvers = ["compiler"]\nseeds = [0, 1]\n'
                    'time_limit = 1.0\n', encoding="utf-8")
    assert load_plan(str(path)).runs_breakdown() == "1 run = 1 instance x 1 solver x 1 seed"
