"""The delivery relaxation with copy and cover rows (`step_covers.py`, certificate model
residency-delivery-step-cover): what its certificate proves, recomputed, is never above the
optimum found by exhaustive search on random tiny instances, for its own duals and for
any dual vector; it lifts the delivery relaxation where two activations of one op cannot
share fast memory; and a certificate with a cover that is not one, tampered duals, another
row count or a ceiling below a valid latency proves less than the bound stored beside it."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memplace.bench.library.check import holds
from memplace.model import Instance
from memplace.solvers.certificate import (STEP_COVER_MODEL, DELIVERY_MODEL, ON_REQUEST_MODELS,
                                          check_lp_dual, lp_dual, lp_models)
from memplace.solvers.residency.machinery import delivery_bound, step_covers
from residency_exhaustive import exhaustive_optimum, tiny_case


def _pair_instance() -> Instance:
    """op 1 reads a 3000-byte activation and writes another; fast memory holds 4500 bytes,
    so one of them is at the slow level's bandwidth (10x slower) in op 1 and in the op at
    its other end; the LP puts both half in fast memory."""
    ops = [{"name": f"op{k}", "type": "add", "flops": 1e3} for k in range(3)]
    tensors = [
        {"name": "a", "kind": "activation", "size": 3000, "producer": 0, "accesses": [[0, 3000], [1, 3000]]},
        {"name": "b", "kind": "activation", "size": 3000, "producer": 1, "accesses": [[1, 3000], [2, 3000]]},
    ]
    data = {"format": "memplace-instance/1", "name": "pair@toy",
            "workload": {"name": "pair", "ops": ops, "tensors": tensors},
            "hardware": {"name": "toy", "compute_rate": 1e9, "levels": [
                {"name": "fast", "capacity": 4500, "bandwidth": 1e9},
                {"name": "slow", "capacity": None, "bandwidth": 1e8}]}}
    return Instance.from_dict(data)


def test_the_cover_model_is_solved_only_on_request():
    assert STEP_COVER_MODEL in ON_REQUEST_MODELS["residency"]
    assert STEP_COVER_MODEL not in lp_models("residency")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6))
def test_cover_certificate_is_at_most_the_exhaustive_optimum(seed):
    inst, best = tiny_case(seed, slow_copies=True)
    cert = lp_dual(inst, STEP_COVER_MODEL, 60, ceiling=best)
    assert cert is not None and cert["ceiling"] == best
    assert 0 < cert["bound"] <= best * (1 + 1e-9)
    assert check_lp_dual(inst, cert, valid_latency=best) == pytest.approx(cert["bound"], rel=1e-12)
    delivery = lp_dual(inst, DELIVERY_MODEL, 60, ceiling=best)
    assert cert["bound"] >= delivery["bound"] * (1 - 1e-6)  # rows added only lift the LP


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6))
def test_weak_duality_holds_for_any_dual_vector_and_every_cover(seed):
    inst, best = tiny_case(seed, slow_copies=True)
    base = step_covers.with_copy_rows(delivery_bound.formulate(inst, best))
    occ = step_covers.occupancy(base)
    # every minimal pair or triple that overflows a level at a step, not only violated ones
    covers = []
    for (level, step), tensors in sorted(occ.items()):
        ts = sorted(tensors)
        for a in range(len(ts)):
            for b in range(a + 1, len(ts)):
                cover = step_covers.valid_cover(inst, [level, step, [ts[a], ts[b]]])
                if cover is not None:
                    covers.append(cover)
    model = step_covers.with_covers(base, covers, occ)
    rng = np.random.default_rng(seed)
    for scale in (0.0, 0.1, 1.0, 10.0):
        z = rng.normal(0.0, scale, model.lp.rlo.size)
        assert delivery_bound.dual_bound(model, z) <= best * (1 + 1e-9)


def test_covers_lift_the_bound_where_two_activations_cannot_share_fast_memory():
    inst = _pair_instance()
    best = exhaustive_optimum(inst)
    delivery = lp_dual(inst, DELIVERY_MODEL, 60, ceiling=best)
    cert = lp_dual(inst, STEP_COVER_MODEL, 60, ceiling=best)
    assert cert["covers"] == [[0, 1, [0, 1]]]
    assert delivery["bound"] < 0.9 * best
    assert cert["bound"] == pytest.approx(best, rel=1e-6)


def test_a_tampered_cover_certificate_proves_less():
    inst = _pair_instance()
    best = exhaustive_optimum(inst)
    cert = lp_dual(inst, STEP_COVER_MODEL, 60, ceiling=best)
    assert check_lp_dual(inst, cert, valid_latency=best) == pytest.approx(cert["bound"], rel=1e-12)
    # a ceiling below a latency known valid, or none known, proves nothing
    assert check_lp_dual(inst, cert, valid_latency=best * 1.01) == -math.inf
    assert check_lp_dual(inst, cert) == -math.inf
    assert check_lp_dual(inst, dict(cert, rows=cert["rows"] + 1), valid_latency=best) == -math.inf
    # a "cover" that fits the level, names a level without capacity, a step out of the
    # program or a tensor twice is refused
    for bad in ([0, 1, [0]], [1, 1, [0, 1]], [0, 3, [0, 1]], [0, 1, [0, 0]], [0, 1, [0, 7]], "x"):
        assert check_lp_dual(inst, dict(cert, covers=cert["covers"][:-1] + [bad]),
                             valid_latency=best) == -math.inf
    # covers dropped (the rows then do not match) or duals changed prove less
    assert not holds(cert["bound"], check_lp_dual(inst, dict(cert, covers=[]), valid_latency=best))
    value = np.array(cert["value"])
    big = int(np.argmax(np.abs(value)))
    for tampered in (value * 0.0, np.where(np.arange(value.size) == big, value * 3.0, value)):
        proved = check_lp_dual(inst, dict(cert, value=tampered.tolist()), valid_latency=best)
        assert not holds(cert["bound"], proved)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6))
def test_a_tree_over_the_step_cover_lp_is_at_most_the_exhaustive_optimum(seed):
    inst, best = tiny_case(seed, slow_copies=True)
    got = step_covers.grow_tree(inst, best, 30, 20)
    proved = step_covers.check_tree(inst, best, [c.to_json() for c in got.covers], got.rows, got.tree)
    assert proved == pytest.approx(got.bound, rel=1e-9)
    assert got.root_bound * (1 - 1e-6) <= proved <= best * (1 + 1e-9)  # duals stored at 9 digits



@pytest.mark.parametrize("op_rows", [False, True])
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6))
def test_cut_and_branch_is_at_most_the_exhaustive_optimum(op_rows, seed):
    """Covers separated at the leaves join the stored list; the check rebuilds the LP with
    all of them (and the op rows, as the library's certificates have them)."""
    inst, best = tiny_case(seed, slow_copies=True)
    got = step_covers.grow_tree(inst, best, 30, 20, leaf_rounds=3, op_rows=op_rows)
    covers = [c.to_json() for c in got.covers]
    proved = step_covers.check_tree(inst, best, covers, got.rows, got.tree, op_rows)
    assert proved == pytest.approx(got.bound, rel=1e-9)
    assert got.root_bound * (1 - 1e-6) <= proved <= best * (1 + 1e-9)

def test_a_tree_that_gains_nothing_over_its_root_leaves_the_roots_certificate(tmp_path):
    """The ladder's step-cover tree rung is the only place the library solves the step-cover
    LP: where the tree proves no more than its root (here the covers close the gap at the
    root), the root's certificate is returned and recorded under its own model's name."""
    import json

    from memplace.bench.library.improve import Task, run_task
    from memplace.solvers.certificate import STEP_COVER_TREE_MODEL
    inst = _pair_instance()
    best = exhaustive_optimum(inst)
    cert = lp_dual(inst, STEP_COVER_TREE_MODEL, 30, ceiling=best)
    plain = lp_dual(inst, DELIVERY_MODEL, 30, ceiling=best)["bound"]
    assert cert is not None and cert["model"] == STEP_COVER_MODEL and "tree" not in cert
    assert plain * 1.5 < cert["bound"] <= best * (1 + 1e-9)
    assert check_lp_dual(inst, cert, valid_latency=best) == pytest.approx(cert["bound"], rel=1e-12)
    source = tmp_path / "pair.json"
    source.write_text(json.dumps(inst.to_dict()))
    ran = run_task(Task("residency/pair@toy", "residency", str(source), "lp-dual", 30, 0,
                        {"models": [STEP_COVER_TREE_MODEL], "ceiling": best, "closed_form": False}))
    assert [(b["label"], b["certificate"]["model"]) for b in ran["bounds"]] == \
        [(STEP_COVER_MODEL, STEP_COVER_MODEL)]
    assert ran["unproved"] == []


def test_a_tampered_tree_proves_nothing_or_less():
    inst = _pair_instance()
    best = exhaustive_optimum(inst)
    got = step_covers.grow_tree(inst, best * 1.5, 30, 20)
    covers = [c.to_json() for c in got.covers]
    assert step_covers.check_tree(inst, best * 1.5, covers, got.rows, got.tree) <= best * (1 + 1e-9)
    assert step_covers.check_tree(inst, best * 1.5, covers, got.rows + 1, got.tree) == -math.inf
    assert step_covers.check_tree(inst, best * 1.5, covers + [[0, 1, [0]]], got.rows, got.tree) == -math.inf
    bad = {"branch": [10**6], "at": 0, "down": {"index": [], "value": []}, "up": {"index": [], "value": []}}
    assert step_covers.check_tree(inst, best * 1.5, covers, got.rows, bad) == -math.inf
    # a branch on the time column E[0] (not 0/1 at valid points) is refused
    bad["branch"] = [0]
    assert step_covers.check_tree(inst, best * 1.5, covers, got.rows, bad) == -math.inf


def test_the_tree_branches_first_on_the_tensors_of_the_ops_where_the_lp_spends_its_time():
    inst = _pair_instance()
    best = exhaustive_optimum(inst)
    model = step_covers.with_copy_rows(delivery_bound.formulate(inst, best))
    branchable, by_size = step_covers.branching(model)
    point = np.zeros(model.lp.cost.size)
    point[:inst.n_ops] = [0.5, 3.0, 1.0]  # the LP's interval times E[k]: op 1 the costliest
    same, priority = step_covers.branching(model, point)
    assert (same == branchable).all()  # the point orders the columns, never adds or drops one
    assert (by_size[branchable] == 3000.0).all()
    a, b = model.columns[0], model.columns[1]
    # a's window at op 0 (E 0.5) comes after its window at op 1 (E 3.0), b's at op 2 (E 1.0) too
    assert {priority[c] for c in a.windows[0].values()} == {1500.0}
    assert {priority[c] for c in a.windows[1].values()} == {9000.0}
    assert {priority[c] for c in b.windows[1].values()} == {3000.0}
    # a home ranks with its tensor's costliest op
    assert priority[model.homes[1][model.homes[1] >= 0]].tolist() == [9000.0] * int((model.homes[1] >= 0).sum())
