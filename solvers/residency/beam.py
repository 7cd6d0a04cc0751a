"""`beam`: beam search over the mallocGame, each position scored by a rollout (pilot method).

Every position of the beam has decided the same number of buffers (the game presents
them in one fixed order), so the search advances one buffer at a time: each position of
the beam is expanded by each legal move, each child is scored by the simulated latency
of the game completed from it by the rollout policy (`planner.msa_rollout`, or with
`rollout="none"` the latency of the game so far, every later buffer home), and the
`width` best children (ties to the lexicographically smaller move sequence) are kept.
With `width=1` and `rollout="none"` this is exactly the game's one-step look-ahead,
`game.greedy_lookahead`.

The pilot property: a child reached by the move the parent's rollout made first has the
parent's rollout as its own (the policy depends on the position only), so it is scored
without simulating again, and the best score of the beam never rises from one buffer to
the next: the final game is never slower than the rollout from the start (and the
incumbent, which begins as `msa`'s solution, never slower than `msa`).
"""
from __future__ import annotations

from dataclasses import dataclass

from memplace.solvers import Param, SearchContext, register
from memplace.solvers.residency.machinery.game import ResidencyGame
from memplace.solvers.residency.machinery.planner import (HOMES_PARAM, ROLLOUTS, Incumbent,
                                                          Rollout, rollout_policy, search_growing)

PARAMS = {
    "width": Param(4, int, 1, 1024, doc="positions kept after each buffer"),
    "rollout": Param("msa", str, choices=ROLLOUTS,
                     doc="how a position is completed to be scored: msa's rule, or none "
                         "(every later buffer stays home)"),
    "homes": HOMES_PARAM,
    "grow": Param(True, bool, doc="after a complete search, search again with twice the width "
                                  "while time remains"),
}


@dataclass
class _Node:
    """A beam position: the game, the moves that led to it, its score and the rollout
    that scored it (its moves continue this position's)."""

    game: ResidencyGame
    moves: tuple[int, ...]
    score: float
    rollout: Rollout


def beam_search(game: ResidencyGame, width: int, rollout: str, incumbent: Incumbent,
                ctx: SearchContext) -> tuple[ResidencyGame | None, dict]:
    """Search `game` from its reset state; returns the best terminal game reached (None
    when stopped before the end) and counts for the notes."""
    complete = rollout_policy(rollout, should_stop=ctx.should_stop)
    game.reset()
    first = complete(game)
    incumbent.count(first.evaluations)
    incumbent.consider(first.game, first.latency)
    beam = [_Node(game, (), first.latency, first)]
    stats = {"rollouts": 1, "reused": 0, "depth": 0, "pruned": False}
    while not beam[0].game.is_terminal():
        children: list[_Node] = []
        for node in beam:
            for action in node.game.legal_actions():
                if ctx.should_stop():
                    return None, stats
                child = node.game.copy()
                child.step(action)
                if rollout != "none" and node.rollout.moves[0] == action:
                    done = Rollout(node.rollout.moves[1:], node.rollout.game,
                                   node.rollout.latency, 0)
                    stats["reused"] += 1
                else:
                    done = complete(child)
                    stats["rollouts"] += 1
                    incumbent.count(done.evaluations)
                    incumbent.consider(done.game, done.latency)
                children.append(_Node(child, node.moves + (action,), done.latency, done))
        children.sort(key=lambda n: (n.score, n.moves))
        stats["pruned"] |= len(children) > width
        beam = children[:width]
        stats["depth"] += 1
    return beam[0].game, stats


@register("beam", "beam search over the mallocGame, every position scored by the simulated "
          "latency of its msa-rule rollout (pilot method); starts from msa's solution",
          params=PARAMS, deterministic=True, problem="residency")
def solve_beam(ctx: SearchContext, width: int, rollout: str, homes: str, grow: bool) -> None:
    def search(game: ResidencyGame, width: int) -> tuple:
        best, run = beam_search(game, width, rollout, incumbent, ctx)
        run["width"] = width
        return best, run, not run.get("pruned", True)  # a search that kept every child

    incumbent = Incumbent(ctx, "beam")
    search_growing(ctx, incumbent, homes, grow, width, search)
