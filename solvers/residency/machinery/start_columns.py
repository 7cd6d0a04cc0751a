"""Start columns for a few large tensors inside the step-cover LP, and a tree on them.

The delivery relaxation (`delivery_bound.py`) charges a prefetch window to its fast level
only for the bytes its copy has moved so far (D - N), so the copy of a large tensor
trickles into whatever the other tensors leave free. A real window holds its whole size
from its copy's start (spec section 10: a window occupies `start .. hold`). The start-binary
model (`relaxation.py`'s `binary_starts`, tree `residency-relaxation-tree`) says so for
every window and is out of reach at 200 ops (111,889 columns on xla-train@nnpi). Here only
the prefetches of a few chosen tensors S get start columns; every other tensor stays in
the fluid delivery columns, and the copy and step-cover rows of `step_covers.py` stay.

For each prefetch column f = f[t, i, l, h] of a tensor t in S (home h, window level l,
first serving access i at op k = k_i, earliest issue e: producer + 1, or the live start),
over the steps j = e .. k - 1:

    Y[j]   the window has started by step j (its copy issued before an op <= j)
    F[j]   the share of its copy moved by the end of interval j
    Y[j] >= Y[j - 1],  F[j] >= F[j - 1],  F[j] <= Y[j],  F[k - 1] = f,  Y[k - 1] = f
    channel row of h in interval j: + tau * (F[j] - F[j - 1])   (tau its channel time)
    capacity row of l at step j:    + size * Y[j]
    (no N and D terms for it: `delivery_bound.formulate(..., apart=S)` leaves them out)

Why every valid solution (latency at most the ceiling) is a point of this LP: map it as
`delivery_bound.py` does (steps 1-7), the delivery columns N and D counting the copies of
the tensors outside S only, and for each copy of S set Y[j] = [start <= j] and F[j] to
the share it has moved by the end of interval j (0 and 0 where f = 0).

1. A prefetch window first serving access i has e <= start < first <= k (spec section
   10: `start >= v >= e`, `start < first`); its copy joins its queue after op start's
   wait and is complete before op first begins, so it moves in intervals start .. k - 1
   only: F[j] = 0 while start > j (F <= Y), F and Y are non-decreasing, and at k - 1 both
   are 1 = f. Where e > k - 1 there is no such step and no such copy: f = 0 (a row says so).
2. Channels: in interval j channel h moves at most its idle time's worth over all its
   copies (section 11); the channel row now counts the counted copies outside S through
   D and those of S through F's increments, a subset of its copies.
3. Capacity: the window occupies every step from start to hold >= last >= k with its
   whole size, so size * Y[j] is at most what it takes at j < k. It serves no access at
   an op <= j (its first served access is k), so the w and c terms (windows serving an
   access at j, or kept between two accesses around j) count other windows, and the
   delivery term counts the bytes of other copies only: the row's left-hand side stays
   at most the true load (steps 7 of `delivery_bound.py`, with this copy moved out of D).
4. The step covers (`step_covers.py`) may count Y too: o(t, l, j) gains Y[j] of t's
   windows in l, which is 1 only when that window occupies l at j with its whole size,
   and at most one of t's columns at (l, j) is 1 (one home; the windows of one tensor
   have disjoint occupancies, and Y's window serves no access at j).
5. Y is 0 or 1 at every such point, as are the home, window and kept-window columns, so
   a tree branching on them (`lp_tree.py`) covers every valid solution with its leaves.

So each leaf's weak-duality bound holds for the solutions in its branch, and the least
of them (at most the ceiling) bounds the optimum. With Y fractional the LP proves about
what the step-cover LP proves (a start spread over five steps charges a fifth each step,
as the fluid arrival does); the branches on Y are what charge the whole window.

The certificate (model `residency-delivery-start-tree`, `certificate.py`) stores S, the
covers, the ceiling, the row count and the tree; the check rebuilds this LP and walks the
tree: no solver.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from memplace.model import Instance
from memplace.solvers.box_lp import BoxLP
from memplace.solvers.residency.machinery import delivery_bound, step_covers
from memplace.solvers.residency.machinery.delivery_bound import DeliveryModel
from memplace.solvers.residency.machinery.step_covers import Cover

CHOSEN = 6  # tensors given start columns, by default
SMALLEST = 1 / 16  # of the smallest fast level's capacity: smaller tensors are not chosen
START_PRIORITY = 1e9  # the tree settles the start columns before anything else


@dataclass
class Starts:
    """The start columns Y and shares F of one prefetch (t, access i, window level l,
    home h) over steps `first .. first + len(Y) - 1`."""

    tensor: int
    access: int
    level: int
    home: int
    first: int
    Y: list[int]
    F: list[int]


@dataclass
class StartModel:
    """The step-cover LP with start columns (module docstring), its starts and chosen tensors."""

    model: DeliveryModel
    starts: list[Starts]
    tensors: tuple[int, ...]


class _Extension:
    """Columns, new rows and entries in existing rows appended to a BoxLP."""

    def __init__(self, lp: BoxLP) -> None:
        self.lp, self.n_cols, self.n_rows = lp, lp.cost.size, lp.rlo.size
        self.cols: list[tuple[float, float]] = []
        self.rows: list[tuple[float, float]] = []
        self.r: list[int] = []
        self.c: list[int] = []
        self.v: list[float] = []

    def col(self) -> int:
        self.cols.append((0.0, 1.0))
        return self.n_cols + len(self.cols) - 1

    def row(self, terms: list[tuple[int, float]], lo: float = -math.inf, hi: float = math.inf) -> int:
        row = self.n_rows + len(self.rows)
        self.rows.append((lo, hi))
        self.add(row, terms)
        return row

    def add(self, row: int, terms: list[tuple[int, float]]) -> None:
        self.r += [row] * len(terms)
        self.c += [col for col, _ in terms]
        self.v += [val for _, val in terms]

    def lp_with(self) -> BoxLP:
        p = self.lp
        k = len(self.cols)
        integer = None if p.integer is None else np.concatenate([p.integer, np.zeros(k, bool)])
        return replace(
            p, cost=np.concatenate([p.cost, np.zeros(k)]),
            lo=np.concatenate([p.lo, np.zeros(k)]), hi=np.concatenate([p.hi, np.ones(k)]),
            rlo=np.concatenate([p.rlo, np.asarray([lo for lo, _ in self.rows], np.float64)]),
            rhi=np.concatenate([p.rhi, np.asarray([hi for _, hi in self.rows], np.float64)]),
            r=np.concatenate([p.r, np.asarray(self.r, np.int64)]),
            c=np.concatenate([p.c, np.asarray(self.c, np.int64)]),
            v=np.concatenate([p.v, np.asarray(self.v, np.float64)]), integer=integer)


def formulate(inst: Instance, ceiling: float, tensors: tuple[int, ...],
              deadline: float = math.inf, ops: tuple[int, int] | None = None) -> StartModel:
    """The delivery relaxation with copy rows, the prefetches of `tensors` given start
    columns (module docstring); `ceiling` is a valid latency (seconds). With `ops = (lo,
    hi)`, of those intervals alone (`delivery_bound.formulate`'s block, without copy rows;
    steps are the block's, a window may start before it, and the first interval's moves
    are not charged to a channel when the block does not start the program)."""
    if any(not 0 <= t < inst.n_tensors for t in tensors) or len(set(tensors)) != len(tensors):
        raise ValueError(f"tensors must be distinct tensors of {inst.name}: {list(tensors)}")
    base = delivery_bound.formulate(inst, ceiling, deadline, ops, apart=frozenset(tensors))
    inside = ops is None or ops[0] == 0
    lo = 0 if ops is None else ops[0]  # `base.capacity` is keyed by program step
    if ops is None:  # a copy row assumes the copy moves inside the model's intervals
        base = step_covers.with_copy_rows(base)
    ext = _Extension(base.lp)
    channel: dict[tuple[int, int], list[tuple[int, float]]] = {}
    load: dict[tuple[int, int], list[tuple[int, float]]] = {}
    starts: list[Starts] = []
    for t, i, l, h, f, tau, earliest, due in base.apart:
        steps = range(max(earliest, 0), due)
        if not steps:
            ext.row([(f, 1.0)], hi=0.0)  # no interval to move in: no such copy
            continue
        Y = [ext.col() for _ in steps]
        F = [ext.col() for _ in steps]
        size = float(inst.size[t]) / float(inst.capacity[l])
        for m, j in enumerate(steps):
            if m:
                ext.row([(Y[m], 1.0), (Y[m - 1], -1.0)], lo=0.0)
                ext.row([(F[m], 1.0), (F[m - 1], -1.0)], lo=0.0)
            ext.row([(F[m], 1.0), (Y[m], -1.0)], hi=0.0)
            if j or inside:
                channel.setdefault((h, j), []).append((F[m], tau))
            if m + 1 < len(F):
                channel.setdefault((h, j + 1), []).append((F[m], -tau))
            load.setdefault((l, j), []).append((Y[m], size))
        ext.row([(F[-1], 1.0), (f, -1.0)], 0.0, 0.0)
        ext.row([(Y[-1], 1.0), (f, -1.0)], 0.0, 0.0)
        starts.append(Starts(t, i, l, h, steps.start, Y, F))
    for (h, k), terms in sorted(channel.items()):
        row = base.channel_rows.get((h, k))
        if row is None:
            ext.row(terms + [(base.idle[h][k], -1.0)], hi=0.0)
        else:
            ext.add(row, terms)
    for (l, j), terms in sorted(load.items()):
        row = base.capacity.get((l, j + lo))
        if row is None:
            ext.row(terms, hi=1.0)
        else:
            ext.add(row, terms)
    return StartModel(replace(base, lp=ext.lp_with()), starts, tuple(tensors))


def occupancy(sm: StartModel) -> dict[tuple[int, int], dict[int, list[int]]]:
    """`step_covers.occupancy` with the start columns counted (module docstring, step 4)."""
    occ = step_covers.occupancy(sm.model)
    for s in sm.starts:
        for m, y in enumerate(s.Y):
            occ.setdefault((s.level, s.first + m), {}).setdefault(s.tensor, []).append(y)
    return occ


def branching(sm: StartModel, point: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The columns a tree may branch on (`step_covers.branching`'s and every Y) and their
    priority: the Y columns first, those of larger tensors at costlier ops first."""
    branchable, priority = step_covers.branching(sm.model, point)
    n = sm.model.instance.n_ops
    spent = np.ones(n) if point is None else np.maximum(np.asarray(point[:n], np.float64), 0.0)
    for s in sm.starts:
        k = sm.model.columns[s.tensor].ops[s.access]
        branchable[s.Y] = True
        priority[s.Y] = START_PRIORITY + float(sm.model.instance.size[s.tensor]) * spent[k]
    return branchable, priority


