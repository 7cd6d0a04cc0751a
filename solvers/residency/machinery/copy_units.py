"""Whole copies in the delivery relaxation's charge: units of delivered bytes, branched on.

The delivery relaxation (`delivery_bound.py`) charges the prefetches h -> l that are not
yet due at step j to level l as far as their bytes have arrived, D[h, l, j] - N[h, l, j - 1]
(its step 7). A real window holds its whole size from its copy's issue, and a copy that
has moved any byte was issued (section 11: a copy moves only after it joins its queue),
so the true charge is the whole size of every copy that has started. Where every copy
counted is a multiple of a unit u (electra-small@nnpi: its DRAM weights are 1 or 4 units
of 262,144 B), the started copies' sizes add up to a multiple of u that is at least the
bytes moved: the charge is at least u * ceil(D / u) - N. With a FIFO read queue the LP's
fluid D is off by at most one partly moved copy per channel, but that copy is what lets
the LP keep a channel busy into space a real schedule must leave free. The ceiling is no
linear row; this module adds columns that can state it and a disjunction to branch on.

Units of a pair (h, l), with u its unit in bytes (any positive integer: the argument
only needs the copies it counts to be multiples of it; stored in the certificate, the
split below re-derived from the instance's sizes): the *unit copies* are the prefetches
h -> l (the f columns of `delivery_bound`) of tensors whose size is a multiple of u, the
others (activations of other sizes, odd weights) are kept on the relaxation's fluid
charge. In channel time (units of `copy_bandwidth_h * scale` bytes), per interval k:

    N_u[k]   the unit copies due by op k + 1: N_u[k] - N_u[k-1] = their f's due at k + 1
    D_u[k]   the unit copies' bytes moved by the end of interval k:
             D_u[k] >= N_u[k], D_u[k] >= D_u[k-1],
             D[k] - D_u[k] >= D[k-1] - D_u[k-1], D[k] - D_u[k] >= N[k] - N_u[k]
    C[k]     the charge of the unit copies started and not due at step k:
             C[k] >= D_u[k] - N_u[k-1]
    capacity row of l at step k: the relaxation's D[k] - N[k-1] replaced by
             C[k] + (D[k] - D_u[k]) - (N[k-1] - N_u[k-1])

Why a valid solution's point (the one `delivery_bound.py`'s argument maps it to) is
still feasible: set N_u, D_u to the due and moved bytes of the unit copies (so D - D_u,
N - N_u are those of the other copies: the same four delivery rows hold for them as for
D and N in its step 6, class by class) and C[k] to the whole size of every unit copy
h -> l whose window first serves an access after k and that has moved a byte by the end
of interval k. Each such copy was issued before an op <= k, so its window occupies step
k with its whole size and serves no access at an op <= k (step 7 there): the capacity
row counts it once, at most its size, and the other copies' moved part as before; so
the row's left-hand side stays at most the true load. C[k] >= its moved part, D_u[k] -
N_u[k - 1] (the due ones are complete and counted in both).

The disjunction (kind `delivered`, pair (h, l), step j, integer q >= 0):

    down: D_u[j] <= q * u          up: C[j] + N_u[j - 1] >= (q + 1) * u

Every valid solution's point satisfies one side: if its unit copies have moved more than
q units by the end of interval j, the copies that moved a byte (the due ones, complete,
N_u[j - 1], and those C[j] counts) have sizes that are multiples of u adding up to at
least the bytes moved, so to at least (q + 1) * u. (The sides are stated with a relative
slack of 1e-9 so that float rounding of the unit in channel time cuts off no point.)

Home units (the `coef` disjunctions of `lp_tree`): sum over tensors of (size / u) times
their home columns in the fast levels is an integer at every valid solution's point
(each home column is 0 or 1), so it is at most k or at least k + 1. Electra-small's LP
proves 144.747 us at most 107 units of 262,144 B in SRAM and LLC and 141.870 at 108 or
more: the 108 side keeps DRAM's channel busy with fluid copies into SRAM.

The certificate (model `residency-delivery-units-tree`): the ceiling, the units per pair
and a tree (`lp_tree`) whose nodes are integer sums on branchable columns (homes,
windows, kept windows: `step_covers.branching`) or `delivered` nodes; a check rebuilds
the LP from the instance (the delivery relaxation, its copy rows, the unit columns for
the stored units), confirms every node is one of these kinds for the instance (a pair
that has unit copies, a step of the program, an integer q >= 0; the rows come from the
rebuilt model, never from the file) and takes the least leaf bound by weak duality.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from memplace.model import Instance
from memplace.solvers import lp_tree
from memplace.solvers.residency.machinery import delivery_bound, step_covers
from memplace.solvers.residency.machinery.delivery_bound import DeliveryModel

KIND = "delivered"
SLACK = 1e-9  # relative, on both sides of a `delivered` disjunction
COVERED = 0.75  # a pair's default unit: the largest weight size whose multiples are this share
VIOLATION = 1e-4  # a `delivered` disjunction is proposed when its up side cuts this much (units)


@dataclass
class UnitPair:
    """The unit columns of one (home, window level) pair (module docstring)."""

    home: int
    level: int
    unit: int  # bytes
    tau: float  # one unit in channel time (model units)
    rate: float  # bytes per unit of channel time, over the level's capacity
    N: list[int]
    D: list[int]
    C: list[int]


@dataclass
class UnitModel:
    """The delivery relaxation with copy rows and unit columns."""

    model: DeliveryModel
    pairs: dict[tuple[int, int], UnitPair]


def default_units(inst: Instance, model: DeliveryModel) -> dict[tuple[int, int], int]:
    """Per pair with prefetches, the largest weight size (among weights that fit the
    window level) of which at least COVERED of those weights are multiples (by count:
    electra-small's 262,144 B, where by bytes its 15.6 MB embedding would take 1 KiB)."""
    units = {}
    weights = np.flatnonzero(inst.is_weight == 1)
    for (h, l) in sorted(model.delivered):
        sizes = inst.size[weights].astype(np.int64)
        sizes = sizes[(sizes > 0) & (sizes <= int(inst.capacity[l]))]
        for u in sorted(set(sizes.tolist()), reverse=True):
            if (sizes % u == 0).sum() >= COVERED * sizes.size:
                units[h, l] = int(u)
                break
    return units


def _extend(model: DeliveryModel, cols: list[tuple[float, float]], rows: list[tuple[list[tuple[int, float]], float, float]],
            entries: list[tuple[int, int, float]]) -> DeliveryModel:
    """The model with columns (lo, hi; cost 0), rows (terms, lo, hi) and entries (row,
    column, value) of existing rows appended."""
    p = model.lp
    n_rows = p.rlo.size
    r = [p.r, np.asarray([e[0] for e in entries], np.int64)]
    c = [p.c, np.asarray([e[1] for e in entries], np.int64)]
    v = [p.v, np.asarray([e[2] for e in entries], np.float64)]
    for q, (terms, _, _) in enumerate(rows):
        r.append(np.full(len(terms), n_rows + q, np.int64))
        c.append(np.asarray([col for col, _ in terms], np.int64))
        v.append(np.asarray([val for _, val in terms], np.float64))
    lp = replace(p, cost=np.concatenate([p.cost, np.zeros(len(cols))]),
                 lo=np.concatenate([p.lo, np.asarray([a for a, _ in cols], np.float64)]),
                 hi=np.concatenate([p.hi, np.asarray([b for _, b in cols], np.float64)]),
                 rlo=np.concatenate([p.rlo, np.asarray([a for _, a, _ in rows], np.float64)]),
                 rhi=np.concatenate([p.rhi, np.asarray([b for _, _, b in rows], np.float64)]),
                 r=np.concatenate(r), c=np.concatenate(c), v=np.concatenate(v))
    return replace(model, lp=lp)


def formulate(inst: Instance, ceiling: float, units: dict[tuple[int, int], int] | None = None,
              deadline: float = math.inf) -> UnitModel:
    """The delivery relaxation (a whole program), its copy rows (`step_covers`) and the
    unit columns of every pair given a unit (all pairs with a `default_units` unit if
    None); a pair without unit copies gets none. Raises TimeoutError past `deadline`."""
    base = step_covers.with_copy_rows(delivery_bound.formulate(inst, ceiling, deadline))
    units = default_units(inst, base) if units is None else units
    n = inst.n_ops
    start = base.lp.cost.size
    cols: list[tuple[float, float]] = []
    rows: list[tuple[list[tuple[int, float]], float, float]] = []
    entries: list[tuple[int, int, float]] = []
    pairs: dict[tuple[int, int], UnitPair] = {}

    def col(hi: float) -> int:
        cols.append((0.0, hi))
        return start + len(cols) - 1

    for (h, l), unit in sorted(units.items()):
        if (h, l) not in base.delivered or unit <= 0:
            continue
        due = [[(f, v) for f, v in base.due[h, l][k] if int(inst.size[base.prefetched[f]]) % unit == 0]
               for k in range(n)]
        total = sum(v for terms in due for _, v in terms)
        if total <= 0:
            continue
        cap = total * (1 + 1e-6) + 1e-9
        rate = float(inst.copy_bandwidth[h]) * base.scale
        pair = UnitPair(h, l, int(unit), unit / rate, rate / float(inst.capacity[l]),
                        [col(cap) for _ in range(n)], [col(cap) for _ in range(n)],
                        [col(cap) for _ in range(n)])
        N, D = base.delivered[h, l]
        Nu, Du, C = pair.N, pair.D, pair.C
        for k in range(n):
            rows.append(([(Nu[k], 1.0)] + ([(Nu[k - 1], -1.0)] if k else []) + [(f, -v) for f, v in due[k]],
                         0.0, 0.0))
            rows.append(([(Du[k], 1.0), (Nu[k], -1.0)], 0.0, math.inf))
            rows.append(([(D[k], 1.0), (Du[k], -1.0), (N[k], -1.0), (Nu[k], 1.0)], 0.0, math.inf))
            if k:
                rows.append(([(Du[k], 1.0), (Du[k - 1], -1.0)], 0.0, math.inf))
                rows.append(([(D[k], 1.0), (Du[k], -1.0), (D[k - 1], -1.0), (Du[k - 1], 1.0)], 0.0, math.inf))
            else:
                rows.append(([(D[0], 1.0), (Du[0], -1.0)], 0.0, math.inf))
            rows.append(([(C[k], 1.0), (Du[k], -1.0)] + ([(Nu[k - 1], 1.0)] if k else []), 0.0, math.inf))
            row = base.capacity[l, k]
            entries += [(row, C[k], pair.rate), (row, Du[k], -pair.rate)]
            if k:
                entries.append((row, Nu[k - 1], pair.rate))
        pairs[h, l] = pair
    return UnitModel(_extend(base, cols, rows, entries), pairs)


def delivered_rows(um: UnitModel, node: dict[str, Any]) -> tuple[lp_tree.Row, lp_tree.Row] | None:
    """A `delivered` node's two rows, re-derived from the model, or None when the node
    does not name a pair with unit copies, a step of the program and an integer q >= 0."""
    h, l, j, q = (node.get(key) for key in ("home", "level", "step", "q"))
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (h, l, j, q)):
        return None
    pair = um.pairs.get((h, l))
    if pair is None or not 0 <= j < len(pair.D) or q < 0:
        return None
    down = lp_tree.Row((pair.D[j],), (1.0,), q * pair.tau * (1 + SLACK), False)
    up_cols = (pair.C[j],) + ((pair.N[j - 1],) if j else ())
    up = lp_tree.Row(up_cols, (1.0,) * len(up_cols), (q + 1) * pair.tau * (1 - SLACK), True)
    return down, up


