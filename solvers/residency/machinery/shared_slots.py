"""Two weights of one size taking turns in one slot of a fast level.

Where fast memory holds all of a program's weights but one (memplace-lib's
albert-base@nnpi: ALBERT shares one layer's weights across its 12 layers, 28.3 MB of them
read in every layer, and SRAM and LLC hold 29.4 MB, activations included), the best
solutions `sa` and msa found home the weight that does not fit in DRAM and read it at
DRAM speed in every layer (34.7 µs of each layer's 78). Homing a second weight of the
same size in DRAM frees a slot through which both are copied in turn, each copy running
on the DRAM channel while the other ops run: the program then waits only where the ops
between two uses are shorter than a copy. No single move gets there: the demotion alone
is slower until the windows of both weights are in place, and msa's allocator, which
places one buffer at a time, does not time the copies to the slot's turns.

`rotations` builds those solutions from a solution: for each pair of weights (`t` homed
in a level `l` faster than `u`'s home, the same size, neither on an addressed level, `u`'s
reads from its home taking at least `MIN_SHARE` of the latency),
`t` is homed where `u` is, their windows are replaced by windows in `l` that take turns
over their accesses in op order (a run of consecutive accesses of one weight is one
window, its copy issued just after the previous window's last op), and the other windows
are kept. The result is rarely better at once (copies of other tensors queued behind the
slot's on the same channel now wait), so the searches anneal from the best candidate.

The slot may also be in a level faster than `t`'s home, taken from a third weight `s` of
the same size homed there (per level, the one read least), which moves down to the home
`t` leaves (`s`'s reads get slower, the turns' reads faster). Where the copies, not the ops, set the pace (the turns
wait for the slow channel in every layer), `s`'s slower reads cost nothing while the
turns' faster reads shorten the critical path: on albert-base@nnpi (memplace-lib/4's best,
929.651 µs), the attention weight homed in SRAM moves to LLC and the first attention
weight and the DRAM-homed output weight take turns in SRAM, 904.591 µs before any anneal,
against 950.154 µs for the best pair taking turns without the third weight's move.
"""
from __future__ import annotations

import math
import time

import numpy as np

from memplace.model.instance import Instance
from memplace.model.residency import ResidencySolution, Window, simulate, violations
from memplace.solvers.residency.machinery.move_loop import cached_access_ops

MAX_PAIRS = 64  # pairs tried (each slot a candidate), the longest read from its slow home first
# A pair is tried only where the slower weight's reads served by its home take at least
# this share of the latency (the most a turn in the slot can gain): pairs of tiny weights
# change nothing and would crowd out the pairs that matter
MIN_SHARE = 0.01


def _home_read_time(instance: Instance, sol: ResidencySolution) -> np.ndarray:
    """Per tensor, the seconds its accesses served by its home take (section 4's bytes /
    bandwidth, the accesses inside one of its windows left out)."""
    i = instance
    tensor = np.asarray(i.op_tensor, np.int64)
    served = np.asarray(i.op_bytes, float) / np.asarray(i.bandwidth, float)[
        np.asarray(sol.placement, np.int64)[tensor]]
    op = np.asarray(i.access_op, np.int64)
    for w in sol.windows:  # accesses (in op order) of w's tensor inside w
        own = np.asarray(i.tensor_access[i.tensor_ptr[w.tensor]:i.tensor_ptr[w.tensor + 1]])
        served[own[(op[own] >= w.first) & (op[own] <= w.last)]] = 0.0
    return np.bincount(tensor, served, i.n_tensors)


def _accesses(instance: Instance, t: int) -> list[int]:
    """`t`'s distinct access ops, sorted."""
    ptr, ops = cached_access_ops(instance)
    return [int(k) for k in ops[ptr[t]:ptr[t + 1]]]


