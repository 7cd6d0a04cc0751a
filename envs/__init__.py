"""Gymnasium environments on memplace's instances, cost model and validator.

Importing this package registers them (the optional extra `memplace[gym]`):

- `memplace/Placement-v0` (`PlacementEnv`): EGRL's one-shot static placement.
- `memplace/Residency-v0` (`ResidencyEnv`): the mallocGame on the residency problem.

`evaluate_policy(policy, env_id, instances)` scores any policy function the way
the committed leaderboard (`memplace envs baselines`) scores the baselines.
This package sits above the solvers (it replays their solutions); nothing in
model/ or solvers/ imports it.
"""
from __future__ import annotations

from gymnasium.envs.registration import register, registry

from memplace.envs.instance_set import InstanceSet, Limits, default_instances
from memplace.envs.leaderboard import (ENV_IDS, LEADERBOARD_INSTANCES, PLACEMENT_ID, RESIDENCY_ID,
                                       Episode, evaluate_policy, leaderboard, to_csv, to_markdown)
from memplace.envs.placement import PlacementEnv
from memplace.envs.residency import ResidencyEnv

__all__ = ["PlacementEnv", "ResidencyEnv", "InstanceSet", "Limits", "default_instances",
           "ENV_IDS", "PLACEMENT_ID", "RESIDENCY_ID", "LEADERBOARD_INSTANCES", "Episode",
           "evaluate_policy", "leaderboard", "to_csv", "to_markdown", "register_envs"]


def register_envs() -> None:
    """Register both environments with gymnasium (once; also the `gymnasium.envs`
    entry point that gymnasium versions before 1.0 call)."""
    for env_id, entry in ((PLACEMENT_ID, "memplace.envs.placement:PlacementEnv"),
                          (RESIDENCY_ID, "memplace.envs.residency:ResidencyEnv")):
        if env_id not in registry:
            register(id=env_id, entry_point=entry)


register_envs()
