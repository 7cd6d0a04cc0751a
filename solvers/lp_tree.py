"""A branch-and-bound tree over a boxed LP, every leaf's bound proven by weak duality.

The LP is `min c'x` over `rlo <= A x <= rhi`, `lo <= x <= hi` with every column bound
finite (the capped residency relaxations of `certificate.py`). Some columns are 0 or 1
at every point a valid solution maps to (`branchable`: homes, for instance). An inner
node of a tree splits its points by a disjunction on a set S of such columns and an
integer `at`: every such point has `sum_{j in S} x_j <= at` ("down") or `>= at + 1`
("up"), since that sum is an integer. (S of one column is the usual branch: fixed to 0
down, to 1 up, and the fixing goes into the box instead of a row.) So the leaves of a
tree cover every valid solution's point, and the least of their bounds bounds them all.

A sum with integer coefficients (`coef`) of such columns is an integer too, so the
same disjunction holds with them (units of a weight size homed in a set of levels, say).
A caller may also name other kinds of disjunction (`kinds`): a node `{"kind": K, ...}`
is turned into its two rows (down: `a'x <= rhs`, up: `b'x >= rhs`, any coefficients) by
the caller's function for K, which re-derives from the instance that every valid
solution's point satisfies one of them (`copy_units.py`: the units of copies delivered
into a level); a node it does not accept proves nothing.

The certificate is the tree itself, as VIPR stores a MIP proof: the disjunction of every
inner node and, per leaf, one dual vector: `y` for the LP's rows and one multiplier per
disjunction row on its path. Any such vector proves, on the leaf's box [lo', hi'] with
its path's rows added,

    min c'x >= sum_r y_r (rlo_r if y_r > 0 else rhi_r) + sum_p mu_p * side_p
               + sum_j min(d_j lo'_j, d_j hi'_j),      d = c - A'y - sum_p mu_p a_p,

(weak duality; `a_p` is row p's coefficients and `side_p` its right-hand side, `at` for
a down row, which takes mu <= 0, and `at + 1` for an up row, mu >= 0; a multiplier of
the wrong sign counts as 0; every term is finite because every bound is). Checking a
tree is one sparse transposed product per leaf and a walk that gathers the disjunctions
on the way: no solver, no tolerance. A dual that was rounded (they are stored at
`DIGITS` significant digits) or came from an early stop proves less, never something
false.

`grow` builds a tree with HiGHS's dual simplex, each node's LP hot-started from its
parent's basis (BASIS_ENTRIES; a node whose LP HiGHS ends as "Unknown" is solved once
more from a cold start: seen in the slot-relaxation study of docs/library.md, where the
cold solve was optimal; before, one such node stopped the whole tree): it
expands the open leaf of least bound, on the first of the given `groups` (sets of
branchable columns, or (columns, integer coefficients)) whose sum is fractional there,
else on the disjunction the caller's `pick` proposes for its point (if any), else on
a fractional branchable column chosen by reliability branching (the usual MIP rule:
pseudocosts, the bound gained per unit of fractionality on each side, learnt from the
children the tree solves and, for columns without them yet, from solving both children
of up to `STRONG_MAX` candidates in `priority` order; the product of the two estimated
gains decides) or, with `branching="priority"`, on the most fractional of the highest
`priority` (the default, "auto", takes the priority rule when the root's LP alone took
more than AUTO_ROOT_SHARE of the time limit, too slow for strong branching to pay, and
reliability branching otherwise); it solves both children at once (so every
open leaf has its dual), and stops at its time limit, at `max_leaves`, or when every
leaf's bound reaches `cap` (no solution below `cap` is left). A child HiGHS finds
infeasible gets a multiple of its dual ray added to its parent's dual until the bound
passes `cap` (on an empty box a Farkas ray raises weak duality without limit).

Cut and branch: a caller's `cuts` function, given a node's point, may return rows that
every valid solution's point satisfies (step covers, say). They are appended to the LP for
the whole tree, and the node is solved again with them, up to `cut_rounds` times. A row
valid at every solution is valid in every leaf, so the tree is checked against the LP
with every row added (`Grown.lp`); the leaves solved before a row existed take 0 as its
dual, which proves what they proved before. The caller stores the rows it returned, in
order, so a check can rebuild that LP (`step_covers.py`'s covers).
"""
from __future__ import annotations

