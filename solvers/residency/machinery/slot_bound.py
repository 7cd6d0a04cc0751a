"""The slot relaxation: the last level's channel, the fast space its copies need, a tree.

On programs whose latency is the DRAM channel's work (electra-small@nnpi: the best known
keeps it busy 97.6% of the run), what the delivery LPs miss is that a copy needs its whole
size free in fast memory while it moves. This relaxation is built around that; it pools
the fast levels (capacity C, the sum of theirs) and times the run as a sequence of
intervals, interval k being op k and the wait after it (durations d_k, the objective
sum d_k, in µs; sizes in MiB).

Columns, each 0 or 1 at the point a valid solution maps to unless said otherwise (the
*argument* for every row follows each):

- x_w: weight w is homed in a fast level (it then occupies C at every step, as a weight
  lives through the whole program). Otherwise each of its accesses i (op k_i, b_i bytes)
  is served directly (r_i: the op reads it from the last level, the channel busy b_i / B
  seconds during interval k_i, B the last level's bandwidth), from a copy made for it
  (p_i: the copy, s_w / beta seconds of the channel, beta its copy bandwidth, moves in
  intervals before k_i and its window is held through op k_i), or, from the second access
  on, from the window held since the previous access (h_i: w occupies C from step
  k_{i-1} + 1 to k_i). Rows: x + r_i + p_i (+ h_i) >= 1 (= 1 for a weight read once) and
  p_i + h_i <= 1. r_i is a fraction; a solution's point has it 0 or 1.
- y_a: activation a stays in a fast level through its live range (occupying C at each of
  its steps). Otherwise at least one transfer of it crosses the last level's channel, two
  if it is accessed more than once (written, then read back): work
  c_a = (1 or 2) * min(least access / B, s_a / beta), done by direct accesses
  (ad_{a,i} <= (1 - y_a) b_i / B seconds at op k_i; a solution's point has each 0 or
  b_i / B) or copies (ac_{a,k} seconds in interval k of its live range):
  sum ad + sum ac + c_a y_a >= c_a.
- Weight copies of one size class s: seconds cw_{s,k} in interval k, their sum the copies
  chosen (sum_i p_i s / beta), and by every due step j the copies due at or before j moved
  in intervals before j.
- Per interval k: d_k >= the op's compute time; d_k >= the op's accesses at their fastest
  level plus what direct accesses add (b (1/B - 1/b_f), b_f the fastest bandwidth of a level
  that can hold the tensor); d_k >= the channel's direct seconds plus every copy's seconds
  in k (one channel). sum of C-load at k <= C.
- u_{k,s} (classes s of at least `unit` bytes): a copy of class s moves in interval k.
  Copies of s in k are at most ceiling * u_{k,s} (no interval outlasts a run below the
  ceiling), and load(k) + windows used by op k + s u_{k,s} <= C: a copy moving during op k
  or the wait before op k + 1 was issued before an op at most k and is due after k
  (sections 10-11), so its window occupies step k, and it is none of the windows op k
  uses. uany_k >= each u_{k,s}, uany_k <= their sum, and the *waste* row:
  d_k >= big copies + m_k (1 - uany_k) + sum over direct accesses (full - m_k)^+ f
  (m_k the op's least time, full an access's direct seconds, f its 0/1 fraction): when no
  large copy moves the interval lasts the op and at least its direct reads, and
  m + sum_S (full - m)^+ <= max(m, sum_S full) for any set S of direct reads.
- delta_D (the *splits*, D units each): the weights whose sizes are multiples of `unit` (and
  fit C) count U = sum (size / unit) x_w units in fast memory, an integer. delta_D is 1 if
  U >= D: U >= D delta_D and U <= D - 1 + (U_max - D + 1) delta_D, and delta_D <= delta_D'
  for D' < D. When delta_D = 1 the fast space left
  to everything else is at most C - D unit, so for a class s at step k any set S of the
  other items of its space row (non-unit weights' homes, activations, held windows, windows
  used by op k) whose bytes add up to more than C - D unit - s cannot all be there while a
  copy of s moves: u_{k,s} + sum_S z <= |S| + 1 - delta_D (a *cover*). Single-item covers
  are in the model; larger ones are separated at the tree's nodes (at the root the split
  is fractional and they do not bite) and stored.

Every row holds at the point every valid solution of latency below the ceiling maps to,
so weak duality on the LP (every column bounded: fractions by 1, seconds by the ceiling)
and a tree of disjunctions on 0/1 columns (`lp_tree`) prove a lower bound. It was checked
against the exhaustive optimum of the tiny instances of `tests/residency_exhaustive.py`.

The certificate (model `residency-slot-tree`) stores the unit, the splits, the separated
covers (step, class, split, items) and the tree. A check rebuilds the LP from the instance,
re-derives each cover (its items in that space row, their bytes above C - D unit - s, in
integers), appends their rows in order and walks the tree: no solver.
"""
from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memplace.model import Instance
from memplace.solvers import lp_tree
from memplace.solvers.box_lp import INF, AddedRow, BoxLP, Rows
from memplace.solvers.highs import new_highs

