"""Branch-and-bound trees over the delivery relaxation as certificates (`solvers/lp_tree.py`,
model residency-delivery-tree): on random tiny instances the bound a grown tree proves is
never above the optimum found by exhaustive search and never below its root's; any tree
of disjunctions on home columns with any duals and multipliers at its leaves proves no
more than the optimum; and a tree that branches on a column that is not a home, leaves
a side out, or carries changed duals proves nothing or less, so `verify` rejects it."""
from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memplace.bench.library.check import holds
from memplace.instances import load
from memplace.solvers import lp_tree, solve
from memplace.solvers.box_lp import BoxLP
from memplace.solvers.certificate import TREE_MODEL, _home_branching, check_lp_dual, lp_models
from memplace.solvers.residency.machinery import delivery_bound
from residency_exhaustive import tiny_case


def _random_tree(rng: np.random.Generator, branchable: np.ndarray, n_rows: int, depth: int,
                 n_path_rows: int = 0) -> dict:
    cols = np.flatnonzero(branchable)
    if depth == 0 or cols.size == 0:
        y = rng.normal(0.0, float(rng.choice([0.1, 1.0, 10.0])), n_rows)
        return {"index": list(range(n_rows)), "value": y.tolist(),
                "path": rng.normal(0.0, 1.0, n_path_rows).tolist()}
    chosen = rng.choice(cols, size=int(rng.integers(1, min(3, cols.size) + 1)), replace=False)
    at = 0 if chosen.size == 1 else int(rng.integers(0, chosen.size))
    extra = 0 if chosen.size == 1 else 1
    return {"branch": [int(j) for j in chosen], "at": at,
            "down": _random_tree(rng, branchable, n_rows, depth - 1, n_path_rows + extra),
            "up": _random_tree(rng, branchable, n_rows, depth - 1, n_path_rows + extra)}


def test_the_tree_is_solved_only_on_request():
    assert TREE_MODEL not in lp_models("residency")


@pytest.mark.parametrize("op_rows", [False, True])
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6))
def test_a_grown_tree_proves_at_most_the_exhaustive_optimum_and_at_least_its_root(op_rows, seed):
    inst, best = tiny_case(seed, slow_copies=True)
    model = delivery_bound.formulate(inst, best, op_rows=op_rows)
    branchable, groups, priority = _home_branching(inst, model)
    grown = lp_tree.grow(model.lp, branchable, best / model.scale, 20.0, 16, groups, priority,
                         model.scale)
    assert grown.root_bound * (1 - 1e-6) <= grown.bound <= best * (1 + 1e-9)
    cert = {"kind": "lp-dual", "model": TREE_MODEL, "ceiling": best, "rows": int(model.lp.rlo.size),
            "tree": grown.tree, "op_rows": op_rows}
    assert check_lp_dual(inst, cert, valid_latency=best) == pytest.approx(grown.bound, rel=1e-7)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6))
def test_any_tree_with_any_duals_proves_at_most_the_optimum(seed):
    inst, best = tiny_case(seed, slow_copies=True)
    model = delivery_bound.formulate(inst, best)
    branchable, _, _ = _home_branching(inst, model)
    rng = np.random.default_rng(seed)
    for depth in (0, 1, 3):
        tree = _random_tree(rng, branchable, model.lp.rlo.size, depth)
        assert lp_tree.check_tree(model.lp, tree, branchable) * model.scale <= best * (1 + 1e-9)


def test_a_tampered_tree_proves_nothing_or_less():
    inst = load("zoo/mobilenet-v3-small@nnpi", "residency")
    valid = solve(inst, "compiler", time_limit=None, problem="residency").latency
    model = delivery_bound.formulate(inst, valid)
    branchable, groups, priority = _home_branching(inst, model)
    grown = lp_tree.grow(model.lp, branchable, valid / model.scale, 60.0, 6, groups, priority,
                         model.scale)
    assert grown.leaves >= 2 and grown.root_bound * (1 - 1e-6) <= grown.bound <= valid
    cert = {"kind": "lp-dual", "model": TREE_MODEL, "ceiling": valid, "rows": int(model.lp.rlo.size),
            "tree": grown.tree}
    assert check_lp_dual(inst, cert, valid_latency=valid) == pytest.approx(grown.bound, rel=1e-7)
    assert check_lp_dual(inst, cert, valid_latency=valid * 1.01) == -math.inf  # ceiling too low
    not_a_home = int(np.flatnonzero(~branchable)[0])
    wrong = copy.deepcopy(cert)
    wrong["tree"]["branch"] = [not_a_home]
    assert check_lp_dual(inst, wrong, valid_latency=valid) == -math.inf
    half = copy.deepcopy(cert)
    del half["tree"]["up"]
    assert check_lp_dual(inst, half, valid_latency=valid) == -math.inf
    fractional = copy.deepcopy(cert)
    fractional["tree"]["at"] = 0.5
    assert check_lp_dual(inst, fractional, valid_latency=valid) == -math.inf
    zeroed = copy.deepcopy(cert)
    stack = [zeroed["tree"]]
    while stack:  # every leaf's duals set to zero: only the compute floor's box terms remain
        node = stack.pop()
        if "branch" in node:
            stack += [node["down"], node["up"]]
        else:
            node["value"] = [0.0] * len(node["value"])
    assert not holds(grown.bound, check_lp_dual(inst, zeroed, valid_latency=valid))


