"""Start columns for a few tensors inside the step-cover LP, and a tree on them
(`start_columns.py`, certificate model residency-delivery-start-tree): what a certificate
proves, recomputed, is never above the optimum found by exhaustive search on random tiny
instances, for its own tree and for any dual vector of the LP; it proves more than the
delivery and step-cover LPs where a weight's copy must wait for an activation to leave
fast memory; and a tampered certificate proves nothing or less."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memplace.bench.library.check import holds
from memplace.model import Instance
from memplace.solvers.certificate import (DELIVERY_MODEL, ON_REQUEST_MODELS, START_COLUMN_MODEL,
                                          STEP_COVER_MODEL, check_lp_dual, lp_dual, lp_models)
from memplace.solvers.residency.machinery import delivery_bound, start_columns
from residency_exhaustive import exhaustive_optimum, tiny_case


def _slot_instance() -> Instance:
    """Op 0 writes a 600-byte activation that op 1 reads; op 3 reads a 600-byte weight.
    Fast memory holds 1000 bytes, the slow level is 10x slower and copies a 600-byte
    tensor in 1.5 us, ops take 1 us. The best: the activation in fast memory, the weight
    prefetched from step 2 on (both do not fit before), its copy moving during op 2 and
    0.5 us of wait: 4.5 us. The fluid delivery lets 400 bytes of the copy arrive beside
    the activation during ops 0-1, and proves 4.0 us."""
    ops = [{"name": f"op{k}", "type": "add", "flops": 1e3} for k in range(4)]
    tensors = [
        {"name": "a", "kind": "activation", "size": 600, "producer": 0, "accesses": [[0, 600], [1, 600]]},
        {"name": "w", "kind": "weight", "size": 600, "producer": None, "accesses": [[3, 600]]},
    ]
    data = {"format": "memplace-instance/1", "name": "slot@toy",
            "workload": {"name": "slot", "ops": ops, "tensors": tensors},
            "hardware": {"name": "toy", "compute_rate": 1e9, "levels": [
                {"name": "fast", "capacity": 1000, "bandwidth": 1e9},
                {"name": "slow", "capacity": None, "bandwidth": 1e8, "copy_bandwidth": 4e8}]}}
    return Instance.from_dict(data)


def test_the_start_column_model_is_solved_only_on_request():
    assert START_COLUMN_MODEL in ON_REQUEST_MODELS["residency"]
    assert START_COLUMN_MODEL not in lp_models("residency")


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6))
def test_a_start_column_tree_is_at_most_the_exhaustive_optimum(seed):
    inst, best = tiny_case(seed, slow_copies=True)
    got = start_columns.bound(inst, best, 30, 30, tensors=tuple(range(inst.n_tensors)))
    proved = start_columns.check(inst, best, list(got.tensors), [c.to_json() for c in got.covers],
                                 got.rows, got.tree)
    assert proved == pytest.approx(got.bound, rel=1e-9)
    assert proved <= best * (1 + 1e-9)
    delivery = lp_dual(inst, DELIVERY_MODEL, 60, ceiling=best)
    assert proved >= delivery["bound"] * (1 - 1e-6)  # per-copy starts only tighten the fluid rows


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6))
def test_weak_duality_holds_for_any_dual_vector_of_the_start_column_lp(seed):
    inst, best = tiny_case(seed, slow_copies=True)
    sm = start_columns.formulate(inst, best, tuple(range(inst.n_tensors)))
    rng = np.random.default_rng(seed)
    for scale in (0.0, 0.1, 1.0, 10.0):
        z = rng.normal(0.0, scale, sm.model.lp.rlo.size)
        assert delivery_bound.dual_bound(sm.model, z) <= best * (1 + 1e-9)


def test_start_columns_charge_the_whole_window_where_the_fluid_copy_trickles_in():
    inst = _slot_instance()
    best = exhaustive_optimum(inst)
    assert best == pytest.approx(4.5e-6, rel=1e-9)
    delivery = lp_dual(inst, DELIVERY_MODEL, 60, ceiling=best)["bound"]
    cover = lp_dual(inst, STEP_COVER_MODEL, 60, ceiling=best)["bound"]
    cert = lp_dual(inst, START_COLUMN_MODEL, 60, ceiling=best * 1.5)
    assert delivery == pytest.approx(4.0e-6, rel=1e-6) and cover == pytest.approx(4.0e-6, rel=1e-6)
    assert cert["tensors"] == [0, 1]
    assert cert["bound"] == pytest.approx(best, rel=1e-6)
    assert check_lp_dual(inst, cert, valid_latency=best) == pytest.approx(cert["bound"], rel=1e-12)


def test_a_tampered_start_column_certificate_proves_nothing_or_less():
    inst = _slot_instance()
    best = exhaustive_optimum(inst)
    cert = lp_dual(inst, START_COLUMN_MODEL, 60, ceiling=best * 1.5)
    assert check_lp_dual(inst, cert, valid_latency=best) == pytest.approx(cert["bound"], rel=1e-12)
    # a ceiling below a latency known valid, or none known, proves nothing
    assert check_lp_dual(inst, cert, valid_latency=best * 1.6) == -math.inf
    assert check_lp_dual(inst, cert) == -math.inf
    assert check_lp_dual(inst, dict(cert, rows=cert["rows"] + 1), valid_latency=best) == -math.inf
    # tensors that are not distinct tensors of the instance, or another set (other rows)
    for bad in ([1, 1], [0, 7], [0, True], "x", [1]):
        assert check_lp_dual(inst, dict(cert, tensors=bad), valid_latency=best) == -math.inf
    # a branch on a share column F (not 0/1 at valid points) is refused
    sm = start_columns.formulate(inst, best * 1.5, (0, 1))
    f_col = sm.starts[-1].F[0]
    leaf = {"index": [], "value": []}
    bad_tree = {"branch": [f_col], "at": 0, "down": leaf, "up": leaf}
    assert check_lp_dual(inst, dict(cert, tree=bad_tree), valid_latency=best) == -math.inf
    # the same branch on its start column Y is accepted, and empty leaves prove little
    ok_tree = dict(bad_tree, branch=[sm.starts[-1].Y[0]])
    assert check_lp_dual(inst, dict(cert, tree=ok_tree), valid_latency=best) < cert["bound"]
    # every leaf's duals zeroed prove less
    def zeroed(node):
        if "branch" in node:
            return dict(node, down=zeroed(node["down"]), up=zeroed(node["up"]))
        return {"index": [], "value": []}
    assert not holds(cert["bound"], check_lp_dual(inst, dict(cert, tree=zeroed(cert["tree"])),
                                                  valid_latency=best))
