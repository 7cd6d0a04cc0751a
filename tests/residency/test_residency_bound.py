"""`bound`: the residency relaxation is a lower bound on every valid solution's latency
(random instances with random valid windows, committed instances against the compiler
placement and msa), exact and proven on a hand-computed instance, and its incumbent
validates."""
from __future__ import annotations

import csv
import math
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memplace.instances import builtin_names, load
from memplace.model import Instance, rectify_capacity
from memplace.model.residency import ResidencySolution, Window, simulate, validate
from memplace.solvers import solve, solver_info
from memplace.solvers.residency import bound as bound_module
from memplace.solvers.residency.bound import bound_and_incumbent, repair
from memplace.solvers.residency.machinery.relaxation import formulate, solve_relaxation
from randominst import random_instance_dict
from residency_windows import random_windows

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MSA_TABLE = Path(__file__).resolve().parents[2] / "results" / "residency-msa" / "table_residency_msa.csv"


def _bound(inst: Instance, time_limit: float | None = None, starts: bool = True) -> float:
    return solve_relaxation(formulate(inst, binary_starts=starts), time_limit).bound


def _random_case(seed: int):
    rng = np.random.default_rng(seed)
    data = random_instance_dict(seed, n_ops=int(rng.integers(4, 9)), n_tensors=int(rng.integers(4, 10)),
                                n_levels=int(rng.integers(2, 4)), addressed=bool(rng.random() < 0.3))
    for level in data["hardware"]["levels"]:
        if rng.random() < 0.5:  # copies slower or faster than accesses
            level["copy_bandwidth"] = level["bandwidth"] * float(rng.choice([0.05, 0.3, 1.0, 3.0]))
    return Instance.from_dict(data), rng


@SETTINGS
@given(st.integers(0, 10**6))
def test_bound_never_exceeds_the_latency_of_a_valid_solution(seed):
    inst, rng = _random_case(seed)
    bound = _bound(inst)
    assert bound >= inst.compute_floor() * (1 - 1e-9)
    checked = 0
    for _ in range(6):
        homes = rectify_capacity(inst, rng.integers(0, inst.n_levels, inst.n_tensors))
        sol = repair(inst, np.asarray(homes, np.int64), random_windows(inst, homes, rng, 0.9))
        if sol is None:
            continue
        assert validate(inst, sol).ok
        assert bound <= sol.latency * (1 + 1e-9), (bound, sol.latency, sol.windows)
        checked += 1
    res = bound_and_incumbent(inst, None, seeds=False)
    assert res.bound <= res.solution.latency * (1 + 1e-9)
    assert validate(inst, res.solution).ok
    if res.incumbent is not None:
        assert validate(inst, res.incumbent).ok


def _hand(op2_flops: float) -> Instance:
    """op0 writes A (60 B) over 10 s of compute, op1 reads A, op2 computes, op3 reads the
    weight W (50 B). SRAM holds 100 B at 100 B/s, DRAM 10 B/s: A and W never fit together."""
    return Instance.from_dict({
        "format": "memplace-instance/1", "name": "hand",
        "workload": {"name": "hand", "ops": [
            {"name": "op0", "type": "x", "flops": 10.0}, {"name": "op1", "type": "x", "flops": 0.0},
            {"name": "op2", "type": "x", "flops": op2_flops}, {"name": "op3", "type": "x", "flops": 0.0}],
            "tensors": [
                {"name": "A", "kind": "activation", "size": 60, "producer": 0, "accesses": [[0, 60], [1, 60]]},
                {"name": "W", "kind": "weight", "size": 50, "producer": None, "accesses": [[3, 50]]}]},
        "hardware": {"name": "hand", "compute_rate": 1.0, "levels": [
            {"name": "SRAM", "capacity": 100, "bandwidth": 100.0},
            {"name": "DRAM", "capacity": None, "bandwidth": 10.0}]}})


def test_a_prefetch_hidden_by_compute_is_proven_optimal():
    # Static best: A in SRAM, W in DRAM: 10 + 0.6 + 10 + 5 = 25.6 s. With W prefetched
    # into SRAM before op 3 (start 2: its 5 s copy runs in op 2's 10 s), every access is
    # at SRAM speed: 10 + 0.6 + 10 + 0.5 = 21.1 s, which the bound proves optimal.
    inst = _hand(10.0)
    res = bound_and_incumbent(inst, None, seeds=False)
    assert res.bound == pytest.approx(21.1, rel=1e-5)
    assert res.bound <= 21.1
    assert res.incumbent is not None and validate(inst, res.incumbent).ok
    assert res.incumbent.latency == pytest.approx(21.1, rel=1e-12)
    assert [(w.tensor, w.level, w.first) for w in res.incumbent.windows] == [(1, 0, 3)]
    assert res.optimal
    static = ResidencySolution(inst.name, np.array([0, 1]), None)
    assert simulate(inst, static) == pytest.approx(25.6)


def test_start_binaries_make_a_copy_longer_than_the_idle_time_exact():
    # op 2 computes 2 s: the 5 s copy cannot hide. The best solution starts the copy
    # at op 2 (any earlier start overfills SRAM beside A) and waits 3 s: 16.1 s.
    # Without start binaries the relaxation may move 40 B of W during op 0 (fractional
    # occupancy: A + 0.8 W fit) and the rest in op 2's idle time: the trivial 13.1 s.
    # With them the window occupies SRAM from its start, so the bound is 16.1 s.
    inst = _hand(2.0)
    sol = ResidencySolution(inst.name, np.array([0, 1]), None, (Window(1, 0, 2, 3, 3),))
    assert simulate(inst, sol) == pytest.approx(10 + 0.6 + 2 + 3 + 0.5)
    loose = solve_relaxation(formulate(inst, binary_starts=False), None).bound
    assert loose == pytest.approx(13.1, rel=1e-5)
    res = bound_and_incumbent(inst, None, seeds=False)
    assert res.bound == pytest.approx(16.1, rel=1e-5) and res.bound <= 16.1
    assert res.solution.latency == pytest.approx(16.1, rel=1e-12) and res.optimal
    assert [(w.start, w.first) for w in res.solution.windows] == [(2, 3)]