def turns(instance: Instance, t: int, u: int, level: int) -> list[Window]:
    """Windows of `t` and `u` in `level` taking turns over their accesses in op order: one
    window per run of consecutive accesses of one tensor, its prefetch issued after the
    previous window's last op (at op 0 for the first); a run whose first access leaves no
    op to copy in is served by the home, and the slot stays free until the next run."""
    events = sorted([(k, t) for k in _accesses(instance, t)] + [(k, u) for k in _accesses(instance, u)])
    runs: list[list[int]] = []  # [tensor, first, last]
    for k, x in events:
        if runs and runs[-1][0] == x:
            runs[-1][2] = k
        else:
            runs.append([x, k, k])
    windows, free_from = [], 0
    for x, first, last in runs:
        if free_from < first:
            windows.append(Window(x, level, free_from, first, last, None, None))
            free_from = last + 1
    return windows


def rotations(instance: Instance, sol: ResidencySolution, deadline: float = math.inf,
              max_pairs: int = MAX_PAIRS) -> list[ResidencySolution]:
    """The valid solutions where two weights of one size of `sol` take turns in one slot
    (see the module's docstring), fastest first, each with its latency; until `deadline` (a
    `time.perf_counter()` value) or `max_pairs` pairs."""
    i = instance
    homes = np.asarray(sol.placement, np.int64)
    addressed = np.asarray(i.addressed, bool)
    weights = [t for t in range(i.n_tensors)
               if i.is_weight[t] and i.traffic[t] > 0 and not addressed[homes[t]]]
    found = []
    for t, u, s in _tries(i, homes, weights, _pairs(i, sol, homes, weights), max_pairs):
        if time.perf_counter() >= deadline:
            break
        placement = homes.copy()
        placement[t] = homes[u]
        slot = int(homes[t])
        if s >= 0:
            placement[s], slot = homes[t], int(homes[s])
        # (s's windows stay: in levels faster than both its homes)
        kept = [w for w in sol.windows if w.tensor not in (t, u)]
        candidate = ResidencySolution(sol.instance, placement, sol.offsets,
                                      tuple(kept + turns(i, t, u, slot)))
        if violations(i, candidate):
            continue
        candidate.latency = simulate(i, candidate)
        found.append(candidate)
    found.sort(key=lambda c: c.latency)
    return found


def _pairs(i: Instance, sol: ResidencySolution, homes: np.ndarray,
           weights: list[int]) -> list[tuple[int, int]]:
    """(t, u): two weights of one size, t homed faster, u's home reads at least MIN_SHARE
    of the latency; u's home read time longest first."""
    by_size: dict[int, list[int]] = {}
    for t in weights:
        by_size.setdefault(int(i.size[t]), []).append(t)
    home_read = _home_read_time(i, sol)
    pairs: list[tuple[int, int]] = []
    for group in by_size.values():  # (a pass per pair of a group took minutes at 10^5 ops)
        members = np.array(group, np.int64)
        slow = members[home_read[members] >= MIN_SHARE * sol.latency]  # at most 1 / MIN_SHARE
        t, u = np.nonzero(homes[members][:, None] < homes[slow][None, :])
        pairs += zip(members[t].tolist(), slow[u].tolist())
    pairs.sort(key=lambda p: -home_read[p[1]])
    return pairs


def _tries(i: Instance, homes: np.ndarray, weights: list[int], pairs: list[tuple[int, int]],
           max_pairs: int) -> list[tuple[int, int, int]]:
    """At most `max_pairs` (t, u, s) to try: s = -1 for the slot in t's home; else the
    weight read least of t's size in a level faster than t's home (the cheapest to move
    down to it), whose place the slot takes."""
    traffic = np.asarray(i.traffic)
    lightest: dict[tuple[int, int], int] = {}
    for t in weights:
        key = (int(i.size[t]), int(homes[t]))
        if key not in lightest or traffic[t] < traffic[lightest[key]]:
            lightest[key] = t
    tries: list[tuple[int, int, int]] = []
    for t, u in pairs:
        if len(tries) >= max_pairs:
            break
        tries.append((t, u, -1))
        size = int(i.size[t])
        tries += [(t, u, lightest[size, level]) for level in range(int(homes[t]))
                  if (size, level) in lightest]
    return tries[:max_pairs]
