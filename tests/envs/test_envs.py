"""The Gymnasium environments: checker, seeds, vector envs, rewards that match the model,
replayed solvers scoring exactly their latency, masked actions."""
from __future__ import annotations

import functools
import json
import math

import gymnasium as gym
import numpy as np
import pytest
from click.testing import CliRunner
from gymnasium.utils.env_checker import check_env

import memplace.envs  # noqa: F401  (registers the environments)
from memplace.cli.main import main
from memplace.envs import PLACEMENT_ID, RESIDENCY_ID, evaluate_policy
from memplace.envs.leaderboard import PlannerMoves, RandomLegal, RandomPlacement, SolverPlacement
from memplace.instances import load
from memplace.model import MemplaceError, latency, placement_errors
from memplace.model.residency import validate
from memplace.solvers import solve
from memplace.solvers.residency.machinery.game import IllegalMove
from memplace.solvers.residency.machinery.starts import msa_solution

SMALL = ["resnet50@nnpi", "mobilenetv2@edge-npu"]  # three levels; addressed SRAM


def _episode(env, policy, seed, instance=None):
    obs, info = env.reset(seed=seed, options={"instance": instance} if instance else None)
    rewards, observations, done = [], [obs], False
    while not done:
        obs, reward, terminated, truncated, info = env.step(policy(obs, info))
        rewards.append(reward)
        observations.append(obs)
        done = terminated or truncated
    return rewards, observations, info


@pytest.mark.parametrize("env_id", [PLACEMENT_ID, RESIDENCY_ID])
def test_check_env_passes(env_id):
    check_env(gym.make(env_id, instances=SMALL).unwrapped)


@pytest.mark.parametrize("env_id, policy, seed, steps", [
    (PLACEMENT_ID, lambda: RandomPlacement(7), 3, 1),  # one action places every tensor
    (RESIDENCY_ID, lambda: RandomLegal(5), 11, 2),  # a game of several moves
], ids=["placement", "residency"])
def test_same_seed_same_episode(env_id, policy, seed, steps):
    (r1, o1, i1), (r2, o2, i2) = (_episode(gym.make(env_id, instances=SMALL), policy(), seed)
                                  for _ in range(2))
    assert r1 == r2 and len(r1) >= steps and i1["instance"] == i2["instance"]
    s1, s2 = i1["solution"], i2["solution"]
    assert np.array_equal(s1.placement, s2.placement)
    assert getattr(s1, "windows", ()) == getattr(s2, "windows", ())  # residency: the copies too
    for a, b in zip(o1, o2):
        assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_reset_seed_draws_instances_from_the_set():
    env = gym.make(PLACEMENT_ID, instances=SMALL)
    drawn = {env.reset(seed=s)[1]["instance"] for s in range(12)}
    assert drawn == set(SMALL)


@pytest.mark.parametrize("instance", SMALL)
def test_placement_solution_is_valid_and_its_latency_gives_the_reward(instance):
    env = gym.make(PLACEMENT_ID, instances=SMALL)
    inst = load(instance)
    rewards, _, info = _episode(env, RandomPlacement(1), seed=0, instance=instance)
    solution = info["solution"]
    assert placement_errors(inst, solution.placement, solution.offsets) == []
    assert info["latency"] == latency(inst, solution.placement)
    compiler = solve(inst, "compiler", time_limit=None).latency
    assert rewards == [compiler / info["latency"]]
    assert info["rectified"] and info["moved"] > 0  # a random placement overflows SRAM


@pytest.mark.parametrize("reward", ["dense", "sparse"])
@pytest.mark.parametrize("instance", SMALL)
def test_residency_solution_is_valid_and_the_return_is_its_speedup(instance, reward):
    env = gym.make(RESIDENCY_ID, instances=SMALL, reward=reward)
    inst = load(instance)
    rewards, _, info = _episode(env, RandomLegal(2), seed=0, instance=instance)
    checked = validate(inst, info["solution"])
    assert checked.ok, checked.errors
    assert checked.latency == info["latency"]
    msa = msa_solution(inst)[0].latency
    assert info["baseline"] == "msa" and info["baseline_latency"] == msa
    assert math.isclose(sum(rewards), msa / info["latency"], rel_tol=1e-12)
    if reward == "sparse":
        assert all(r == 0.0 for r in rewards[:-1])