def _two_columns_lp() -> BoxLP:
    """min -x1 - x2 over x1 + x2 <= 1.5, both 0/1 at every "valid" point: the LP's
    optimum is -1.5, the integer one -1."""
    return BoxLP(cost=np.array([-1.0, -1.0]), lo=np.zeros(2), hi=np.ones(2),
                 rlo=np.array([-math.inf]), rhi=np.array([1.5]),
                 r=np.array([0, 0]), c=np.array([0, 1]), v=np.array([1.0, 1.0]))


def test_cuts_found_at_a_leaf_join_the_lp_the_tree_is_checked_on():
    lp = _two_columns_lp()
    branchable = np.ones(2, bool)
    calls = []

    def cuts(x):  # x1 + x2 <= 1 (valid at every 0/1 point), offered from the second node on
        calls.append(x.copy())
        return [([0, 1], [1.0, 1.0], -math.inf, 1.0)] if len(calls) > 1 and x.sum() > 1 + 1e-9 else []

    plain = lp_tree.grow(lp, branchable, 0.0, 10.0, 2)
    assert plain.bound == pytest.approx(-1.5) and plain.cut_rows == 0
    cut = lp_tree.grow(lp, branchable, 0.0, 10.0, 2, cuts=cuts, cut_rounds=2)
    assert cut.leaves == 2 and cut.cut_rows == 1 and cut.lp.rlo.size == 2
    assert cut.bound == pytest.approx(-1.0)
    assert lp_tree.check_tree(cut.lp, cut.tree, branchable) == pytest.approx(-1.0)
    # on the LP without the cut row its leaf duals do not fit: it proves nothing
    assert lp_tree.check_tree(lp, cut.tree, branchable) == -math.inf


class _UnknownOnce:
    """A HiGHS whose `nth` run ends "Unknown" with no valid dual (what numerical trouble
    from a warm basis looks like), otherwise the real one."""

    def __init__(self, real, nth: int) -> None:
        self._real, self._nth, self._runs, self._unknown = real, nth, 0, False

    def __getattr__(self, name):
        return getattr(self._real, name)

    def run(self):
        self._runs += 1
        self._unknown = self._runs == self._nth
        return self._real.run()

    def getModelStatus(self):
        import highspy
        return highspy.HighsModelStatus.kUnknown if self._unknown else self._real.getModelStatus()

    def getSolution(self):
        sol = self._real.getSolution()
        if self._unknown:
            sol.dual_valid = False
        return sol


def test_a_node_whose_lp_ends_unknown_is_solved_again_and_the_tree_goes_on(monkeypatch):
    monkeypatch.setattr(lp_tree, "STRONG_MAX", 0)  # so that the second run is a node's LP
    lp, branchable = _two_columns_lp(), np.ones(2, bool)
    plain = lp_tree.grow(lp, branchable, -1.0, 10.0, 10)
    assert plain.status == "closed" and plain.bound == pytest.approx(-1.0)
    real_new = lp_tree.new_highs
    monkeypatch.setattr(lp_tree, "new_highs", lambda *a, **k: _UnknownOnce(real_new(*a, **k), 2))
    again = lp_tree.grow(lp, branchable, -1.0, 10.0, 10)
    assert again.lp_statuses.get(lp_tree.RETRIED) == 1
    assert (again.status, again.bound, again.leaves) == (plain.status, plain.bound, plain.leaves)
    assert lp_tree.check_tree(lp, again.tree, branchable) == pytest.approx(-1.0)


def _decoy_lp() -> BoxLP:
    """min -x0 - x1 - x2 - 2 x3 over x0 + x1 + x2 <= 1.5 and 2 x3 <= 1, all 0/1 at every
    "valid" point: LP optimum -2.5 (x3 = 0.5 and one of x0..x2 at 0.5). Splitting any of
    x0..x2 leaves both children at -2.5; splitting x3 lifts the bound to -1.5 (down: x3
    = 0; up: infeasible)."""
    return BoxLP(cost=np.array([-1.0, -1.0, -1.0, -2.0]), lo=np.zeros(4), hi=np.ones(4),
                 rlo=np.array([-math.inf, -math.inf]), rhi=np.array([1.5, 1.0]),
                 r=np.array([0, 0, 0, 1]), c=np.array([0, 1, 2, 3]), v=np.array([1.0, 1.0, 1.0, 2.0]))