def choose(inst: Instance, ceiling: float, count: int = CHOSEN,
           time_limit: float = 120.0) -> tuple[int, ...]:
    """The tensors to give start columns: of those with a prefetch of at least SMALLEST of
    the smallest fast level's capacity, the `count` largest by size times the time the
    delivery LP (with copy rows) spends at their costliest op. Any choice is valid; this
    one aims at the large tensors of the ops where the LP spends its time."""
    model = step_covers.with_copy_rows(delivery_bound.formulate(inst, ceiling))
    _, x, _ = step_covers.solve(model.lp, max(0.05, time_limit))
    spent = np.ones(inst.n_ops) if x is None else np.maximum(x[:inst.n_ops], 0.0)
    floor = SMALLEST * float(min(inst.capacity[l] for l in step_covers.bounded_levels(inst)))
    score = {}
    for t, tc in model.columns.items():
        producer = inst.tensors[t]["producer"]
        # a prefetch can serve an access in a faster level, other than the producer's write
        copied = any(w for i, w in enumerate(tc.windows) if not (i == 0 and producer == tc.ops[0]))
        if copied and inst.size[t] >= floor:
            score[t] = float(inst.size[t]) * max(spent[k] for k in tc.ops)
    return tuple(sorted(sorted(score, key=lambda t: -score[t])[:count]))


