"""Capacity cover cuts on the delivery relaxation: whole tensors that the fast levels cannot all hold.

The delivery relaxation (`delivery_bound.py`) checks each fast level's capacity as a
fractional knapsack: on memplace-lib's xla-mlp@nnpi (32 weights of exactly 1 MiB, SRAM 4 MiB
and LLC 24 MiB) it lets all 32 weights be 7/8 resident at every step, where any valid
solution has at most 28 of them in fast memory at a step (and then nothing else there at
all). A *cover family* states this integrality:

    S, a set of tensors; r, an integer; U, tensors not in S.
    Rows: at every step j,          sum_{t in S} F_t(j)          <= r,
          and for every u in U live at j,  sum_{t in S} F_t(j) + F_u(j) <= r,

where F_t(j) is a sum of the LP's columns (`fast`): t's homes in the levels that are not
the last, when t is live at j, plus the columns of t's windows over a home in the last
level that occupy j (w of an access at op j, c of two accesses around j;
`delivery_bound._Builder.resident`).

Why every valid solution's point (`delivery_bound.py`, steps 1-7) satisfies the rows:

1. At that point F_t(j) is 0 or 1, and 1 only if t occupies a level other than the last at
   step j. If t's home h is not the last level, y[t, h] = 1, its other homes are 0 and
   the window columns over the last-level home are at most y[t, L - 1] = 0 (serving rows,
   c <= w): F = 1, and t, live at j, occupies h. If t is homed in the last level, its home
   terms are 0; at an access op j at most one window serves the access (sum_l w <= 1),
   and a window serving the access at j occupies j (first <= j <= last); between
   accesses i - 1 and i, c = 1 for at most one level (c <= w), and a window serving both
   occupies every step between.
2. So if the row's left-hand side exceeded r, r + 1 of its tensors would occupy the
   non-last levels at step j at once, each in at least one of them; keeping one level per
   tensor, they would be placed into those levels' capacities (the load of a level at a
   step counts every home and window there). `family_holds` checks that no r + 1 of them
   can be placed so: not the r + 1 smallest of S (any r + 1 of S are, one for one, at
   least as large, and smaller items never pack worse), and not u with the r smallest of
   S (any r + 1 of S and u that include u; those without u are the first case).
3. `packs` decides placements exactly: by total size, by how many of the smallest items
   each level can hold, or by exhaustive search on at most `SEARCH_ITEMS` items; an
   undecided case never validates a family.

So the rows cut off no valid solution, and the delivery relaxation with them is again a
relaxation: weak duality on it (or on the leaves of a tree over its home columns,
`lp_tree.py`) proves a bound. The certificate stores the families; `verify` re-checks
each one's arithmetic from the instance (`family_holds`), rebuilds the LP with their rows
and checks the duals: no solver.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from memplace.model import Instance
from memplace.solvers.box_lp import BoxLP
from memplace.solvers.residency.machinery import delivery_bound

SEARCH_ITEMS = 16  # exhaustive placement search up to this many items
SEARCH_NODES = 200_000  # ... and this many search nodes
MAX_FAMILY = 64  # the largest S the generation rule tries
MAX_FAMILIES = 4


@dataclass(frozen=True)
class Family:
    """At every step at most `at_most` of `tensors` in fast memory, and also counting any
    one of `others` (module docstring)."""

    tensors: tuple[int, ...]
    at_most: int
    others: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"tensors": list(self.tensors), "at_most": self.at_most, "others": list(self.others)}


def fast_capacities(inst: Instance) -> list[int]:
    """The capacities (bytes) of every level but the last (all of them have one)."""
    return [int(inst.levels[l].capacity) for l in range(inst.n_levels - 1)]


def packs(items: list[int], bins: list[int]) -> bool | None:
    """Whether every item can be put in one bin with each bin's items at most its
    capacity; None when undecided (too many items for the search)."""
    items = sorted(int(x) for x in items)
    if not items:
        return True
    if sum(items) > sum(bins) or items[-1] > max(bins, default=0):
        return False
    held = 0  # each bin holds at most as many items as its prefix of the smallest fits
    for cap in bins:
        total, k = 0, 0
        while k < len(items) and total + items[k] <= cap:
            total += items[k]
            k += 1
        held += k
    if held < len(items):
        return False
    if len(items) > SEARCH_ITEMS:
        return None
    order = items[::-1]
    nodes = 0

    def place(i: int, left: tuple[int, ...]) -> bool | None:
        nonlocal nodes
        nodes += 1
        if nodes > SEARCH_NODES:
            return None
        if i == len(order):
            return True
        seen = set()
        undecided = False
        for b, room in enumerate(left):
            if room < order[i] or room in seen:
                continue
            seen.add(room)
            got = place(i + 1, left[:b] + (room - order[i],) + left[b + 1:])
            if got:
                return True
            undecided |= got is None
        return None if undecided else False

    return place(0, tuple(bins))


def at_most(sizes: list[int], bins: list[int]) -> int | None:
    """The least r such that the r + 1 smallest of `sizes` provably do not pack (so no
    r + 1 of them do); None when every count packs or is undecided."""
    ordered = sorted(sizes)
    for r in range(len(ordered)):
        if packs(ordered[:r + 1], bins) is False:
            return r
    return None


def family_holds(inst: Instance, family: Any) -> Family | None:
    """The family parsed from its certificate form, if its rows are valid (module
    docstring, step 2); else None."""
    if not isinstance(family, dict):
        return None
    S, r, others = family.get("tensors"), family.get("at_most"), family.get("others", [])
    ints = lambda xs: isinstance(xs, list) and all(isinstance(x, int) and not isinstance(x, bool)
                                                   and 0 <= x < inst.n_tensors for x in xs)
    if not (ints(S) and ints(others)) or not isinstance(r, int) or isinstance(r, bool):
        return None
    if len(set(S)) != len(S) or len(set(others)) != len(others) or set(S) & set(others):
        return None
    if not 0 <= r < len(S) or inst.n_levels < 2:
        return None
    bins = fast_capacities(inst)
    smallest = sorted(int(inst.size[t]) for t in S)
    if packs(smallest[:r + 1], bins) is not False:
        return None
    if any(packs([int(inst.size[u])] + smallest[:r], bins) is not False for u in others):
        return None
    return Family(tuple(S), r, tuple(others))


def families(inst: Instance) -> list[Family]:
    """The generation rule (where to look; validity is `family_holds`'s): S the m largest
    weights (live at every step) for each m up to MAX_FAMILY, kept when fewer than m of
    them fit the fast levels; U every other tensor whose row is valid with that S. For
    each r (the least MAX_FAMILIES of them): the largest such S, and the S with the most
    of U (the largest among those) when it differs."""
    if inst.n_levels < 2:
        return []
    bins = fast_capacities(inst)
    weights = np.flatnonzero(inst.is_weight == 1)
    order = [int(t) for t in weights[np.lexsort((weights, -inst.size[weights]))][:MAX_FAMILY]]
    by_r: dict[int, list[int]] = {}
    for m in range(2, len(order) + 1):
        r = at_most([int(inst.size[t]) for t in order[:m]], bins)
        if r is not None and r < m:
            by_r.setdefault(r, []).append(m)

    def family(m: int, r: int) -> Family:
        S = order[:m]
        smallest = sorted(int(inst.size[t]) for t in S)[:r]
        chosen = set(S)
        others = [u for u in range(inst.n_tensors) if u not in chosen
                  and packs([int(inst.size[u])] + smallest, bins) is False]
        return Family(tuple(S), r, tuple(others))

    out = []
    for r in sorted(by_r)[:MAX_FAMILIES]:
        found = [family(m, r) for m in by_r[r]]
        widest = max(found, key=lambda f: (len(f.others) + len(f.tensors), len(f.tensors)))
        out += [found[-1]] + ([widest] if widest is not found[-1] and widest.others else [])
    return out


def fast(model: delivery_bound.DeliveryModel, t: int, j: int) -> list[int]:
    """The columns of F_t(j) (module docstring)."""
    inst = model.instance
    if not inst.start[t] <= j <= inst.end[t]:
        return []
    homes = [int(c) for c in model.homes[t, :inst.n_levels - 1] if c >= 0]
    return homes + list(model.resident.get((t, j), ()))


def with_cuts(model: delivery_bound.DeliveryModel, fams: list[Family]) -> delivery_bound.DeliveryModel:
    """The model with every family's rows appended (the columns unchanged)."""
    inst, p = model.instance, model.lp
    r, c, v, rlo, rhi = [p.r], [p.c], [p.v], [p.rlo], [p.rhi]
    n = int(p.rlo.size)
    added = 0
    for fam in fams:
        for j in range(inst.n_ops):
            base = [col for t in fam.tensors for col in fast(model, t, j)]
            rows = [base] + [base + extra for u in fam.others if (extra := fast(model, u, j))]
            for cols in rows:
                if not cols:
                    continue
                r.append(np.full(len(cols), n + added, np.int64))
                c.append(np.asarray(cols, np.int64))
                v.append(np.ones(len(cols)))
                added += 1
        rlo.append(np.full(added - (sum(a.size for a in rlo) - n), -math.inf))
        rhi.append(np.full(rlo[-1].size, float(fam.at_most)))
    lp = BoxLP(p.cost, p.lo, p.hi, np.concatenate(rlo), np.concatenate(rhi),
               np.concatenate(r), np.concatenate(c), np.concatenate(v), p.scale)
    stats = dict(model.stats, cover_rows=added, rows=int(lp.rlo.size), nonzeros=int(lp.v.size))
    return delivery_bound.DeliveryModel(inst, model.scale, lp, model.homes, stats, model.resident)


def cover_lp(inst: Instance, ceiling: float, fams: list[Family],
             deadline: float = math.inf) -> delivery_bound.DeliveryModel:
    """The delivery relaxation of `inst` with `ceiling` (a valid latency, seconds) and the
    rows of `fams` (which the caller has generated or checked)."""
    return with_cuts(delivery_bound.formulate(inst, ceiling, deadline), fams)
