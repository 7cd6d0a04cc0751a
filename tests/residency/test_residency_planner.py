"""The residency planners (`beam`, `mcts`) searching the mallocGame: valid results, the
pilot property against their first rollout and `msa`, seeds, and beam's relation to the
game's greedy look-ahead."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memplace.instances import load
from memplace.model import Instance, rectify
from memplace.model.residency import simulate, validate
from memplace.solvers import SearchContext, solve
from memplace.solvers.residency.beam import beam_search
from memplace.solvers.residency.machinery.game import STAY, ResidencyGame, greedy_lookahead, play
from memplace.solvers.residency.mcts import _Tree, mcts_search
from memplace.solvers.residency.machinery.starts import msa_solution
from memplace.solvers.residency.machinery.planner import Incumbent, msa_order, msa_rollout
from randominst import random_instance_dict

SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PLANNERS = {"beam": {"width": 2}, "mcts": {"simulations": 4}}


def _random_instance(seed: int, n_levels: int, addressed: bool) -> Instance:
    return Instance.from_dict(random_instance_dict(seed, n_ops=8, n_tensors=10, n_levels=n_levels,
                                                   addressed=addressed, tight=0.6))


def _random_game(inst: Instance, seed: int) -> ResidencyGame:
    homes = rectify(inst, np.random.default_rng(seed).integers(0, inst.n_levels, inst.n_tensors))
    return ResidencyGame(inst, homes.placement, homes.offsets)


def _context(inst: Instance, seed: int = 0) -> SearchContext:
    return SearchContext(inst, None, seed, problem="residency")


def _assert_valid(inst: Instance, result) -> None:
    checked = validate(inst, result.solution)
    assert checked.ok, checked.errors
    assert "windows_dropped" not in result.notes  # offered valid, not repaired
    assert result.latency == simulate(inst, result.solution)


@pytest.mark.parametrize("solver", sorted(PLANNERS))
def test_planner_solution_validates_and_beats_msa_on_mobilenetv2_nnpi(solver):
    inst = load("mobilenetv2@nnpi")
    result = solve(inst, solver, time_limit=None, problem="residency", grow=False,
                   homes="compiler", **PLANNERS[solver])
    _assert_valid(inst, result)
    # 7.16 us against XLA's literal msa (homes in the slowest level), 7.35; msa's default
    # (the better of those homes and the compiler's) reaches the same 7.16 us
    assert result.latency < msa_solution(inst, homes="slowest")[0].latency
    assert result.solution.windows


@SETTINGS
@given(seed=st.integers(0, 10_000), n_levels=st.integers(2, 3), addressed=st.booleans(),
       solver=st.sampled_from(sorted(PLANNERS)))
def test_planner_on_random_instances_validates(seed, n_levels, addressed, solver):
    inst = _random_instance(seed, n_levels, addressed)
    result = solve(inst, solver, time_limit=None, seed=seed, problem="residency", grow=False,
                   **PLANNERS[solver])
    _assert_valid(inst, result)
    # not "never loses to msa": the planners offer msa's solution first, so that holds by
    # construction; the note must still be msa's own latency
    assert result.notes["msa_latency"] == msa_solution(inst)[0].latency


@SETTINGS
@given(seed=st.integers(0, 10_000), n_levels=st.integers(2, 3), addressed=st.booleans())
def test_searches_never_end_slower_than_their_first_rollout(seed, n_levels, addressed):
    inst = _random_instance(seed, n_levels, addressed)
    game = _random_game(inst, seed)
    first = msa_rollout(game)
    ctx = _context(inst, seed)
    for width in (1, 3):
        end, _ = beam_search(game.copy(), width, "msa", Incumbent(ctx, "beam"), ctx)
        assert end.is_terminal() and end.latency() <= first.latency
    end, _ = mcts_search(game.copy(), 3, _Tree(Incumbent(ctx, "mcts"), ctx.rng, 1.0, 0.3), ctx)
    assert end.is_terminal() and end.latency() <= first.latency
    assert ctx.best_latency <= first.latency  # that rollout itself was offered


def test_msa_rollout_takes_the_first_window_in_msas_order_that_lowers_the_latency():
    inst = load("mobilenetv2@nnpi")
    done = msa_rollout(ResidencyGame(inst))
    replay = ResidencyGame(inst)
    for action in done.moves:  # oracle: full simulations of every trial
        before = replay.latency()
        expected = STAY
        for trial_action in msa_order(replay.legal_actions()):
            trial = replay.copy()
            trial.step(trial_action)
            if trial.latency() < before:
                expected = trial_action
                break
        assert action == expected
        replay.step(action)
    assert sum(a != STAY for a in done.moves) >= 2
    assert replay.latency() == done.latency


def test_same_seed_same_mcts_result():
    inst = load("mobilenetv2@nnpi")
    runs = [solve(inst, "mcts", time_limit=None, seed=seed, problem="residency", grow=False,
                  simulations=4, epsilon=0.5, homes="compiler") for seed in (7, 7)]
    assert runs[0].latency == runs[1].latency
    assert runs[0].solution.windows == runs[1].solution.windows
    assert runs[0].evaluations == runs[1].evaluations


def test_beam_of_width_one_without_rollouts_is_the_games_greedy_lookahead():
    inst = load("mobilenetv2@edge-npu")
    expected = greedy_lookahead(ResidencyGame(inst))
    ctx = _context(inst)
    end, _ = beam_search(ResidencyGame(inst), 1, "none", Incumbent(ctx, "beam"), ctx)
    assert end.moves == expected
    assert any(a != STAY for a in expected)
    assert end.latency() == play(ResidencyGame(inst), expected).latency


def test_beam_is_deterministic_and_stops_growing_after_an_exhaustive_search():
    inst = load("resnet50@nnpi")  # a game of 9 buffers: width 32 keeps every child
    runs = [solve(inst, "beam", time_limit=30, problem="residency", homes="compiler")
            for _ in range(2)]
    assert runs[0].solution.windows == runs[1].solution.windows
    searches = runs[0].notes["searches"]
    assert [s["width"] for s in searches] == [4, 8, 16, 32]
    assert [s["pruned"] for s in searches] == [True, True, True, False]
    assert runs[0].wall_s < 30
