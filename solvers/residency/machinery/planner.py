"""What the residency planners share: the games they search, the rollout policy, the incumbent.

The planners (`beam.py`, `mcts.py`) search the mallocGame (`game.py`) with the true
simulator as their model (docs/spec.md section 11): a position is worth the simulated latency of
the game completed from it by a *rollout policy*, the pilot method of Voss, Fink and
Duin (1999). The default policy is `msa`'s own rule played inside the game: each
remaining buffer takes the first legal window in msa's preference order (fastest level
first; within a level a defining window, then the picker's preferred, latest and
earliest prefetch starts) that lowers the simulated latency, else stays home. Trying a
window costs one incremental re-simulation (`Simulation.try_change`), so a rollout costs
about one simulation per legal window, never a full simulation per buffer.

The games are played on fixed homes (`HOMES`): the static `compiler` placement (the
game's default), all-slowest (XLA's default memory, where `msa` starts), or both, one
game after the other. Before any search the planners offer the `msa` solver's own
solution, so a planner's result is never slower than `msa` (it may be `msa`'s, when the
game finds nothing better: the game allows one window per buffer, msa one per use
segment); and every completed game better than the incumbent is offered as it is found
(anytime).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from memplace.model.instance import Instance
from memplace.model.residency import lower_bound
from memplace.model.residency.simulation import Simulation, details
from memplace.solvers import Param, SearchContext
from memplace.solvers.residency.machinery.game import KINDS, STAY, ResidencyGame
from memplace.solvers.residency.machinery.starts import msa_solution, static_homes

HOMES = ("compiler", "slowest", "both")
ROLLOUTS = ("msa", "none")
HOMES_PARAM = Param("both", str, choices=HOMES,
                    doc="homes the game is played on: the static compiler placement, "
                        "all-slowest (msa's default memory), or both games in turn")
# msa's preference within a level: a defining window, then the picker's starts as
# `IntervalPicker.iter_starts` yields them (preferred first)
_KIND_RANK = {kind: rank for rank, kind in enumerate(("defining", "preferred", "late", "earliest"))}


def msa_order(actions: list[int]) -> list[int]:
    """Window actions (no `STAY`) in the order msa would try them: fastest level first,
    then defining, preferred, latest, earliest."""
    def key(action: int) -> tuple[int, int]:
        level, kind = divmod(action - 1, len(KINDS))
        return level, _KIND_RANK[KINDS[kind]]
    return sorted((a for a in actions if a != STAY), key=key)


@dataclass
class Rollout:
    """A game completed by the rollout policy: its moves from where it began, the
    terminal game and its simulated latency, and how many simulations it cost."""

    moves: list[int]
    game: ResidencyGame
    latency: float
    evaluations: int


def msa_rollout(game: ResidencyGame, rng: np.random.Generator | None = None,
                epsilon: float = 0.0, should_stop: Callable[[], bool] = lambda: False) -> Rollout:
    """Complete a copy of `game` with msa's rule (module docstring); with probability
    `epsilon` a buffer takes a uniformly random legal move instead (needs `rng`). Once
    `should_stop()`, every buffer left stays home (a rollout is msa's whole allocation in
    Python: 40 s at 10^5 ops, all of it past a 10 s limit).

    The latency is a full simulation of the completed game, so it is exact whatever the
    incremental simulator's rounding."""
    g = game.copy()
    sim = Simulation(g.instance, g.homes, list(g.windows))
    evaluations = 1
    moves: list[int] = []
    while not g.is_terminal():
        if should_stop():
            g.step(STAY)
            moves.append(STAY)
            continue
        actions = g.legal_actions()
        choice = STAY
        legal = g.legal()
        if epsilon > 0 and rng is not None and len(actions) > 1 and rng.random() < epsilon:
            choice = int(actions[rng.integers(len(actions))])
            if choice != STAY:
                sim.try_change(len(sim.windows), legal[choice])
                sim.accept()
                evaluations += 1
        else:
            for action in msa_order(actions):
                lat = sim.try_change(len(sim.windows), legal[action])
                evaluations += 1
                if lat < sim.latency:
                    sim.accept()
                    choice = action
                    break
                sim.reject()
        g.step(choice)
        moves.append(choice)
    return Rollout(moves, g, g.latency(), evaluations + 1)


