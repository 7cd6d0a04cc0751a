"""The compiled move loop of the residency `sa` (move_loop.py): after every few moves the
board is a valid solution whose booked loads are the solution's loads and whose
incrementally re-simulated latency is a full simulation's; the best it reports is valid
with the latency it claims; a move budget makes a run depend only on its seed; a time
budget is honoured."""
from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memplace.instances import load
from memplace.model import Instance, rectify
from memplace.model.residency import ResidencySolution, load_with_windows, simulate, validate
from memplace.solvers import solve
from memplace.solvers.residency.machinery import move_loop
from memplace.solvers.residency.machinery.starts import msa_solution
from randominst import random_instance_dict


def _check_board(inst: Instance, search: move_loop.Search) -> None:
    b = search.board
    sol = move_loop.current_solution(inst, b)
    check = validate(inst, sol)
    assert check.valid, check.errors[:3]
    assert b.stats[0] == pytest.approx(simulate(inst, sol), rel=1e-9)
    assert (b.load == load_with_windows(inst, sol.placement, sol.windows)).all()
    best = move_loop.best_solution(inst, b)
    check = validate(inst, best)
    assert check.valid, check.errors[:3]
    assert b.stats[1] == pytest.approx(simulate(inst, best), rel=1e-9)
    assert b.stats[1] <= b.stats[0] * (1 + 1e-12)


def _walk(inst: Instance, start: ResidencySolution, calls: int, moves: int, home_rate: float,
          temperature: float, seed: int) -> move_loop.Search:
    """`calls` calls of `moves` moves each, the board checked after each."""
    s = move_loop.new_search(inst, start, spare=4)  # little room: the board grows on the way
    for j in range(calls):
        status = move_loop.run_moves(s.rules, s.board, s.sim, s.enc, s.state, s.ck, s.scratch, s.K, s.hstate,
                                     moves, temperature, 1.0, home_rate, 3.0, seed + j)
        if status == move_loop.GROW:
            s = move_loop.grow(inst, s)
        _check_board(inst, s)
    return s


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6), st.booleans(), st.sampled_from([0.0, 0.2, 0.6]))
def test_every_state_is_valid_and_simulated_exactly_on_random_instances(seed, addressed, home_rate):
    rng = np.random.default_rng(seed)
    data = random_instance_dict(seed, n_ops=int(rng.integers(4, 12)), n_tensors=int(rng.integers(4, 14)),
                                n_levels=int(rng.integers(2, 4)), addressed=addressed,
                                tight=float(rng.choice([0.3, 0.6, 1.0])))
    inst = Instance.from_dict(data)
    res = rectify(inst, rng.integers(0, inst.n_levels, inst.n_tensors))
    offsets = res.offsets if inst.has_addressed_levels else None
    start = ResidencySolution(inst.name, res.placement, offsets)
    assert validate(inst, start).valid
    s = _walk(inst, start, 12, 25, home_rate, float(rng.choice([0.0, 1e-2, 1.0])), seed)
    assert 0 < s.board.stats[2] <= 12 * 25  # a call stops early only when the board grows


@pytest.mark.parametrize("name", ["bert-base@nnpi", "mobilenetv2@edge-npu"])
def test_committed_instances_stay_valid_from_msa(name):
    inst = load(name)
    s = _walk(inst, msa_solution(inst)[0], 8, 200, 0.2, 1e-3, 0)
    assert s.board.stats[3] > 20  # moves of every kind were kept and checked


def test_a_move_budget_makes_the_run_depend_on_its_seed_only():
    inst = load("mobilenetv2@nnpi")
    start = msa_solution(inst)[0]
    runs = [move_loop.anneal(inst, start, np.random.default_rng(s), 3000, 3e-3, 1e-6)
            for s in (5, 5, 6)]
    key = [(r[0].placement.tolist(), r[0].windows) for r in runs]
    assert runs[0][1] == runs[1][1] == 3000
    assert key[0] == key[1]
    assert key[0] != key[2]
    assert simulate(inst, runs[0][0]) <= simulate(inst, start)


def test_anneal_stops_at_its_seconds():
    inst = load("synth-1000@nnpi")
    start = msa_solution(inst)[0]
    move_loop.anneal(inst, start, np.random.default_rng(0), 100, 3e-3, 1e-6)  # kernels loaded
    began = time.perf_counter()
    best, tried = move_loop.anneal(inst, start, np.random.default_rng(0), 0, 3e-3, 1e-6, seconds=1.0)
    assert time.perf_counter() - began < 1.5
    assert tried > 100
    assert validate(inst, best).valid


def test_sa_engines_both_improve_on_msa_where_it_is_beatable():
    inst = load("mobilenetv2@edge-npu")
    msa = msa_solution(inst)[0].latency
    for engine in ("compiled", "python"):
        res = solve(inst, "sa", time_limit=None, problem="residency", seed=0, engine=engine,
                    iterations=6000, static_moves=0)
        assert res.latency < 0.97 * msa, engine
        assert validate(inst, res.to_solution()).valid


def test_anneal_given_moves_and_seconds_cools_over_whichever_runs_out_first():
    inst = load("synth-1000@nnpi")
    start = msa_solution(inst)[0]
    move_loop.anneal(inst, start, np.random.default_rng(0), 100, 3e-3, 1e-6)  # kernels loaded
    began = time.perf_counter()
    _, tried = move_loop.anneal(inst, start, np.random.default_rng(0), 10**9, 3e-3, 1e-6,
                                seconds=0.5)
    assert time.perf_counter() - began < 1.0 and 100 < tried < 10**9
    _, tried = move_loop.anneal(inst, start, np.random.default_rng(0), 2000, 3e-3, 1e-6,
                                seconds=60.0)
    assert tried == 2000


def test_sa_capped_anneals_follow_each_other_until_the_moves_run_out():
    inst = load("mobilenetv2@nnpi")
    per_tensor = 3
    cap = per_tensor * int(np.count_nonzero(inst.traffic))
    runs = [solve(inst, "sa", time_limit=None, problem="residency", seed=4, iterations=5 * cap,
                  static_moves=0, anneal_moves=per_tensor, engine=engine)
            for engine in ("compiled", "compiled", "python")]
    for res in runs:
        assert res.notes["moves"] == 5 * cap
        assert res.notes["anneals"] == 5  # not `restarts` (3): the cap sets how many
        assert validate(inst, res.to_solution()).valid
    assert runs[0].latency == runs[1].latency  # a move budget: the seed alone decides