import copy
import heapq
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

from memplace.solvers.box_lp import AddedRow, BoxLP
from memplace.solvers.highs import new_highs

DIGITS = 9  # significant digits of a stored dual value
FRACTIONAL = 1e-6  # a value this far from an integer is fractional
# `Grown.lp_statuses` key: node LPs HiGHS ended as "Unknown" (numerical trouble from the warm
# basis), each solved again from a cold start; the retry's own status is counted as usual
RETRIED = "Unknown, solved again from a cold start"
# Branching where no group or pick decides (`grow`'s `branching`). "priority": the most
# fractional of the highest-priority columns. "reliability": among the first CANDIDATES
# fractional columns in that order, those with fewer than RELIABLE observations of the bound
# each side gains (pseudocosts) have both children solved (at most STRONG_MAX per node, and
# only while strong branching has taken at most STRONG_SHARE of the LP time, at the root
# ROOT_STRONG_SHARE of the time limit, so a tree of slow LPs still grows), and the column
# of best product of estimated gains is taken (the others count the mean gain). "auto" (the
# default): "priority" when the root's LP took more than AUTO_ROOT_SHARE of the time limit
# (too few nodes to come for strong branching to pay), else "reliability". Measured on the
# relaxation tree (one-off, `start_tree.grow`, 2 cores, one run at a time) at 120 s on the
# second round of unseen decoders (docs/zoo.md), the root LP's seconds, then the bound (µs)
# by priority and by reliability: opt-small 0.34 s, 8.449, 8.749; bloom-small 0.45, 8.451,
# 8.812; falcon-small 0.56, 7.631, 7.785; gemma-small 0.88, 10.716, 10.624; gpt-neox-small
# 1.75, 8.641, 8.583 (in `lib improve`'s climb: 8.615, 8.666); on xla-train@nnpi (LPs of
# 60-190 s) priority proved 38.226 µs in 1,800 s, reliability 37.541 (docs/library.md)
BRANCHINGS = ("auto", "reliability", "priority")
AUTO_ROOT_SHARE = 0.006
CANDIDATES = 16
RELIABLE = 1
STRONG_MAX = 8
STRONG_SHARE = 0.5
# At the root (one LP solved, nothing to share with yet) strong branching runs until it has
# taken ROOT_STRONG_SHARE of the time limit: on xla-train@nnpi (LPs of 60-190 s) an
# unlimited root spent the whole 1,800 s on its root and 16 strong solves (one leaf, 37.541
# µs, where the priority rule's tree had proved 38.226)
ROOT_STRONG_SHARE = 0.1
# A node's LP starts from its parent's optimal basis (kept with the open leaf; a box split
# leaves it dual feasible) rather than from the last node solved, which may lie anywhere in
# the tree: on gemma-small's relaxation tree (one-off, 60 s) 1,243 simplex iterations a node
# on average instead of 1,680, 0.32 s instead of 0.51, 93 leaves instead of 58. The bases of
# open leaves take at most BASIS_ENTRIES statuses of one byte (past that, a child starts
# from the last basis, as before)
BASIS_ENTRIES = 50_000_000


@dataclass(frozen=True)
class Row:
    """One side of a disjunction on a leaf's path: `sum coefs * x[cols] <= rhs` (down) or
    `>= rhs` (up); `box`: one 0/1 column fixed to 0 or 1, which goes into the leaf's box."""

    cols: tuple[int, ...]
    coefs: tuple[float, ...]
    rhs: float
    up: bool
    box: bool = False


@dataclass
class Split:
    """A disjunction to branch on: the fields its tree node stores and its two rows."""

    fields: dict[str, Any]
    down: Row
    up: Row
    value: float = 0.5  # a one-column split's column at the point it was chosen at (`_Solver._solve`)


# a caller's kind of disjunction: a stored node to its (down, up) rows, None if not valid
Kinds = dict[str, Callable[[dict[str, Any]], "tuple[Row, Row] | None"]]
# a caller's proposal of a disjunction at a leaf's point x (with its row duals, or None)
Pick = Callable[[np.ndarray, "np.ndarray | None"], "Split | None"]
# a caller's cut rows violated at a node's point x, each (columns, values, lower, upper),
# valid at every valid solution's point; the caller records them in the order returned
Cuts = Callable[[np.ndarray], "list[AddedRow]"]


