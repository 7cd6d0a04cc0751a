"""A start re-planned by a schedule MILP: the slow level's channel and the large weights.

On programs whose latency is the last level's channel work (levit-128s@nnpi: the best
known of memplace-lib/9 keeps the DRAM channel busy for all but 0.29 µs of its 77.395), a
faster plan needs fewer slow-homed bytes, and what stops the anneals is that the weights
left slow must then be copied through windows that fit fast memory at its tightest
steps, which takes several coordinated changes of homes, direct reads and prefetch
starts. This MILP makes them at once, over a reference solution (the given start):

- *Large weights* are the weights read by one op, of at least `MIN_SHARE` of the fastest
  level's capacity. Each one is homed in a fast level l (f_{w,l}), or homed in the last
  level and read there directly (r_w), or homed there with a prefetch window in fast level
  l issued before op s and used at its op u_w (z_{w,s,l}; it occupies l over steps s..u_w,
  as section 10 of the specification says).
- Everything else keeps the reference's homes and windows; its load per level and step is
  taken from it (and reserved), as are the ops' times without the large weight's read
  (`base`, the reference's elapsed time less that read at the level serving it there).
- Time: Q_k is the channel time available up to op k's run (the waits W_k included):
  Q_{k+1} = Q_k + base_k + the large weight's read at its fast level + W_{k+1} (a direct
  read keeps the channel busy, so it adds none). Every set of copies issued at or after
  op s and due by op j moves within Q_j - Q_s (one channel), and copies are issued in the
  order of their uses (the channel's queue is first in, first out, section 11).
- The objective is the latency: the ops' times and the waits. At most `slow_share` of the
  reference's slow-homed large-weight bytes stay slow (below 1, the plan must free them).

It is a model of the schedule, not the simulation: its latency is checked by `simulate`,
and the plan is a start for the anneals, which repair what the model leaves out (the
copies of other tensors, the equal split of a channel between its two queues). On
levit-128s@nnpi (2026-11-27), two runs of `multistart` from the library's best known, each
re-planned at about 0.98 of its slow-homed bytes, took memplace-lib/9's 77.395 µs to 75.988
and then 73.679 (memplace-lib/10), where the anneals alone had found nothing from either
(docs/library.md, "memplace-lib/10").
"""
from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from memplace.model import Instance
from memplace.model.residency import ResidencySolution, simulate, violations
from memplace.model.residency.simulation import details
from memplace.model.residency.solution import Window
from memplace.model.residency.validation import load_with_windows
from memplace.solvers.highs import new_highs

MIN_SHARE = 0.01  # a large weight: at least this share of the fastest level's capacity
US = 1e6


class _Columns:
    """Column names and indices, each added once."""

    def __init__(self) -> None:
        self.n = 0
        self.integer: list[int] = []

    def add(self, integer: bool = False) -> int:
        self.n += 1
        if integer:
            self.integer.append(self.n - 1)
        return self.n - 1


def large_weights(inst: Instance) -> list[int]:
    """The weights read by one op, of at least MIN_SHARE of the fastest level's capacity."""
    least = MIN_SHARE * float(inst.capacity[0])
    return [t for t, tensor in enumerate(inst.tensors)
            if tensor["kind"] == "weight" and len(tensor["accesses"]) == 1 and tensor["size"] >= least]


