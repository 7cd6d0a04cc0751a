"""`mcts`: Monte-Carlo tree search over the mallocGame with msa-rule rollouts.

UCT (Kocsis and Szepesvári, 2006) played move by move, as mallocMuZero acts: from the
current position it runs `simulations` iterations (select by UCB1, expand one untried
move, complete the game with the rollout policy, back the simulated latency up the
path), then commits to the child whose subtree holds the fastest completed game (ties:
more visits, then the lower action) and keeps that subtree for the next move. A buffer
with one legal move is committed without search.

Values: a node's mean latency, scaled into [0, 1] by the fastest and slowest latencies
seen so far (1 = fastest), as single-player MCTS and MuZero normalise unbounded
returns; `exploration` is UCB1's constant on that scale. Rollouts are msa's rule
(`planner.msa_rollout`) with each buffer taking a uniformly random legal move with
probability `epsilon` (drawn from the run's seeded generator: same seed, same result,
unless the time limit cuts the search); the first rollout, from the start, is msa's rule
alone. A child reached by the move its parent's rollout
made first reuses that rollout, so the first child expanded costs no simulation.

Committing to the subtree of the fastest game keeps that game reachable, so the game
played is never slower than the first rollout (the pilot property); every completed game
better than the incumbent (which begins as `msa`'s solution) is offered as found.
"""
from __future__ import annotations

import math

import numpy as np

from memplace.solvers import Param, SearchContext, register
from memplace.solvers.residency.machinery.game import ResidencyGame
from memplace.solvers.residency.machinery.planner import (HOMES_PARAM, Incumbent, Rollout,
                                                          msa_order, msa_rollout, search_growing)

PARAMS = {
    "simulations": Param(16, int, 1, 100_000, doc="tree-search iterations before each move"),
    "exploration": Param(1.0, float, 0.0, 100.0,
                         doc="UCB1 constant on values scaled to [0, 1] by the latencies seen"),
    "epsilon": Param(0.1, float, 0.0, 1.0,
                     doc="chance that a rollout's buffer takes a random legal move "
                         "instead of msa's rule"),
    "homes": HOMES_PARAM,
    "grow": Param(True, bool, doc="after a complete game, play again with twice the "
                                  "simulations while time remains"),
}


class _Node:
    """A position of the tree: its game, statistics of the games completed below it, and
    the rollout that first scored it (to be reused by the child it moves into)."""

    __slots__ = ("game", "action", "children", "untried", "visits", "total", "best", "rollout",
                 "complete")

    def __init__(self, game: ResidencyGame, action: int, rollout: Rollout):
        self.game = game
        self.action = action
        self.children: dict[int, _Node] = {}
        self.rollout = rollout
        legal = game.legal_actions()
        first = rollout.moves[:1]  # the move already scored first, then msa's order
        self.untried = first + [a for a in [0] + msa_order(legal) if a not in first]
        self.visits = 0
        self.total = 0.0
        self.best = math.inf
        self.complete = game.is_terminal()  # every game below it has been played

    def record(self, latency: float) -> None:
        self.visits += 1
        self.total += latency
        self.best = min(self.best, latency)


class _Tree:
    """One game's search: expansion, rollouts and the latency scale."""

    def __init__(self, incumbent: Incumbent, rng: np.random.Generator, exploration: float,
                 epsilon: float):
        self.incumbent = incumbent
        self.rng = rng
        self.c = exploration
        self.epsilon = epsilon
        self.lo, self.hi = math.inf, -math.inf
        self.rollouts = 0
        self.reused = 0

    def complete(self, game: ResidencyGame, epsilon: float | None = None) -> Rollout:
        done = msa_rollout(game, self.rng, self.epsilon if epsilon is None else epsilon,
                           self.incumbent.ctx.should_stop)
        self.rollouts += 1
        self.incumbent.count(done.evaluations)
        self.incumbent.consider(done.game, done.latency)
        self.lo, self.hi = min(self.lo, done.latency), max(self.hi, done.latency)
        return done

    def child(self, node: _Node, action: int) -> _Node:
        game = node.game.copy()
        game.step(action)
        if node.rollout.moves[:1] == [action]:
            r = node.rollout
            done = Rollout(r.moves[1:], r.game, r.latency, 0)
            self.reused += 1
        else:
            done = self.complete(game)
        node.children[action] = _Node(game, action, done)
        return node.children[action]

    def value(self, node: _Node, parent_visits: int) -> float:
        spread = self.hi - self.lo
        q = 0.5 if not spread > 0 else (self.hi - node.total / node.visits) / spread
        return q + self.c * math.sqrt(math.log(parent_visits) / node.visits)

    def iterate(self, root: _Node) -> None:
        """Select, expand one move, back the rollout's latency up the path."""
        path = [root]
        node = root
        while not node.game.is_terminal() and not node.untried and node.children:
            node = max(node.children.values(), key=lambda ch: (self.value(ch, node.visits),
                                                                -ch.action))
            path.append(node)
        if node.untried and not node.game.is_terminal():
            node = self.child(node, node.untried.pop(0))
            path.append(node)
        # else terminal (or nothing left to expand): its own game, already simulated
        for n in reversed(path):
            n.record(node.rollout.latency)
            n.complete = n.game.is_terminal() or (
                not n.untried and all(ch.complete for ch in n.children.values()))

    def commit(self, root: _Node) -> _Node:
        """The child whose subtree holds the fastest game (more visits, lower action on ties)."""
        if not root.children:
            self.child(root, root.untried.pop(0))
        return min(root.children.values(), key=lambda ch: (ch.best, -ch.visits, ch.action))


def mcts_search(game: ResidencyGame, simulations: int, tree: _Tree, ctx: SearchContext
                ) -> tuple[ResidencyGame | None, bool]:
    """Play `game` from its reset state move by move; the terminal game (None if stopped)
    and whether the first move's search was exhaustive (every game played)."""
    game.reset()
    root = _Node(game, -1, tree.complete(game, epsilon=0.0))  # msa's rule alone: the pilot
    root.record(root.rollout.latency)
    exhaustive = None
    while not root.game.is_terminal():
        if len(root.untried) + len(root.children) > 1:
            for _ in range(simulations):
                if ctx.should_stop():
                    return None, False
                if root.complete:
                    break
                tree.iterate(root)
            if exhaustive is None:
                exhaustive = root.complete
        elif ctx.should_stop():
            return None, False
        root = tree.commit(root)
    return root.game, exhaustive is not False


@register("mcts", "Monte-Carlo tree search (UCT) over the mallocGame, move by move, with "
          "msa-rule rollouts on the simulator; starts from msa's solution",
          params=PARAMS, deterministic=False, problem="residency")
def solve_mcts(ctx: SearchContext, simulations: int, exploration: float, epsilon: float,
               homes: str, grow: bool) -> None:
    def search(game: ResidencyGame, simulations: int) -> tuple:
        tree = _Tree(incumbent, ctx.rng, exploration, epsilon)
        best, exhaustive = mcts_search(game, simulations, tree, ctx)
        return best, {"simulations": simulations, "rollouts": tree.rollouts,
                      "reused": tree.reused, "exhaustive": exhaustive}, exhaustive

    incumbent = Incumbent(ctx, "mcts")
    search_growing(ctx, incumbent, homes, grow, simulations, search)