MIB = float(2 ** 20)
US = 1e6
CUT_ROUNDS = 5  # rounds of cover separation at a node of the tree
# branching order (higher first): the split, small weights' homes, activations, interval
# binaries (by the op's least time), any-copy binaries, unit weights' homes
PRIORITY_SPLIT, PRIORITY_SMALL, PRIORITY_ACTIVATION, PRIORITY_INTERVAL = 1000.0, 100.0, 50.0, 10.0


@dataclass
class Knapsack:
    """The space row of interval `step` and copy class `size` (bytes): its binary `u` and
    the items besides the unit weights' homes, (column, bytes)."""

    step: int
    size: int
    u: int
    items: list[tuple[int, int]]


@dataclass
class SlotModel:
    lp: BoxLP
    branchable: np.ndarray
    priority: np.ndarray
    knapsacks: dict[tuple[int, int], Knapsack]
    capacity: int  # pooled fast capacity, bytes
    unit: int
    deltas: dict[int, int]  # split D -> its column delta_D
    homes: dict[int, int] = field(default_factory=dict)  # weight -> its home column x_w
    units: dict[int, int] = field(default_factory=dict)  # unit weight -> its units
    binary: np.ndarray | None = None  # the columns 0 or 1 at a valid solution's point


def default_unit(inst: Instance) -> int:
    """The unit of the split: among weight sizes of at least a 256th of the fast capacity,
    from the largest down, a smaller one replaces the choice when the weights whose sizes
    are its multiples (and fit fast memory) hold a quarter more bytes (0: none)."""
    cap = _capacity(inst)
    sizes = Counter(int(t["size"]) for t in inst.tensors
                    if t["kind"] == "weight" and int(t["size"]) <= cap and t["accesses"])
    best, unit = 0, 0
    for u in sorted(sizes, reverse=True):
        if u < cap / 256:
            break
        held = sum(size * count for size, count in sizes.items() if size % u == 0)
        if held >= 1.25 * best:
            best, unit = held, u
    return unit


def _capacity(inst: Instance) -> int:
    return int(sum(lv.capacity for lv in inst.levels[:-1]))


def unit_weights(inst: Instance, unit: int) -> list[int]:
    """The weights counted in the split: sizes a multiple of `unit` that fit fast memory."""
    cap = _capacity(inst)
    return [i for i, t in enumerate(inst.tensors) if t["kind"] == "weight" and t["accesses"]
            and unit > 0 and 0 < int(t["size"]) <= cap and int(t["size"]) % unit == 0]


