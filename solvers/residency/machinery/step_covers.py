"""Per-step cover inequalities on each fast level's occupancy, added to the delivery relaxation.

(`cover_cuts.py` states covers over all fast levels at once for families of tensors, at
every step; here a cover is one level at one step, separated against the LP's point.)

The delivery relaxation (`delivery_bound.py`) counts a level's load at step j as the
*fractions* of tensors there, so two tensors that cannot share SRAM may each sit half in
it. On programs whose large activations live for two ops that is most of its gap
(mobilevit-s@nnpi: a depthwise convolution reads a 3.2 MB activation and writes another,
SRAM holds 4 MiB, so one of them is read or written at LLC speed, 4.7 µs; the LP serves
both half from SRAM and pays half). A cover inequality states the integer fact.

For tensor t, level l (with a capacity) and step j, let o(t, l, j) be the sum of the
model's columns that count t in l's capacity row at j as a whole tensor: its home column
y[t, l] if t is live at j, the window columns w[t, i, l, h] of an access i at j (every
home h), and the kept-window columns c[t, i, l, h] of an i whose accesses i - 1 and i
straddle j. At the step p + 1 after t's producer p (t live there), o(t, l, p + 1) is
instead y[t, l] plus the defining window's columns w[t, 0, l, h]: a defining window is
either kept to the next access, or evicted with `issue > p` and `due >= issue + 1`, so
that it holds up to `due - 1 >= p + 1`, or it serves every access (without an eviction
the home is never valid); in every case it occupies step p + 1. A *cover* of (l, j) is a set S of tensors whose sizes add up to more than
l's capacity; its row is

    sum over t in S of o(t, l, j)  <=  |S| - 1.

Why every valid solution's point (the one `delivery_bound.py`'s argument maps it to)
satisfies it: there, each of those columns is 0 or 1, and at most one of them is 1 for
one tensor (a home and a window are never in one level; only the home level h's window
columns can be 1; one window serves an access; a kept window serves no access at j), so
o(t, l, j) is 0 or 1, and it is 1 only when t occupies l at step j with its whole size
(a home live at j, a window whose `first .. last` contains j, or one kept between two
accesses it serves, which occupies every step between: steps 1 and 5 of
`access_bound.py`'s argument). All of S occupying l at j would load it beyond its
capacity, which a valid solution never does; so at most |S| - 1 of them do, and the row
holds. The rows cut off no valid solution, so the relaxation with them still bounds
every valid solution of latency at most the ceiling, and weak duality on it (every
column bounded) turns any dual vector into a proven bound.

Copy rows, added first: a copy moves only in the intervals from its earliest issue to
its due op (a prefetch for access i: from t's producer + 1, or its live start, to k_i - 1;
an eviction: from producer + 1 to the last access - 1), so the idle time of its channel
in those intervals covers its channel time: sum I[h, k] >= tau * f for each copy column
f (`access_bound.py`, step 4, for one copy alone). Where those intervals are empty (an
eviction of an activation read only by the op after its producer) the copy cannot
happen, which the span rows, on a grid, did not see.

The certificate (model `residency-delivery-step-cover`) stores the covers beside the duals
and the ceiling. A check rebuilds the delivery relaxation with that ceiling (at least a
latency the library has verified), checks every cover (a level with a capacity, a step
of the program, distinct tensors whose sizes exceed the capacity), appends its rows in
the stored order and recomputes the weak-duality bound: no solver.

`separate` finds covers a fractional point violates (per level and step, a greedy
cover of the tensors most in the level, made minimal), and `cover_bound` alternates
solving and separating until no violated cover is found or its time is up.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from memplace.model import Instance
from memplace.solvers.box_lp import AddedRow, BoxLP
from memplace.solvers.residency.machinery import delivery_bound
from memplace.solvers.residency.machinery.delivery_bound import DeliveryModel

VIOLATION = 1e-4  # a cover row is added when the point exceeds it by this much
MAX_ROUNDS = 30


@dataclass(frozen=True)
class Cover:
    """Tensors that cannot all occupy `level` at `step`."""

    level: int
    step: int
    tensors: tuple[int, ...]

    def to_json(self) -> list[Any]:
        return [self.level, self.step, list(self.tensors)]


def bounded_levels(inst: Instance) -> list[int]:
    return [l for l in range(inst.n_levels)
            if not (l == inst.n_levels - 1 and inst.levels[l].capacity is None)]


def occupancy(model: DeliveryModel) -> dict[tuple[int, int], dict[int, list[int]]]:
    """o(t, l, j) of the module docstring as column lists: {(l, j): {t: columns}}, for the
    levels with a capacity (a model of the whole program)."""
    inst = model.instance
    n = inst.n_ops
    out: dict[tuple[int, int], dict[int, list[int]]] = {}
    for l in bounded_levels(inst):
        for t in np.flatnonzero(model.homes[:, l] >= 0).tolist():
            col = int(model.homes[t, l])
            for j in range(int(inst.start[t]), int(inst.end[t]) + 1):
                out.setdefault((l, j), {}).setdefault(t, []).append(col)
    for t, tc in model.columns.items():
        for i, k in enumerate(tc.ops):
            for (l, _), col in tc.windows[i].items():
                out.setdefault((l, k), {}).setdefault(t, []).append(col)
            for (l, _), col in tc.kept[i].items():
                steps = range(tc.ops[i - 1] + 1, k) if i else range(0, k)
                for j in steps:
                    if 0 <= j < n:
                        out.setdefault((l, j), {}).setdefault(t, []).append(col)
    for t, tc in model.columns.items():  # the defining window still holds the step after
        p = inst.tensors[t]["producer"]
        if p is None or not tc.ops or tc.ops[0] != p or int(inst.end[t]) <= p:
            continue
        for l in bounded_levels(inst):
            cols = [col for (lw, _), col in tc.windows[0].items() if lw == l]
            if not cols:
                continue
            home = [int(model.homes[t, l])] if model.homes[t, l] >= 0 else []
            out.setdefault((l, p + 1), {})[t] = home + cols
    return out


def valid_cover(inst: Instance, raw: Any) -> Cover | None:
    """`raw` ([level, step, [tensors]]) as a Cover if it is one (module docstring), else None."""
    if not isinstance(raw, (list, tuple)) or len(raw) != 3:
        return None
    level, step, tensors = raw
    ints = [level, step] + (list(tensors) if isinstance(tensors, (list, tuple)) else [None])
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in ints):
        return None
    if level not in bounded_levels(inst) or not 0 <= step < inst.n_ops:
        return None
    if len(set(tensors)) != len(tensors) or not all(0 <= t < inst.n_tensors for t in tensors):
        return None
    if sum(int(inst.size[t]) for t in tensors) <= int(inst.capacity[level]):
        return None
    return Cover(level, step, tuple(tensors))


def _append(model: DeliveryModel, rows: list[AddedRow]) -> DeliveryModel:
    """The model with rows (columns, values, lower, upper) appended in order."""
    return replace(model, lp=model.lp.with_rows(rows))


def with_copy_rows(model: DeliveryModel) -> DeliveryModel:
    """The model with one row per copy column: the idle time of its channel in the
    intervals it can move in covers it (module docstring)."""
    rows = []
    for h, copies in enumerate(model.copies):
        for col, tau, earliest, due in copies:
            idle = [model.idle[h][k] for k in range(max(earliest, 0), due)]
            rows.append((idle + [col], [1.0] * len(idle) + [-tau], 0.0, math.inf))
    return _append(model, rows)


def with_covers(model: DeliveryModel, covers: list[Cover],
                occ: dict[tuple[int, int], dict[int, list[int]]] | None = None) -> DeliveryModel:
    """The model with one row per cover appended (in order)."""
    occ = occupancy(model) if occ is None else occ
    return _append(model, _cover_rows(covers, occ))


def _cover_rows(covers: list[Cover], occ: dict[tuple[int, int], dict[int, list[int]]]
                ) -> list[AddedRow]:
    """One row (columns, values, lower, upper) per cover, in order."""
    rows = []
    for cover in covers:
        at = occ.get((cover.level, cover.step), {})
        cols = [col for t in cover.tensors for col in at.get(t, [])]
        rows.append((cols, [1.0] * len(cols), -math.inf, float(len(cover.tensors) - 1)))
    return rows


def _greedy(inst: Instance, level: int, values: dict[int, float]) -> tuple[int, ...] | None:
    """A minimal cover that the point's values violate, if the greedy finds one."""
    cap = int(inst.capacity[level])
    best = None
    for key in (lambda t: (1.0 - values[t], -int(inst.size[t])),
                lambda t: ((1.0 - values[t]) / float(inst.size[t]), -int(inst.size[t]))):
        order = sorted(values, key=key)
        chosen, total = [], 0
        for t in order:
            chosen.append(t)
            total += int(inst.size[t])
            if total > cap:
                break
        if total <= cap:
            return None
        # minimal: drop the members least in the level while the rest still covers
        for t in sorted(chosen, key=lambda u: values[u]):
            if total - int(inst.size[t]) > cap:
                chosen.remove(t)
                total -= int(inst.size[t])
        slack = sum(1.0 - values[t] for t in chosen)
        if slack < 1.0 - VIOLATION and (best is None or slack < best[0]):
            best = (slack, tuple(sorted(chosen)))
    return None if best is None else best[1]