def stay_rollout(game: ResidencyGame) -> Rollout:
    """No rollout: the game as it stands (every remaining buffer stays home)."""
    g = game.copy()
    moves = []
    while not g.is_terminal():
        g.step(STAY)
        moves.append(STAY)
    return Rollout(moves, g, g.latency(), 1)


def rollout_policy(name: str, rng: np.random.Generator | None = None, epsilon: float = 0.0,
                   should_stop: Callable[[], bool] = lambda: False
                   ) -> Callable[[ResidencyGame], Rollout]:
    """The rollout of `ROLLOUTS` by name: `msa` (msa's rule, cut short at `should_stop`)
    or `none` (stay home)."""
    if name == "none":
        return stay_rollout
    return lambda game: msa_rollout(game, rng, epsilon, should_stop)


def game_homes(homes: str) -> tuple[str, ...]:
    """The homes of the games of `HOMES` to search, in turn."""
    return ("compiler", "slowest") if homes == "both" else (homes,)


def new_game(instance: Instance, homes: str) -> ResidencyGame:
    """The game over one homes' placement (setting it up books every home: 1.7-1.9 s of
    CPU at 10^5 ops, so a game is set up only when its first search begins)."""
    solver = {"compiler": "compiler", "slowest": "all-slowest"}
    return ResidencyGame(instance, *static_homes(instance, solver[homes]))


class Incumbent:
    """The search's link to the `SearchContext`: offers `msa` first, then every completed
    game that beats the best so far; counts simulations."""

    def __init__(self, ctx: SearchContext, solver: str):
        self.ctx = ctx
        self.solver = solver
        self.offered = 0  # completed games offered (msa's solution not counted)
        ctx.lower_bound = lower_bound(ctx.instance)
        sol, _ = msa_solution(ctx.instance, deadline=ctx.started + (ctx.deadline - ctx.started) / 3)
        ctx.count(1)
        ctx.offer(sol, sol.latency)
        self.msa_latency = sol.latency
        ctx.notes["msa_latency"] = sol.latency

    def count(self, evaluations: int) -> None:
        self.ctx.count(evaluations)

    def consider(self, game: ResidencyGame, latency: float) -> bool:
        """Offer a terminal `game` if it beats the incumbent (`latency` its simulation)."""
        if not latency < self.ctx.best_latency:
            return False
        sol = game.solution()
        sol.solver = {"name": self.solver}
        if self.ctx.offer(sol, sol.latency):
            self.offered += 1
            return True
        return False

    def finish(self, stats: dict) -> None:
        """Notes: the searches' counts, what the kept solution holds (as msa notes it)."""
        best = self.ctx.best
        windows = best.windows
        self.ctx.notes.update(stats, windows=len(windows),
                              prefetches=sum(w.is_prefetch for w in windows),
                              evictions=sum(w.evict is not None for w in windows),
                              waits=details(self.ctx.instance, best).waits, offered=self.offered,
                              from_msa=bool(self.ctx.best_latency == self.msa_latency
                                            and self.offered == 0))


def search_growing(ctx: SearchContext, incumbent: "Incumbent", homes: str, grow: bool,
                   budget: int, search: Callable[[ResidencyGame, int], tuple]) -> None:
    """Run `search(game, budget) -> (best game or None, run notes, exhaustive)` on each game
    of `homes`, offering every best game; while `grow` and time remain and some search was
    not exhaustive, double the budget and search again. The runs go into the notes."""
    rounds: list[tuple[dict, bool]] = []
    played: list[ResidencyGame] = []  # set up as each is first searched, never after the limit
    names = game_homes(homes)
    while not ctx.should_stop():
        for j, name in enumerate(names):
            if ctx.should_stop():
                break
            if j == len(played):
                played.append(new_game(ctx.instance, name))
            best, run, exhaustive = search(played[j], budget)
            run["homes"] = name
            if best is not None:
                run["latency"] = best.latency()
                incumbent.count(1)
                incumbent.consider(best, run["latency"])
            rounds.append((run, exhaustive))
        if not grow or all(exhaustive for _, exhaustive in rounds[-len(played):]):
            break  # growing stops once every game was searched exhaustively
        budget *= 2
    incumbent.finish({"searches": [run for run, _ in rounds]})
