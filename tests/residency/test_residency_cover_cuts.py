"""Capacity cover cuts on the delivery relaxation (`cover_cuts.py`, model
residency-delivery-cover-tree) and the rotation bound (`rotation_bound.py`, model
residency-rotation): `packs` decides placements as an enumeration of every assignment
does; on random tiny instances the delivery relaxation with every valid family (every set
of tensors that the fast levels cannot all hold, with every valid extra tensor) and a tree
grown over it, and the rotation bound of every set of weights that does not fit, prove at
most the optimum found by exhaustive search; and a certificate whose family claims too
much, names a tensor twice or whose tree is changed proves nothing or less, so `verify`
rejects it."""
from __future__ import annotations

import copy
import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memplace.bench.library.check import holds
from memplace.model import Instance
from memplace.solvers import lp_tree, solve
from memplace.solvers.certificate import (COVER_TREE_MODEL, ROTATION_LEVELS_MODEL, ROTATION_MODEL,
                                          _cover_branching, check_lp_dual, lp_dual, lp_models)
from memplace.solvers.residency.machinery import cover_cuts, delivery_bound, rotation_bound
from residency_exhaustive import exhaustive_optimum, tiny_case


def _packs_by_enumeration(items: list[int], bins: list[int]) -> bool:
    for where in itertools.product(range(len(bins)), repeat=len(items)):
        load = [0] * len(bins)
        for size, b in zip(items, where):
            load[b] += size
        if all(x <= cap for x, cap in zip(load, bins)):
            return True
    return False


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(1, 40), min_size=0, max_size=7), st.lists(st.integers(1, 60), min_size=1, max_size=3))
def test_packs_decides_as_enumerating_every_assignment(items, bins):
    assert cover_cuts.packs(items, bins) is _packs_by_enumeration(items, bins)


def _every_family(inst: Instance) -> list[cover_cuts.Family]:
    """Every set S of two or more tensors the fast levels cannot all hold, with its least
    valid r and every valid extra tensor."""
    out = []
    bins = cover_cuts.fast_capacities(inst)
    for m in range(2, inst.n_tensors + 1):
        for S in itertools.combinations(range(inst.n_tensors), m):
            r = cover_cuts.at_most([int(inst.size[t]) for t in S], bins)
            if r is None or r >= m:
                continue
            smallest = sorted(int(inst.size[t]) for t in S)[:r]
            others = tuple(u for u in range(inst.n_tensors) if u not in S
                           and cover_cuts.packs([int(inst.size[u])] + smallest, bins) is False)
            fam = cover_cuts.Family(S, r, others)
            assert cover_cuts.family_holds(inst, fam.to_json()) == fam
            out.append(fam)
    return out


def _tight_case(seed: int) -> tuple[Instance, float, list[cover_cuts.Family]]:
    inst, best = tiny_case(seed, slow_copies=True)
    return inst, best, _every_family(inst)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6))
def test_the_cover_relaxation_and_its_tree_prove_at_most_the_exhaustive_optimum(seed):
    inst, best, fams = _tight_case(seed)
    plain = delivery_bound.formulate(inst, best)
    model = cover_cuts.with_cuts(plain, fams)
    assert model.lp.rlo.size >= plain.lp.rlo.size
    _, z = delivery_bound.solve_lp(model, 30.0)
    assert z is not None
    assert delivery_bound.dual_bound(model, z) <= best * (1 + 1e-9)
    branchable, groups, priority = _cover_branching(inst, model, fams)
    grown = lp_tree.grow(model.lp, branchable, best / model.scale, 20.0, 12, groups, priority, model.scale)
    assert grown.bound <= best * (1 + 1e-9)
    if fams:
        cert = {"kind": "lp-dual", "model": COVER_TREE_MODEL, "ceiling": best,
                "rows": int(model.lp.rlo.size), "families": [f.to_json() for f in fams], "tree": grown.tree}
        assert check_lp_dual(inst, cert, valid_latency=best) == pytest.approx(grown.bound, rel=1e-7)