def separate(model: DeliveryModel, x: np.ndarray,
             occ: dict[tuple[int, int], dict[int, list[int]]]) -> list[Cover]:
    """Covers the point x violates, at most one per level and step."""
    inst = model.instance
    found = []
    for (l, j), tensors in sorted(occ.items()):
        values = {t: float(x[cols].sum()) for t, cols in tensors.items()}
        values = {t: min(v, 1.0) for t, v in values.items() if v > 1e-6}
        if sum(int(inst.size[t]) for t in values) <= int(inst.capacity[l]):
            continue
        cover = _greedy(inst, l, values)
        if cover is not None:
            found.append(Cover(l, j, cover))
    return found


def solve(lp: BoxLP, time_limit: float) -> tuple[str, np.ndarray | None, np.ndarray | None]:
    """HiGHS on `lp` (one thread, seed 0): its status, its point when optimal and its row
    duals when valid (else None)."""
    from memplace.solvers.highs import new_highs
    h = new_highs(1, 0, time_limit)
    h.passModel(lp.highs_lp())
    h.run()
    status = h.modelStatusToString(h.getModelStatus())
    sol = h.getSolution()
    x = np.asarray(sol.col_value, np.float64) if status == "Optimal" else None
    return status, x, (np.asarray(sol.row_dual, np.float64) if sol.dual_valid else None)


