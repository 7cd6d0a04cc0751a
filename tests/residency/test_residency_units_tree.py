"""Whole copies in the delivery relaxation (`copy_units.py`, certificate model
residency-delivery-units-tree): every `delivered` disjunction leaves the optimum found by
exhaustive search on one of its sides on random tiny instances (whatever unit, so copies
that are not multiples of it stay on the fluid charge), a grown tree never proves more
than that optimum, the tree lifts the delivery relaxation where a copy could trickle
into fast memory a real window holds whole, and a certificate whose node is not a valid
disjunction for the instance, or names a pair or step the rebuilt model has not, proves
nothing."""
from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memplace.model import Instance
from memplace.solvers import lp_tree
from memplace.solvers.certificate import (DELIVERY_MODEL, ON_REQUEST_MODELS, UNITS_TREE_MODEL,
                                          check_lp_dual, lp_dual, lp_models)
from memplace.solvers.residency.machinery import copy_units, step_covers
from residency_exhaustive import exhaustive_optimum, tiny_case


def _trickle_instance() -> Instance:
    """Two 1000-byte weights in slow memory, A read by op 1, B by op 3, fast memory of
    1500 bytes: a real schedule copies B during op 2 (5 us) and waits 5 us for it (32 us
    in all), since B's window cannot start while A's holds op 1; the fluid LP moves half
    of B during op 0 beside A and the rest during op 2, 27 us."""
    ops = [{"name": "op0", "type": "matmul", "flops": 2e4}, {"name": "op1", "type": "add", "flops": 1e2},
           {"name": "op2", "type": "matmul", "flops": 5e3}, {"name": "op3", "type": "add", "flops": 1e2}]
    tensors = [
        {"name": "A", "kind": "weight", "size": 1000, "producer": None, "accesses": [[1, 1000]]},
        {"name": "B", "kind": "weight", "size": 1000, "producer": None, "accesses": [[3, 1000]]},
    ]
    data = {"format": "memplace-instance/1", "name": "trickle@toy",
            "workload": {"name": "trickle", "ops": ops, "tensors": tensors},
            "hardware": {"name": "toy", "compute_rate": 1e9, "levels": [
                {"name": "fast", "capacity": 1500, "bandwidth": 1e9},
                {"name": "slow", "capacity": None, "bandwidth": 1e8}]}}
    return Instance.from_dict(data)


def _units(inst: Instance, um_pairs, pick: int) -> dict[tuple[int, int], int]:
    """A unit per pair: one of the instance's tensor sizes (some copies are multiples of
    it, others are not)."""
    sizes = sorted(set(int(s) for s in inst.size))
    return {pair: sizes[pick % len(sizes)] for pair in um_pairs}


def _one_split(um: copy_units.UnitModel, fields: dict) -> lp_tree.Pick:
    down, up = copy_units.delivered_rows(um, fields)
    split = lp_tree.Split(fields, down, up)
    return lambda x, y: split


def test_the_units_tree_is_solved_only_on_request():
    assert UNITS_TREE_MODEL in ON_REQUEST_MODELS["residency"]
    assert UNITS_TREE_MODEL not in lp_models("residency")


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6), st.integers(0, 5))
def test_every_delivered_disjunction_keeps_the_optimum_on_one_side(seed, pick):
    inst, best = tiny_case(seed, slow_copies=True)
    base = copy_units.formulate(inst, best * 1.5)
    units = _units(inst, base.model.delivered, pick)
    um = copy_units.formulate(inst, best * 1.5, units)
    branchable, _ = step_covers.branching(um.model)
    cap = best * 1.5 / um.model.scale
    for (h, l), pair in um.pairs.items():
        most = int(sum(int(inst.size[t]) for t in range(inst.n_tensors)) // pair.unit) + 1
        for j in range(inst.n_ops):
            for q in range(0, most + 1):
                fields = {"kind": copy_units.KIND, "home": h, "level": l, "step": j, "q": q}
                grown = lp_tree.grow(um.model.lp, branchable, cap, 30, 2, [], None, um.model.scale,
                                     kinds=copy_units.kinds(um), pick=_one_split(um, fields))
                assert grown.bound <= best * (1 + 1e-9), (h, l, j, q)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6), st.integers(0, 5))
def test_a_grown_units_tree_is_at_most_the_exhaustive_optimum(seed, pick):
    inst, best = tiny_case(seed, slow_copies=True)
    units = _units(inst, copy_units.formulate(inst, best).model.delivered, pick)
    got = copy_units.grow_tree(inst, best * 1.5, 30, 40, units)
    assert got.bound <= best * (1 + 1e-9)
    if got.tree is not None:
        proved = copy_units.check_tree(inst, best * 1.5, copy_units.units_json(got.units), got.rows, got.tree)
        assert proved == pytest.approx(got.bound, rel=1e-9, abs=1e-15)