def formulate(inst: Instance, ceiling: float, unit: int, splits: tuple[int, ...]) -> SlotModel:
    """The relaxation (above) for runs below `ceiling` seconds, split at each of `splits`
    units of `unit` bytes (those out of range, or all if no weight is a multiple of it, are
    left out), with the single-item covers."""
    levels = inst.levels
    last = levels[-1]
    cap_bytes = _capacity(inst)
    C = cap_bytes / MIB
    B = last.bandwidth / MIB / US
    beta = float(last.copy_bandwidth) / MIB / US
    ceil_us = ceiling * US
    n = len(inst.ops)

    def fastest(size: float) -> float:
        return max(lv.bandwidth / MIB / US for lv in levels if lv.capacity is None or size <= lv.capacity)

    comp = [float(inst.flops[k]) / (inst.compute_rate / US) for k in range(n)]
    least = [0.0] * n
    for t in inst.tensors:
        for k, b in t["accesses"]:
            least[k] += (b / MIB) / fastest(int(t["size"]))
    m = [max(comp[k], least[k]) for k in range(n)]

    lp = Rows()
    dur = [lp.col(0.0, ceil_us, 1.0) for _ in range(n)]
    prio: dict[int, float] = {}
    branch: set[int] = set()
    binary: set[int] = set()  # branchable columns and the copy and hold choices
    load: list[list[tuple[int, int]]] = [[] for _ in range(n)]  # (column, bytes) in C at step k
    using: list[list[tuple[int, int]]] = [[] for _ in range(n)]  # windows used by op k
    direct: list[list[tuple[int, float]]] = [[] for _ in range(n)]  # channel seconds per unit
    extra: list[list[tuple[int, float]]] = [[] for _ in range(n)]  # op time added per unit
    full: list[list[tuple[int, float, float]]] = [[] for _ in range(n)]  # (col, per-unit share, direct s)
    copies: list[list[tuple[int, int]]] = [[] for _ in range(n)]  # (column, class bytes)
    due: dict[int, list[tuple[int, int, float]]] = {}  # class -> (step, copy column, seconds)
    units = {i: int(inst.tensors[i]["size"]) // unit for i in unit_weights(inst, unit)}
    home: dict[int, int] = {}

    for i, t in enumerate(inst.tensors):
        acc = sorted((int(k), int(b)) for k, b in t["accesses"])
        if not acc:
            continue
        size = int(t["size"])
        s = size / MIB
        slower = 1.0 / B - 1.0 / fastest(size)
        if t["kind"] == "weight":
            x = lp.col()
            home[i] = x
            branch.add(x)
            prio[x] = 0.0 if i in units else PRIORITY_SMALL
            for k in range(n):
                load[k].append((x, size))
            for j, (k, b) in enumerate(acc):
                mb = b / MIB
                r = lp.col()
                p = lp.col()
                binary.add(p)
                direct[k].append((r, mb / B))
                extra[k].append((r, mb * slower))
                full[k].append((r, 1.0, mb / B))
                due.setdefault(size, []).append((k, p, s / beta))
                using[k].append((p, size))
                terms = [(x, 1.0), (r, 1.0), (p, 1.0)]
                if j > 0:
                    hold = lp.col()
                    binary.add(hold)
                    terms.append((hold, 1.0))
                    for kk in range(acc[j - 1][0] + 1, k + 1):
                        load[kk].append((hold, size))
                    lp.row([(p, 1.0), (hold, 1.0)], hi=1.0)
                lp.row(terms, lo=1.0, hi=1.0 if len(acc) == 1 else INF)
        else:
            lo, hi = acc[0][0], acc[-1][0]
            y = lp.col(0.0, 1.0 if size <= cap_bytes else 0.0)
            branch.add(y)
            prio[y] = PRIORITY_ACTIVATION
            if size <= cap_bytes:
                for k in range(lo, hi + 1):
                    load[k].append((y, size))
            work = (2 if len(acc) > 1 else 1) * min(min(b for _, b in acc) / MIB / B, s / beta)
            terms = [(y, work)]
            for k, b in acc:
                mb = b / MIB
                ad = lp.col(0.0, mb / B)
                lp.row([(ad, 1.0), (y, mb / B)], hi=mb / B)
                direct[k].append((ad, 1.0))
                extra[k].append((ad, slower * B))
                if b > 0:
                    full[k].append((ad, B / mb, mb / B))
                terms.append((ad, 1.0))
            for k in range(lo, hi + 1):
                ac = lp.col(0.0, ceil_us)
                copies[k].append((ac, size))
                terms.append((ac, 1.0))
            lp.row(terms, lo=work)

    for size, items in sorted(due.items()):
        cw = [lp.col(0.0, ceil_us) for _ in range(n)]
        for k in range(n):
            copies[k].append((cw[k], size))
        lp.row([(c, 1.0) for c in cw] + [(p, -sec) for _, p, sec in items], lo=0.0, hi=0.0)
        for j in sorted({k for k, _, _ in items}):
            lp.row([(c, 1.0) for c in cw[:j]] + [(p, -sec) for k, p, sec in items if k <= j], lo=0.0)

    knapsacks: dict[tuple[int, int], Knapsack] = {}
    unit_cols = {home[i] for i in units}
    for k in range(n):
        in_c = [(c, b / MIB) for c, b in load[k]]
        lp.row(in_c, hi=C)
        by_class: dict[int, list[int]] = {}
        for c, size in copies[k]:
            by_class.setdefault(size, []).append(c)
        large = sorted(size for size in by_class if unit > 0 and size >= unit)
        big: list[int] = []
        if large:
            items = [(c, b) for c, b in load[k] if c not in unit_cols] + list(using[k])
            anyc = lp.col()
            branch.add(anyc)
            prio[anyc] = m[k]
            us = []
            for size in large:
                u = lp.col()
                branch.add(u)
                prio[u] = PRIORITY_INTERVAL + m[k]
                us.append(u)
                lp.row([(u, 1.0), (anyc, -1.0)], hi=0.0)
                lp.row([(c, 1.0) for c in by_class[size]] + [(u, -ceil_us)], hi=0.0)
                lp.row(in_c + [(u, size / MIB)] + [(c, b / MIB) for c, b in using[k]], hi=C)
                big += by_class[size]
                knapsacks[k, size] = Knapsack(k, size, u, items)
            lp.row([(anyc, 1.0)] + [(u, -1.0) for u in us], hi=0.0)
            coef: dict[int, float] = {dur[k]: 1.0, anyc: m[k]}
            for c in big:
                coef[c] = coef.get(c, 0.0) - 1.0
            for c, v in direct[k]:
                coef[c] = coef.get(c, 0.0) - v
            for c, share, sec in full[k]:
                coef[c] = coef.get(c, 0.0) + min(m[k], sec) * share
            lp.row(list(coef.items()), lo=m[k])
        lp.row([(dur[k], 1.0)] + [(c, -v) for c, v in direct[k]] + [(c, -1.0) for c, _ in copies[k]], lo=0.0)
        lp.row([(dur[k], 1.0)], lo=comp[k])
        lp.row([(dur[k], 1.0)] + [(c, -v) for c, v in extra[k]], lo=least[k])

    deltas: dict[int, int] = {}
    total = sum(units.values())
    terms = [(home[i], float(q)) for i, q in units.items()]
    for split in sorted({d for d in splits if units and 0 < d <= total}):
        delta = lp.col()
        branch.add(delta)
        prio[delta] = PRIORITY_SPLIT + split
        if deltas:
            lp.row([(delta, 1.0), (deltas[max(deltas)], -1.0)], hi=0.0)
        deltas[split] = delta
        lp.row(terms + [(delta, -float(split))], lo=0.0)
        lp.row(terms + [(delta, -float(total - split + 1))], hi=float(split - 1))
        room = cap_bytes - split * unit
        for key in sorted(knapsacks):
            ks = knapsacks[key]
            if room - ks.size < 0:
                lp.row([(ks.u, 1.0), (delta, 1.0)], hi=1.0)
                continue
            for c, b in ks.items:
                if b > room - ks.size:
                    lp.row([(ks.u, 1.0), (c, 1.0), (delta, 1.0)], hi=2.0)
    box = lp.arrays(1.0 / US)
    ncol = box.cost.size
    branchable = np.zeros(ncol, bool)
    branchable[sorted(branch)] = True
    priority = np.zeros(ncol)
    for c, v in prio.items():
        priority[c] = v
    binaries = np.zeros(ncol, bool)
    binaries[sorted(branch | binary)] = True
    return SlotModel(box, branchable, priority, knapsacks, cap_bytes, unit, deltas, home, units,
                     binaries)


Cover = tuple[int, int, int, tuple[int, ...]]  # step, class bytes, split, item columns


def cover_row(model: SlotModel, cover: Cover) -> AddedRow | None:
    """The row of a cover, or None when it is not one: no such space row or split, items
    not distinct members of that row, or their bytes not above the room the split leaves."""
    step, size, split, cols = cover
    ks = model.knapsacks.get((step, size))
    if ks is None or split not in model.deltas or len(set(cols)) != len(cols) or not cols:
        return None
    sizes = dict(ks.items)
    if any(c not in sizes for c in cols):
        return None
    if sum(sizes[c] for c in cols) + size <= model.capacity - split * model.unit:
        return None
    return ([ks.u, *cols, model.deltas[split]], [1.0] * (len(cols) + 2), -INF, float(len(cols) + 1))


def separate(model: SlotModel, x: np.ndarray) -> list[Cover]:
    """Covers the point `x` violates: per space row and split, the row's items most in fast
    memory first until their bytes pass the room the split leaves."""
    out = []
    for key in sorted(model.knapsacks):
        ks = model.knapsacks[key]
        if x[ks.u] < 1e-6:
            continue
        order = sorted(ks.items, key=lambda item: (max(0.0, 1.0 - x[item[0]]), -item[1], item[0]))
        for split, delta in sorted(model.deltas.items()):
            room = model.capacity - split * model.unit
            chosen, total, slack = [], 0, 1.0 - x[delta]
            for c, b in order:
                chosen.append(c)
                total += b
                slack += max(0.0, 1.0 - x[c])
                if total + ks.size > room:
                    break
            if total + ks.size > room and slack < x[ks.u] - 1e-6:
                out.append((ks.step, ks.size, split, tuple(chosen)))
    return out


@dataclass
class SlotTree:
    bound: float  # seconds
    root_bound: float
    unit: int
    splits: tuple[int, ...]
    covers: list[Cover]
    tree: dict[str, Any] | None
    leaves: int
    rows: int
    status: str


def with_covers(model: SlotModel, covers: list[Cover]) -> BoxLP | None:
    """The model's LP with the covers' rows appended in order; None if one is not a cover."""
    rows = []
    for cover in covers:
        row = cover_row(model, cover)
        if row is None:
            return None
        rows.append(row)
    return model.lp.with_rows(rows) if rows else model.lp


def root_splits(inst: Instance, ceiling: float, unit: int) -> tuple[int, ...]:
    """The splits around the unit count U the LP without any reaches: ceil(U) - 1 and
    ceil(U) (the sides U <= ceil(U) - 2 and U >= ceil(U) + 1 are far from its optimum;
    ceil(U) - 1 and ceil(U) each get their covers), none without unit weights."""
    model = formulate(inst, ceiling, unit, ())
    h = new_highs(1, 0, 120.0)
    h.passModel(model.lp.highs_lp())
    h.run()
    if h.modelStatusToString(h.getModelStatus()) != "Optimal" or not model.units:
        return ()
    x = np.asarray(h.getSolution().col_value, np.float64)
    top = int(math.ceil(sum(x[model.homes[i]] * q for i, q in model.units.items()) - 1e-6))
    return tuple(d for d in (top - 1, top) if d > 0)


def grow_tree(inst: Instance, ceiling: float, target: float, time_limit: float, max_leaves: int,
              unit: int | None = None, splits: tuple[int, ...] | None = None,
              cut_rounds: int = CUT_ROUNDS) -> SlotTree:
    """A tree (`lp_tree.grow`, the splits first, then small weights' homes, activations and
    interval binaries) until every leaf proves `target` seconds or the time or leaves run
    out; covers are separated at every node's point (cut and branch: at the root the splits
    are fractional and no cover bites) and appended, in order, to the list the certificate
    stores, since each holds at every valid solution."""
    began = time.perf_counter()
    unit = default_unit(inst) if unit is None else unit
    splits = root_splits(inst, ceiling, unit) if splits is None else splits
    model = formulate(inst, ceiling, unit, splits)
    covers: list[Cover] = []
    known: set[Cover] = set()

    def cuts(x: np.ndarray) -> list[AddedRow]:
        new = [cv for cv in separate(model, x) if cv not in known]
        known.update(new)
        covers.extend(new)
        return [cover_row(model, cv) for cv in new]

    left = max(1.0, began + time_limit - time.perf_counter())
    grown = lp_tree.grow(model.lp, model.branchable, target / model.lp.scale, left, max_leaves,
                         priority=model.priority, scale=model.lp.scale, cuts=cuts,
                         cut_rounds=cut_rounds)
    return SlotTree(grown.bound, grown.root_bound, unit, tuple(sorted(model.deltas)), covers,
                    grown.tree, grown.leaves, int(model.lp.rlo.size), grown.status)


def _ints(values: list[Any]) -> bool:
    return all(isinstance(v, int) and not isinstance(v, bool) for v in values)


def parse_covers(raw: Any) -> list[Cover] | None:
    """Stored covers ([[step, class bytes, split, [columns...]], ...]), or None if malformed."""
    if not isinstance(raw, list):
        return None
    out = []
    for item in raw:
        if not (isinstance(item, list) and len(item) == 4 and isinstance(item[3], list)
                and _ints([*item[:3], *item[3]])):
            return None
        out.append((item[0], item[1], item[2], tuple(item[3])))
    return out


def covers_json(covers: list[Cover]) -> list[list[Any]]:
    return [[k, s, d, list(cols)] for k, s, d, cols in covers]


def check_tree(inst: Instance, ceiling: float, unit: Any, splits: Any, raw_covers: Any,
               rows: int, tree: Any) -> float:
    """The bound (seconds, before any margin, at most the ceiling) a certificate proves:
    the LP rebuilt from the instance with its unit (0: no weight size to split on, so no
    interval binaries or splits either) and splits, every stored cover
    re-derived and appended, the tree walked by weak duality; -inf if anything does not
    fit."""
    covers = parse_covers(raw_covers)
    if (covers is None or not isinstance(tree, dict) or not _ints([unit]) or unit < 0
            or not isinstance(splits, list) or not _ints(splits)):
        return -math.inf
    model = formulate(inst, ceiling, unit, tuple(splits))
    if rows != model.lp.rlo.size or sorted(model.deltas) != sorted(splits):
        return -math.inf
    lp = with_covers(model, covers)
    if lp is None:
        return -math.inf
    return min(lp_tree.check_tree(lp, tree, model.branchable) * lp.scale, ceiling)
