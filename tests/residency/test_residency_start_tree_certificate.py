"""Branch-and-bound trees over the relaxation with start and hold binaries as certificates
(`solvers/residency/machinery/start_tree.py`, model residency-relaxation-tree): on random
tiny instances a tree grown until it closes, with its ceiling above the optimum, proves
at most the optimum found by exhaustive search, and at least its root; any tree of
disjunctions on the integer columns with any duals proves no more; a tree proves the
wait of a copy that does not fit beside an activation, which the LP spreads; and a tree
that branches on a continuous column, leaves a side out, has another row count, a low
ceiling or changed duals proves nothing or less, so `verify` rejects it."""
from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memplace.bench.library.check import holds
from memplace.model import Instance
from memplace.solvers import lp_tree
from memplace.solvers.certificate import (START_TREE_MODEL, check_lp_dual, lp_dual, lp_models)
from memplace.solvers.residency.machinery import start_tree
from residency_exhaustive import tiny_case
from test_residency_tree_certificate import _random_tree

SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _cert(inst: Instance, ceiling: float, grown: lp_tree.Grown, rows: int,
          op_rows: bool = False) -> dict:
    return {"kind": "lp-dual", "model": START_TREE_MODEL, "ceiling": ceiling, "rows": rows,
            "tree": grown.tree, "op_rows": op_rows}


def test_the_tree_is_solved_only_on_request():
    assert START_TREE_MODEL not in lp_models("residency")


@pytest.mark.parametrize("op_rows", [False, True])
@SETTINGS
@given(st.integers(0, 10**6))
def test_a_closed_tree_proves_at_most_the_exhaustive_optimum_and_at_least_its_root(op_rows, seed):
    inst, best = tiny_case(seed, slow_copies=True)
    ceiling = best * 1.5  # above the optimum: the cap hides nothing a wrong tree would claim
    grown, rows = start_tree.grow(inst, ceiling, 60.0, 2000, op_rows=op_rows)
    assert grown.status != "limit"  # every leaf closed or integral: the whole MILP searched
    assert grown.root_bound * (1 - 1e-6) <= grown.bound <= best * (1 + 1e-9)
    proved = check_lp_dual(inst, _cert(inst, ceiling, grown, rows, op_rows), valid_latency=best)
    assert proved == pytest.approx(grown.bound, rel=1e-7) and proved <= best


@SETTINGS
@given(st.integers(0, 10**6))
def test_any_tree_with_any_duals_proves_at_most_the_optimum(seed):
    inst, best = tiny_case(seed, slow_copies=True)
    model = start_tree.tree_lp(inst, best)
    rng = np.random.default_rng(seed)
    for depth in (0, 1, 3):
        tree = _random_tree(rng, model.branchable, model.lp.rlo.size, depth)
        assert lp_tree.check_tree(model.lp, tree, model.branchable) * model.lp.scale <= best * (1 + 1e-9)


def _hand() -> Instance:
    """op0 writes A (60 B) over 10 s, op1 reads A, op2 computes 2 s, op3 reads the weight
    W (50 B); SRAM holds 100 B: A and W never fit together (test_residency_bound's)."""
    return Instance.from_dict({
        "format": "memplace-instance/1", "name": "hand",
        "workload": {"name": "hand", "ops": [
            {"name": "op0", "type": "x", "flops": 10.0}, {"name": "op1", "type": "x", "flops": 0.0},
            {"name": "op2", "type": "x", "flops": 2.0}, {"name": "op3", "type": "x", "flops": 0.0}],
            "tensors": [
                {"name": "A", "kind": "activation", "size": 60, "producer": 0, "accesses": [[0, 60], [1, 60]]},
                {"name": "W", "kind": "weight", "size": 50, "producer": None, "accesses": [[3, 50]]}]},
        "hardware": {"name": "hand", "compute_rate": 1.0, "levels": [
            {"name": "SRAM", "capacity": 100, "bandwidth": 100.0},
            {"name": "DRAM", "capacity": None, "bandwidth": 10.0}]}})


