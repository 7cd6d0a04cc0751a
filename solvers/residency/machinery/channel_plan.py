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

import math
import time
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

from memplace.model import Instance
from memplace.model.residency import ResidencySolution, simulate, violations
from memplace.model.residency.simulation import details
from memplace.model.residency.solution import Window
from memplace.model.residency.validation import load_with_windows
from memplace.solvers.box_lp import Rows
from memplace.solvers.highs import new_highs

MIN_SHARE = 0.01  # a large weight: at least this share of the fastest level's capacity
US = 1e6


@dataclass
class _Model:
    """The MILP (`lp`, built by `box_lp.Rows`) and its columns by name: f, r, z, issued,
    issue, wait, avail (see the module's docstring)."""

    big: list[int]
    size: dict[int, int]
    use: dict[int, int]
    fast: list[int]
    lp: Rows = field(default_factory=Rows)
    cols: dict[str, dict[Any, int]] = field(default_factory=dict)

    def add_cols(self, name: str, keys: Iterable[Any], integer: bool = False,
                 hi: float = math.inf) -> dict[Any, int]:
        """One column per key, named `name` (0 or 1 when `integer`)."""
        self.cols[name] = {key: self.lp.col(0.0, 1.0 if integer else hi, integer=integer) for key in keys}
        return self.cols[name]

    def row(self, terms: list[tuple[int, float]], lo: float, hi: float) -> None:
        self.lp.row(terms, lo, hi)


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
    if slow == 0 or inst.levels[slow].capacity is not None or any(lv.addressed for lv in inst.levels):
        return None  # a bounded last level, or offsets to choose: not this model's
    big = large_weights(inst)
    if not big:
        return None
    model = _formulate(inst, ref, big, slow_share)
    remaining = deadline - time.perf_counter()
    if remaining <= 0.1:
        return None
    x = _solve(model, seed, remaining)
    if x is None:
        return None
    found = _decode(inst, ref, model, x)
    if violations(inst, found):
        return None
    found.latency = simulate(inst, found)
    return found


def _reference(inst: Instance, ref: ResidencySolution, model: _Model) -> tuple[np.ndarray, np.ndarray]:
    """The reference's op times (µs) less each large weight's read at the level serving it
    there, and its load per level and step without the large weights' homes and windows."""
    slow = inst.n_levels - 1
    windows = {win.tensor: win for win in ref.windows
               if win.tensor in model.size and ref.placement[win.tensor] == slow}
    base = details(inst, ref).elapsed * US
    for w in model.big:
        serving = windows[w].level if w in windows else int(ref.placement[w])
        base[model.use[w]] -= model.size[w] / inst.bandwidth[serving] * US
    others = ref.placement.copy()
    others[model.big] = slow
    load = load_with_windows(inst, others, [win for win in ref.windows if win.tensor not in model.size])
    return np.maximum(base, 0.0), load


def _formulate(inst: Instance, ref: ResidencySolution, big: list[int], slow_share: float) -> _Model:
    slow, n = inst.n_levels - 1, inst.n_ops
    size = {w: int(inst.tensors[w]["size"]) for w in big}
    use = {w: int(inst.tensors[w]["accesses"][0][0]) for w in big}
    m = _Model(big, size, use, list(range(slow)))
    fast = m.fast
    base, load = _reference(inst, ref, m)
    f = m.add_cols("f", [(w, lv) for w in big for lv in fast], integer=True)
    r = m.add_cols("r", big, integer=True)
    z = m.add_cols("z", [(w, s, lv) for w in big for s in range(use[w]) for lv in fast], integer=True)
    issued = m.add_cols("issued", [(w, s, lv) for w in big for s in range(use[w]) for lv in fast],
                        hi=1.0)  # at >= s
    issue = m.add_cols("issue", big)  # the op a window's copy is issued before
    wait = m.add_cols("wait", range(n))
    avail = m.add_cols("avail", range(n))
    for w in big:
        m.row([(f[w, lv], 1.0) for lv in fast] + [(r[w], 1.0)]
              + [(z[w, s, lv], 1.0) for s in range(use[w]) for lv in fast], 1.0, 1.0)
        for s in range(use[w]):
            for lv in fast:
                later = [(issued[w, s + 1, lv], -1.0)] if s + 1 < use[w] else []
                m.row([(issued[w, s, lv], 1.0), (z[w, s, lv], -1.0)] + later, 0.0, 0.0)
        m.row([(issue[w], 1.0)] + [(issued[w, s, lv], -1.0) for s in range(1, use[w]) for lv in fast],
              0.0, 0.0)
    for lv in fast:  # capacity: a window of w occupies its level from its issue to u_w
        for k in range(n):
            terms = [(f[w, lv], float(size[w])) for w in big]
            for w in big:
                if use[w] >= k and use[w] > 0:  # a weight read by op 0 has no window
                    terms.append((issued[w, 0, lv], float(size[w])))
                    if k + 1 <= use[w] - 1:
                        terms.append((issued[w, k + 1, lv], -float(size[w])))
            m.row(terms, -np.inf, float(inst.capacity[lv] - load[lv, k]))
    _time_rows(inst, m, base)
    _channel_rows(inst, m)
    slow_bytes = sum(size[w] for w in big if ref.placement[w] == slow)
    m.row([(f[w, lv], -float(size[w])) for w in big for lv in fast], -np.inf,
          slow_share * slow_bytes - sum(size.values()))
    _costs(inst, m)
    return m