def _three_weights() -> Instance:
    """Three 60-byte weights read in turn, a fast level of 100 bytes: at most one of them
    fast at a step, with any other tensor at most none."""
    ops = [{"name": f"op{k}", "type": "x", "flops": 0.0} for k in range(4)]
    tensors = [{"name": f"w{t}", "kind": "weight", "size": 60, "producer": None,
                "accesses": [[t, 60], [3, 60]] if t < 3 else [[t, 60]]} for t in range(3)]
    tensors.append({"name": "a", "kind": "activation", "size": 50, "producer": 0,
                    "accesses": [[0, 50], [2, 50]]})
    data = {"format": "memplace-instance/1", "name": "three-weights",
            "workload": {"name": "three", "ops": ops, "tensors": tensors},
            "hardware": {"name": "two", "compute_rate": 1e9, "levels": [
                {"name": "fast", "capacity": 100, "bandwidth": 1e9, "copy_bandwidth": 1e8},
                {"name": "slow", "capacity": None, "bandwidth": 1e7}]}}
    return Instance.from_dict(data)


def test_the_generation_rule_finds_the_weights_that_do_not_fit_together():
    inst = _three_weights()
    fams = cover_cuts.families(inst)
    assert cover_cuts.Family((0, 1, 2), 1, (3,)) in fams
    assert cover_cuts.packs([60, 60], [100]) is False and cover_cuts.packs([60, 40], [100]) is True


def test_a_cover_certificate_rechecks_and_a_tampered_one_proves_nothing_or_less():
    inst = _three_weights()
    best = exhaustive_optimum(inst)
    cert = lp_dual(inst, COVER_TREE_MODEL, 60.0, ceiling=best)
    assert cert is not None and COVER_TREE_MODEL not in lp_models("residency")
    bound = cert["bound"]
    plain = lp_dual(inst, "residency-delivery", 60.0, ceiling=best)["bound"]
    assert plain * 1.2 < bound <= best * (1 + 1e-9)  # 26.1 -> 34.1 µs, the optimum
    assert check_lp_dual(inst, cert, valid_latency=best) == pytest.approx(bound, rel=1e-12)
    assert check_lp_dual(inst, cert, valid_latency=best * 1.01) == -math.inf  # ceiling below a valid latency
    for tamper in ({"at_most": 0}, {"tensors": [0, 0, 1]}, {"others": [3, 0]}, {"at_most": 1.0},
                   {"tensors": [0, 1, 7]}):  # claims no placement argument supports
        wrong = copy.deepcopy(cert)
        wrong["families"][0].update(tamper)
        assert check_lp_dual(inst, wrong, valid_latency=best) == -math.inf, tamper
    weaker = copy.deepcopy(cert)  # a valid family, but not the rows the duals were found for
    weaker["families"][0].update({"tensors": [0, 1]})
    assert not holds(bound, check_lp_dual(inst, weaker, valid_latency=best))
    missing = copy.deepcopy(cert)
    missing["families"] = []
    assert check_lp_dual(inst, missing, valid_latency=best) == -math.inf
    fewer_rows = copy.deepcopy(cert)
    fewer_rows["families"] = fewer_rows["families"][1:] or [{"tensors": [0, 1], "at_most": 1, "others": []}]
    assert check_lp_dual(inst, fewer_rows, valid_latency=best) == -math.inf  # the rows no longer match
    zeroed = copy.deepcopy(cert)
    stack = [zeroed["tree"]]
    while stack:
        node = stack.pop()
        if "branch" in node:
            stack += [node["down"], node["up"]]
        else:
            node["value"] = [0.0] * len(node["value"])
    assert not holds(bound, check_lp_dual(inst, zeroed, valid_latency=best))


def _rotating(seed: int) -> Instance:
    """A tiny instance whose weights the fast level cannot all hold: two or three weights
    (each fits alone) read at one to three of 3-4 ops, at most one activation, copies on
    the slow level's channel from slow to faster than its reads."""
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(3, 5)), int(rng.integers(2, 4))
    sizes = [int(x) for x in rng.integers(20, 60, k)]
    cap = int(sum(sizes) - min(sizes) + rng.integers(0, min(sizes)))
    tensors = []
    for t, size in enumerate(sizes):
        steps = sorted(int(x) for x in rng.choice(n, size=int(rng.integers(1, 4)), replace=False))
        tensors.append({"name": f"w{t}", "kind": "weight", "size": size, "producer": None,
                        "accesses": [[s, int(size * rng.choice([1, 1, 2]))] for s in steps]})
    if k == 2:
        p = int(rng.integers(0, n - 1))
        tensors.append({"name": "a", "kind": "activation", "size": int(rng.integers(5, 40)), "producer": p,
                        "accesses": [[p, 10], [int(rng.integers(p + 1, n)), 10]]})
    ops = [{"name": f"op{j}", "type": "x", "flops": float(rng.choice([0.0, rng.uniform(0, 200)]))} for j in range(n)]
    slow = {"name": "slow", "capacity": None, "bandwidth": float(rng.choice([1e7, 3e7, 1e8])),
            "copy_bandwidth": float(rng.choice([3e6, 1e7, 3e7, 1e8, 3e8]))}
    data = {"format": "memplace-instance/1", "name": f"rotating-{seed}",
            "workload": {"name": "rotating", "ops": ops, "tensors": tensors},
            "hardware": {"name": "two", "compute_rate": 1e9, "levels": [
                {"name": "fast", "capacity": cap, "bandwidth": 1e9}, slow]}}
    return Instance.from_dict(data)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6))