def test_a_tree_proves_the_wait_of_a_copy_that_does_not_fit_beside_an_activation():
    # The best solution starts W's 5 s copy at op 2 and waits 3 s: 16.1 s. The LP moves
    # 40 B of W during op 0 (A + 0.8 W fit) and proves 13.1 s; a tree on W's start proves 16.1.
    inst = _hand()
    cert = lp_dual(inst, START_TREE_MODEL, 60, ceiling=17.0)
    assert cert is not None and cert["leaves"] >= 2
    assert cert["bound"] == pytest.approx(16.1, rel=1e-6) and cert["bound"] <= 16.1
    assert check_lp_dual(inst, cert, valid_latency=16.1) == pytest.approx(cert["bound"], rel=1e-12)


def test_a_tampered_tree_proves_nothing_or_less():
    inst = _hand()
    cert = lp_dual(inst, START_TREE_MODEL, 60, ceiling=17.0)
    assert cert is not None
    assert check_lp_dual(inst, cert, valid_latency=17.5) == -math.inf  # ceiling below a valid latency
    assert check_lp_dual(inst, cert) == -math.inf  # no valid latency to compare it with
    assert check_lp_dual(inst, dict(cert, rows=cert["rows"] + 1), valid_latency=16.1) == -math.inf
    model = start_tree.tree_lp(inst, 17.0)
    continuous = int(np.flatnonzero(~model.branchable)[-1])  # a share, not a binary
    wrong = copy.deepcopy(cert)
    wrong["tree"]["branch"] = [continuous]
    assert check_lp_dual(inst, wrong, valid_latency=16.1) == -math.inf
    half = copy.deepcopy(cert)
    del half["tree"]["up"]
    assert check_lp_dual(inst, half, valid_latency=16.1) == -math.inf
    fractional = copy.deepcopy(cert)
    fractional["tree"]["at"] = 0.5
    assert check_lp_dual(inst, fractional, valid_latency=16.1) == -math.inf
    zeroed = copy.deepcopy(cert)
    stack = [zeroed["tree"]]
    while stack:  # every leaf's duals zero: only the compute floor's box terms remain
        node = stack.pop()
        if "branch" in node:
            stack += [node["down"], node["up"]]
        else:
            node["value"] = [0.0] * len(node["value"])
    assert not holds(cert["bound"], check_lp_dual(inst, zeroed, valid_latency=16.1))


def test_a_stored_tree_grown_on_keeps_its_ceiling_and_lp_and_proves_more():
    """`lib improve --resume`: the hand instance's tree stopped at 2 leaves, stored, then
    grown on with a lower best known as the valid latency: the tree keeps its own ceiling
    (17) and LP, and proves the optimum, 16.1 s, as one run does."""
    inst = _hand()
    part, rows = start_tree.grow(inst, 17.0, 60.0, 2, op_rows=True)
    stored = dict(_cert(inst, 17.0, part, rows, op_rows=True), leaves=part.leaves)
    stored["bound"] = check_lp_dual(inst, stored, valid_latency=16.1)
    assert part.leaves == 2 and stored["bound"] < 16.1 * (1 - 1e-3)
    grown = lp_dual(inst, START_TREE_MODEL, 60, ceiling=16.1, resume=copy.deepcopy(stored))
    assert grown is not None and grown["ceiling"] == 17.0 and grown["op_rows"] is True
    assert grown["leaves"] > 2 and grown["tree"]["branch"] == stored["tree"]["branch"]
    assert grown["bound"] == pytest.approx(16.1, rel=1e-6)
    assert check_lp_dual(inst, grown, valid_latency=16.1) == pytest.approx(grown["bound"], rel=1e-12)
    # grown on again, it proves no more than it stores: nothing to record
    assert lp_dual(inst, START_TREE_MODEL, 60, ceiling=16.1, resume=grown) is None
    # a certificate that is not such a tree, or proves nothing here, is refused
    with pytest.raises(ValueError, match="not a residency-relaxation-tree tree"):
        lp_dual(inst, START_TREE_MODEL, 60, ceiling=16.1, resume=dict(stored, rows=rows + 1))
    with pytest.raises(ValueError, match="not a residency-relaxation-tree tree"):
        lp_dual(inst, START_TREE_MODEL, 60, ceiling=17.5, resume=stored)  # ceiling below a valid latency
    with pytest.raises(ValueError, match="cannot grow on a stored certificate"):
        lp_dual(inst, "residency-delivery-tree", 60, ceiling=16.1, resume=stored)