@dataclass
class StartBound:
    """What `bound` proves (seconds) and how: the covers, the tree, its size, the root's bound."""

    bound: float
    root_bound: float
    cover_bound: float
    tensors: tuple[int, ...]
    covers: list[Cover]
    tree: dict[str, Any] | None
    leaves: int
    rows: int
    seconds: float
    status: str


def bound(inst: Instance, ceiling: float, time_limit: float, max_leaves: int,
          tensors: tuple[int, ...] | None = None, max_rounds: int = step_covers.MAX_ROUNDS) -> StartBound:
    """Choose the tensors (unless given), find step covers against the LP with start
    columns (a third of the time at most, as `step_covers.grow_tree`), then grow a tree
    over it (`lp_tree.grow`, the start columns first) for the rest."""
    from memplace.solvers import lp_tree
    began = time.perf_counter()
    deadline = began + time_limit
    if tensors is None:
        tensors = choose(inst, ceiling, time_limit=time_limit / 6)
    sm = formulate(inst, ceiling, tuple(tensors))
    occ = occupancy(sm)
    covers: list[Cover] = []
    best: tuple[float, list[Cover], np.ndarray | None] = (-math.inf, [], None)
    rounds = 0
    while rounds <= max_rounds:
        left = began + time_limit / 3 - time.perf_counter()
        if left <= 0.05:
            break
        model = step_covers.with_covers(sm.model, covers, occ)
        _, x, z = step_covers.solve(model.lp, left)
        if z is not None:
            got = delivery_bound.dual_bound(model, z)
            if got > best[0]:
                best = (got, list(covers), x)
        if x is None:
            break
        rounds += 1
        new = [cv for cv in step_covers.separate(model, x, occ) if cv not in set(covers)]
        if not new:
            break
        covers += new
    cover_value, covers, point = best
    full = replace(sm, model=step_covers.with_covers(sm.model, covers, occ))
    branchable, priority = branching(full, point)
    left = max(1.0, deadline - time.perf_counter())
    grown = lp_tree.grow(full.model.lp, branchable, ceiling / full.model.scale, left, max_leaves, [],
                         priority, full.model.scale)
    return StartBound(grown.bound, grown.root_bound, cover_value, tuple(tensors), covers, grown.tree,
                      grown.leaves, int(full.model.lp.rlo.size), time.perf_counter() - began, grown.status)