def test_reliability_branching_finds_the_column_that_lifts_the_bound_where_priority_misleads():
    lp, branchable = _decoy_lp(), np.ones(4, bool)
    priority = np.array([3.0, 3.0, 3.0, 1.0])  # the decoys first
    one_split = {"cap": 0.0, "time_limit": 10.0, "max_leaves": 2, "priority": priority}
    by_priority = lp_tree.grow(lp, branchable, branching="priority", **one_split)
    reliable = lp_tree.grow(lp, branchable, branching="reliability", **one_split)
    assert by_priority.root_bound == reliable.root_bound == pytest.approx(-2.5)
    assert by_priority.bound == pytest.approx(-2.5) and by_priority.tree["branch"] != [3]
    assert reliable.tree["branch"] == [3] and reliable.bound == pytest.approx(-1.5)
    assert reliable.strong_solves > 0 and by_priority.strong_solves == 0
    for grown in (by_priority, reliable):  # both trees check to what they claim
        assert lp_tree.check_tree(lp, grown.tree, branchable) == pytest.approx(grown.bound)
    # grown until closed, both rules prove the integer optimum, -1
    for branching in lp_tree.BRANCHINGS:
        closed = lp_tree.grow(lp, branchable, -1.0, 10.0, 50, priority=priority, branching=branching)
        assert closed.status == "closed" and closed.bound == pytest.approx(-1.0)
    with pytest.raises(ValueError, match="unknown branching 'best'"):
        lp_tree.grow(lp, branchable, 0.0, 10.0, 2, branching="best")


def test_strong_branching_at_the_root_stops_at_its_share_of_the_time_limit(monkeypatch):
    """With slow LPs the root's strong branching once took a whole 1,800-s budget
    (xla-train@nnpi: one leaf); past ROOT_STRONG_SHARE of the time limit the rest of the
    candidates take the mean pseudocost, so the tree still splits."""
    lp, branchable = _decoy_lp(), np.ones(4, bool)
    one_split = {"cap": 0.0, "time_limit": 10.0, "max_leaves": 2,
                 "priority": np.array([3.0, 3.0, 3.0, 1.0])}
    one_split["branching"] = "reliability"
    every = lp_tree.grow(lp, branchable, **one_split)  # both fractional columns tried
    assert every.strong_solves == 4 and every.tree["branch"] == [3]
    # a share spent once one column is tried: the root tries the first decoy only, so it
    # knows nothing of x3 and splits the decoy (its children have a column of their own)
    monkeypatch.setattr(lp_tree, "ROOT_STRONG_SHARE", 0.0)
    capped = lp_tree.grow(lp, branchable, **one_split)
    assert capped.leaves == 2 and capped.tree["branch"] != [3]
    assert lp_tree.check_tree(lp, capped.tree, branchable) == pytest.approx(capped.bound)


def test_auto_branching_takes_the_priority_rule_when_the_root_lp_is_slow_for_the_time_limit(
        monkeypatch):
    """On xla-train@nnpi (LPs of 60-190 s) reliability branching's strong solves took the
    budget the priority rule spent on leaves; "auto" (the default) decides at the root by
    the share of the time limit its LP took."""
    lp, branchable = _decoy_lp(), np.ones(4, bool)
    one_split = {"cap": 0.0, "time_limit": 10.0, "max_leaves": 2,
                 "priority": np.array([3.0, 3.0, 3.0, 1.0])}
    fast = lp_tree.grow(lp, branchable, **one_split)  # a root LP of microseconds in 10 s
    assert fast.branching == "reliability" and fast.strong_solves > 0
    assert fast.tree["branch"] == [3] and fast.bound == pytest.approx(-1.5)
    monkeypatch.setattr(lp_tree, "AUTO_ROOT_SHARE", 0.0)  # any root LP is too slow
    slow = lp_tree.grow(lp, branchable, **one_split)
    assert slow.branching == "priority" and slow.strong_solves == 0
    assert slow.tree["branch"] != [3] and slow.bound == pytest.approx(-2.5)
    for grown in (fast, slow):
        assert lp_tree.check_tree(lp, grown.tree, branchable) == pytest.approx(grown.bound)