@dataclass
class CoverBound:
    """The proven bound (seconds, -inf if none), the covers, the row duals of the model
    with them, the root LP's bound, how the rounds went, and the LP's point with the
    covers kept (None if that solve stopped early)."""

    bound: float
    covers: list[Cover]
    row_dual: np.ndarray | None
    root_bound: float
    rounds: int
    seconds: float
    status: str
    point: np.ndarray | None = None


def cover_bound(inst: Instance, ceiling: float, time_limit: float = 600.0,
                max_rounds: int = MAX_ROUNDS, op_rows: bool = False) -> CoverBound:
    """The delivery relaxation (with its op rows, given `op_rows`) with cover rows found
    round by round (module docstring)."""
    began = time.perf_counter()
    deadline = began + time_limit
    try:
        base = with_copy_rows(delivery_bound.formulate(inst, ceiling, deadline, op_rows=op_rows))
    except TimeoutError as late:
        return CoverBound(-math.inf, [], None, -math.inf, 0, time.perf_counter() - began,
                          f"not built in time ({late})")
    occ = occupancy(base)
    covers: list[Cover] = []
    best = (-math.inf, [], None, None)
    root, rounds, status = -math.inf, 0, "no violated cover"
    while True:
        model = with_covers(base, covers, occ)
        left = deadline - time.perf_counter()
        if left <= 0.05:
            status = "time limit"
            break
        lp_status, x, z = solve(model.lp, left)
        if z is not None:
            bound = delivery_bound.dual_bound(model, z)
            root = bound if rounds == 0 else root
            if bound > best[0]:
                best = (bound, list(covers), z, x)
        if x is None:
            status = f"LP {lp_status}"
            break
        rounds += 1
        if rounds > max_rounds:
            status = "round limit"
            break
        new = [cv for cv in separate(model, x, occ) if cv not in set(covers)]
        if not new:
            break
        covers += new
    bound, kept, z, x = best
    return CoverBound(bound, kept, z, root, rounds, time.perf_counter() - began, status, x)


def _rebuilt(inst: Instance, ceiling: float, raw_covers: Any, rows: int, op_rows: bool = False):
    """The step-cover LP a certificate names, rebuilt from the instance with its covers
    (and the op rows, given `op_rows`), or None when a cover is not one or the row count
    differs from the stored one."""
    if not isinstance(raw_covers, list):
        return None
    covers = [valid_cover(inst, raw) for raw in raw_covers]
    if any(cv is None for cv in covers):
        return None
    model = with_covers(with_copy_rows(delivery_bound.formulate(inst, ceiling, op_rows=op_rows)), covers)
    return model if rows == model.lp.rlo.size else None


def check(inst: Instance, ceiling: float, raw_covers: Any, rows: int, index: Any, value: Any,
          op_rows: bool = False) -> float:
    """The bound (seconds, before any margin) a certificate proves: the delivery
    relaxation with `ceiling` (and its op rows, given `op_rows`), the covers appended, the
    dual vector (`rows` long, sparse as `index`/`value`) through weak duality; -inf when a
    cover is not one or the duals do not fit."""
    model = _rebuilt(inst, ceiling, raw_covers, rows, op_rows)
    if model is None:
        return -math.inf
    try:
        idx = np.asarray(index, np.int64)
        val = np.asarray(value, np.float64)
    except (TypeError, ValueError):
        return -math.inf
    if idx.shape != val.shape or idx.ndim != 1 or (idx.size and (idx.min() < 0 or idx.max() >= rows)):
        return -math.inf
    z = np.zeros(rows)
    z[idx] = val
    if not np.isfinite(z).all():
        return -math.inf
    return delivery_bound.dual_bound(model, z)


