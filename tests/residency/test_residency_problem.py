"""The residency problem behind the core's Problem seam: solve, records, repair."""
from __future__ import annotations

import math

import numpy as np

from memplace.model.core.problem import Problem, problem
from memplace.model.residency import ResidencySolution, Window, simulate, validate
from residency_cases import DRAM, LLC, SRAM, small, solution


def test_residency_is_a_registered_problem():
    prob = problem("residency")
    assert isinstance(prob, Problem)
    assert prob.name == "residency" and prob.baselines["baseline"] == "msa"


def test_records_round_trip_and_are_checked():
    inst = small(addressed=True)
    prob = problem("residency")
    sol = solution(inst, [Window(0, SRAM, 0, 2, 2, offset=16), Window(1, LLC, 0, 0, 1, evict=(2, 4))],
                   homes=[DRAM, DRAM, LLC, SRAM], offsets=[-1, -1, -1, 256])
    record = {"instance": inst.name, "latency": prob.evaluate(inst, sol), "status": "feasible",
              **prob.to_record(inst, sol)}
    assert record["offsets"] == [None, None, None, 256] and len(record["windows"]) == 2
    back = prob.from_record(inst, record)
    assert back.windows == sol.windows and back.placement.tolist() == sol.placement.tolist()
    assert prob.check_record(inst, record) == []
    record["latency"] *= 1.01
    assert any("differs from the recomputed" in e for e in prob.check_record(inst, record))
    record["windows"][0]["level"] = "L9"
    assert prob.check_record(inst, record)[0].startswith("unreadable solution")


def test_repair_drops_windows_until_valid_and_rectifies_homes():
    inst = small()
    prob = problem("residency")
    homes = [SRAM, SRAM, SRAM, SRAM]  # 390 B in a 320 B SRAM at step 1
    bad = solution(inst, [Window(0, SRAM, 0, 2, 2), Window(1, SRAM, 0, 0, 1), Window(2, LLC, 2, 5, 5)],
                   homes=homes)
    fixed = prob.repair(inst, bad)
    assert prob.validate(inst, fixed) == []
    assert Window(2, LLC, 2, 5, 5) in fixed.windows or fixed.placement[2] <= LLC
    fine = solution(inst, [Window(0, LLC, 0, 2, 2)])
    assert prob.repair(inst, fine).windows == fine.windows


def test_finish_keeps_a_valid_solution_and_notes_a_repair():
    inst = small()
    prob = problem("residency")
    ok = solution(inst, [Window(0, LLC, 0, 2, 2)])
    assert prob.finish(inst, ok, None, {})[1:] == ([], False)
    notes: dict = {}
    sol, errors, changed = prob.finish(inst, solution(inst, [Window(0, DRAM, 0, 2, 2)]), None, notes)
    assert errors == [] and changed and notes["windows_dropped"] == 1 and sol.windows == ()


def test_solve_msa_through_the_core():
    from memplace.solvers import solve
    inst = small()
    result = solve(inst, "msa", time_limit=None, problem="residency")
    assert isinstance(result.solution, ResidencySolution)
    assert validate(inst, result.solution).valid
    assert math.isclose(result.latency, simulate(inst, result.solution), rel_tol=1e-12)
    file = result.to_solution()
    assert file.solver["name"] == "msa" and file.latency == result.latency
    fallback = problem("residency").fallback(inst)
    assert fallback.windows == () and np.all(fallback.placement == inst.n_levels - 1)
