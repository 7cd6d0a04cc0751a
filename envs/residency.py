"""`memplace/Residency-v0`: the mallocGame on memplace's residency problem.

An episode plays `memplace.solvers.residency.machinery.game.ResidencyGame` on one instance:
one step per buffer (tensor not homed in the fastest level that would save
time there), in `msa`'s order (XLA's memory boundedness); a game with no such
buffer is one step with only "stay home" legal; the action is `Discrete(1 + (levels - 1) * 4)`:
0 = stay home, `1 + level * 4 + kind` = a window of kind (defining, late,
preferred, earliest prefetch) in that faster level (see the game's docstring).

- `action_mask` (int8, 1 = legal) is in the observation and in `info`, and
  `action_masks()` returns it as booleans (the method sb3-contrib's MaskablePPO
  calls). An illegal action is played as "stay home" and reported with
  `info["illegal"] = True` (`illegal="raise"` makes it raise `IllegalMove`
  instead): `gymnasium.utils.env_checker.check_env` steps unmasked samples.
- Baseline: `msa`, the residency problem's XLA-style default (never slower than
  the static `compiler` placement, which is the game's default homes, so "stay
  home" everywhere scores the compiler's speedup over `msa`, at most 1.0).
  `info["baseline"]` names it, `info["baseline_latency"]` gives its latency.
- Reward, shaped so the episode's return is the speedup over the baseline,
  `baseline_latency / final_latency`: with `reward="dense"` (default) each step
  earns the change in `phi = baseline_latency / latency(windows so far)` (every
  prefix of a game is a valid solution: the buffers not yet decided stay home),
  and the last step also earns `phi` of the empty game (the homes' speedup
  over the baseline), so the sum telescopes to the final speedup.
  `reward="sparse"` pays the final speedup on the last step only (no simulation
  before the end).
- info on the last step: `latency`, `speedup`, `solution` (the valid
  `ResidencySolution`), `instance`; every step: `step` (buffer number),
  `tensor`, `action_mask`, `illegal`.

Observation: the graph of `memplace.envs.observation` plus
`homes[t]` (home level, -1 padding), `window[t]` (level, start, last of the
window chosen for t, -1 when none), `buffer` (the tensor to decide, -1 at the
end), `candidates[a]` (level, start, first, last of action a's window, -1 where
illegal and for stay home), `load[l, k]` (bytes of homes and windows in level l
at op k over its capacity; an unbounded level over the peak live bytes) and
`action_mask`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from memplace.envs.instance_set import InstanceSet, Limits
from memplace.envs.observation import FLOAT_MAX, graph_observation, graph_space
from memplace.model import Instance, rectify
from memplace.solvers.residency.machinery.game import STAY, IllegalMove, ResidencyGame, n_actions
from memplace.solvers.residency.machinery.starts import msa_solution

REWARDS = ("dense", "sparse")
ILLEGAL = ("stay", "raise")


def residency_baseline(instance: Instance) -> tuple[str, float]:
    """("msa", its simulated latency): the residency default the return is measured
    against (computed once per instance)."""
    return instance.derived("residency_baseline",
                            lambda inst: ("msa", float(msa_solution(inst)[0].latency)))


def game_of(instance: Instance, n_levels: int, homes: str = "compiler") -> ResidencyGame:
    """The game an environment with actions for `n_levels` levels plays on `instance`
    (built once and kept with the instance; play a `.copy()`)."""
    def build(inst: Instance) -> ResidencyGame:
        if homes == "slowest":
            offsets = rectify(inst, inst.slowest_placement()).offsets if inst.has_addressed_levels else None
            return ResidencyGame(inst, inst.slowest_placement(), offsets, n_levels=n_levels)
        return ResidencyGame(inst, n_levels=n_levels)
    return instance.derived(f"gym-game-{homes}-{n_levels}", build)


class ResidencyEnv(gym.Env):
    """The mallocGame as a Gymnasium environment (see the module docstring).

    Parameters
    ----------
    instances
        Names or files to sample from (default: the committed instances but the
        synthetic scaling studies).
    limits
        Padded sizes; default: the largest of `instances`.
    reward
        "dense" (shaped per step) or "sparse" (final speedup only).
    illegal
        "stay" (play an illegal action as stay home) or "raise".
    homes
        "compiler" (the static compiler placement, default) or "slowest" (every
        tensor homed in the slowest level: a harder game with more to decide).
    """

    metadata = {"render_modes": []}

    def __init__(self, instances: Iterable[str | Path] | None = None, limits: Limits | None = None,
                 reward: str = "dense", illegal: str = "stay", homes: str = "compiler"):
        from memplace.model.core.errors import ParameterError
        for name, value, known in (("reward", reward, REWARDS), ("illegal", illegal, ILLEGAL),
                                   ("homes", homes, ("compiler", "slowest"))):
            if value not in known:
                raise ParameterError(f"{name} must be one of {known}, got {value!r}")
        self.instance_set = InstanceSet(instances)
        self.limits = limits or self.instance_set.limits
        self.reward_mode, self.illegal, self.homes = reward, illegal, homes
        m = self.limits
        self.n_actions = n_actions(m.levels)
        self.action_space = spaces.Discrete(self.n_actions)
        self.observation_space = spaces.Dict({
            **graph_space(m),
            "homes": spaces.Box(-1, m.levels - 1, (m.tensors,), np.int64),
            "window": spaces.Box(-1, max(m.ops, m.levels) - 1, (m.tensors, 3), np.int64),
            "buffer": spaces.Box(-1, m.tensors - 1, (1,), np.int64),
            "candidates": spaces.Box(-1, max(m.ops, m.levels) - 1, (self.n_actions, 4), np.int64),
            "load": spaces.Box(0.0, FLOAT_MAX, (m.levels, m.ops), np.float32),
            "action_mask": spaces.Box(0, 1, (self.n_actions,), np.int8),
        })
        self.instance: Instance | None = None
        self.game: ResidencyGame | None = None

    # ------------------------------------------------------------------ episode
    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Start a game on `options["instance"]` (a name or a file), else on an instance
        drawn from the set with the environment's seeded generator."""
        super().reset(seed=seed)
        self.instance = inst = self.instance_set.pick(self.np_random, (options or {}).get("instance"))
        self.game = game_of(inst, self.limits.levels, self.homes).copy()
        self.game.reset()
        self.baseline, self.baseline_latency = residency_baseline(inst)
        self.phi = self.baseline_latency / self.game.latency() if self.reward_mode == "dense" else 0.0
        self.paid = 0.0
        # A game with no buffer to decide still takes one step (stay home) to end.
        self.passing = self.game.is_terminal()
        info = self._info()
        info.update(baseline=self.baseline, baseline_latency=self.baseline_latency)
        return self._observation(), info

    def action_masks(self) -> np.ndarray:
        """Boolean mask of the legal actions now (MaskablePPO's convention)."""
        if self.passing or self.game.is_terminal():
            mask = np.zeros(self.n_actions, bool)
            mask[STAY] = True
            return mask
        return self.game.action_mask()

    def step(self, action) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        if self.game is None:
            raise RuntimeError("call reset() before step()")
        action = int(action)
        illegal = not self.action_masks()[action]
        if illegal and self.illegal == "raise":
            raise IllegalMove(f"action {action} is masked for {self.instance.tensor_label(self.game.tensor)}")
        if not self.passing:
            self.game.step(STAY if illegal else action)
        self.passing = False
        done = self.game.is_terminal()
        info = self._info()
        info["illegal"] = illegal
        if done:
            solution = self.game.solution()
            speedup = self.baseline_latency / solution.latency
            reward = speedup - self.paid
            info.update(latency=solution.latency, speedup=speedup, solution=solution,
                        baseline=self.baseline, baseline_latency=self.baseline_latency)
        elif self.reward_mode == "dense":
            lat = self.game.latency()
            phi = self.baseline_latency / lat
            reward = phi - self.phi
            self.phi = phi
            info["latency"] = lat
        else:
            reward = 0.0
        self.paid += reward
        return self._observation(), float(reward), done, False, info

    # ------------------------------------------------------------------ views
    def _info(self) -> dict[str, Any]:
        return {"instance": self.instance.name, "step": self.game.position,
                "tensor": self.game.tensor, "action_mask": self.action_masks().astype(np.int8)}

    def _observation(self) -> dict[str, np.ndarray]:
        inst, game, m = self.instance, self.game, self.limits
        obs = graph_observation(inst, m)
        homes = np.full(m.tensors, -1, np.int64)
        homes[:inst.n_tensors] = game.homes
        window = np.full((m.tensors, 3), -1, np.int64)
        for win in game.windows:
            window[win.tensor] = (win.level, win.start, win.last)
        candidates = np.full((self.n_actions, 4), -1, np.int64)
        if not self.passing:
            for action, win in game.legal().items():
                candidates[action] = (win.level, win.start, win.first, win.last)
        load = np.zeros((m.levels, m.ops), np.float32)
        scale = np.where(inst.capacity == np.iinfo(np.int64).max, inst.peak_live_bytes(),
                         inst.capacity).astype(np.float64)
        load[:inst.n_levels, :inst.n_ops] = game.load / scale[:, None]
        obs.update(homes=homes, window=window, buffer=np.array([game.tensor], np.int64),
                   candidates=candidates, load=load,
                   action_mask=self.action_masks().astype(np.int8))
        return obs
