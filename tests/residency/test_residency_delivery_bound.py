"""The delivery relaxation (`delivery_bound.py`) is a lower bound: never above the optimum
found by exhaustive search on random tiny instances (copies slow against the ops, fast
memory tight, so the delivery rows bind), whatever dual vector its weak-duality figure is
computed from; never above a valid latency on committed programs; at least the access
relaxation's bound; and above it where weights must wait in fast memory for their op."""
from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memplace.instances import load
from memplace.model import Instance
from memplace.solvers import solve
from memplace.solvers.residency.machinery.access_bound import access_bound
from memplace.solvers.residency.machinery.delivery_bound import delivery_bound, dual_bound, formulate
from memplace.solvers.residency.machinery.horizon_bound import check, horizon_bound
from residency_exhaustive import exhaustive_optimum, tiny_case


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6))
def test_the_bound_is_at_most_the_exhaustive_optimum(seed):
    inst, best = tiny_case(seed, slow_copies=True)
    got = delivery_bound(inst, best * 2)
    assert got.status == "Optimal"
    assert inst.compute_floor() * (1 - 1e-9) <= got.bound <= best * (1 + 1e-9)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6))
def test_weak_duality_holds_for_any_dual_vector(seed):
    inst, best = tiny_case(seed, slow_copies=True)
    model = formulate(inst, best * 2)
    rng = np.random.default_rng(seed)
    for scale in (0.0, 0.1, 1.0, 10.0):
        z = rng.normal(0.0, scale, model.lp.rlo.size)
        assert dual_bound(model, z) <= best * (1 + 1e-9)


def test_the_certificate_rechecks_to_the_bound():
    inst = load("resnet50@nnpi", problem="residency")
    valid = solve(inst, "compiler", time_limit=None, problem="residency").latency
    got = delivery_bound(inst, valid, time_limit=120)
    again = dual_bound(formulate(inst, valid), got.row_dual)
    assert again == pytest.approx(got.bound, rel=1e-6)
    with pytest.raises(ValueError, match="dual vector"):
        dual_bound(formulate(inst, valid), got.row_dual[:-1])


@pytest.mark.parametrize("name", ["resnet50@nnpi", "xla-encoder@nnpi", "synth-100@nnpi"])
def test_committed_programs_bound_is_below_valid_latencies_and_above_the_access_bound(name):
    inst = load(name, problem="residency")
    valid = solve(inst, "compiler", time_limit=None, problem="residency").latency
    got = delivery_bound(inst, valid, time_limit=120)
    assert got.status == "Optimal"
    assert got.bound <= valid
    assert got.bound >= access_bound(inst, valid, time_limit=120).bound * (1 - 1e-6)


def test_weights_that_wait_for_their_op_lift_the_bound_above_the_access_relaxation():
    # op 3 reads a 3000-byte weight, whose copy from the slow level takes 3 us, longer
    # than an op (2 us: each other op reads its own 2000-byte activation); while the copy
    # moves, its window holds 3000 of fast memory's 4500 bytes, so the activation of the
    # op before cannot be there too. The access relaxation charges the window from op 3
    # only, where nothing else needs fast memory.
    ops = [{"name": f"op{k}", "type": "add", "flops": 1e3} for k in range(5)]
    tensors = [{"name": "w", "kind": "weight", "size": 3000, "producer": None, "accesses": [[3, 3000]]}]
    for k in (0, 1, 2, 4):
        tensors.append({"name": f"a{k}", "kind": "activation", "size": 2000, "producer": k,
                        "accesses": [[k, 2000]]})
    data = {"format": "memplace-instance/1", "name": "wait@toy",
            "workload": {"name": "wait", "ops": ops, "tensors": tensors},
            "hardware": {"name": "toy", "compute_rate": 1e9, "levels": [
                {"name": "fast", "capacity": 4500, "bandwidth": 1e9},
                {"name": "slow", "capacity": None, "bandwidth": 2e8, "copy_bandwidth": 1e9}]}}
    inst = Instance.from_dict(data)
    best = exhaustive_optimum(inst)
    got = delivery_bound(inst, best * 2)
    access = access_bound(inst, best * 2)
    assert access.bound * 1.05 < got.bound <= best * (1 + 1e-9)


def test_a_time_limit_too_short_to_build_gives_no_bound_in_time():
    inst = load("synth-1000@nnpi", problem="residency")
    began = time.perf_counter()
    got = delivery_bound(inst, 1.0, time_limit=0.01)
    assert time.perf_counter() - began < 2.0
    assert got.bound == -np.inf and "not built" in got.status


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6), st.integers(1, 3))
def test_the_horizon_bound_is_at_most_the_exhaustive_optimum_for_any_prices(seed, block_ops):
    inst, best = tiny_case(seed, slow_copies=True)
    got = horizon_bound(inst, best * 2, block_ops=block_ops, rounds=4)
    assert got.stats["rounds"] == 4
    assert inst.compute_floor() * (1 - 1e-9) <= got.bound <= best * (1 + 1e-9)
    rng = np.random.default_rng(seed)
    prices = rng.exponential(got.stats["prices"][0] + 1.0, inst.n_levels)  # any prices >= 0
    duals = [rng.normal(0.0, 1.0, z.size) for z in got.row_duals]  # and any dual vectors
    assert check(inst, best * 2, prices, duals, block_ops) <= best * (1 + 1e-9)


def test_the_horizon_certificate_rechecks_to_its_bound():
    inst = load("synth-1000@nnpi", problem="residency")
    valid = solve(inst, "compiler", time_limit=None, problem="residency").latency
    got = horizon_bound(inst, valid, time_limit=300, block_ops=250, rounds=2)
    assert got.stats["blocks"] == 4 and got.bound <= valid
    assert check(inst, valid, got.prices, got.row_duals, 250) == pytest.approx(got.bound, rel=1e-6)
    with pytest.raises(ValueError, match="dual vectors"):
        check(inst, valid, got.prices, got.row_duals[:-1], 250)
