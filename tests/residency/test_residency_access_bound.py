"""The access relaxation (`access_bound.py`) is a lower bound: never above the optimum
found by exhaustive search on random tiny instances, whatever dual vector its weak-duality
figure is computed from; never above a valid latency on committed programs; and stronger
than the closed-form bounds where fast memory is scarce over time."""
from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memplace.instances import load
from memplace.model.residency import lower_bound
from memplace.solvers import solve
from memplace.solvers.residency.machinery.access_bound import access_bound, dual_bound, formulate
from memplace.solvers.residency.machinery.relaxation import formulate as formulate_milp
from memplace.solvers.residency.machinery.relaxation import solve_relaxation
from residency_exhaustive import tiny_case


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6))
def test_every_bound_is_at_most_the_exhaustive_optimum(seed):
    inst, best = tiny_case(seed)
    got = access_bound(inst, best * 2)
    assert got.status == "Optimal"
    assert inst.compute_floor() * (1 - 1e-9) <= got.bound <= best * (1 + 1e-9)
    assert solve_relaxation(formulate_milp(inst), None).bound <= best * (1 + 1e-9)
    assert lower_bound(inst) <= best * (1 + 1e-9)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6))
def test_weak_duality_holds_for_any_dual_vector(seed):
    inst, best = tiny_case(seed)
    model = formulate(inst, best * 2)
    rng = np.random.default_rng(seed)
    for scale in (0.0, 0.1, 1.0, 10.0):
        z = rng.normal(0.0, scale, len(model.rows.rlo))
        assert dual_bound(model, z) <= best * (1 + 1e-9)


@pytest.mark.parametrize("name", ["resnet50@nnpi", "xla-encoder@nnpi", "zoo/llama-small-prefill@nnpi"])
def test_committed_programs_bound_is_below_valid_latencies(name):
    inst = load(name, problem="residency")
    valid = solve(inst, "compiler", time_limit=None, problem="residency").latency
    got = access_bound(inst, valid, time_limit=120)
    assert got.bound <= valid
    if name == "xla-encoder@nnpi":  # DRAM-bound: homes and copies over time decide it
        assert got.bound > 1.2 * lower_bound(inst)


def test_a_time_limit_too_short_to_build_gives_no_bound_in_time():
    inst = load("synth-1000@nnpi", problem="residency")
    began = time.perf_counter()
    got = access_bound(inst, 1.0, time_limit=0.01)
    assert time.perf_counter() - began < 2.0
    assert got.bound == -np.inf and "not built" in got.status