@pytest.mark.parametrize("solver,instance", [("compiler", "resnet50@nnpi"),
                                             ("compiler", "mobilenetv2@edge-npu"),
                                             ("greedy-size", "mobilenetv2@edge-npu"),
                                             ("milp", "resnet50@nnpi")])
def test_replaying_a_static_solver_scores_exactly_its_latency(solver, instance):
    agent = SolverPlacement(solver, time_limit=5.0)
    [episode] = evaluate_policy(agent, PLACEMENT_ID, [instance])
    assert episode.changed == 0
    assert episode.latency == agent.latencies[instance]


def test_replaying_the_planner_scores_exactly_its_latency():
    agent = PlannerMoves()
    [episode] = evaluate_policy(agent, RESIDENCY_ID, ["mobilenetv2@edge-npu"])
    assert episode.latency == agent.latencies["mobilenetv2@edge-npu"]
    # the planner never loses to msa, its baseline (msa over the better of the slowest
    # level's and the compiler's homes reaches the planner's latency here)
    assert episode.episode_return >= 1.0 and episode.changed == 0


def _first_masked(info):
    masked = np.flatnonzero(info["action_mask"] == 0)
    return int(masked[0])


def test_masked_action_raises_when_asked_to():
    env = gym.make(RESIDENCY_ID, instances=SMALL, illegal="raise")
    _, info = env.reset(seed=0, options={"instance": "resnet50@nnpi"})
    with pytest.raises(IllegalMove):
        env.step(_first_masked(info))


def test_masked_action_is_played_as_stay_home_and_reported():
    env = gym.make(RESIDENCY_ID, instances=SMALL)
    _, info = env.reset(seed=0, options={"instance": "mobilenetv2@edge-npu"})
    tensor = info["tensor"]
    assert env.unwrapped.action_masks().tolist() == info["action_mask"].astype(bool).tolist()
    _, _, _, _, info = env.step(_first_masked(info))
    assert info["illegal"]
    assert env.unwrapped.game.windows == [] and env.unwrapped.game.moves == [0]
    assert info["tensor"] != tensor


@pytest.mark.parametrize("env_id", [PLACEMENT_ID, RESIDENCY_ID])
def test_sync_vector_env_runs_episodes(env_id):
    envs = gym.vector.SyncVectorEnv([lambda: gym.make(env_id, instances=SMALL)] * 2)
    obs, infos = envs.reset(seed=[1, 2])
    assert obs["tensor_features"].shape[0] == 2
    for _ in range(3):
        if env_id == RESIDENCY_ID:
            actions = np.array([int(np.flatnonzero(m)[-1]) for m in obs["action_mask"]])
        else:
            actions = envs.action_space.sample()
        obs, rewards, terminated, truncated, infos = envs.step(actions)
        assert rewards.shape == (2,) and np.isfinite(rewards).all()
    envs.close()


def test_reset_accepts_an_instance_file_and_rejects_unknown_names(tmp_path):
    path = tmp_path / "mine.json"
    data = load("resnet50@nnpi").to_dict()
    path.write_text(json.dumps({**data, "name": "mine"}))
    env = gym.make(PLACEMENT_ID, instances=SMALL)
    assert env.reset(options={"instance": str(path)})[1]["instance"] == "mine"
    with pytest.raises(MemplaceError, match="resnet5"):
        env.reset(options={"instance": "resnet5@nnpi"})
    with pytest.raises(MemplaceError, match="bert-base@nnpi"):  # larger than the set's limits
        env.reset(options={"instance": "bert-base@nnpi"})


