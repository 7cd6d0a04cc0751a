"""Simulated annealing: brute-force optima, determinism, validity and exact bookkeeping."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memplace.model import (Instance, capacity_ok, latency, latency_batch, load_profile,
                            placement_errors)
from memplace.solvers import ParameterError, solve
from memplace.solvers.static.sa import Annealer, byte_value, polish, start_temperature
from memplace.model.static.load_tree import tree_leaves
from memplace.solvers.static.sa_kernels import _tree_range_add
from randominst import random_instance_dict

FAST = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def brute_force_optimum(inst: Instance) -> float:
    """Minimum latency over every capacity-valid placement (no addressed levels)."""
    levels = np.arange(inst.n_levels, dtype=np.int64)
    everything = np.array(list(itertools.product(levels, repeat=inst.n_tensors)), np.int64)
    live = np.zeros((inst.n_tensors, inst.n_ops), np.int64)
    for t in range(inst.n_tensors):
        live[t, inst.start[t]:inst.end[t] + 1] = inst.size[t]
    ok = np.ones(len(everything), bool)
    for l in range(inst.n_levels - 1):
        load = (everything == l).astype(np.int64) @ live
        ok &= (load <= inst.capacity[l]).all(axis=1)
    return float(latency_batch(inst, everything[ok]).min())


def random_valid_placement(inst: Instance, rng: np.random.Generator) -> np.ndarray:
    """A random placement made valid by pushing random tensors down until it fits."""
    place = rng.integers(0, inst.n_levels, inst.n_tensors)
    while not capacity_ok(inst, place):
        t = int(rng.choice(np.flatnonzero(place < inst.n_levels - 1)))
        place[t] += 1
    return place


def test_sa_reaches_the_brute_force_optimum_on_twelve_tensors():
    inst = Instance.from_dict(random_instance_dict(7, n_ops=8, n_tensors=12, n_levels=3, tight=0.4))
    best = brute_force_optimum(inst)
    res = solve(inst, "sa", time_limit=60, seed=3, moves=100_000, restarts=2)
    assert res.latency == pytest.approx(best, rel=1e-12, abs=0)
    assert res.notes["sa_moves"] == 100_000


@FAST
@given(seed=st.integers(0, 10_000), n_tensors=st.integers(2, 9), n_levels=st.integers(2, 3),
       penalty=st.booleans())
def test_annealing_from_the_slowest_placement_finds_the_optimum(seed, n_tensors, n_levels,
                                                               penalty):
    inst = Instance.from_dict(random_instance_dict(seed, n_ops=6, n_tensors=n_tensors,
                                                   n_levels=n_levels, tight=0.5))
    best = brute_force_optimum(inst)
    ann = Annealer(inst, inst.slowest_placement(), penalty=penalty, lam=byte_value(inst))
    lat = ann.latency
    scale = max(lat - best, lat * 1e-3)  # geometric cooling over 60k moves, no heuristic seed
    t0, t_end = scale, scale * 1e-6
    ann.run(60_000, t0, (t_end / t0) ** (1 / 60_000), 0.3, seed, group_fraction=0.3)
    ann.resync()
    assert ann.best_latency == pytest.approx(best, rel=1e-12, abs=0)
    assert capacity_ok(inst, ann.best_place)


@FAST
@given(seed=st.integers(0, 10_000), addressed=st.booleans(), tight=st.floats(0.1, 1.0))
def test_sa_result_is_always_valid(seed, addressed, tight):
    inst = Instance.from_dict(random_instance_dict(seed, n_ops=7, n_tensors=10, n_levels=3,
                                                   addressed=addressed, tight=tight))
    res = solve(inst, "sa", time_limit=60, seed=seed, moves=5_000, restarts=2, chunk=1_000)
    assert placement_errors(inst, res.placement, res.offsets) == []
    assert res.latency == latency(inst, res.placement)
    assert res.latency <= min(lat for _, _, lat in res.trace)


def test_same_seed_same_placement_and_trace():
    inst = Instance.from_dict(random_instance_dict(11, n_ops=10, n_tensors=12, n_levels=3, tight=0.3))
    runs = [solve(inst, "sa", time_limit=60, seed=5, moves=30_000, restarts=3, chunk=7_000)
            for _ in range(2)]
    assert runs[0].placement.tolist() == runs[1].placement.tolist()
    assert runs[0].latency == runs[1].latency
    assert [t[1:] for t in runs[0].trace] == [t[1:] for t in runs[1].trace]
    assert runs[0].evaluations == runs[1].evaluations


@FAST
@given(seed=st.integers(0, 10_000), swap_fraction=st.sampled_from([0.0, 0.5, 0.9]),
       penalty=st.booleans())
def test_tracked_latency_and_loads_match_a_full_evaluation(seed, swap_fraction, penalty):
    inst = Instance.from_dict(random_instance_dict(seed, n_ops=9, n_tensors=12, n_levels=3,
                                                   tight=0.4))
    rng = np.random.default_rng(seed)
    ann = Annealer(inst, random_valid_placement(inst, rng), penalty=penalty,
                   lam=byte_value(inst) * 0.01)  # a weak penalty: overflowing states visited
    ann.run(3_000, ann.latency * 0.05, 1.0, swap_fraction, seed, group_fraction=0.5)
    assert ann.stats[2] > 0  # hot: many accepted moves
    assert ann.latency == pytest.approx(latency(inst, ann.place), rel=1e-9, abs=1e-18)
    assert ann.best_latency == pytest.approx(latency(inst, ann.best_place), rel=1e-9, abs=1e-18)
    assert capacity_ok(inst, ann.best_place)
    assert capacity_ok(inst, ann.place) or penalty
    load = load_profile(inst, ann.place)
    assert (ann.weight_bytes[:, None] + ann.act_load == load).all()
    assert ann.tree_max[:, 1].tolist() == ann.act_load.max(axis=1).tolist()


@pytest.mark.parametrize("penalty", [False, True])
def test_bookkeeping_stays_exact_over_a_million_moves_on_resnet50(penalty):
    from memplace import instances
    inst = instances.load("resnet50@nnpi")
    ann = Annealer(inst, inst.slowest_placement(), penalty=penalty, lam=byte_value(inst))
    ann.run(1_000_000, ann.latency * 1e-3, 0.999995, 0.3, 1, group_fraction=0.5)
    assert ann.stats[2] > 10_000
    assert ann.latency == pytest.approx(latency(inst, ann.place), rel=1e-9)
    assert ann.best_latency == pytest.approx(latency(inst, ann.best_place), rel=1e-9)
    assert capacity_ok(inst, ann.best_place)
    assert (ann.weight_bytes[:, None] + ann.act_load == load_profile(inst, ann.place)).all()
    assert ann.tree_max[:, 1].tolist() == ann.act_load.max(axis=1).tolist()


@settings(max_examples=50, deadline=None)
@given(n_ops=st.integers(1, 40), data=st.data())
def test_tree_root_is_the_maximum_after_range_adds(n_ops, data):
    leaves = tree_leaves(n_ops)
    tree_max = np.zeros((1, 2 * leaves), np.int64)
    tree_add = np.zeros((1, 2 * leaves), np.int64)
    flat = np.zeros(n_ops, np.int64)
    for _ in range(data.draw(st.integers(1, 20))):
        lo = data.draw(st.integers(0, n_ops - 1))
        hi = data.draw(st.integers(lo, n_ops - 1))
        v = data.draw(st.integers(-50, 100))
        _tree_range_add(tree_max, tree_add, leaves, 0, lo, hi, v)
        flat[lo:hi + 1] += v
        assert tree_max[0, 1] == max(flat.max(), 0 if n_ops < leaves else flat.max())


@FAST
@given(seed=st.integers(0, 10_000))
def test_polish_keeps_validity_and_never_worsens(seed):
    inst = Instance.from_dict(random_instance_dict(seed, n_ops=8, n_tensors=12, n_levels=3,
                                                   tight=0.4))
    start = random_valid_placement(inst, np.random.default_rng(seed))
    place, lat = polish(inst, start)
    assert capacity_ok(inst, place)
    assert lat == latency(inst, place) <= latency(inst, start)


def test_sa_finds_the_one_out_two_in_exchange_on_resnet101():
    """The optimum trades 589824-byte weights in LLC for pairs of 262144-byte ones:
    reachable only through group swaps or overflowing states."""
    from memplace import instances
    inst = instances.load("resnet101@nnpi")
    compiler = solve(inst, "compiler").latency
    res = solve(inst, "sa", time_limit=120, seed=0, moves=2_000_000, restarts=1)
    assert res.latency < compiler * 0.99


def test_start_temperature_accepts_the_asked_fraction_of_uphill_moves():
    uphill = np.array([1e-9, 3e-8, 2e-7, 5e-7, 4e-6])
    t0 = start_temperature(uphill, 0.3)
    assert np.exp(-uphill / t0).mean() == pytest.approx(0.3, rel=1e-9)
    assert start_temperature(np.array([]), 0.3) is None


def test_sa_beats_or_matches_the_compiler_heuristic():
    from memplace import instances
    inst = instances.load("resnet50@nnpi")
    compiler = solve(inst, "compiler").latency
    res = solve(inst, "sa", time_limit=60, seed=0, moves=400_000, restarts=2)
    assert res.latency < compiler * 0.995  # the heuristic leaves more than 0.5% on resnet50


@pytest.mark.parametrize("key,value", [("swap_fraction", 1.5), ("restarts", 0), ("group_fraction", -0.1), ("group_max", 1),
                                       ("t0_accept", 1.0), ("moves", -1)])
def test_out_of_range_parameters_are_named(key, value):
    inst = Instance.from_dict(random_instance_dict(1))
    with pytest.raises(ParameterError, match=f"'{key}'"):
        solve(inst, "sa", **{key: value})