def valid_tensors(inst: Instance, raw: Any) -> tuple[int, ...] | None:
    """`raw` as the chosen tensors if it is a list of distinct tensor indices, else None."""
    if not isinstance(raw, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in raw):
        return None
    if len(set(raw)) != len(raw) or not all(0 <= t < inst.n_tensors for t in raw):
        return None
    return tuple(raw)


def check(inst: Instance, ceiling: float, raw_tensors: Any, raw_covers: Any, rows: int, tree: Any) -> float:
    """The bound (seconds, before any margin, at most the ceiling) a certificate proves:
    the LP rebuilt with the stored tensors and covers, every disjunction on branchable
    columns (`branching`), the least leaf bound by weak duality; -inf if anything does
    not fit. `ceiling` must be a valid latency: the caller checks that."""
    from memplace.solvers import lp_tree
    tensors = valid_tensors(inst, raw_tensors)
    if tensors is None or not isinstance(raw_covers, list) or not isinstance(tree, dict):
        return -math.inf
    covers = [step_covers.valid_cover(inst, raw) for raw in raw_covers]
    if any(cv is None for cv in covers):
        return -math.inf
    sm = formulate(inst, ceiling, tensors)
    full = replace(sm, model=step_covers.with_covers(sm.model, covers, occupancy(sm)))
    if rows != full.model.lp.rlo.size:
        return -math.inf
    branchable, _ = branching(full)
    return min(lp_tree.check_tree(full.model.lp, tree, branchable) * full.model.scale, ceiling)
