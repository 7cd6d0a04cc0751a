"""The mallocGame module: every game ends in a valid solution, masked moves are illegal,
candidates follow the interval picker and best fit."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memplace.instances import load
from memplace.model import Instance, latency, rectify
from memplace.model.residency import validate
from memplace.solvers.residency.machinery.game import (KINDS, STAY, IllegalMove, ResidencyGame,
                                                       action_of, greedy_lookahead, play)
from memplace.solvers.residency.machinery.cost_analysis import CostAnalysis, buffer_order
from memplace.solvers.residency.machinery.interval_picker import IntervalPicker
from randominst import random_instance_dict


def _random_game(seed: int, n_levels: int, addressed: bool) -> ResidencyGame:
    inst = Instance.from_dict(random_instance_dict(seed, n_ops=8, n_tensors=10, n_levels=n_levels,
                                                   addressed=addressed, tight=0.6))
    rng = np.random.default_rng(seed)
    homes = rectify(inst, rng.integers(0, inst.n_levels, inst.n_tensors))
    return ResidencyGame(inst, homes.placement, homes.offsets)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), n_levels=st.integers(2, 3), addressed=st.booleans())
def test_random_legal_games_end_valid_and_masked_moves_raise(seed, n_levels, addressed):
    game = _random_game(seed, n_levels, addressed)
    rng = np.random.default_rng(seed + 1)
    while not game.is_terminal():
        mask = game.action_mask()
        assert mask[STAY] and mask.sum() == len(game.legal_actions())
        for action in np.flatnonzero(~mask):
            with pytest.raises(IllegalMove):
                game.copy().step(int(action))
        for action in game.legal_actions():  # every legal move keeps the prefix valid
            trial = game.copy()
            trial.step(action)
            assert validate(trial.instance, trial.solution()).ok
        game.step(int(rng.choice(game.legal_actions())))
    solution = game.solution()
    checked = validate(game.instance, solution)
    assert checked.ok, checked.errors
    assert checked.latency == solution.latency
    with pytest.raises(IllegalMove):
        game.step(STAY)


def test_staying_home_everywhere_is_the_homes_static_latency():
    inst = load("mobilenetv2@edge-npu")
    game = ResidencyGame(inst)
    solution = play(game, [])
    assert solution.windows == ()
    assert solution.latency == latency(inst, game.homes)


def test_greedy_lookahead_never_loses_to_staying_home_and_replays_exactly():
    inst = load("mobilenetv2@edge-npu")
    game = ResidencyGame(inst)
    moves = greedy_lookahead(game)
    found = game.latency()
    assert found < latency(inst, game.homes)  # it places windows that pay off here
    assert play(ResidencyGame(inst), moves).latency == found


@pytest.mark.parametrize("name", ["resnet101@nnpi", "efficientnet-b0@edge-npu"])
def test_buffers_come_in_msas_order(name):
    # the definition, access by access: the seconds all accesses would save in level 0,
    # over the square root of the size, decreasing; ties to the smaller index
    inst = load(name)
    game = ResidencyGame(inst)
    costs = CostAnalysis(inst, game.homes)
    scores = []
    for t, tensor in enumerate(inst.tensors):
        saved = sum(costs.saving(t, k, b, 0) for k, b in tensor["accesses"])
        if game.homes[t] > 0 and saved > 0:
            scores.append((-saved / math.sqrt(inst.size[t]), t))
    expected = [t for _, t in sorted(scores)]
    assert len(expected) > 10 and game.order.tolist() == expected
    assert buffer_order(inst, game.homes).tolist() == expected


@pytest.mark.parametrize("name", ["resnet101@nnpi", "efficientnet-b0@edge-npu"])
def test_prefetch_candidates_are_msas_picker_starts(name):
    inst = load(name)
    game = ResidencyGame(inst)
    costs = CostAnalysis(inst, game.homes)
    picker = IntervalPicker(costs.elapsed)
    prefetches = 0
    for t in game.order.tolist():
        home = int(game.homes[t])
        copy_s = float(inst.size[t] / inst.copy_bandwidth[home])
        accesses = sorted(inst.tensors[t]["accesses"])
        producer = inst.tensors[t]["producer"]
        if not inst.is_weight[t]:
            accesses = accesses[1:]
        low = 0 if inst.is_weight[t] else (int(inst.start[t]) if producer is None else producer + 1)
        windows = game.candidates(t)
        for level in range(home):
            expected = []
            if accesses:
                first, b = accesses[0]
                max_el = picker.max_elapsed(float(inst.capacity[level]),
                                            float(inst.copy_bandwidth[home]))
                starts = picker.starts(copy_s, low, first, max_el, costs.saving(t, first, b, level))
                if starts:
                    latest = picker.latest_start(copy_s, low, first, costs.saving(t, first, b, level))
                    earliest = picker.earliest_start(low, latest, first, max_el)
                    assert starts[0] == picker.preferred_start(copy_s, earliest, latest, first)
                    expected = list(dict.fromkeys([latest, starts[0], earliest]))
            got = [windows[action_of(level, kind)].start for kind in KINDS[1:]
                   if action_of(level, kind) in windows]
            assert got == expected
            prefetches += len(got)
    assert prefetches > 10


def test_action_indices_name_a_level_and_a_kind():
    assert action_of(0, "defining") == 1
    assert action_of(1, "earliest") == 1 + len(KINDS) + 3
    game = ResidencyGame(load("mobilenetv2@edge-npu"))
    for action, window in game.candidates(game.tensor).items():
        level, kind = divmod(action - 1, len(KINDS))
        assert window.level == level
        assert (window.start == window.first) == (KINDS[kind] == "defining")
