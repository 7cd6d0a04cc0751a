"""`memplace/Placement-v0`: EGRL's one-shot formulation of the static problem.

EGRL (Khadka et al., 2021) maps every tensor of a workload to a memory level in
one action and is rewarded with the speedup over the native compiler's mapping.
Here an episode is one step on one instance:

- observation: the instance as a graph (`memplace.envs.observation`);
- action: `MultiDiscrete([levels] * tensors)` padded to the environment's limits,
  one level per tensor; entries past the instance's tensors are ignored, and a
  level past the instance's levels means its slowest level;
- the placement is made valid by the canonical rectify (docs/spec.md section 6); on
  addressed levels offsets come from the packing library's best compiler
  heuristic, else first-fit (deterministic, no time budget), and tensors that
  cannot be packed move down as section 6 says;
- reward: `latency(compiler) / latency(rectified)`, the speedup over the
  `compiler` default (1.0 = as good as the compiler);
- info: `latency` (seconds), `compiler_latency`, `speedup` (= the reward),
  `rectified` (whether rectification changed the action), `moved` (tensors it
  moved), `solution` (the valid `Placed` placement and offsets), `instance`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from memplace.envs.instance_set import InstanceSet, Limits
from memplace.envs.observation import graph_observation, graph_space
from memplace.model import Instance, Placed, latency, rectify
from memplace.model.packing.packers import budgeted_packer
from memplace.solvers import solve

# Deterministic offsets: the compiler heuristics, then first-fit (no exact search).
PACKER = budgeted_packer(exact_budget_s=0.0)


def compiler_latency(instance: Instance) -> float:
    """Latency of the static `compiler` solution (computed once per instance)."""
    return instance.derived("compiler_latency",
                            lambda inst: solve(inst, "compiler", time_limit=None).latency)


def placement_of(instance: Instance, action: np.ndarray) -> np.ndarray:
    """The instance's placement read from a padded action (levels clipped to the slowest)."""
    action = np.asarray(action, np.int64)
    return np.minimum(action[:instance.n_tensors], instance.n_levels - 1)


def padded_action(placement: np.ndarray, tensors: int) -> np.ndarray:
    """The action of an environment padded to `tensors` that asks for `placement`
    (padded entries are 0, and ignored)."""
    action = np.zeros(tensors, np.int64)
    action[:len(placement)] = placement
    return action


class PlacementEnv(gym.Env):
    """One-shot static placement (see the module docstring).

    Parameters
    ----------
    instances
        Names or files of the instances to sample from, or a library split such as
        "memplace-lib/1:train" (default: the committed
        instances but the synthetic scaling studies).
    limits
        Padded sizes; default: the largest of `instances`.
    """

    metadata = {"render_modes": []}

    def __init__(self, instances: Iterable[str | Path] | None = None, limits: Limits | None = None):
        self.instance_set = InstanceSet(instances)
        self.limits = limits or self.instance_set.limits
        self.observation_space = spaces.Dict(graph_space(self.limits))
        self.action_space = spaces.MultiDiscrete(np.full(self.limits.tensors, self.limits.levels))
        self.instance: Instance | None = None

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Start an episode on `options["instance"]` (a name or a file), else on an
        instance drawn from the set with the environment's seeded generator."""
        super().reset(seed=seed)
        requested = (options or {}).get("instance")
        self.instance = self.instance_set.pick(self.np_random, requested)
        info = {"instance": self.instance.name, "compiler_latency": compiler_latency(self.instance)}
        return graph_observation(self.instance, self.limits), info

    def step(self, action) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        if self.instance is None:
            raise RuntimeError("call reset() before step()")
        inst = self.instance
        asked = placement_of(inst, action)
        fixed = rectify(inst, asked, packer=PACKER)
        lat = latency(inst, fixed.placement)
        base = compiler_latency(inst)
        moved = int((fixed.placement != asked).sum())
        speedup = base / lat
        info = {"instance": inst.name, "latency": lat, "compiler_latency": base,
                "speedup": speedup, "rectified": moved > 0, "moved": moved,
                "solution": Placed(fixed.placement, fixed.offsets)}
        return graph_observation(inst, self.limits), float(speedup), True, False, info
