"""Evaluate a policy on the environments, and the baselines' leaderboard.

A *policy* is any function `policy(observation, info) -> action`: it sees what
an agent sees after `reset` and after each `step`. `evaluate_policy` plays one
episode per instance, always on the same instances with the same seeds, so its
rows compare with the committed leaderboard (`results/leaderboard/`), the way
CompilerGym's leaderboards evaluate any policy on a fixed benchmark set.

The baselines (`baselines`): a random agent, the greedy defaults and memplace's
best classical method, each replayed through the environment as actions, so
their figures are the environment's own (reward, latency after rectification).

Beside the agents, the bar to beat (`solver_episodes`, `best_known_episodes`):
memplace's strongest residency solvers (`sa`, `hybrid`), which move homes and
choose windows the game does not offer, so they cannot be replayed as actions,
are scored the same way (the environment's baseline latency over the latency of
their solution, validated by the model) on the same instances; and the best
known latency of each instance, the lowest of every row and of the library's
best known solution for it (re-validated) where the library has the instance.
"""
from __future__ import annotations

import csv
import io
import math
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterable, Sequence

import gymnasium as gym
import numpy as np

from memplace.envs.instance_set import load_instance
from memplace.envs.placement import padded_action
from memplace.envs.residency import game_of, residency_baseline
from memplace.solvers import solve
from memplace.solvers.residency.machinery.game import STAY, greedy_lookahead

PLACEMENT_ID = "memplace/Placement-v0"
RESIDENCY_ID = "memplace/Residency-v0"
ENV_IDS = {"placement": PLACEMENT_ID, "residency": RESIDENCY_ID}
# A modest fixed set: the EGRL trio's smaller two and BERT on the NNP-I, two CNNs on the
# edge NPU (addressed SRAM) and ResNet-50 on the TPU (three levels, large scratchpads).
LEADERBOARD_INSTANCES = ("resnet50@nnpi", "resnet101@nnpi", "bert-base@nnpi",
                         "mobilenetv2@edge-npu", "efficientnet-b0@edge-npu", "resnet50@tpu")

# memplace's best solvers of each environment's problem that cannot be played as actions,
# scored beside the agents (Placement-v0's milp is replayed as an action, so it is an agent).
SOLVERS = {"residency": ("sa", "hybrid")}
BEST_KNOWN = "best known"
PROBLEMS = {"placement": "static", "residency": "residency"}

Policy = Callable[[dict[str, np.ndarray], dict[str, Any]], Any]


@dataclass
class Episode:
    """One episode of one policy on one instance."""

    env: str
    agent: str
    instance: str
    episode_return: float
    latency: float  # seconds, of the solution the episode ended with
    baseline: str  # what the return's speedup is measured against
    baseline_latency: float
    steps: int
    changed: int  # Placement: tensors rectification moved; Residency: illegal actions
    wall_s: float
    kind: str = "agent"  # "agent" (played as actions), "solver" or "reference" (best known)


def evaluate_policy(policy: Policy, env_id: str = PLACEMENT_ID,
                    instances: Iterable[str] | None = None, seed: int = 0, agent: str = "policy",
                    **env_kwargs: Any) -> list[Episode]:
    """Play one episode of `policy` per instance (default: the leaderboard's set) and
    return what each scored. `env_kwargs` go to `gymnasium.make`."""
    names = list(instances or LEADERBOARD_INSTANCES)
    env = gym.make(env_id, instances=names, **env_kwargs)
    episodes = []
    try:
        for name in names:
            began = time.perf_counter()
            obs, info = env.reset(seed=seed, options={"instance": name})
            total, steps, changed, done = 0.0, 0, 0, False
            while not done:
                obs, reward, terminated, truncated, info = env.step(policy(obs, info))
                total += reward
                steps += 1
                changed += int(info.get("moved", info.get("illegal", 0)))
                done = terminated or truncated
            baseline = info.get("baseline", "compiler")
            base = info.get("baseline_latency", info.get("compiler_latency"))
            episodes.append(Episode(env_id, agent, info["instance"], total, info["latency"],
                                    baseline, base, steps, changed, time.perf_counter() - began))
    finally:
        env.close()
    return episodes


# ---------------------------------------------------------------------- agents
class RandomPlacement:
    """A level drawn uniformly among the instance's levels for every tensor."""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)

    def __call__(self, obs: dict[str, np.ndarray], info: dict[str, Any]) -> np.ndarray:
        levels = int(obs["level_mask"].sum())
        return self.rng.integers(0, levels, size=obs["tensor_mask"].shape[0])