def _time_rows(inst: Instance, m: _Model, base: np.ndarray) -> None:
    """Q_{k+1} = Q_k + the op's time without a direct read + W_{k+1}."""
    f, z, wait, avail = m.cols["f"], m.cols["z"], m.cols["wait"], m.cols["avail"]
    m.row([(avail[0], 1.0), (wait[0], -1.0)], 0.0, 0.0)
    reads = {k: [w for w in m.big if m.use[w] == k] for k in range(inst.n_ops)}
    for k in range(inst.n_ops - 1):
        terms = [(avail[k + 1], 1.0), (avail[k], -1.0), (wait[k + 1], -1.0)]
        for w in reads[k]:
            terms += [(f[w, lv], -m.size[w] / inst.bandwidth[lv] * US) for lv in m.fast]
            terms += [(z[w, s, lv], -m.size[w] / inst.bandwidth[lv] * US)
                      for s in range(m.use[w]) for lv in m.fast]
        m.row(terms, base[k], base[k])


def _channel_rows(inst: Instance, m: _Model) -> None:
    """One channel, first in, first out: the copies issued at or after op s and due by op j
    move in Q_j - Q_s, and windows are issued in the order of their uses."""
    f, r, issued, issue, avail = (m.cols[name] for name in ("f", "r", "issued", "issue", "avail"))
    for j in sorted(set(m.use.values())):
        for s in range(j):
            terms = [(issued[w, s, lv], m.size[w] / inst.copy_bandwidth[-1] * US) for w in m.big
                     if m.use[w] <= j and s < m.use[w] for lv in m.fast]
            if terms:
                m.row(terms + [(avail[j], -1.0), (avail[s], 1.0)], -np.inf, 0.0)
    order = sorted(m.big, key=lambda w: m.use[w])
    for a, w in enumerate(order):
        for v in order[a + 1:]:
            if m.use[v] > m.use[w]:
                big_m = float(m.use[w])
                m.row([(issue[v], 1.0), (issue[w], -1.0), (r[v], big_m), (r[w], big_m)]
                      + [(f[x, lv], big_m) for x in (v, w) for lv in m.fast], 0.0, np.inf)


def _costs(inst: Instance, m: _Model) -> None:
    """The latency: the large weights' reads, where they are served, and the waits (µs)."""
    cost = m.lp.cost
    for w in m.big:
        for lv in m.fast:
            cost[m.cols["f"][w, lv]] = m.size[w] / inst.bandwidth[lv] * US
            for s in range(m.use[w]):
                cost[m.cols["z"][w, s, lv]] = m.size[w] / inst.bandwidth[lv] * US
        cost[m.cols["r"][w]] = m.size[w] / inst.bandwidth[-1] * US
    for col in m.cols["wait"].values():
        cost[col] = 1.0


def _solve(m: _Model, seed: int, time_limit: float) -> np.ndarray | None:
    """HiGHS's best point in `time_limit` seconds, or None when it found none."""
    h = new_highs(1, seed, time_limit)
    h.passModel(m.lp.arrays().highs_lp(integral=True))
    h.run()
    if h.getInfo().primal_solution_status != 2:  # no feasible point found
        return None
    return np.asarray(h.getSolution().col_value)


def _decode(inst: Instance, ref: ResidencySolution, m: _Model, x: np.ndarray) -> ResidencySolution:
    """The reference with the plan's homes and prefetch windows for the large weights."""
    slow = inst.n_levels - 1
    placement = ref.placement.copy()
    out = [win for win in ref.windows if win.tensor not in m.size]
    for w in m.big:
        placement[w] = slow
        for lv in m.fast:
            if x[m.cols["f"][w, lv]] > 0.5:
                placement[w] = lv
            for s in range(m.use[w]):
                if x[m.cols["z"][w, s, lv]] > 0.5:
                    out.append(Window(w, lv, s, m.use[w], m.use[w]))
    return ResidencySolution(ref.instance, placement, ref.offsets, tuple(out))