def _msa_latencies() -> dict[str, float]:
    with MSA_TABLE.open(encoding="utf-8") as f:
        return {row["instance"]: float(row["msa_latency_s"]) for row in csv.DictReader(f)}


SMALL_COMMITTED = [n for n in builtin_names() if load(n).n_ops <= 60]


@pytest.mark.parametrize("name", SMALL_COMMITTED)
def test_bound_is_below_compiler_and_msa_on_committed_instances(name):
    inst = load(name)
    bound = _bound(inst, time_limit=0.5, starts=False)
    compiler = solve(inst, "compiler", time_limit=None, problem="static").latency
    assert bound <= compiler * (1 + 1e-9)
    msa = _msa_latencies().get(name)
    assert msa is not None and bound <= msa * (1 + 1e-9)


def test_bound_is_registered_for_the_residency_problem():
    info = solver_info("bound", "residency")
    assert info.check({}) == {"gap": 1e-4, "threads": 1, "seeds": True, "presolve": "auto",
                              "polish": 0.1}
    assert math.isclose(info.check({"gap": "0.01"})["gap"], 0.01)


def test_solve_reports_the_proven_optimum_with_its_bound():
    inst = _hand(10.0)
    result = solve(inst, "bound", time_limit=None, problem="residency")
    assert result.status == "optimal"
    assert result.latency == pytest.approx(21.1, rel=1e-12)
    assert result.lower_bound == pytest.approx(21.1, rel=1e-5) and result.lower_bound <= result.latency
    assert validate(inst, result.solution).ok
    assert result.evaluations >= 3  # compiler, msa and the relaxation's own windows


def test_above_the_size_limit_the_access_relaxation_runs_only_without_a_horizon_bound(monkeypatch):
    inst = _hand(10.0)
    ran = bound_and_incumbent(inst, time_limit=30, seeds=False).notes
    assert math.isfinite(ran["horizon"]["bound"]) and math.isfinite(ran["access"]["bound"])
    monkeypatch.setattr(bound_module, "ACCESS_AFTER_HORIZON_OPS", inst.n_ops - 1)
    skipped = bound_and_incumbent(inst, time_limit=30, seeds=False).notes
    assert skipped["horizon"]["bound"] == ran["horizon"]["bound"]
    assert skipped["access"]["model"].startswith("not built: the horizon bound stands")


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6))
def test_light_presolve_proves_the_same_optimum_as_the_full_one(seed):
    inst, _ = _random_case(seed)
    model = formulate(inst, binary_starts=True)
    full = solve_relaxation(model, None, gap=0.0, presolve="full")
    light = solve_relaxation(model, None, gap=0.0, presolve="light")
    assert full.status == light.status == "Optimal"
    assert light.bound == pytest.approx(full.bound, rel=1e-6)


def test_the_polish_anneals_the_best_solution_into_a_valid_one_no_worse_within_its_time():
    inst = load("mobilenetv2@edge-npu")
    run = bound_module._Run(inst, 2.0, 1e-4, 1, 0, None, None, None, {})
    run.incumbents(True)  # the compiler's placement and msa's solution
    start = run.best.latency
    run.polish()
    assert time.perf_counter() <= run.deadline + 1.0
    polished = run.notes["polish"]
    assert polished["from"] == start and polished["moves"] > 0
    assert run.best.latency == polished["to"] < start  # msa's windows are no local optimum here
    assert validate(inst, run.best).ok and simulate(inst, run.best) == run.best.latency


def test_bound_keeps_the_polish_share_of_its_time_for_the_polish():
    inst = load("mobilenetv2@edge-npu")
    began = time.perf_counter()
    notes = bound_and_incumbent(inst, time_limit=4.0, seeds=True, polish=0.25).notes
    assert time.perf_counter() - began <= 4.0 + 2.0
    assert 0.25 <= notes["polish"]["seconds"] <= 1.0 + 1.0  # 1 s kept (HiGHS may overrun its own)
    assert notes["polish"]["to"] <= notes["polish"]["from"]
    assert "polish" not in bound_and_incumbent(inst, time_limit=2.0, seeds=True, polish=0.0).notes


def test_the_build_checks_its_deadline_at_every_tensor(monkeypatch):
    """One tensor's windows can take tenths of a second to build (on a 530-op program of the
    fifth unseen round `bound` ran 0.34 s past a 2 s limit while the build checked every 64
    tensors): the clock is read before each tensor, and the first past the deadline stops it."""
    from memplace.solvers.residency.machinery import relaxation
    inst = Instance.from_dict(random_instance_dict(3, n_ops=6, n_tensors=8))
    reads = iter([0.0])  # the clock: before the deadline once, then past it
    clock = type("Clock", (), {"perf_counter": staticmethod(lambda: next(reads, 10.0))})
    monkeypatch.setattr(relaxation, "time", clock)  # the module's clock only
    with pytest.raises(relaxation.BuildTimeout, match="at tensor 1 of 8"):
        formulate(inst, deadline=5.0)