class SolverPlacement:
    """Replays the placement a static solver finds (solved once per instance)."""

    def __init__(self, solver: str, time_limit: float | None = None, seed: int = 0):
        self.solver, self.time_limit, self.seed = solver, time_limit, seed
        self.actions: dict[str, np.ndarray] = {}
        self.latencies: dict[str, float] = {}

    def __call__(self, obs: dict[str, np.ndarray], info: dict[str, Any]) -> np.ndarray:
        name = info["instance"]
        if name not in self.actions:
            result = solve(load_instance(name), self.solver, time_limit=self.time_limit, seed=self.seed)
            self.actions[name] = padded_action(result.placement, obs["tensor_mask"].shape[0])
            self.latencies[name] = result.latency
        return self.actions[name]


class RandomLegal:
    """An action drawn uniformly among the legal ones (reads `info["action_mask"]`)."""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)

    def __call__(self, obs: dict[str, np.ndarray], info: dict[str, Any]) -> int:
        return int(self.rng.choice(np.flatnonzero(info["action_mask"])))


def stay_home(obs: dict[str, np.ndarray], info: dict[str, Any]) -> int:
    """Never a window: the game's homes as they are (the static compiler placement)."""
    return STAY


class PlannerMoves:
    """Replays the moves a planner found on the environment's own game."""

    def __init__(self, planner: Callable = greedy_lookahead, homes: str = "compiler"):
        self.planner, self.homes = planner, homes
        self.moves: dict[str, list[int]] = {}
        self.latencies: dict[str, float] = {}

    def __call__(self, obs: dict[str, np.ndarray], info: dict[str, Any]) -> int:
        name = info["instance"]
        if name not in self.moves:
            game = game_of(load_instance(name), obs["level_mask"].shape[0], self.homes).copy()
            self.moves[name] = self.planner(game)
            self.latencies[name] = game.latency()
        moves = self.moves[name]
        return moves[info["step"]] if info["step"] < len(moves) else STAY


def baselines(env: str, seed: int = 0, time_limit: float = 10.0) -> dict[str, Policy]:
    """The leaderboard's agents of one environment ("placement" or "residency")."""
    if env == "placement":
        agents: dict[str, Policy] = {"random": RandomPlacement(seed)}
        for name in ("compiler", "greedy-size", "topo-first-fit", "benefit-density"):
            agents[name] = SolverPlacement(name)
        agents["milp"] = SolverPlacement("milp", time_limit=time_limit, seed=seed)
        return agents
    if env == "residency":
        return {"random": RandomLegal(seed), "stay-home": stay_home,
                "greedy-lookahead": PlannerMoves()}
    raise ValueError(f"unknown environment {env!r}; known: {sorted(ENV_IDS)}")


def solver_episodes(env: str, solver: str, instances: Iterable[str] | None = None, seed: int = 0,
                    time_limit: float = 10.0) -> list[Episode]:
    """A solver of the environment's problem scored as an episode would be: the baseline's
    latency over the latency of its solution, which the model validates (no steps)."""
    from memplace.model.core.problem import problem
    from memplace.solvers import load_kernels
    prob = problem(PROBLEMS[env])
    load_kernels([solver], prob.name)  # compiled before the clock starts, as the harness does
    rows = []
    for name in list(instances or LEADERBOARD_INSTANCES):
        inst = load_instance(name)
        began = time.perf_counter()
        result = solve(inst, solver, time_limit=time_limit, seed=seed, problem=prob.name)
        errors = prob.validate(inst, result.solution)
        if errors:
            raise ValueError(f"{solver} on {inst.name}: invalid solution ({errors[0]})")
        latency = float(prob.evaluate(inst, result.solution))
        base, base_latency = _baseline(env, inst)
        rows.append(Episode(ENV_IDS[env], solver, inst.name, base_latency / latency, latency, base,
                            base_latency, 0, 0, time.perf_counter() - began, "solver"))
    return rows


def _baseline(env: str, inst) -> tuple[str, float]:
    if env == "residency":
        return residency_baseline(inst)
    return "compiler", float(solve(inst, "compiler", time_limit=None).latency)


def library_best(env: str, inst: Any, lib: Any) -> float | None:
    """The library's best known latency for the instance and the environment's problem,
    re-validated from its solution file; None when the library does not hold that instance
    (same name and fingerprint)."""
    from memplace.model.solution_files import validate_solution_file
    for e in lib.split("all", PROBLEMS[env]):
        if e.name == inst.name and e.sha256 == inst.fingerprint() and e.best.get("file"):
            report = validate_solution_file(inst, lib.path(e.best["file"]))
            if report.errors:
                raise ValueError(f"{lib.name}: the best known of {e.id} is invalid "
                                 f"({report.errors[0]})")
            return float(report.latency)
    return None