def integer_split(cols: tuple[int, ...], at: int, coefs: tuple[int, ...] | None = None) -> Split:
    """`sum coefs * x[cols] <= at` or `>= at + 1` on 0/1 columns (coefficients 1 if None)."""
    unit = coefs is None or all(c == 1 for c in coefs)
    weights = tuple(1.0 for _ in cols) if coefs is None else tuple(float(c) for c in coefs)
    box = len(cols) == 1 and unit and at == 0
    fields: dict[str, Any] = {"branch": list(cols), "at": at}
    if not unit:
        fields["coef"] = [int(c) for c in coefs]
    return Split(fields, Row(cols, weights, float(at), False, box),
                 Row(cols, weights, float(at + 1), True, box))


def box_bound(lp: BoxLP, y: np.ndarray, lo: np.ndarray, hi: np.ndarray,
              cuts: list[Row] = (), mu: np.ndarray | None = None) -> float:
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
        for row, m in zip(cuts, mu.tolist()):
            if (row.up and m <= 0) or (not row.up and m >= 0) or not math.isfinite(m):
                continue
            total += m * row.rhs
            np.subtract.at(d, np.asarray(row.cols, np.int64), m * np.asarray(row.coefs, np.float64))
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


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _disjunction(node: dict[str, Any], branchable: np.ndarray,
                 kinds: Kinds | None = None) -> tuple[Row, Row] | None:
    """A node's two rows: by its `kind`'s function when it names one, else an integer sum
    (distinct branchable columns, an integer `at`, integer nonzero `coef` if given); None
    when the node is not a valid disjunction or lacks a side."""
    if not isinstance(node.get("down"), dict) or not isinstance(node.get("up"), dict):
        return None
    if "kind" in node:
        resolve = (kinds or {}).get(node["kind"]) if isinstance(node["kind"], str) else None
        return None if resolve is None else resolve(node)
    cols, at, coefs = node.get("branch"), node.get("at", 0), node.get("coef")
    if isinstance(cols, int):
        cols = [cols]
    if not isinstance(cols, list) or not cols or not _is_int(at):
        return None
    if not all(_is_int(j) and 0 <= j < branchable.size and branchable[j] for j in cols) \
            or len(set(cols)) != len(cols):
        return None
    if coefs is not None and not (isinstance(coefs, list) and len(coefs) == len(cols)
                                  and all(_is_int(a) and a != 0 for a in coefs)):
        return None
    split = integer_split(tuple(cols), at, None if coefs is None else tuple(coefs))
    return split.down, split.up


def _leaf_box(lp: BoxLP, path: list[Row]) -> tuple[np.ndarray, np.ndarray, list[Row]]:
    """The box of a leaf (single 0/1 columns fixed in it) and its other rows."""
    lo, hi = np.asarray(lp.lo, np.float64).copy(), np.asarray(lp.hi, np.float64).copy()
    rows = []
    for row in path:
        if row.box:
            lo[row.cols[0]] = hi[row.cols[0]] = 1.0 if row.up else 0.0
        else:
            rows.append(row)
    return lo, hi, rows


def _walk(lp: BoxLP, tree: Any, branchable: np.ndarray, kinds: Kinds | None = None
          ) -> Iterator[tuple[dict[str, Any], list[Row], np.ndarray, np.ndarray, float]]:
    """Each leaf of a tree (down sides first) with its path's rows, its duals (row duals,
    one multiplier per non-box row) and the weak-duality bound they prove on its box;
    raises ValueError where a node is not a valid disjunction (`_disjunction`: an integer
    sum on distinct `branchable` columns, a boolean mask, or a node of one of `kinds` that
    kind's function accepts) or a leaf's duals do not fit."""
    stack: list[tuple[Any, list[Row]]] = [(tree, [])]
    while stack:
        node, path = stack.pop()
        if not isinstance(node, dict):
            raise ValueError("a tree node that is not an object")
        if "branch" in node or "kind" in node:
            sides = _disjunction(node, branchable, kinds)
            if sides is None:
                raise ValueError("a node that is not a valid disjunction: "
                                 f"{node.get('branch', node.get('kind'))!r}")
            stack += [(node["up"], path + [sides[1]]), (node["down"], path + [sides[0]])]
            continue
        y = _vector(node.get("index"), node.get("value"), lp.rlo.size)
        lo, hi, rows = _leaf_box(lp, path)
        mu = node.get("path", [0.0] * len(rows))
        if y is None or not isinstance(mu, list) or len(mu) != len(rows):
            raise ValueError("a leaf whose duals do not fit the LP")
        mu_arr = _vector(list(range(len(mu))), mu, len(mu)) if mu else np.zeros(0)
        if mu_arr is None:
            raise ValueError("a leaf whose duals do not fit the LP")
        yield node, path, y, mu_arr, box_bound(lp, y, lo, hi, rows, mu_arr)


