"""A branch-and-bound tree over a boxed LP, every leaf's bound proven by weak duality.

The LP is `min c'x` over `rlo <= A x <= rhi`, `lo <= x <= hi` with every column bound
finite (the capped residency relaxations of `certificate.py`). Some columns are 0 or 1
at every point a valid solution maps to (`branchable`: homes, for instance). An inner
node of a tree splits its points by a disjunction on a set S of such columns and an
integer `at`: every such point has `sum_{j in S} x_j <= at` ("down") or `>= at + 1`
("up"), since that sum is an integer. (S of one column is the usual branch: fixed to 0
down, to 1 up, and the fixing goes into the box instead of a row.) So the leaves of a
tree cover every valid solution's point, and the least of their bounds bounds them all.

The certificate is the tree itself, as VIPR stores a MIP proof: the disjunction of every
inner node and, per leaf, one dual vector: `y` for the LP's rows and one multiplier per
disjunction row on its path. Any such vector proves, on the leaf's box [lo', hi'] with
its path's rows added,

    min c'x >= sum_r y_r (rlo_r if y_r > 0 else rhi_r) + sum_p mu_p * side_p
               + sum_j min(d_j lo'_j, d_j hi'_j),      d = c - A'y - sum_p mu_p a_p,

(weak duality; `side_p` is `at` for a down row, which takes mu <= 0, and `at + 1` for an
up row, mu >= 0; a multiplier of the wrong sign counts as 0; every term is finite
because every bound is). Checking a tree is one sparse transposed product per leaf and
a walk that gathers the disjunctions on the way: no solver, no tolerance. A dual that
was rounded (they are stored at `DIGITS` significant digits) or came from an early stop
proves less, never something false.

`grow` builds a tree with HiGHS's dual simplex, hot-started from node to node: it
expands the open leaf of least bound, on the first of the given `groups` (sets of
branchable columns) whose sum is fractional there, else on the most fractional
branchable column (higher `priority` first); it solves both children at once (so every
open leaf has its dual), and stops at its time limit, at `max_leaves`, or when every
leaf's bound reaches `cap` (no solution below `cap` is left). A child HiGHS finds
infeasible gets a multiple of its dual ray added to its parent's dual until the bound
passes `cap` (on an empty box a Farkas ray raises weak duality without limit).
"""
from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memplace.solvers.box_lp import BoxLP
from memplace.solvers.highs import new_highs

DIGITS = 9  # significant digits of a stored dual value
FRACTIONAL = 1e-6  # a value this far from an integer is fractional


# A disjunction row on a leaf's path: (columns, at, up)
Cut = tuple[tuple[int, ...], int, bool]


def box_bound(lp: BoxLP, y: np.ndarray, lo: np.ndarray, hi: np.ndarray,
              cuts: list[Cut] = (), mu: np.ndarray | None = None) -> float:
    """The weak-duality bound (model units) that `y` (and `mu`, one per cut) proves on the
    box [lo, hi] with the `cuts` rows added (module docstring); a dual of the wrong sign
    on a one-sided row counts as 0 (still a dual vector); -inf if a term needs an
    infinite bound."""
    y = np.asarray(y, np.float64).copy()
    y[(y > 0) & ~np.isfinite(lp.rlo)] = 0.0
    y[(y < 0) & ~np.isfinite(lp.rhi)] = 0.0
    d = lp.cost - np.bincount(lp.c, weights=lp.v * y[lp.r], minlength=lp.cost.size)
    used = y != 0
    with np.errstate(invalid="ignore"):
        total = float(np.sum(y[used] * np.where(y[used] > 0, lp.rlo[used], lp.rhi[used])))
    if cuts:
        mu = np.zeros(len(cuts)) if mu is None else np.asarray(mu, np.float64)
        for (cols, at, up), m in zip(cuts, mu.tolist()):
            if (up and m <= 0) or (not up and m >= 0) or not math.isfinite(m):
                continue
            total += m * (at + 1 if up else at)
            d[list(cols)] -= m
    with np.errstate(invalid="ignore"):
        cols = np.where(d > 0, d * lo, np.where(d < 0, d * hi, 0.0))
    if not (math.isfinite(total) and np.isfinite(cols).all()):
        return -math.inf
    return total + float(np.sum(cols))


def _vector(index: Any, value: Any, n: int) -> np.ndarray | None:
    try:
        index = np.asarray(index, np.int64)
        value = np.asarray(value, np.float64)
    except (TypeError, ValueError):
        return None
    if index.shape != value.shape or index.ndim != 1 or \
            (index.size and (index.min() < 0 or index.max() >= n)) or not np.isfinite(value).all():
        return None
    y = np.zeros(n, np.float64)
    y[index] = value
    return y


