"""The evolutionary solvers (`ga`, `egrl-ea`, `hybrid`) and the Boltzmann chromosome operators."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memplace.model import (Instance, latency, placement_errors, rectify, repair_latency_batch,
                            validate)
from memplace.solvers import solve
from memplace.solvers.static import boltzmann
from memplace.solvers.static.ga import BatchEvaluator, build_toolbox, make_individual, mut_swap
from memplace.solvers import SearchContext
from randominst import random_instance_dict

BUDGETS = {  # fixed generation budgets, no time limit: the result depends on the seed only
    "ga": {"population": 30, "generations": 40, "seed_heuristics": False},
    "egrl-ea": {"population": 40, "generations": 60},
    "hybrid": {"population": 20, "generations": 20},
}


def brute_force_optimum(inst: Instance) -> float:
    """Minimum latency over every capacity-valid placement (enumerated)."""
    T, L = inst.n_tensors, inst.n_levels
    every = np.array(list(itertools.product(range(L), repeat=T)), np.int64)
    live = np.zeros((T, inst.n_ops), np.int64)
    for t in range(T):
        live[t, inst.start[t]:inst.end[t] + 1] = inst.size[t]
    ok = np.ones(every.shape[0], bool)
    for l in range(L - 1):
        load = (every == l).astype(np.int64) @ live  # (placements, steps)
        ok &= (load <= inst.capacity[l]).all(axis=1)
    from memplace.model import latency_batch
    return float(latency_batch(inst, every[ok]).min())


def small_instance(seed: int, n_tensors: int = 9) -> Instance:
    return Instance.from_dict(random_instance_dict(seed, n_ops=6, n_tensors=n_tensors,
                                                   n_levels=3, tight=0.4))


@pytest.mark.parametrize("solver", sorted(BUDGETS))
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_solver_reaches_brute_force_optimum_within_budget(solver, seed):
    inst = small_instance(seed, n_tensors=9 + seed)  # 10..12 tensors
    best = brute_force_optimum(inst)
    result = solve(inst, solver, time_limit=None, seed=seed, **BUDGETS[solver])
    assert result.latency == pytest.approx(best, rel=1e-12)
    assert not placement_errors(inst, result.placement, result.offsets)


@pytest.mark.parametrize("solver", sorted(BUDGETS))
def test_same_seed_same_placement(solver):
    inst = Instance.from_dict(random_instance_dict(7, n_ops=10, n_tensors=30, tight=0.3))
    a = solve(inst, solver, time_limit=None, seed=5, **BUDGETS[solver])
    b = solve(inst, solver, time_limit=None, seed=5, **BUDGETS[solver])
    assert a.placement.tolist() == b.placement.tolist()
    assert a.evaluations == b.evaluations and a.trace[-1][1:] == b.trace[-1][1:]


@pytest.mark.parametrize("solver", sorted(BUDGETS))
@pytest.mark.parametrize("addressed", [False, True])
def test_results_are_valid_and_counted(solver, addressed):
    inst = Instance.from_dict(random_instance_dict(11, n_ops=12, n_tensors=40, tight=0.3,
                                                   addressed=addressed))
    result = solve(inst, solver, time_limit=None, seed=0, **BUDGETS[solver])
    assert validate(inst, result.to_solution()).ok
    assert result.latency == pytest.approx(latency(inst, result.placement), rel=1e-12)
    pop, gens = BUDGETS[solver]["population"], BUDGETS[solver]["generations"]
    if solver == "egrl-ea":  # one sample per chromosome per generation
        assert result.evaluations == pop * gens
    elif solver == "hybrid":  # plus 4 policy samples per generation and the seeds
        assert result.evaluations >= (pop + 4) * gens + result.notes["seeds"]
    else:  # ga evaluates only changed individuals
        assert pop + gens <= result.evaluations <= pop * (gens + 1)
    assert [e for _, e, _ in result.trace] == sorted(e for _, e, _ in result.trace)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), addressed=st.booleans())
def test_batch_repair_is_the_canonical_rectify(seed, addressed):
    inst = Instance.from_dict(random_instance_dict(seed, n_ops=8, n_tensors=14, tight=0.3,
                                                   addressed=addressed))
    rng = np.random.default_rng(seed)
    population = rng.integers(0, inst.n_levels, (6, inst.n_tensors))
    repaired = population.copy()
    lat = repair_latency_batch(inst, repaired)
    for row, fixed, value in zip(population, repaired, lat):
        canonical = rectify(inst, row)
        assert fixed.tolist() == canonical.placement.tolist()
        assert value == latency(inst, canonical.placement)


def test_ga_map_writes_the_repaired_genes_back():
    inst = Instance.from_dict(random_instance_dict(3, n_ops=8, n_tensors=20, tight=0.2))
    ctx = SearchContext(inst, None, 0)
    tb = build_toolbox(ctx, tournament=3, indpb_cx=0.5, indpb_mut=0.1)
    fastest = np.zeros(inst.n_tensors, np.int64)  # everything in level 0: overflows
    ind = make_individual(fastest)
    (fitness,) = tb.map(tb.evaluate, [ind])
    canonical = rectify(inst, fastest).placement
    assert canonical.tolist() != fastest.tolist()  # the test means something
    assert list(ind) == canonical.tolist()
    assert fitness == (latency(inst, canonical),)
    assert ctx.evaluations == 1 and ctx.best_latency == fitness[0]
    assert isinstance(BatchEvaluator(ctx).map(len, [[1, 2]]), list)  # other functions map plainly


def test_mutation_keeps_temperatures_in_range():
    rng = np.random.default_rng(0)
    prior = rng.random((50, 3))
    temps = np.concatenate([np.full(25, boltzmann.T_MIN), np.full(25, boltzmann.T_MAX)])
    before = prior.copy()
    for _ in range(200):
        boltzmann.mutate(prior, temps, rng)
        assert temps.min() >= boltzmann.T_MIN and temps.max() <= boltzmann.T_MAX
    assert not np.allclose(prior, before)
    assert temps.min() == boltzmann.T_MIN  # the 0.95 drift drives them to the floor


def test_crossover_exchanges_whole_tensor_rows():
    rng = np.random.default_rng(1)
    pa, ta = boltzmann.random_chromosomes(rng, 1, 64, 3)
    pb, tb = boltzmann.random_chromosomes(rng, 1, 64, 3, temperature=2.0)
    pa, ta, pb, tb = pa[0], ta[0] * rng.uniform(0.5, 1.5, 64), pb[0], tb[0]
    a0, at0, b0, bt0 = pa.copy(), ta.copy(), pb.copy(), tb.copy()
    boltzmann.crossover(pa, ta, pb, tb, rng)
    swapped = np.array([np.array_equal(pa[t], b0[t]) for t in range(64)])
    kept = np.array([np.array_equal(pa[t], a0[t]) for t in range(64)])
    assert (swapped ^ kept).all()  # every row wholly from one parent
    assert 10 < swapped.sum() < 54
    assert np.array_equal(ta, np.where(swapped, bt0, at0))  # temperatures travel with rows
    assert np.array_equal(pb, np.where(swapped[:, None], a0, b0))
    assert np.array_equal(tb, np.where(swapped, at0, bt0))


def test_sampling_at_very_low_temperature_returns_the_prior_argmax():
    rng = np.random.default_rng(2)
    priors, temps = boltzmann.random_chromosomes(rng, 8, 100, 4, temperature=1e-6)
    assert np.array_equal(boltzmann.sample(priors, temps, rng), priors.argmax(axis=-1))


def test_sampling_follows_the_softmax():
    rng = np.random.default_rng(3)
    prior = np.array([[[0.0, np.log(3.0)]]])  # softmax at temperature 1: 1/4, 3/4
    draws = np.concatenate([boltzmann.sample(prior, np.ones((1, 1)), rng)[:, 0]
                            for _ in range(4000)])
    assert abs(draws.mean() - 0.75) < 0.03


def test_a_placement_chromosome_samples_that_placement():
    rng = np.random.default_rng(4)
    placement = rng.integers(0, 3, 200)
    prior, temp = boltzmann.from_placement(placement, 3, strength=1.0, temperature=0.1)
    drawn = boltzmann.sample(prior[None], temp[None], rng)[0]
    assert (drawn != placement).sum() <= 2  # each tensor leaves with chance 2 e^-10


@pytest.mark.parametrize("solver,params", [
    ("ga", {"population": 30, "generations": 5, "greedy_seeds": 5}),
    ("hybrid", {"population": 20, "generations": 5}),
])
def test_seeded_solvers_never_lose_to_the_heuristics(solver, params):
    from memplace.solvers.static.heuristics import heuristic_placements
    inst = Instance.from_dict(random_instance_dict(13, n_ops=12, n_tensors=40, tight=0.3))
    best = min(latency(inst, p) for p in heuristic_placements(inst).values())
    a = solve(inst, solver, time_limit=None, seed=2, **params)
    b = solve(inst, solver, time_limit=None, seed=2, **params)
    assert a.latency <= best
    assert a.placement.tolist() == b.placement.tolist()


def test_swap_mutation_moves_one_tensor_up_and_an_overlapping_rival_down():
    inst = Instance.from_dict(random_instance_dict(5, n_ops=10, n_tensors=30, tight=0.3))
    rng = np.random.default_rng(0)
    swaps = 0
    for _ in range(50):
        before = rng.integers(0, 3, inst.n_tensors)
        ind = make_individual(before)
        mut_swap(ind, rng, inst.start, inst.end, inst.n_levels)
        after = np.array(ind, np.int64)
        changed = np.flatnonzero(after != before)
        up = [t for t in changed if after[t] == before[t] - 1]
        down = [t for t in changed if after[t] == before[t] + 1]
        assert len(up) == 1 and len(changed) == len(up) + len(down) and len(down) <= 1
        if down:
            t, u = up[0], down[0]
            swaps += 1
            assert before[u] == after[t]  # the rival was in the level t moved into
            assert inst.start[u] <= inst.end[t] and inst.start[t] <= inst.end[u]
    assert swaps > 25