def branching(model: DeliveryModel, point: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The columns a tree over this LP may branch on, and their priority: every home,
    window and kept-window column, each 0 or 1 at every valid solution's point (steps 1-3
    of `access_bound.py`'s argument). The priority is the tensor's size or, given the LP's
    `point`, the size times the LP's time of the interval of the op the column serves (a
    home: the costliest of the tensor's ops), so the tree first settles the large tensors
    of the ops where the LP spends its time (xla-train@nnpi: the last eleven ops, 2 MiB
    tensors against 4 MiB of SRAM, half of the LP's time) rather than the large tensors of
    cheap ops. Which columns are branchable does not depend on it."""
    branchable = np.zeros(model.lp.cost.size, bool)
    priority = np.zeros(model.lp.cost.size)
    # E[k], interval k's time, is column k of a whole program's model (`delivery_bound._Builder`)
    spent = np.ones(model.instance.n_ops) if point is None else \
        np.maximum(np.asarray(point[:model.instance.n_ops], np.float64), 0.0)
    for t, tc in model.columns.items():
        size = float(model.instance.size[t])
        for i, k in enumerate(tc.ops):
            for c in list(tc.windows[i].values()) + list(tc.kept[i].values()):
                priority[c] = size * spent[k]
        homes = [int(c) for c in model.homes[t] if c >= 0]
        priority[homes] = size * max((spent[k] for k in tc.ops), default=0.0)
        branchable[homes] = True
        branchable[[c for w in tc.windows for c in w.values()] + [c for k in tc.kept for c in k.values()]] = True
    return branchable, priority


@dataclass
class CoverTree:
    """A tree over the step-cover LP: the bound it proves (seconds), its root's, its covers."""

    bound: float
    root_bound: float
    covers: list[Cover]
    tree: dict[str, Any] | None
    leaves: int
    rows: int
    root: CoverBound  # the cover rounds the tree grew from: their duals certify the root alone


def grow_tree(inst: Instance, ceiling: float, time_limit: float, max_leaves: int,
              leaf_rounds: int = 0, op_rows: bool = False) -> CoverTree:
    """The covers of `cover_bound` (a third of the time at most), then a tree over the LP
    with them (`lp_tree.grow`, the columns of `branching`'s priority first) for the rest.
    With `leaf_rounds`, cut and branch: covers are separated again at every node's point
    (up to that many rounds a node), where branching has made homes and windows whole and
    covers bite that did not at the root's fractional point; each is appended to the one
    list the certificate stores, since a cover holds at every valid solution. With
    `op_rows`, over the delivery relaxation with its op rows."""
    from memplace.solvers import lp_tree
    began = time.perf_counter()
    got = cover_bound(inst, ceiling, time_limit / 3, op_rows=op_rows)
    base = with_copy_rows(delivery_bound.formulate(inst, ceiling, op_rows=op_rows))
    occ = occupancy(base)
    model = with_covers(base, got.covers, occ)
    branchable, priority = branching(model, got.point)
    covers = list(got.covers)
    known = set(covers)

    def cuts(x: np.ndarray) -> list[AddedRow]:
        new = [cv for cv in separate(model, x, occ) if cv not in known]
        known.update(new)
        covers.extend(new)
        return _cover_rows(new, occ)

    left = max(1.0, began + time_limit - time.perf_counter())
    grown = lp_tree.grow(model.lp, branchable, ceiling / model.scale, left, max_leaves, [],
                         priority, model.scale, cuts=cuts if leaf_rounds else None,
                         cut_rounds=leaf_rounds)
    return CoverTree(grown.bound, grown.root_bound, covers, grown.tree, grown.leaves,
                     int(grown.lp.rlo.size), got)


def check_tree(inst: Instance, ceiling: float, raw_covers: Any, rows: int, tree: Any,
               op_rows: bool = False) -> float:
    """The bound (seconds, before any margin, at most the ceiling) a tree certificate
    proves: the LP rebuilt with the covers (and the op rows, given `op_rows`), every
    disjunction on branchable columns (`branching`), the least leaf bound by weak duality;
    -inf if anything does not fit."""
    from memplace.solvers import lp_tree
    model = _rebuilt(inst, ceiling, raw_covers, rows, op_rows) if isinstance(tree, dict) else None
    if model is None:
        return -math.inf
    branchable, _ = branching(model)
    return min(lp_tree.check_tree(model.lp, tree, branchable) * model.scale, ceiling)