def check_tree(lp: BoxLP, tree: dict[str, Any], branchable: np.ndarray,
               kinds: Kinds | None = None) -> float:
    """The bound (model units) a tree proves: the least of its leaves' weak-duality
    bounds, each with its path's disjunctions; -inf when a node's disjunction is not
    valid or a leaf's duals do not fit (`_walk`)."""
    worst = math.inf
    try:
        for *_, bound in _walk(lp, tree, branchable, kinds):
            worst = min(worst, bound)
            if worst == -math.inf:
                return worst
    except ValueError:
        return -math.inf
    return worst


def count_leaves(tree: dict[str, Any]) -> int:
    stack, n = [tree], 0
    while stack:
        node = stack.pop()
        if "branch" in node or "kind" in node:
            stack += [node["down"], node["up"]]
        else:
            n += 1
    return n


@dataclass(order=True)
class _Node:
    bound: float
    serial: int
    path: list[Row] = field(compare=False)
    leaf: dict[str, Any] = field(compare=False)  # the tree node this open leaf is
    split: Split | None = field(compare=False, default=None)
    solved: bool = field(compare=False, default=True)  # its LP solved to optimality
    basis: Any = field(compare=False, default=None)  # HiGHS's optimal basis of its LP, if kept
    fresh: bool = field(compare=False, default=True)  # False: a stored leaf, its LP not solved here


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
    lp: BoxLP | None = None  # the LP with every cut row added, which the tree is checked on (set by `grow`)
    cut_rows: int = 0
    strong_solves: int = 0  # LPs solved to try a column's two children (reliability branching)
    branching: str = ""  # the rule the tree branched by ("auto" resolved at its root)
    parent_starts: int = 0  # node LPs started from their parent's basis (BASIS_ENTRIES)


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
                 groups: list[tuple[np.ndarray, np.ndarray | None]], priority: np.ndarray,
                 threads: int, pick: Pick | None = None, cuts: Cuts | None = None,
                 cut_rounds: int = 0, branching: str = "auto") -> None:
        self.h = new_highs(threads, 0, time_limit + 5.0)  # HiGHS's clock runs over every solve
        self.time_limit = time_limit
        self.h.setOptionValue("solver", "simplex")
        self.h.passModel(lp.highs_lp())
        self.lp, self.branchable, self.cap = lp, branchable, cap
        self.groups, self.priority, self.pick = groups, priority, pick
        self.cuts, self.cut_rounds, self.branching = cuts, cut_rounds, branching
        self.cols = np.arange(lp.cost.size, dtype=np.int32)
        self.statuses: dict[str, int] = {}
        self.solved = 0
        self.optimal = False  # the last node's LP solved to optimality
        self.cut_rows = 0
        self.strong = 0
        self.node_s = self.strong_s = 0.0  # seconds in the nodes' LPs, in strong branching's
        self.basis: Any = None  # the last node's optimal basis (before strong branching)
        self.parent_starts = 0  # node LPs started from their parent's basis
        n = lp.cost.size  # pseudocosts: per column, gain sums and counts, down and up
        self.pc_sum, self.pc_n = np.zeros((2, n)), np.zeros((2, n))

    def learn(self, split: Split, parent: float, children: tuple[float, float]) -> None:
        """The pseudocosts a one-column split's solved children teach (`parent` and
        `children`: their bounds)."""
        if split.down.box:
            self._observe(split.down.cols[0], split.value, parent,
                          tuple(b if math.isfinite(b) else None for b in children))

    def _observe(self, j: int, value: float, parent: float,
                 children: tuple[float | None, float | None]) -> None:
        """Pseudocost observations for column j split at `value`: each child's bound (None:
        unknown) less `parent`'s, capped at `cap`, per unit of fractionality on its side."""
        for side, (b, f) in enumerate(zip(children, (value, 1.0 - value))):
            if b is not None and f > FRACTIONAL:
                self.pc_sum[side, j] += max(0.0, min(b, self.cap) - parent) / f
                self.pc_n[side, j] += 1

    def solve(self, path: list[Row], parent: tuple[np.ndarray, np.ndarray] | None,
              basis: Any = None) -> tuple[float, np.ndarray, np.ndarray, Split | None]:
        """The node's bound, dual and split, after up to `cut_rounds` rounds of cuts; its
        first LP starts from `basis` (its parent's) when that still fits the LP."""
        rounds = 0
        while True:
            bound, y, mu, split, x = self._solve(path, parent, basis)
            basis = None
            self.optimal = x is not None
            if x is None or bound >= self.cap or self.cuts is None or rounds >= self.cut_rounds:
                return bound, y, mu, split
            rows = self.cuts(x)
            if not rows:
                return bound, y, mu, split
            self._append(rows)
            parent, rounds = (y, mu), rounds + 1

    def _append(self, rows: list[AddedRow]) -> None:
        """Rows added to the LP (and HiGHS's model) for the rest of the tree."""
        for cols, vals, lo, hi in rows:
            self.h.addRow(lo, hi, len(cols), np.asarray(cols, np.int32), np.asarray(vals, np.float64))
        self.lp = self.lp.with_rows(rows)
        self.cut_rows += len(rows)

    def _solve(self, path: list[Row], parent: tuple[np.ndarray, np.ndarray] | None,
               basis: Any = None
               ) -> tuple[float, np.ndarray, np.ndarray, Split | None, np.ndarray | None]:
        lp, h, n_rows = self.lp, self.h, self.lp.rlo.size
        lo, hi, rows = _leaf_box(lp, path)
        h.changeColsBounds(self.cols.size, self.cols, lo, hi)
        for row in rows:
            h.addRow(row.rhs if row.up else -math.inf, math.inf if row.up else row.rhs, len(row.cols),
                     np.asarray(row.cols, np.int32), np.asarray(row.coefs, np.float64))
        if basis is not None and len(basis.row_status) == n_rows + len(rows):
            h.setBasis(basis)  # the parent's: a box split leaves it dual feasible
            self.parent_starts += 1
        began = time.perf_counter()
        h.run()
        if self.branching == "auto":  # the root's LP: is strong branching affordable?
            slow = time.perf_counter() - began > AUTO_ROOT_SHARE * self.time_limit
            self.branching = "priority" if slow else "reliability"
        self.solved += 1
        status = h.modelStatusToString(h.getModelStatus())
        if status == "Unknown":  # simplex lost its way from the warm basis: once more, cold
            self.statuses[RETRIED] = self.statuses.get(RETRIED, 0) + 1
            h.clearSolver()
            h.run()
            status = h.modelStatusToString(h.getModelStatus())
        self.statuses[status] = self.statuses.get(status, 0) + 1
        self.node_s += time.perf_counter() - began
        self.basis = h.getBasis() if status == "Optimal" else None
        sol = h.getSolution()
        x = np.asarray(sol.col_value, np.float64) if status == "Optimal" else None
        zero = (np.zeros(n_rows), np.zeros(len(rows)))
        base = zero
        if parent is not None:  # its rows (and cuts) are a prefix of the child's
            base = (np.concatenate([parent[0], np.zeros(n_rows - parent[0].size)]),
                    np.concatenate([parent[1], np.zeros(len(rows) - parent[1].size)]))
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
        scored = [(box_bound(lp, y, lo, hi, rows, mu), k) for k, (y, mu) in enumerate(candidates)]
        bound, best = max(scored)
        y, mu = candidates[best]
        split = None
        if x is not None and bound < self.cap:
            row_dual = np.asarray(sol.row_dual, np.float64)[:n_rows] if sol.dual_valid else None
            split = self._split(x, lo, hi, row_dual, bound)
            if split is not None and split.down.box:
                split.value = float(x[split.down.cols[0]])
        if rows:
            h.deleteRows(len(rows), np.arange(n_rows, n_rows + len(rows), dtype=np.int32))
        return bound, y, mu, split, x

    def _split(self, x: np.ndarray, lo: np.ndarray, hi: np.ndarray,
               row_dual: np.ndarray | None, bound: float) -> Split | None:
        for group, coefs in self.groups:
            total = float(x[group].sum()) if coefs is None else float(x[group] @ coefs)
            if abs(total - round(total)) > FRACTIONAL:
                return integer_split(tuple(int(j) for j in group), int(math.floor(total)),
                                     None if coefs is None else tuple(int(a) for a in coefs))
        if self.pick is not None:
            chosen = self.pick(x, row_dual)
            if chosen is not None:
                return chosen
        frac = np.minimum(x, 1.0 - x)
        open_ = self.branchable & (frac > FRACTIONAL) & (lo < hi)
        if not open_.any():
            return None
        which = np.flatnonzero(open_)
        key = np.lexsort((-frac[which], -self.priority[which]))
        if self.branching == "priority":
            return integer_split((int(which[key[0]]),), 0)
        return integer_split((self._reliable(x, lo, hi, which[key][:CANDIDATES], bound),), 0)

    def _reliable(self, x: np.ndarray, lo: np.ndarray, hi: np.ndarray, which: np.ndarray,
                  bound: float) -> int:
        """Reliability branching among the fractional columns `which` (in the priority
        order): those without pseudocosts on both sides yet (up to STRONG_MAX of them, in
        that order) are tried by solving both children; the column of best product of
        estimated gains wins."""
        h = self.h
        seen = self.pc_n[:, which].min(axis=0) >= RELIABLE
        for j in which[~seen][:STRONG_MAX].tolist():
            if self.strong_s > (STRONG_SHARE * (self.node_s + self.strong_s) if self.solved > 1
                                else ROOT_STRONG_SHARE * self.time_limit):
                break  # the rest take the mean pseudocost
            began = time.perf_counter()
            children: list[float | None] = []
            for a, b in ((lo[j], 0.0), (1.0, hi[j])):  # down, up
                h.changeColBounds(j, a, b)
                h.run()
                self.strong += 1
                status = h.modelStatusToString(h.getModelStatus())
                children.append(self.cap if status == "Infeasible" else
                                h.getInfo().objective_function_value if status == "Optimal" else None)
            h.changeColBounds(j, lo[j], hi[j])
            self.strong_s += time.perf_counter() - began
            self._observe(j, float(x[j]), bound, (children[0], children[1]))
            if None not in children and min(children) >= self.cap:
                return j  # both children closed
        n = self.pc_n[:, which]
        known = self.pc_n.sum(axis=1)
        mean = np.where(known > 0, self.pc_sum.sum(axis=1) / np.maximum(known, 1), 1.0)
        psi = np.where(n > 0, self.pc_sum[:, which] / np.maximum(n, 1), mean[:, None])
        f = x[which]
        score = np.maximum(psi[0] * f, 1e-9) * np.maximum(psi[1] * (1.0 - f), 1e-9)
        return int(which[int(np.argmax(score))])