def plan(inst: Instance, ref: ResidencySolution, slow_share: float, time_limit: float,
         seed: int = 0) -> ResidencySolution | None:
    """The reference re-planned (its latency set), or None when the MILP found no plan in
    `time_limit` seconds or the plan is not a valid solution."""
    deadline = time.perf_counter() + time_limit
    slow = inst.n_levels - 1
    fast = list(range(slow))
    if not fast or inst.levels[slow].capacity is not None or any(lv.addressed for lv in inst.levels):
        return None  # a bounded last level, or offsets to choose: not this model's
    big = large_weights(inst)
    if not big:
        return None
    level_data = inst.data["hardware"]["levels"]
    bandwidth = [float(lv["bandwidth"]) for lv in level_data]
    channel = float(level_data[slow].get("copy_bandwidth", level_data[slow]["bandwidth"]))
    size = {w: int(inst.tensors[w]["size"]) for w in big}
    use = {w: int(inst.tensors[w]["accesses"][0][0]) for w in big}
    windows = {win.tensor: win for win in ref.windows if win.tensor in size and ref.placement[win.tensor] == slow}
    n = inst.n_ops

    elapsed = details(inst, ref).elapsed * US
    base = elapsed.copy()
    for w in big:
        serving = windows[w].level if w in windows else int(ref.placement[w])
        base[use[w]] -= size[w] / bandwidth[serving] * US
    base = np.maximum(base, 0.0)
    others = ref.placement.copy()
    others[big] = slow
    load = load_with_windows(inst, others, [win for win in ref.windows if win.tensor not in size])

    cols = _Columns()
    f = {(w, lv): cols.add(True) for w in big for lv in fast}
    r = {w: cols.add(True) for w in big}
    z = {(w, s, lv): cols.add(True) for w in big for s in range(use[w]) for lv in fast}
    issued = {(w, s, lv): cols.add() for w in big for s in range(use[w]) for lv in fast}  # at >= s
    issue = {w: cols.add() for w in big}  # the op a window's copy is issued before
    wait = [cols.add() for _ in range(n)]
    avail = [cols.add() for _ in range(n)]
    rows: list[list[tuple[int, float]]] = []
    lower: list[float] = []
    upper: list[float] = []

    def row(terms: list[tuple[int, float]], lo: float, hi: float) -> None:
        rows.append(terms)
        lower.append(lo)
        upper.append(hi)

    for w in big:
        row([(f[w, lv], 1.0) for lv in fast] + [(r[w], 1.0)]
            + [(z[w, s, lv], 1.0) for s in range(use[w]) for lv in fast], 1.0, 1.0)
        for s in range(use[w]):
            for lv in fast:
                later = [(issued[w, s + 1, lv], -1.0)] if s + 1 < use[w] else []
                row([(issued[w, s, lv], 1.0), (z[w, s, lv], -1.0)] + later, 0.0, 0.0)
        row([(issue[w], 1.0)] + [(issued[w, s, lv], -1.0) for s in range(1, use[w]) for lv in fast],
            0.0, 0.0)
    for lv in fast:  # capacity: a window of w occupies its level from its issue to u_w
        for k in range(n):
            terms = [(f[w, lv], float(size[w])) for w in big]
            for w in big:
                if use[w] >= k and use[w] > 0:  # a weight read by op 0 has no window
                    terms.append((issued[w, 0, lv], float(size[w])))
                    if k + 1 <= use[w] - 1:
                        terms.append((issued[w, k + 1, lv], -float(size[w])))
            row(terms, -np.inf, float(inst.capacity[lv] - load[lv, k]))
    row([(avail[0], 1.0), (wait[0], -1.0)], 0.0, 0.0)
    reads = {k: [w for w in big if use[w] == k] for k in range(n)}
    for k in range(n - 1):
        terms = [(avail[k + 1], 1.0), (avail[k], -1.0), (wait[k + 1], -1.0)]
        for w in reads[k]:
            terms += [(f[w, lv], -size[w] / bandwidth[lv] * US) for lv in fast]
            terms += [(z[w, s, lv], -size[w] / bandwidth[lv] * US) for s in range(use[w]) for lv in fast]
        row(terms, base[k], base[k])
    for j in sorted(set(use.values())):  # copies issued at >= s and due by j move in Q_j - Q_s
        for s in range(j):
            terms = [(issued[w, s, lv], size[w] / channel * US) for w in big
                     if use[w] <= j and s < use[w] for lv in fast]
            if terms:
                row(terms + [(avail[j], -1.0), (avail[s], 1.0)], -np.inf, 0.0)
    order = sorted(big, key=lambda w: use[w])
    for a, w in enumerate(order):  # first in, first out: windows issued in the order of their uses
        for v in order[a + 1:]:
            if use[v] > use[w]:
                big_m = float(use[w])
                row([(issue[v], 1.0), (issue[w], -1.0), (r[v], big_m), (r[w], big_m)]
                    + [(f[x, lv], big_m) for x in (v, w) for lv in fast], 0.0, np.inf)
    slow_bytes = sum(size[w] for w in big if ref.placement[w] == slow)
    row([(f[w, lv], -float(size[w])) for w in big for lv in fast], -np.inf,
        slow_share * slow_bytes - sum(size.values()))

    cost = np.zeros(cols.n)
    for w in big:
        for lv in fast:
            cost[f[w, lv]] = size[w] / bandwidth[lv] * US
            for s in range(use[w]):
                cost[z[w, s, lv]] = size[w] / bandwidth[lv] * US
        cost[r[w]] = size[w] / bandwidth[slow] * US
    cost[wait] = 1.0
    upper_col = np.full(cols.n, np.inf)
    upper_col[cols.integer] = 1.0
    upper_col[list(issued.values())] = 1.0
    remaining = deadline - time.perf_counter()
    if remaining <= 0.1:
        return None
    h = new_highs(1, seed, remaining)
    h.addVars(cols.n, np.zeros(cols.n), upper_col)
    h.changeColsCost(cols.n, np.arange(cols.n, dtype=np.int32), cost)
    matrix = sp.csr_matrix(([v for t in rows for _, v in t],
                            ([i for i, t in enumerate(rows) for _ in t], [c for t in rows for c, _ in t])),
                           shape=(len(rows), cols.n))
    h.addRows(len(rows), np.array(lower), np.array(upper), matrix.nnz,
              matrix.indptr[:-1].astype(np.int32), matrix.indices.astype(np.int32), matrix.data)
    import highspy
    integer = np.array(cols.integer, dtype=np.int32)
    h.changeColsIntegrality(len(integer), integer, np.full(len(integer), highspy.HighsVarType.kInteger))
    h.run()
    if h.getInfo().primal_solution_status != 2:  # no feasible point found
        return None
    x = np.asarray(h.getSolution().col_value)
    placement = ref.placement.copy()
    out = [win for win in ref.windows if win.tensor not in size]
    for w in big:
        placement[w] = slow
        for lv in fast:
            if x[f[w, lv]] > 0.5:
                placement[w] = lv
            for s in range(use[w]):
                if x[z[w, s, lv]] > 0.5:
                    out.append(Window(w, lv, s, use[w], use[w]))
    found = ResidencySolution(ref.instance, placement, ref.offsets, tuple(out))
    if violations(inst, found):
        return None
    found.latency = simulate(inst, found)
    return found
