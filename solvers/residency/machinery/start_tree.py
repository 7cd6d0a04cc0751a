"""A branch-and-bound tree over the residency relaxation with its start and hold binaries.

The certificate model `residency-relaxation-tree` (`solvers/certificate.py`). Its LP is
`relaxation.formulate(binary_starts=True, binary_holds=True)` with integrality dropped and
every interval column E[k] capped by a valid latency (`relaxation.capped`). The bounds
of memplace-lib's open CNN entries were loose on whole tensors: a prefetch window holds
its whole size in the fast level from the op its copy starts, but the LP lets a weight's
window occupy only the share of it already copied (F, or a fractional start Y), so every
LP spread the copies of the few large weights thin over many steps and proved no wait
(squeezenet1-1: 10.863 µs against a best known of 11.780, every op at its fastest). A
tree that decides those starts closes the gap, since a branch fixes where a window must
hold all of its size.

Why its bound holds (the argument of `relaxation.py`'s docstring, then VIPR's):

1. Every valid solution of latency at most the ceiling maps to a feasible point of the
   MILP `formulate(binary_starts=True, binary_holds=True)` whose objective is its latency
   (`relaxation.py`, steps 1-6), with every column `formulate` declares integer at 0 or 1
   there: x (its homes), s of an access of nonzero bytes (the one level serving it),
   Y[t, l, i, j] = [the window's start <= j] and Q (the defining window's 0/1 occupancy).
   Its E[k] = elapsed_k + wait_{k+1} is at most the latency, so at most the ceiling: the
   cap cuts no such point off (`relaxation.capped_lp`), and every column has finite
   bounds.
2. At such a point, for any set S of integer columns, sum_{j in S} x_j is an integer, so
   it is at most `at` or at least `at + 1`: the two children of a node split the points
   of their parent between them (`lp_tree.py`), and the leaves of a tree with both sides
   of every disjunction cover every such point.
3. Each leaf's stored duals prove, by weak duality on its box and rows (every bound
   finite, so no term is infinite and no tolerance is needed), a lower bound on the
   objective over its points. The least of them bounds every valid solution at most
   the ceiling, so (capped by the ceiling, which a verified solution attains) it bounds
   the optimum.

`verify` rebuilds the LP from the instance with the stored ceiling (at least the
entry's best known), marks the integer columns from the build, walks the tree and takes
the least leaf bound: one sparse product per leaf, no solver.

The branching rule (where `grow` looks first, which changes the tree's size, never its
validity): the start columns Y of larger tensors first, then homes, then the rest.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from memplace.model import Instance
from memplace.solvers import lp_tree
from memplace.solvers.box_lp import BoxLP
from memplace.solvers.residency.machinery import relaxation

START_WEIGHT = 2.0  # a start column's priority per byte of its tensor (homes: 1, activations' 0.5)


@dataclass
class StartTreeLP:
    """The capped LP, which columns a disjunction may use, and the branching priority."""

    lp: BoxLP
    branchable: np.ndarray
    priority: np.ndarray


def tree_lp(inst: Instance, ceiling: float, deadline: float = math.inf,
            op_rows: bool = False) -> StartTreeLP:
    """The LP of the module docstring, with `ceiling` (seconds) a valid latency (and the
    op rows, given `op_rows`); raises `relaxation.BuildTimeout` past `deadline`
    (`time.perf_counter()`)."""
    rel = relaxation.formulate(inst, binary_starts=True, binary_holds=True, deadline=deadline,
                               op_rows=op_rows)
    lp = relaxation.capped(rel, ceiling)
    priority = np.zeros(lp.cost.size)
    for t in range(inst.n_tensors):
        homes = rel.x[t][rel.x[t] >= 0]
        priority[homes] = float(inst.size[t]) * (1.0 if inst.is_weight[t] else 0.5)
    for (t, _, _), cols in rel.starts.items():
        priority[cols] = float(inst.size[t]) * START_WEIGHT
    return StartTreeLP(lp, np.asarray(lp.integer, bool), priority)


def grow(inst: Instance, ceiling: float, time_limit: float, max_leaves: int,
         op_rows: bool = False, start: dict[str, Any] | None = None
         ) -> tuple[lp_tree.Grown, int]:
    """A tree (`lp_tree.grow`) over the LP (with the op rows, given `op_rows`) for at most
    `time_limit` seconds, building included, and `max_leaves` leaves; with the LP's row
    count. `start`: a stored tree over the LP of this `ceiling` and `op_rows`, grown on
    (`lp_tree.grow`; ValueError when it does not fit that LP). Raises
    `relaxation.BuildTimeout` when the LP is not built in time."""
    began = time.perf_counter()
    model = tree_lp(inst, ceiling, began + time_limit, op_rows)
    left = max(1.0, began + time_limit - time.perf_counter())
    grown = lp_tree.grow(model.lp, model.branchable, ceiling / model.lp.scale, left, max_leaves,
                         [], model.priority, model.lp.scale, start=start)
    return grown, int(model.lp.rlo.size)


def check(inst: Instance, ceiling: float, rows: int, tree: Any, op_rows: bool = False) -> float:
    """The bound (seconds, at most `ceiling`, not yet margined) the tree proves on the LP
    built with `ceiling` (and the op rows, given `op_rows`); -inf when the row count
    differs or the tree is malformed (`lp_tree.check_tree`). `ceiling` must be a valid
    latency: the caller checks that."""
    model = tree_lp(inst, ceiling, op_rows=op_rows)
    if rows != model.lp.rlo.size or not isinstance(tree, dict):
        return -math.inf
    return min(lp_tree.check_tree(model.lp, tree, model.branchable) * model.lp.scale, ceiling)