def _disjunction(node: dict[str, Any], branchable: np.ndarray) -> tuple[tuple[int, ...], int] | None:
    """A node's (columns, at) if every column is distinct and branchable, else None."""
    cols, at = node.get("branch"), node.get("at", 0)
    if isinstance(cols, int):
        cols = [cols]
    if not isinstance(cols, list) or not cols or not isinstance(at, int) or isinstance(at, bool):
        return None
    if not all(isinstance(j, int) and not isinstance(j, bool) and 0 <= j < branchable.size
               and branchable[j] for j in cols) or len(set(cols)) != len(cols):
        return None
    if not isinstance(node.get("down"), dict) or not isinstance(node.get("up"), dict):
        return None
    return tuple(cols), at


def _leaf_box(lp: BoxLP, path: list[Cut]) -> tuple[np.ndarray, np.ndarray, list[Cut]]:
    """The box of a leaf (single-column disjunctions fixed in it) and its other rows."""
    lo, hi = np.asarray(lp.lo, np.float64).copy(), np.asarray(lp.hi, np.float64).copy()
    rows = []
    for cols, at, up in path:
        if len(cols) == 1 and at == 0:
            lo[cols[0]] = hi[cols[0]] = 1.0 if up else 0.0
        else:
            rows.append((cols, at, up))
    return lo, hi, rows


def check_tree(lp: BoxLP, tree: dict[str, Any], branchable: np.ndarray) -> float:
    """The bound (model units) a tree proves: the least of its leaves' weak-duality
    bounds, each with its path's disjunctions; -inf when a node's disjunction is not on
    distinct `branchable` columns (a boolean mask) with an integer `at`, or a leaf's
    duals do not fit."""
    worst = math.inf
    stack: list[tuple[Any, list[Cut]]] = [(tree, [])]
    while stack:
        node, path = stack.pop()
        if not isinstance(node, dict):
            return -math.inf
        if "branch" in node:
            split = _disjunction(node, branchable)
            if split is None:
                return -math.inf
            cols, at = split
            stack.append((node["down"], path + [(cols, at, False)]))
            stack.append((node["up"], path + [(cols, at, True)]))
            continue
        y = _vector(node.get("index"), node.get("value"), lp.rlo.size)
        lo, hi, rows = _leaf_box(lp, path)
        mu = node.get("path", [0.0] * len(rows))
        if y is None or not isinstance(mu, list) or len(mu) != len(rows):
            return -math.inf
        mu_arr = _vector(list(range(len(mu))), mu, len(mu)) if mu else np.zeros(0)
        if mu_arr is None:
            return -math.inf
        worst = min(worst, box_bound(lp, y, lo, hi, rows, mu_arr))
        if worst == -math.inf:
            return worst
    return worst


def count_leaves(tree: dict[str, Any]) -> int:
    stack, n = [tree], 0
    while stack:
        node = stack.pop()
        if "branch" in node:
            stack += [node["down"], node["up"]]
        else:
            n += 1
    return n


@dataclass(order=True)
class _Node:
    bound: float
    serial: int
    path: list[Cut] = field(compare=False)
    leaf: dict[str, Any] = field(compare=False)  # the tree node this open leaf is
    split: tuple[tuple[int, ...], int] | None = field(compare=False, default=None)


@dataclass
class Grown:
    """A tree, the bound it proves (seconds, recomputed by `check_tree`, at most `cap`),
    its root's, its size, why it stopped and HiGHS's statuses."""

    bound: float
    root_bound: float
    tree: dict[str, Any]
    leaves: int
    nodes_solved: int
    seconds: float
    status: str
    lp_statuses: dict[str, int] = field(default_factory=dict)


def _rounded(values: np.ndarray) -> list[float]:
    return [float(f"{x:.{DIGITS}g}") for x in values.tolist()]


def _leaf(y: np.ndarray, mu: np.ndarray) -> dict[str, Any]:
    nonzero = np.flatnonzero(y)
    leaf: dict[str, Any] = {"index": nonzero.tolist(), "value": _rounded(y[nonzero])}
    if mu.size:
        leaf["path"] = _rounded(mu)
    return leaf