def test_baselines_command_prints_the_leaderboard_and_writes_files(tmp_path):
    result = CliRunner().invoke(main, ["envs", "baselines", "--env", "residency", "--instances",
                                       "resnet50@nnpi", "--no-solvers", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "| stay-home | agent | 1.0000 | 1 |" in result.output  # msa keeps the compiler's placement
    assert "--no-solvers" in (tmp_path / "leaderboard.md").read_text()
    csv = (tmp_path / "leaderboard.csv").read_text().splitlines()
    assert csv[0].startswith("env,agent,instance,episode_return,latency")
    assert len(csv) == 1 + 3  # random, stay-home, greedy-lookahead


def test_baselines_command_names_an_unknown_instance_in_one_line():
    result = CliRunner().invoke(main, ["envs", "baselines", "--env", "placement", "--instances",
                                       "nosuch@nnpi"])
    assert result.exit_code == 2
    assert "nosuch@nnpi" in result.output and "Traceback" not in result.output


def test_async_vector_env_runs_the_residency_game():
    # Spawned workers, as JAX (imported by other tests) requires: forking a process that has
    # started JAX's threads can deadlock the child. `module:id` imports memplace.envs there.
    make = functools.partial(gym.make, f"memplace.envs:{RESIDENCY_ID}", instances=SMALL)
    envs = gym.vector.AsyncVectorEnv([make] * 2, context="spawn")
    try:
        obs, _ = envs.reset(seed=[1, 2])
        actions = np.array([int(np.flatnonzero(m)[-1]) for m in obs["action_mask"]])
        obs, rewards, *_ = envs.step(actions)
        assert obs["action_mask"].shape == (2, envs.single_action_space.n)
        assert np.isfinite(rewards).all()
    finally:
        envs.close()


def test_a_game_with_no_buffer_to_decide_is_one_stay_home_step():
    env = gym.make(RESIDENCY_ID, instances=["resnet50@tpu"])
    _, info = env.reset(seed=0)
    assert info["tensor"] == -1 and info["action_mask"].tolist() == [1] + [0] * (len(info["action_mask"]) - 1)
    _, reward, terminated, _, info = env.step(0)
    assert terminated and info["solution"].windows == ()
    assert reward == info["baseline_latency"] / info["latency"]


def test_memplace_solvers_and_the_best_known_are_scored_as_episodes_are():
    from memplace.envs.leaderboard import best_known_episodes, solver_episodes, to_csv, to_markdown
    from memplace.instances.library import read_library
    names = ["resnet50@edge-tpu", "resnet50@nnpi"]  # the first is in memplace-lib/1
    lib = read_library(1)
    entry = lib.entry("residency/resnet50@edge-tpu")
    rows = evaluate_policy(PlannerMoves(), RESIDENCY_ID, names, agent="greedy-lookahead")
    rows += solver_episodes("residency", "sa", names, seed=0, time_limit=1.0)
    for r in rows[len(names):]:
        inst = load(r.instance)
        msa = msa_solution(inst)[0].latency
        assert r.kind == "solver" and r.baseline == "msa" and r.baseline_latency == msa
        assert math.isclose(r.episode_return, msa / r.latency, rel_tol=1e-12)
        if r.instance == entry.name:  # never below the library's proven bound
            assert r.latency >= entry.bound * (1 - 1e-9)
    best = {r.instance: r for r in best_known_episodes(rows, "memplace-lib/1", names)}
    for name in names:
        mine = [r.latency for r in rows if r.instance == name]
        stored = entry.best["objective"] if name == entry.name else math.inf
        assert best[name].latency == pytest.approx(min(mine + [stored]), rel=1e-12)
        assert best[name].episode_return >= max(r.episode_return for r in rows if r.instance == name)
    found = min(r.latency for r in rows if r.instance == entry.name)
    assert best[entry.name].kind in ({"reference (memplace-lib/1)"} if entry.best["objective"] < found
                                     else {f"reference ({r.agent})" for r in rows
                                           if r.instance == entry.name and r.latency == found})
    assert best["resnet50@nnpi"].kind.startswith("reference (") and "memplace-lib" not in \
        best["resnet50@nnpi"].kind  # not in the library: the best of the rows
    page = to_markdown(rows + list(best.values()))
    assert "| sa | solver |" in page and "| best known | reference |" in page
    assert to_csv(rows).splitlines()[0].endswith(",kind")