def _group(g: Any) -> tuple[np.ndarray, np.ndarray | None]:
    if isinstance(g, tuple):
        return np.asarray(g[0], np.int64), np.asarray(g[1], np.float64)
    return np.asarray(g, np.int64), None


def grow(lp: BoxLP, branchable: np.ndarray, cap: float, time_limit: float,
         max_leaves: int = 200, groups: list[Any] = (), priority: np.ndarray | None = None,
         scale: float = 1.0, threads: int = 1, kinds: Kinds | None = None,
         pick: Pick | None = None, cuts: Cuts | None = None, cut_rounds: int = 0,
         branching: str = "auto", start: dict[str, Any] | None = None) -> Grown:
    """Grow a tree (module docstring) for at most `time_limit` seconds and `max_leaves`
    leaves; `cap` (model units) is where a leaf is closed; `scale` turns model units into
    the seconds `Grown` reports. `groups` are column arrays or (columns, integer
    coefficients) pairs; `pick` proposes disjunctions first, of the `kinds` the tree is
    checked with; `cuts` adds rows at a node, up to `cut_rounds` times (module docstring);
    `branching` (one of BRANCHINGS) chooses among fractional columns otherwise.

    `start`, a stored tree over this same LP (`lp` with the rows of any cuts it was grown
    with, and the same `cap`), is grown on rather than a new root: its disjunctions are
    kept and its leaves are the open leaves, each with its stored bound (`_walk`;
    raises ValueError on a tree whose nodes or duals do not fit this LP). No basis or
    point is stored, so a stored leaf's LP is solved again (from the last basis HiGHS
    has, cold at first) when it is first the weakest, then expanded as usual; `root_bound`
    is then the stored tree's bound. So the budgets of several runs add up."""
    if branching not in BRANCHINGS:
        raise ValueError(f"unknown branching {branching!r}: one of {', '.join(BRANCHINGS)}")
    began = time.perf_counter()
    prio = np.zeros(lp.cost.size) if priority is None else np.asarray(priority, np.float64)
    tree = None if start is None else copy.deepcopy(start)
    stored = [] if tree is None else list(_walk(lp, tree, branchable, kinds))
    solver = _Solver(lp, branchable, cap, time_limit, [_group(g) for g in groups],
                     prio, threads, pick, cuts, cut_rounds, branching)
    # an open leaf keeps its LP's basis, for its children, while the bases kept hold at most
    # BASIS_ENTRIES statuses in all (one byte each)
    room = BASIS_ENTRIES // (lp.cost.size + lp.rlo.size + 1)

    def kept(basis: Any) -> Any:
        nonlocal room
        if basis is None or room <= 0:
            return None
        room -= 1
        return basis

    root: dict[str, Any] = {} if tree is None else tree
    if stored:  # the stored tree's leaves, open, their LPs not solved in this run
        heap = [_Node(b, k, path, leaf, None, False, None, fresh=False)
                for k, (leaf, path, _, _, b) in enumerate(stored)]
        heapq.heapify(heap)
        duals = {id(leaf): (y, mu) for leaf, _, y, mu, _ in stored}
        root_bound = min(b for *_, b in stored)
        serial, leaves = len(stored), len(stored)
    else:
        bound, y, mu, split = solver.solve([], None)
        root_bound = bound
        root.update(_leaf(y, mu))
        heap = [_Node(bound, 0, [], root, split, solver.optimal, kept(solver.basis))]
        duals = {id(root): (y, mu)}
        serial, leaves = 1, 1
    status = "stopped"
    while heap:
        node = heap[0]
        if node.bound >= cap:
            status = "closed"
            break
        if not node.fresh:  # a stored leaf: its LP solved (from its stored duals) for a split
            if time.perf_counter() - began >= time_limit or leaves >= max_leaves:
                status = "limit"
                break
            heapq.heappop(heap)
            b, y, mu, split = solver.solve(node.path, duals[id(node.leaf)])
            duals[id(node.leaf)] = (y, mu)
            node.leaf.clear()
            node.leaf.update(_leaf(y, mu))
            basis = kept(solver.basis) if split is not None and b < cap else None
            heapq.heappush(heap, _Node(b, node.serial, node.path, node.leaf, split, solver.optimal,
                                       basis))
            continue
        if node.split is None:
            status = ("no disjunction left at the weakest leaf" if node.solved
                      else "the weakest leaf's LP stopped before its optimum")
            break
        if time.perf_counter() - began >= time_limit or leaves >= max_leaves:
            status = "limit"
            break
        heapq.heappop(heap)
        room += node.basis is not None
        parent = duals.pop(id(node.leaf))
        children, bounds = [], []
        for side in (node.split.down, node.split.up):
            path = node.path + [side]
            b, yc, muc, sc = solver.solve(path, parent, node.basis)
            leaf = _leaf(yc, muc)
            duals[id(leaf)] = (yc, muc)
            children.append(leaf)
            bounds.append(b)
            basis = kept(solver.basis) if sc is not None and b < cap else None  # to be expanded
            heapq.heappush(heap, _Node(b, serial, path, leaf, sc, solver.optimal, basis))
            serial += 1
        solver.learn(node.split, node.bound, (bounds[0], bounds[1]))
        node.leaf.clear()
        node.leaf.update({**node.split.fields, "down": children[0], "up": children[1]})
        leaves += 1
    proved = check_tree(solver.lp, root, branchable, kinds)
    return Grown(min(proved, cap) * scale, min(root_bound, cap) * scale, root,
                 count_leaves(root), solver.solved,
                 time.perf_counter() - began, status, solver.statuses, solver.lp, solver.cut_rows,
                 solver.strong, solver.branching, solver.parent_starts)
