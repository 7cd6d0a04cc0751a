"""The residency lower bounds never exceed the latency of a valid solution, and match
hand-computed figures."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memplace.model import Instance, rectify
from memplace.model.residency import (ResidencySolution, channel_bound, fastest_bound, lower_bound,
                                      op_capacity_bound, simulate, violations)
from memplace.model.residency.bounds import SAFETY, op_memory_bound
from randominst import random_instance_dict
from residency_cases import DRAM, LLC, SRAM, small
from residency_windows import random_windows


def _valid_solution(inst, rng):
    """Capacity-valid homes (rectified random ones), then random windows kept while valid."""
    homes = rectify(inst, rng.integers(0, inst.n_levels, inst.n_tensors)).placement
    kept = []
    for w in random_windows(inst, homes, rng, density=0.9):
        trial = ResidencySolution(inst.name, homes, None, tuple(kept + [w]))
        if not violations(inst, trial):
            kept.append(w)
    sol = ResidencySolution(inst.name, homes, None, tuple(kept))
    assert violations(inst, sol) == []
    return sol


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6))
def test_lower_bound_never_exceeds_a_valid_solution(seed):
    rng = np.random.default_rng(seed)
    data = random_instance_dict(seed, n_ops=8, n_tensors=10, tight=float(rng.choice([0.2, 0.5, 1.0])))
    inst = Instance.from_dict(data)
    sol = _valid_solution(inst, rng)
    assert lower_bound(inst) <= simulate(inst, sol)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**6), st.sampled_from([0.2, 0.5, 1.0]))
def test_op_capacity_bound_is_the_sum_of_op_memory_bounds_to_the_last_bit(seed, tight):
    inst = Instance.from_dict(random_instance_dict(seed, n_ops=12, n_tensors=16, tight=tight))
    by_op = 0.0
    for k in range(inst.n_ops):
        by_op += max(float(inst.compute[k]), op_memory_bound(inst, k))
    assert op_capacity_bound(inst) == by_op * SAFETY


def test_committed_instances_bounds_are_below_valid_solutions():
    from memplace.instances import load
    for name in ("resnet50@nnpi", "bert-base@nnpi", "gpt2@nnpi"):
        inst = load(name)
        rng = np.random.default_rng(0)
        sol = _valid_solution(inst, rng)
        bound = lower_bound(inst)
        assert fastest_bound(inst) <= op_capacity_bound(inst) * (1 + 1e-12)
        assert bound <= simulate(inst, sol)


def test_fastest_bound_by_hand():
    # small instance: op traffic 200, 290, 100, 40, 200, 50 B at 1 GB/s; compute 1 us each
    assert fastest_bound(small()) == pytest_approx(6e-6)


def test_op_capacity_bound_by_hand():
    # SRAM 320 B, LLC 10 kB: op 1 touches a (200 B), b (50 B), x (40 B): all fit SRAM
    inst = small(L0={"capacity": 100})
    # op 1 with SRAM 100 B: best bytes/size are all 1; 100 B from SRAM, 190 B from LLC at 0.4 GB/s
    # = 0.1 us + 0.475 us < 1 us compute; op 0: a (200 B) -> 100 B SRAM + 100 B LLC = 0.35 us
    assert op_capacity_bound(inst) == pytest_approx(6e-6)
    tight = small(L0={"capacity": 10}, L1={"capacity": 10, "bandwidth": 1e8})
    # op 1: 10 B SRAM (0.01 us) + 10 B LLC (0.1 us) + 270 B DRAM (2.7 us) = 2.81 us; op 0:
    # 0.01 + 0.1 + 1.8 = 1.91 us; op 4 the same; op 2 (w, 100 B): 0.01 + 0.1 + 0.8 = 0.91 -> 1 us
    assert op_capacity_bound(tight) == pytest_approx((1.91 + 2.81 + 1 + 1 + 1.91 + 1) * 1e-6)


def test_channel_bound_counts_weights_that_cannot_fit_above_the_last_level():
    data = small().data
    data["workload"]["tensors"].append({"name": "w2", "kind": "weight", "size": 400, "producer": None,
                                        "accesses": [[3, 400]]})
    data["hardware"]["levels"][1]["capacity"] = 100  # fast levels hold 420 B; weights are 500 B
    data["hardware"]["levels"][2]["copy_bandwidth"] = 2e8
    inst = Instance.from_dict(data)
    # 80 B must stay in DRAM; the cheapest per byte is a copy at 200 MB/s (w2: 2 us / 400 B)
    assert channel_bound(inst) == pytest_approx(80 / 2e8)
    assert channel_bound(small()) == 0.0  # w (100 B) fits


def pytest_approx(x):
    import pytest
    return pytest.approx(x, rel=1e-11)


def test_bounds_of_the_issue_instances():
    """The gaps the issue quotes: the bound leaves ~6% on resnet50@nnpi and ~12% on
    bert-base@nnpi below the static optimum (95.431 us and 946.868 us, README's milp)."""
    from memplace.instances import load
    assert round(1 - lower_bound(load("resnet50@nnpi")) / 95.431e-6, 3) == 0.063
    assert round(1 - lower_bound(load("bert-base@nnpi")) / 946.868e-6, 3) == 0.123