def best_known_episodes(rows: Sequence[Episode], library: str | None = None,
                        instances: Iterable[str] | None = None) -> list[Episode]:
    """Per environment and instance: the lowest latency of the rows and of the library's
    best known (`library`, default the newest version; see `library_best`), as a
    reference row. `instances`: the names or files the rows were played on (default: the
    leaderboard's set)."""
    from memplace.instances.library import read_library
    lib = read_library(library)
    loaded = {i.name: i for i in map(load_instance, list(instances or LEADERBOARD_INSTANCES))}
    out = []
    for env_id in dict.fromkeys(r.env for r in rows):
        env = next(k for k, v in ENV_IDS.items() if v == env_id)
        for name in dict.fromkeys(r.instance for r in rows if r.env == env_id):
            mine = [r for r in rows if r.env == env_id and r.instance == name]
            best = min(reversed(mine), key=lambda r: r.latency)  # a tie: the last row (a solver)
            latency, source = best.latency, best.agent
            stored = library_best(env, loaded[name], lib)
            if stored is not None and stored < latency:
                latency, source = stored, lib.name
            out.append(Episode(env_id, BEST_KNOWN, name, best.baseline_latency / latency, latency,
                               best.baseline, best.baseline_latency, 0, 0, 0.0,
                               f"reference ({source})"))
    return out


def leaderboard(envs: Sequence[str] = ("placement", "residency"),
                instances: Sequence[str] | None = None, seed: int = 0,
                time_limit: float = 10.0, solvers: bool = True,
                library: str | None = None) -> list[Episode]:
    """Every baseline of every environment on every instance; with `solvers`, memplace's
    best solvers (`SOLVERS`) and the best known (with the library's, `library`: default
    the newest version) beside them."""
    rows = []
    for env in envs:
        mine = []
        for agent, policy in baselines(env, seed, time_limit).items():
            mine += evaluate_policy(policy, ENV_IDS[env], instances, seed, agent)
        if solvers:
            for solver in SOLVERS.get(env, ()):
                mine += solver_episodes(env, solver, instances, seed, time_limit)
            mine += best_known_episodes(mine, library, instances)
        rows += mine
    return rows


# ---------------------------------------------------------------------- tables
def to_csv(rows: Sequence[Episode]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, list(Episode.__dataclass_fields__), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: (repr(v) if isinstance(v, float) else v) for k, v in asdict(row).items()})
    return out.getvalue()


def to_markdown(rows: Sequence[Episode]) -> str:
    """Per environment: a summary (geometric mean of the return per agent) and the
    return and latency of every agent on every instance."""
    parts = []
    for env in dict.fromkeys(r.env for r in rows):
        mine = [r for r in rows if r.env == env]
        agents = list(dict.fromkeys(r.agent for r in mine))
        names = list(dict.fromkeys(r.instance for r in mine))
        base = ", ".join(sorted({r.baseline for r in mine}))
        parts.append(f"## {env}\n\nEpisode return = speedup over `{base}` (higher is better; "
                     f"`{base}` itself scores 1.0); latency in microseconds.\n")
        kinds = {r.agent: r.kind.split(" ")[0] for r in mine}
        if set(kinds.values()) - {"agent"}:
            parts.append("Kind: *agent*, played through the environment as actions; *solver*, "
                         "one of memplace's solvers that the action space cannot express, its "
                         "validated solution scored the same way; *reference*, the best known "
                         "latency of each instance (the lowest of every row and of the library's "
                         "best known where the library holds the instance): the bar to beat.\n")
        parts.append("| agent | kind | geomean return | instances |\n|---|---|---:|---:|")
        returns = {a: [r.episode_return for r in mine if r.agent == a] for a in agents}
        for agent in sorted(agents, key=lambda a: -_geomean(returns[a])):
            parts.append(f"| {agent} | {kinds[agent]} | {_geomean(returns[agent]):.4f} | "
                         f"{len(returns[agent])} |")
        parts.append("\n| instance | " + " | ".join(agents) + " |")
        parts.append("|---|" + "---:|" * len(agents))
        cell = {(r.instance, r.agent): r for r in mine}
        for name in names:
            row = [_cell(cell[name, a]) if (name, a) in cell else "" for a in agents]
            parts.append(f"| {name} | " + " | ".join(row) + " |")
        parts.append("\nCells: return (latency µs" + ("; for the best known, who found it"
                                                      if BEST_KNOWN in agents else "") + ").\n")
    return "\n".join(parts)


def _cell(r: Episode) -> str:
    found = r.kind.partition("(")[2].rstrip(")")
    return f"{r.episode_return:.4f} ({r.latency * 1e6:.2f}{', ' + found if found else ''})"


def _geomean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else math.nan
