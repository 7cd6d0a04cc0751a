"""The delivery relaxation's op rows (`delivery_bound.op_rows`): with them the LP is never
above the optimum found by exhaustive search on random tiny instances, whatever dual
vector its weak-duality figure is computed from; they lift it where an op's compute hides
part of a slow read, which the memory row lets the LP split; and a certificate says
whether its LP has them, so one built without them (every library version before them)
re-checks as it did."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memplace.model import Instance
from memplace.solvers.certificate import (CAPPED_MODEL, DELIVERY_MODEL, START_TREE_MODEL,
                                          STEP_COVER_MODEL, check_lp_dual, lp_dual)
from memplace.solvers.residency.machinery.delivery_bound import (dual_bound, formulate, op_rows,
                                                                 solve_lp)
from residency_exhaustive import exhaustive_optimum, tiny_case


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6), st.booleans())
def test_with_op_rows_the_bound_is_at_most_the_exhaustive_optimum(seed, slow_copies):
    inst, best = tiny_case(seed, slow_copies=slow_copies)
    model = formulate(inst, best * 2, op_rows=True)
    status, z = solve_lp(model, 60)
    assert status == "Optimal"
    assert dual_bound(model, z) <= best * (1 + 1e-9)
    rng = np.random.default_rng(seed)
    for scale in (0.1, 1.0, 10.0):
        assert dual_bound(model, rng.normal(0.0, scale, model.lp.rlo.size)) <= best * (1 + 1e-9)


def _hidden_read() -> Instance:
    """Two ops of 1 us of compute each, reading a 2500-byte and a 2000-byte weight that a
    4000-byte fast level cannot hold both of (slow reads and copies: 1 byte a ns)."""
    ops = [{"name": f"op{k}", "type": "matmul", "flops": 1e3} for k in range(2)]
    tensors = [{"name": "v", "kind": "weight", "size": 2500, "producer": None, "accesses": [[0, 2500]]},
               {"name": "w", "kind": "weight", "size": 2000, "producer": None, "accesses": [[1, 2000]]}]
    return Instance.from_dict({
        "format": "memplace-instance/1", "name": "hidden@toy",
        "workload": {"name": "hidden", "ops": ops, "tensors": tensors},
        "hardware": {"name": "toy", "compute_rate": 1e9, "levels": [
            {"name": "fast", "capacity": 4000, "bandwidth": 1e12},
            {"name": "slow", "capacity": None, "bandwidth": 1e9}]}})


def test_op_rows_lift_the_bound_where_compute_hides_part_of_a_slow_read():
    # one weight is read from the slow level (2 or 2.5 us, over the op's 1 us) or copied
    # there in an op's time that is not enough; the LP without op rows reads part of it
    # slowly, hidden under the op's compute, and copies the rest: 2 us, the compute alone
    inst = _hidden_read()
    best = exhaustive_optimum(inst)
    assert best == pytest.approx(3e-6)
    bounds = []
    for rows in (False, True):
        model = formulate(inst, best, op_rows=rows)
        bounds.append(dual_bound(model, solve_lp(model, 60)[1]))
    assert bounds[0] == pytest.approx(2e-6, rel=1e-6)
    assert 2.2e-6 < bounds[1] <= best * (1 + 1e-9)
    assert len(op_rows(formulate(inst, best))) == 2  # both ops are compute-bound


@pytest.mark.parametrize("model", [DELIVERY_MODEL, STEP_COVER_MODEL])
def test_a_certificate_says_it_has_op_rows_and_rechecks_only_with_them(model):
    inst = _hidden_read()
    best = exhaustive_optimum(inst)
    cert = lp_dual(inst, model, 60, ceiling=best)
    assert cert is not None and cert["op_rows"] is True and cert["bound"] > 2.2e-6
    assert check_lp_dual(inst, cert, valid_latency=best) == pytest.approx(cert["bound"], rel=1e-12)
    # without the flag the LP is rebuilt without them: the duals do not fit its rows
    assert check_lp_dual(inst, {k: v for k, v in cert.items() if k != "op_rows"},
                         valid_latency=best) == -math.inf
    assert check_lp_dual(inst, dict(cert, op_rows="yes"), valid_latency=best) == -math.inf


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6))
def test_the_capped_relaxation_with_op_rows_is_at_most_the_exhaustive_optimum(seed):
    from memplace.solvers.residency.machinery.relaxation import capped_lp, weak_duality
    inst, best = tiny_case(seed, slow_copies=True)
    cert = lp_dual(inst, CAPPED_MODEL, 60, ceiling=best)
    assert cert is not None and cert["op_rows"] is True
    assert cert["bound"] <= best * (1 + 1e-9)
    lp = capped_lp(inst, best, op_rows=True)
    rng = np.random.default_rng(seed)
    assert weak_duality(lp, rng.normal(0.0, 1.0, lp.rlo.size)) <= best * (1 + 1e-9)


@pytest.mark.parametrize("model", [CAPPED_MODEL, START_TREE_MODEL])
def test_the_relaxation_and_its_tree_prove_more_with_op_rows_and_say_so(model):
    inst = _hidden_read()
    best = exhaustive_optimum(inst)
    cert = lp_dual(inst, model, 60, ceiling=best)
    assert cert is not None and cert["op_rows"] is True
    assert 2.2e-6 < cert["bound"] <= best * (1 + 1e-9)
    assert check_lp_dual(inst, cert, valid_latency=best) == pytest.approx(cert["bound"], rel=1e-12)
    assert check_lp_dual(inst, dict(cert, op_rows=False), valid_latency=best) == -math.inf