class _Solver:
    """HiGHS on the LP, one node after another: the node's box and rows set, solved,
    its dual (with a Farkas ray where it is empty) and a branching choice returned."""

    def __init__(self, lp: BoxLP, branchable: np.ndarray, cap: float, time_limit: float,
                 groups: list[np.ndarray], priority: np.ndarray, threads: int) -> None:
        self.h = new_highs(threads, 0, time_limit + 5.0)  # HiGHS's clock runs over every solve
        self.h.setOptionValue("solver", "simplex")
        self.h.passModel(lp.highs_lp())
        self.lp, self.branchable, self.cap = lp, branchable, cap
        self.groups, self.priority = groups, priority
        self.cols = np.arange(lp.cost.size, dtype=np.int32)
        self.statuses: dict[str, int] = {}
        self.solved = 0

    def solve(self, path: list[Cut], parent: tuple[np.ndarray, np.ndarray] | None
              ) -> tuple[float, np.ndarray, np.ndarray, tuple[tuple[int, ...], int] | None]:
        lp, h, n_rows = self.lp, self.h, self.lp.rlo.size
        lo, hi, rows = _leaf_box(lp, path)
        h.changeColsBounds(self.cols.size, self.cols, lo, hi)
        for cols, at, up in rows:
            h.addRow(float(at + 1) if up else -math.inf, math.inf if up else float(at), len(cols),
                     np.asarray(cols, np.int32), np.ones(len(cols)))
        h.run()
        self.solved += 1
        status = h.modelStatusToString(h.getModelStatus())
        self.statuses[status] = self.statuses.get(status, 0) + 1
        sol = h.getSolution()
        x = np.asarray(sol.col_value, np.float64) if status == "Optimal" else None
        zero = (np.zeros(n_rows), np.zeros(len(rows)))
        base = zero
        if parent is not None:  # its rows are a prefix of the child's
            base = (parent[0], np.concatenate([parent[1], np.zeros(len(rows) - parent[1].size)]))
        candidates = [base]
        if sol.dual_valid and status != "Infeasible":
            dual = np.asarray(sol.row_dual, np.float64)
            candidates.append((dual[:n_rows], dual[n_rows:]))
        if status == "Infeasible":
            _, has_ray, ray = h.getDualRay()
            if has_ray:
                ray = np.asarray(ray, np.float64)
                for sign in (1.0, -1.0):
                    m = 1.0
                    while m < 1e12:
                        trial = (base[0] + sign * m * ray[:n_rows], base[1] + sign * m * ray[n_rows:])
                        if box_bound(lp, trial[0], lo, hi, rows, trial[1]) >= self.cap:
                            candidates.append(trial)
                            break
                        m *= 4.0
        if rows:
            h.deleteRows(len(rows), np.arange(n_rows, n_rows + len(rows), dtype=np.int32))
        scored = [(box_bound(lp, y, lo, hi, rows, mu), k) for k, (y, mu) in enumerate(candidates)]
        bound, best = max(scored)
        y, mu = candidates[best]
        split = None
        if x is not None and bound < self.cap:
            split = self._split(x, lo, hi)
        return bound, y, mu, split

    def _split(self, x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[tuple[int, ...], int] | None:
        for group in self.groups:
            total = float(x[group].sum())
            if abs(total - round(total)) > FRACTIONAL:
                return tuple(int(j) for j in group), int(math.floor(total))
        frac = np.minimum(x, 1.0 - x)
        open_ = self.branchable & (frac > FRACTIONAL) & (lo < hi)
        if not open_.any():
            return None
        which = np.flatnonzero(open_)
        key = np.lexsort((-frac[which], -self.priority[which]))
        return (int(which[key[0]]),), 0


def grow(lp: BoxLP, branchable: np.ndarray, cap: float, time_limit: float,
         max_leaves: int = 200, groups: list[np.ndarray] = (), priority: np.ndarray | None = None,
         scale: float = 1.0, threads: int = 1) -> Grown:
    """Grow a tree (module docstring) for at most `time_limit` seconds and `max_leaves`
    leaves; `cap` (model units) is where a leaf is closed; `scale` turns model units into
    the seconds `Grown` reports."""
    began = time.perf_counter()
    prio = np.zeros(lp.cost.size) if priority is None else np.asarray(priority, np.float64)
    solver = _Solver(lp, branchable, cap, time_limit, [np.asarray(g, np.int64) for g in groups],
                     prio, threads)
    root: dict[str, Any] = {}
    bound, y, mu, split = solver.solve([], None)
    root_bound = bound
    root.update(_leaf(y, mu))
    heap = [_Node(bound, 0, [], root, split)]
    duals = {id(root): (y, mu)}
    serial, leaves, status = 1, 1, "stopped"
    while heap:
        node = heap[0]
        if node.bound >= cap:
            status = "closed"
            break
        if node.split is None:
            status = "no disjunction left at the weakest leaf"
            break
        if time.perf_counter() - began >= time_limit or leaves >= max_leaves:
            status = "limit"
            break
        heapq.heappop(heap)
        parent = duals.pop(id(node.leaf))
        cols, at = node.split
        children = []
        for up in (False, True):
            path = node.path + [(cols, at, up)]
            b, yc, muc, sc = solver.solve(path, parent)
            leaf = _leaf(yc, muc)
            duals[id(leaf)] = (yc, muc)
            children.append(leaf)
            heapq.heappush(heap, _Node(b, serial, path, leaf, sc))
            serial += 1
        node.leaf.clear()
        node.leaf.update({"branch": list(cols), "at": at, "down": children[0], "up": children[1]})
        leaves += 1
    proved = check_tree(lp, root, branchable)
    return Grown(min(proved, cap) * scale, min(root_bound, cap) * scale, root,
                 count_leaves(root), solver.solved,
                 time.perf_counter() - began, status, solver.statuses)