def test_the_rotation_bound_of_every_eligible_family_is_at_most_the_exhaustive_optimum(seed):
    inst = _rotating(seed)
    best = exhaustive_optimum(inst)
    weights = [t for t in range(inst.n_tensors) if inst.is_weight[t]]
    bins = cover_cuts.fast_capacities(inst)
    checked = 0
    for m in range(2, len(weights) + 1):
        for S in itertools.combinations(weights, m):
            if cover_cuts.packs([int(inst.size[t]) for t in S], bins) is not False:
                continue
            fam = cover_cuts.Family(S, m - 1)
            assert rotation_bound.eligible(inst, fam) and cover_cuts.family_holds(inst, fam.to_json()) == fam
            assert rotation_bound.bound(inst, fam) <= best * (1 + 1e-9)
            checked += 1
    assert checked >= 1


def _turns() -> Instance:
    """Three 60-byte weights read in turn over 12 ops of 2 µs, a fast level holding two:
    each turn is a 6 µs copy that must arrive within two ops."""
    n = 12
    ops = [{"name": f"op{k}", "type": "x", "flops": 2000.0} for k in range(n)]
    tensors = [{"name": f"w{t}", "kind": "weight", "size": 60, "producer": None,
                "accesses": [[k, 60] for k in range(t, n, 3)]} for t in range(3)]
    data = {"format": "memplace-instance/1", "name": "turns",
            "workload": {"name": "turns", "ops": ops, "tensors": tensors},
            "hardware": {"name": "two", "compute_rate": 1e9, "levels": [
                {"name": "fast", "capacity": 130, "bandwidth": 1e9},
                {"name": "slow", "capacity": None, "bandwidth": 1e7, "copy_bandwidth": 1e7}]}}
    return Instance.from_dict(data)


def test_the_rotation_bound_counts_every_turn_and_a_tampered_family_proves_nothing():
    inst = _turns()
    valid = solve(inst, "msa", time_limit=None, problem="residency").latency  # 40 µs
    cert = lp_dual(inst, ROTATION_MODEL)
    assert cert is not None and ROTATION_MODEL not in lp_models("residency")
    # 24 µs without its op rows (every op at its fastest), 34.4 µs with them
    plain = lp_dual(inst, "residency-delivery", 60.0, ceiling=valid)["bound"]
    assert plain * 1.1 < cert["bound"] <= valid * (1 + 1e-9)
    assert cert["bound"] == pytest.approx(valid, rel=1e-6)  # msa's is optimal
    assert check_lp_dual(inst, cert) == pytest.approx(cert["bound"], rel=1e-12)
    for tamper in ({"at_most": 1}, {"tensors": [0, 1]}, {"tensors": [0, 1, 3]}, {"others": [1]},
                   {"tensors": [0, 0, 1]}):
        wrong = copy.deepcopy(cert)
        wrong["families"][0].update(tamper)
        assert check_lp_dual(inst, wrong) == -math.inf, tamper
    two = copy.deepcopy(cert)
    two["families"] = two["families"] * 2
    assert check_lp_dual(inst, two) == -math.inf