def test_a_node_lp_starts_from_its_parents_basis_and_the_tree_proves_the_same(monkeypatch):
    """Best first, the last LP solved may lie anywhere in the tree; its parent's basis is
    one box change away. Where the bases would take too much room, nodes start from the
    last basis as before, and the tree is the same."""
    lp, branchable = _decoy_lp(), np.ones(4, bool)
    args = (lp, branchable, -1.0, 10.0, 50)
    kwargs = {"priority": np.array([3.0, 3.0, 3.0, 1.0]), "branching": "priority"}
    warm = lp_tree.grow(*args, **kwargs)
    assert warm.status == "closed" and warm.bound == pytest.approx(-1.0)
    assert warm.nodes_solved > 3 and warm.parent_starts == warm.nodes_solved - 1
    monkeypatch.setattr(lp_tree, "BASIS_ENTRIES", 0)
    cold = lp_tree.grow(*args, **kwargs)
    assert cold.parent_starts == 0
    assert (cold.status, cold.bound, cold.leaves) == (warm.status, warm.bound, warm.leaves)
    for grown in (warm, cold):
        assert lp_tree.check_tree(lp, grown.tree, branchable) == pytest.approx(-1.0)



def _knapsack(seed: int, n: int = 10, m: int = 3) -> tuple[BoxLP, np.ndarray]:
    """max value in [0, 1]^n under m knapsack rows (as a min): trees of 5-20 leaves to close;
    with distinct priorities, for the priority rule."""
    rng = np.random.default_rng(seed)
    w = rng.integers(1, 20, (m, n)).astype(float)
    r, c = np.nonzero(w)
    lp = BoxLP(cost=-rng.integers(1, 30, n).astype(float), lo=np.zeros(n), hi=np.ones(n),
               rlo=np.full(m, -math.inf), rhi=w.sum(axis=1) / 2.5, r=r, c=c, v=w[r, c])
    return lp, rng.permutation(n).astype(float)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10**6), st.integers(2, 6))
def test_a_tree_grown_on_from_its_stored_form_is_the_tree_grown_in_one_run(seed, first):
    """`lib improve --resume` grows a stored certificate's tree further: its disjunctions are
    kept and its leaves re-solved when first the weakest. With the priority rule the split
    at a leaf depends on its LP's point only, so growing to `first` leaves, storing, and
    growing on to 9 gives the tree of one run to 9 leaves, and its bound."""
    lp, priority = _knapsack(seed)
    branchable = np.ones(lp.cost.size, bool)
    kwargs = {"priority": priority, "branching": "priority"}
    whole = lp_tree.grow(lp, branchable, 0.0, 20.0, 9, **kwargs)
    part = lp_tree.grow(lp, branchable, 0.0, 20.0, first, **kwargs)
    stored = copy.deepcopy(part.tree)
    on = lp_tree.grow(lp, branchable, 0.0, 20.0, 9, start=part.tree, **kwargs)
    assert part.tree == stored  # the stored tree is not changed
    assert on.root_bound == pytest.approx(part.bound)
    assert on.bound >= part.bound - 1e-9 and on.leaves >= part.leaves
    assert lp_tree.check_tree(lp, on.tree, branchable) == pytest.approx(on.bound)
    assert (on.leaves, on.status) == (whole.leaves, whole.status)
    assert on.bound == pytest.approx(whole.bound, rel=1e-7)
    # the stored disjunctions are the top of the tree grown on
    top, kept = [(stored, on.tree)], 0
    while top:
        a, b = top.pop()
        if "branch" in a:
            assert (a["branch"], a["at"]) == (b["branch"], b["at"])
            top += [(a["down"], b["down"]), (a["up"], b["up"])]
            kept += 1
    assert kept == part.leaves - 1


def test_a_stored_tree_that_proves_nothing_is_refused_before_any_lp():
    lp, branchable = _decoy_lp(), np.ones(4, bool)
    grown = lp_tree.grow(lp, branchable, -1.0, 10.0, 3, priority=np.array([3.0, 3.0, 3.0, 1.0]))
    assert grown.leaves == 3
    bad = copy.deepcopy(grown.tree)
    bad["branch"] = [7]  # no such column
    with pytest.raises(ValueError, match="not a valid disjunction"):
        lp_tree.grow(lp, branchable, -1.0, 10.0, 5, start=bad)
    short = copy.deepcopy(grown.tree)
    node = short
    while "branch" in node["down"]:
        node = node["down"]
    node["down"] = {"index": [0, 9], "value": [1.0, 1.0]}  # a row the LP does not have
    with pytest.raises(ValueError, match="duals do not fit"):
        lp_tree.grow(lp, branchable, -1.0, 10.0, 5, start=short)
    closed = lp_tree.grow(lp, branchable, -1.0, 10.0, 50, start=grown.tree)
    assert closed.status == "closed" and closed.bound == pytest.approx(-1.0)
