"""The exact MILP against brute-force enumeration, and the LP relaxation's bound and roundings."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memplace.model import (Instance, capacity_ok, latency, latency_batch, placement_errors,
                            rectify)
from memplace.solvers import ParameterError, solve
from memplace.solvers.static.heuristics import heuristic_placements
from memplace.solvers.static.lp_relaxation import lp_bound, lp_round
from memplace.solvers.static.milp_highs import clique_steps, formulate
from randominst import random_instance_dict


def brute_force(inst: Instance) -> tuple[float, np.ndarray]:
    """Lowest latency over all L^T placements that respect every capacity (offsets
    not considered), with one placement reaching it."""
    T, L = inst.n_tensors, inst.n_levels
    pop = np.array(list(itertools.product(range(L), repeat=T)), np.int64)
    live = np.zeros((T, inst.n_ops))
    for t in range(T):
        live[t, inst.start[t]:inst.end[t] + 1] = inst.size[t]
    ok = np.ones(pop.shape[0], bool)
    for l in range(L - 1):
        load = (pop == l).astype(np.float64) @ live  # exact: integers far below 2**53
        ok &= (load <= inst.capacity[l]).all(axis=1)
    lat = latency_batch(inst, pop[ok])
    best = int(np.argmin(lat))
    place = pop[ok][best]
    assert capacity_ok(inst, place)
    return float(lat[best]), place


def random_case(seed: int, n_tensors: int, n_levels: int, addressed: bool = False,
                tight: float = 0.5) -> Instance:
    return Instance.from_dict(random_instance_dict(seed, n_ops=8, n_tensors=n_tensors,
                                                   n_levels=n_levels, addressed=addressed,
                                                   tight=tight))


CASES = [(seed, 12 if seed % 3 == 0 else 9, 3 if seed % 4 else 2, 0.3 + 0.1 * (seed % 5))
         for seed in range(12)]


def milp_against_brute_force(seed, n_tensors, n_levels, tight):
    """milp on a random case, checked optimal against brute force; (result, optimum)."""
    inst = random_case(seed, n_tensors, n_levels, tight=tight)
    optimum, _ = brute_force(inst)
    result = solve(inst, "milp", time_limit=30)
    assert result.status == "optimal"
    assert optimum * (1 - 1e-12) <= result.latency <= optimum * (1 + 1e-6)
    return result, optimum


@pytest.mark.parametrize("seed,n_tensors,n_levels,tight", CASES)
def test_milp_equals_brute_force(seed, n_tensors, n_levels, tight):
    result, optimum = milp_against_brute_force(seed, n_tensors, n_levels, tight)
    assert result.lower_bound <= result.latency
    assert result.lower_bound >= optimum * (1 - 1e-6)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), n_tensors=st.integers(1, 8), n_levels=st.integers(1, 3),
       tight=st.floats(0.05, 1.5))
def test_milp_equals_brute_force_property(seed, n_tensors, n_levels, tight):
    milp_against_brute_force(seed, n_tensors, n_levels, tight)


@pytest.mark.parametrize("seed", range(4))
def test_pyomo_backend_agrees_with_highspy(seed):
    inst = random_case(100 + seed, 10, 3, tight=0.4)
    fast = solve(inst, "milp", time_limit=30, backend="highspy")
    pyomo = solve(inst, "milp", time_limit=30, backend="pyomo")
    assert fast.notes["backend"] == "highspy" and pyomo.notes["backend"] == "pyomo"
    assert pyomo.status == fast.status == "optimal"
    assert pyomo.latency == pytest.approx(fast.latency, rel=1e-6)


@pytest.mark.parametrize("seed", range(8))
def test_milp_is_never_worse_than_its_warm_start(seed):
    inst = random_case(200 + seed, 12, 3, addressed=seed % 2 == 1, tight=0.3)
    heuristic = min(latency(inst, p) for p in heuristic_placements(inst).values())
    result = solve(inst, "milp", time_limit=30)
    assert result.latency <= heuristic
    assert result.trace[0][2] == pytest.approx(heuristic)  # the warm start is offered first


@pytest.mark.parametrize("seed", range(10))
def test_milp_on_addressed_levels_is_valid_with_a_relaxation_bound(seed):
    inst = random_case(300 + seed, 10, 3, addressed=True, tight=0.5)
    relaxed_optimum, _ = brute_force(inst)  # capacities only: a relaxation of offsets
    result = solve(inst, "milp", time_limit=30)
    assert placement_errors(inst, result.placement, result.offsets) == []
    assert result.lower_bound <= relaxed_optimum * (1 + 1e-9)
    assert result.lower_bound <= result.latency
    if result.status == "optimal":  # proven: packed latency reaches the relaxation's optimum
        assert result.latency <= relaxed_optimum * (1 + 1e-6)


def test_time_limit_still_returns_a_valid_placement_and_bound():
    inst = random_case(7, 12, 3, tight=0.3)
    result = solve(inst, "milp", time_limit=0.5)
    assert placement_errors(inst, result.placement, result.offsets) == []
    assert result.lower_bound is None or result.lower_bound <= result.latency


def test_bad_parameters_are_named():
    inst = random_case(1, 5, 3)
    with pytest.raises(ParameterError, match="'backend'='gurobi'"):
        solve(inst, "milp", backend="gurobi")
    with pytest.raises(ParameterError, match="'gap'=-1"):
        solve(inst, "milp", gap=-1.0)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 4)), min_size=1, max_size=12))
def test_clique_steps_give_exactly_the_maximal_live_sets(intervals):
    n = 14
    start = np.array([s for s, _ in intervals], np.int64)
    end = start + np.array([d for _, d in intervals], np.int64)
    live = [frozenset(np.flatnonzero((start <= k) & (end >= k)).tolist()) for k in range(n)]
    maximal = {s for s in live if s and not any(s < other for other in live)}
    got = [live[k] for k in clique_steps(start, end, n)]
    assert len(got) == len(set(got))  # one step per maximal set
    assert set(got) == maximal


@pytest.mark.parametrize("seed", range(6))
def test_columns_of_a_valid_placement_satisfy_the_model(seed):
    inst = random_case(400 + seed, 12, 3, tight=0.4)
    form = formulate(inst)
    for place in heuristic_placements(inst).values():
        x = form.columns(place)
        A = np.zeros((form.n_rows, form.n_cols))
        for j in range(form.n_cols):
            A[form.a_index[form.a_start[j]:form.a_start[j + 1]], j] = \
                form.a_value[form.a_start[j]:form.a_start[j + 1]]
        activity = A @ x
        assert (activity <= form.row_upper + 1e-9).all() and (activity >= form.row_lower - 1e-9).all()
        objective = (form.cost @ x) / form.scale + form.offset
        # fixed tensors count as slowest: never worse than the placement itself
        assert objective <= latency(inst, place) * (1 + 1e-12)
        assert objective == pytest.approx(latency(inst, form.placement(x)), rel=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_lp_bound_is_below_the_optimum_and_roundings_are_valid(seed):
    inst = random_case(500 + seed, 10, 3, addressed=seed % 2 == 1, tight=0.4)
    optimum, _ = brute_force(inst)
    bound = lp_bound(inst)
    assert inst.compute_floor() <= bound <= optimum * (1 + 1e-9)
    rng = np.random.default_rng(seed)
    for place in [lp_round(inst)] + [lp_round(inst, rng) for _ in range(5)]:
        assert capacity_ok(inst, place)
        assert latency(inst, place) >= optimum * (1 - 1e-12)
        packed = rectify(inst, place)  # offsets exist for exactly this placement
        assert packed.placement.tolist() == place.tolist()
        assert placement_errors(inst, place, packed.offsets) == []