def _leveled(seed: int) -> Instance:
    """A tiny three-level instance: two weights read at one or two of 3-4 ops, at most one
    activation, a fast level from one weight to both, a middle level and copies from the
    slow and middle levels from slower to faster than their reads."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 5))
    sizes = [int(x) for x in rng.integers(20, 60, 2)]
    tensors = []
    for t, size in enumerate(sizes):
        steps = sorted(int(x) for x in rng.choice(n, size=int(rng.integers(1, 3)), replace=False))
        tensors.append({"name": f"w{t}", "kind": "weight", "size": size, "producer": None,
                        "accesses": [[s, int(size * rng.choice([1, 1, 2]))] for s in steps]})
    if rng.random() < 0.5:
        p = int(rng.integers(0, n - 1))
        tensors.append({"name": "a", "kind": "activation", "size": int(rng.integers(5, 40)), "producer": p,
                        "accesses": [[p, 10], [int(rng.integers(p + 1, n)), 10]]})
    ops = [{"name": f"op{j}", "type": "x", "flops": float(rng.choice([0.0, rng.uniform(0, 200)]))} for j in range(n)]
    levels = [{"name": "fast", "capacity": int(rng.integers(min(sizes), sum(sizes) + 20)), "bandwidth": 1e9},
              {"name": "mid", "capacity": int(rng.integers(min(sizes), sum(sizes) + 20)),
               "bandwidth": float(rng.choice([1e8, 3e8])), "copy_bandwidth": float(rng.choice([3e7, 1e8, 3e8]))},
              {"name": "slow", "capacity": None, "bandwidth": float(rng.choice([1e7, 3e7])),
               "copy_bandwidth": float(rng.choice([3e6, 1e7, 3e7, 1e8]))}]
    data = {"format": "memplace-instance/1", "name": f"leveled-{seed}",
            "workload": {"name": "leveled", "ops": ops, "tensors": tensors},
            "hardware": {"name": "three", "compute_rate": 1e9, "levels": levels}}
    return Instance.from_dict(data)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6))
def test_the_rotation_over_levels_is_at_most_the_exhaustive_optimum(seed):
    for inst in (_leveled(seed), _rotating(seed)):
        best = exhaustive_optimum(inst)
        weights = tuple(t for t in range(inst.n_tensors) if inst.is_weight[t])
        assert rotation_bound.level_eligible(inst, weights[:2])
        assert rotation_bound.level_bound(inst, weights[:2]) <= best * (1 + 1e-9)


def _shared_fast() -> Instance:
    """Three 60-byte weights read in turn over 12 ops of 2 µs; the middle level holds two of
    them and the fast level one: all three fit, so no cover family exists, but only one
    is read at the fast level's speed at a time, and a turn there is a copy."""
    n = 12
    ops = [{"name": f"op{k}", "type": "x", "flops": 2000.0} for k in range(n)]
    tensors = [{"name": f"w{t}", "kind": "weight", "size": 60, "producer": None,
                "accesses": [[k, 60] for k in range(t, n, 3)]} for t in range(3)]
    data = {"format": "memplace-instance/1", "name": "shared-fast",
            "workload": {"name": "shared-fast", "ops": ops, "tensors": tensors},
            "hardware": {"name": "three", "compute_rate": 1e9, "levels": [
                {"name": "fast", "capacity": 70, "bandwidth": 1e9},
                {"name": "mid", "capacity": 130, "bandwidth": 1e7, "copy_bandwidth": 1e7},
                {"name": "slow", "capacity": None, "bandwidth": 1e6}]}}
    return Instance.from_dict(data)


def test_the_rotation_over_levels_counts_the_fast_turns_and_a_tampered_certificate_proves_nothing():
    inst = _shared_fast()
    valid = solve(inst, "msa", time_limit=None, problem="residency").latency
    assert rotation_bound.families(inst) == []  # all three fit the fast levels: no rotation bound
    assert rotation_bound.level_members(inst) is None
    members = (0, 1, 2)
    cap = valid * 2
    cert = {"kind": "lp-dual", "model": ROTATION_LEVELS_MODEL, "members": list(members), "cap": cap}
    value = check_lp_dual(inst, cert)
    # the delivery relaxation: every op at its fastest without its op rows, 51.1 µs with them
    plain = lp_dual(inst, "residency-delivery", 60.0, ceiling=valid)["bound"]
    assert plain * 1.05 < value <= valid * (1 + 1e-9)
    assert value == pytest.approx(rotation_bound.level_bound(inst, members) * (1 - 1e-9), rel=1e-12)
    lower = dict(cert, cap=value * 0.9)
    assert check_lp_dual(inst, lower) == pytest.approx(value * 0.9 * (1 - 1e-9), rel=1e-12)
    for tamper in ({"members": [0, 0, 1]}, {"members": [0]}, {"members": [0, 1, 7]},
                   {"members": [0, 1, True]}, {"members": "0,1,2"}, {"cap": -1.0},
                   {"cap": math.inf}, {"cap": "1"}, {"members": None}):
        assert check_lp_dual(inst, dict(cert, **tamper)) == -math.inf, tamper