def kinds(um: UnitModel) -> lp_tree.Kinds:
    return {KIND: lambda node: delivered_rows(um, node)}


def home_groups(um: UnitModel) -> list[tuple[np.ndarray, np.ndarray]]:
    """Integer sums of home columns to branch on first: with the unit of the pair (last
    level, fastest level), the units (size / unit) of the weights homed in all fast levels
    together and in each fast level alone, over weights whose size is a multiple of it."""
    inst, homes = um.model.instance, um.model.homes
    L = inst.n_levels
    groups = []
    for unit in [p.unit for (h, l), p in um.pairs.items() if (h, l) == (L - 1, 0)]:
        ts = [t for t in range(inst.n_tensors) if inst.size[t] % unit == 0 and inst.is_weight[t] == 1]
        for levels in [list(range(L - 1))] + [[l] for l in range(L - 1)] if L > 2 else [[0]]:
            cols, coefs = [], []
            for t in ts:
                for l in levels:
                    if homes[t, l] >= 0:
                        cols.append(int(homes[t, l]))
                        coefs.append(int(inst.size[t]) // unit)
            if len(cols) >= 2:
                groups.append((np.asarray(cols, np.int64), np.asarray(coefs, np.float64)))
    return groups


def picker(um: UnitModel) -> lp_tree.Pick:
    """Propose the `delivered` disjunction whose up side cuts the point most where it
    costs: per pair and step, the units the up side adds to the charge, times the
    capacity row's dual; where no such row has a dual (a degenerate LP has other optimal
    duals: started from its parent's basis, HiGHS may return one that is zero there), the
    one that cuts the most units, rather than none."""
    model = um.model

    def pick(x: np.ndarray, row_dual: np.ndarray | None) -> lp_tree.Split | None:
        best = plain = (0.0, None)
        for (h, l), pair in um.pairs.items():
            for j in range(len(pair.D)):
                d = x[pair.D[j]] / pair.tau
                have = (x[pair.C[j]] + (x[pair.N[j - 1]] if j else 0.0)) / pair.tau
                q = math.floor(d + 1e-9)
                cut = q + 1 - have
                if d - q <= 1e-6 or cut <= VIOLATION:
                    continue
                weight = 1.0 if row_dual is None else abs(float(row_dual[model.capacity[l, j]])) * pair.rate
                score = cut * pair.tau * weight
                if score > best[0]:
                    best = (score, (h, l, j, q))
                if cut * pair.tau > plain[0]:
                    plain = (cut * pair.tau, (h, l, j, q))
        chosen = best[1] or plain[1]
        if chosen is None:
            return None
        h, l, j, q = chosen
        fields = {"kind": KIND, "home": h, "level": l, "step": j, "q": q}
        down, up = delivered_rows(um, fields)
        return lp_tree.Split(fields, down, up)

    return pick


@dataclass
class UnitTree:
    """A tree over the unit LP: the bound it proves (seconds), its root's, its units."""

    bound: float
    root_bound: float
    units: dict[tuple[int, int], int]
    tree: dict[str, Any] | None
    leaves: int
    rows: int
    status: str


def grow_tree(inst: Instance, ceiling: float, time_limit: float, max_leaves: int,
              units: dict[tuple[int, int], int] | None = None) -> UnitTree:
    """A tree (`lp_tree.grow`) over the unit LP: home units first (`home_groups`), then
    `delivered` disjunctions (`picker`), then the branchable columns by size."""
    began = time.perf_counter()
    um = formulate(inst, ceiling, units, began + time_limit)
    branchable, priority = step_covers.branching(um.model)
    left = max(1.0, began + time_limit - time.perf_counter())
    grown = lp_tree.grow(um.model.lp, branchable, ceiling / um.model.scale, left, max_leaves,
                         home_groups(um), priority, um.model.scale, kinds=kinds(um), pick=picker(um))
    return UnitTree(grown.bound, grown.root_bound, {k: p.unit for k, p in um.pairs.items()},
                    grown.tree, grown.leaves, int(um.model.lp.rlo.size), grown.status)


def parse_units(raw: Any) -> dict[tuple[int, int], int] | None:
    """Stored units ([[home, level, bytes], ...]) as a dict, or None if malformed (a pair
    twice, a level not faster than the home, a unit that is not a positive integer)."""
    if not isinstance(raw, list):
        return None
    out: dict[tuple[int, int], int] = {}
    for item in raw:
        if not (isinstance(item, list) and len(item) == 3
                and all(isinstance(v, int) and not isinstance(v, bool) for v in item)):
            return None
        h, l, u = item
        if not (0 <= l < h) or u <= 0 or (h, l) in out:
            return None
        out[h, l] = u
    return out


def units_json(units: dict[tuple[int, int], int]) -> list[list[int]]:
    return [[h, l, u] for (h, l), u in sorted(units.items())]


def check_tree(inst: Instance, ceiling: float, raw_units: Any, rows: int, tree: Any) -> float:
    """The bound (seconds, before any margin, at most the ceiling) a certificate proves:
    the unit LP rebuilt from the instance with the stored units, every node an integer
    sum on branchable columns or a `delivered` disjunction the rebuilt model accepts,
    the least leaf bound by weak duality; -inf if anything does not fit."""
    units = parse_units(raw_units)
    if units is None or not isinstance(tree, dict) or any(h >= inst.n_levels for h, _ in units):
        return -math.inf
    um = formulate(inst, ceiling, units)
    if rows != um.model.lp.rlo.size or set(um.pairs) != set(units):
        return -math.inf
    branchable, _ = step_covers.branching(um.model)
    return min(lp_tree.check_tree(um.model.lp, tree, branchable, kinds(um)) * um.model.scale, ceiling)