def test_the_tree_lifts_the_delivery_relaxation_where_a_copy_trickles():
    inst = _trickle_instance()
    best = exhaustive_optimum(inst)
    assert best == pytest.approx(32e-6, rel=1e-9)
    delivery = lp_dual(inst, DELIVERY_MODEL, 60, ceiling=best)
    cert = lp_dual(inst, UNITS_TREE_MODEL, 60, ceiling=best)
    assert delivery["bound"] < 28e-6
    assert cert is not None and cert["units"] == [[1, 0, 1000]]
    assert cert["bound"] > delivery["bound"] * 1.1
    assert cert["bound"] <= best * (1 + 1e-9)
    kinds = set()
    stack = [cert["tree"]]
    while stack:
        node = stack.pop()
        if "down" in node:
            kinds.add(node.get("kind", "sum"))
            stack += [node["down"], node["up"]]
    assert copy_units.KIND in kinds
    assert check_lp_dual(inst, cert, valid_latency=best) == pytest.approx(cert["bound"], rel=1e-12)


def _first(tree: dict, kind: str) -> dict:
    stack = [tree]
    while stack:
        node = stack.pop()
        if node.get("kind") == kind:
            return node
        if "down" in node:
            stack += [node["down"], node["up"]]
    raise AssertionError(f"no {kind} node")


def test_a_node_that_is_not_a_valid_disjunction_is_rejected():
    inst = _trickle_instance()
    best = exhaustive_optimum(inst)
    cert = lp_dual(inst, UNITS_TREE_MODEL, 60, ceiling=best)
    assert check_lp_dual(inst, cert, valid_latency=best) > 0
    um = copy_units.formulate(inst, best, {(1, 0): 1000})
    pair = um.pairs[1, 0]
    node = _first(cert["tree"], copy_units.KIND)
    tampers = [
        {"q": -1}, {"q": 0.5}, {"step": inst.n_ops}, {"home": 0, "level": 1}, {"level": 1},
        {"kind": "anything"},
        # the same rows stated as an integer sum: D and C are no 0/1 columns
        {"kind": None, "branch": [pair.D[node["step"]]], "at": node["q"]},
        {"kind": None, "branch": [pair.C[node["step"]]], "at": 0},
    ]
    for change in tampers:
        bad = copy.deepcopy(cert)
        target = _first(bad["tree"], copy_units.KIND)
        target.update(change)
        if target.get("kind") is None:
            del target["kind"]
            for key in ("home", "level", "step", "q"):
                target.pop(key)
        assert check_lp_dual(inst, bad, valid_latency=best) == -math.inf, change
    # a home sum whose coefficients are not integers is no integer disjunction
    bad = copy.deepcopy(cert)
    home = int(um.model.homes[0, 0])
    bad["tree"] = {"branch": [home], "at": 0, "coef": [0.5], "down": bad["tree"], "up": copy.deepcopy(bad["tree"])}
    assert check_lp_dual(inst, bad, valid_latency=best) == -math.inf
    # units that are not a pair of the instance, or malformed
    for units in ([[1, 0, 0]], [[0, 1, 1000]], [[1, 0, 1000], [1, 0, 1000]], [[2, 0, 1000]], "1000"):
        bad = copy.deepcopy(cert)
        bad["units"] = units
        assert check_lp_dual(inst, bad, valid_latency=best) == -math.inf, units
    # another row count, or a ceiling below a valid latency
    bad = copy.deepcopy(cert)
    bad["rows"] += 1
    assert check_lp_dual(inst, bad, valid_latency=best) == -math.inf
    assert check_lp_dual(inst, cert, valid_latency=best * 1.01) == -math.inf


def test_integer_coefficient_sums_of_homes_split_like_zero_one_sums():
    inst = _trickle_instance()
    um = copy_units.formulate(inst, 40e-6, {(1, 0): 1000})
    groups = copy_units.home_groups(um)
    assert [list(map(int, c)) for _, c in groups] == [[1, 1]]
    split = lp_tree.integer_split((3, 5), 2, (2, 1))
    assert split.fields == {"branch": [3, 5], "at": 2, "coef": [2, 1]}
    assert (split.down.rhs, split.up.rhs, split.down.coefs) == (2.0, 3.0, (2.0, 1.0))
    assert not split.down.box and lp_tree.integer_split((3,), 0).down.box


def test_the_picker_proposes_a_disjunction_whatever_dual_it_is_given():
    """A degenerate LP has many optimal duals; one that is zero on every capacity row
    (HiGHS returned such a dual from a parent's basis) must not stop the tree: the picker
    then takes the disjunction that cuts the most units, as it does without duals."""
    inst = _trickle_instance()
    um = copy_units.formulate(inst, 32e-6)
    h = lp_tree.new_highs(1, 0, 60.0)
    h.passModel(um.model.lp.highs_lp())
    h.run()
    x = np.asarray(h.getSolution().col_value, np.float64)
    pick = copy_units.picker(um)
    plain = pick(x, None)
    assert plain is not None and plain.fields["kind"] == copy_units.KIND
    zero = pick(x, np.zeros(um.model.lp.rlo.size))
    assert zero is not None and zero.fields == plain.fields
