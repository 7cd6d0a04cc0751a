"""Home moves that free fast memory for copies, each judged with msa's windows over the new homes.

The static problem cannot tell apart tensors of one size live over the same steps (the
32 layer weights of an MLP, the identical blocks of a transformer): swapping their homes
changes no load and no latency. The residency problem can: a weight homed in the slowest
level is copied into a faster one during other ops only where a faster level has room,
so *which* weights are homed slow decides whether their copies overlap other work or
stall the program. And room in a fast level is bought by homing one more weight slow:
a loss for the static problem, a gain when it lets the copies of several others overlap.

xla-mlp@nnpi (memplace-lib/2) shows both: its best known, the static optimum (121.9 µs),
homes the last five layers' weights in DRAM, each read at DRAM speed (15.5 µs an op);
no window fits, SRAM and LLC being full of homed weights, and no single move of `sa`
improves it. With one LLC weight homed in DRAM (a 1 MB slot free for copies) and the
DRAM-homed weights spread over the program by swaps, msa's allocator prefetches them
into that slot while the LLC-bound layers run: 94.2 µs.

`descend` is a first-improvement local search over two moves, each evaluated by running
msa's allocator (`allocation.assign_windows`, XLA's interval picker) over the new homes
and simulating the result:

- *swap* the homes (and home offsets) of two tensors of equal size in different levels;
- *demote* a tensor's home to a slower level (not an addressed one: that would need an
  offset).

A candidate that breaks a rule (a home that no longer fits, an offset that collides) is
refused by the validator; only valid solutions are kept.
"""
from __future__ import annotations

import time

import numpy as np

from memplace.model.instance import Instance
from memplace.model.residency import NO_OFFSET, ResidencySolution, simulate, violations
from memplace.solvers.residency.machinery.allocation import assign_windows


def _same_size(instance: Instance, tensors: np.ndarray) -> dict[int, np.ndarray]:
    """Size -> the tensors among `tensors` of that size, in their order (sizes held by one
    tensor left out). One sort, not a pass over `tensors` per size: that took 9 s at 10^5
    ops, past a 10 s limit."""
    sizes = np.asarray(instance.size)[tensors]
    values, inverse, counts = np.unique(sizes, return_inverse=True, return_counts=True)
    members = np.split(tensors[np.argsort(inverse, kind="stable")], np.cumsum(counts)[:-1])
    return {int(size): group for size, group, n in zip(values.tolist(), members, counts.tolist())
            if n > 1}


def descend(instance: Instance, start: ResidencySolution, rng: np.random.Generator,
            deadline: float, max_tries: int | None = None) -> tuple[ResidencySolution, int]:
    """Swaps and demotions from `start`'s homes (its windows are re-derived by msa's
    allocator) until `deadline` (a `time.perf_counter()` value) or `max_tries` candidates;
    returns the best valid solution (`start` itself when nothing improves) and the
    candidates tried. Its latency is set."""
    i = instance
    L = i.n_levels
    best = start
    if best.latency is None:
        best.latency = simulate(i, best)
    homes = np.array(start.placement, np.int64)
    offsets = None if start.offsets is None else np.array(start.offsets, np.int64)
    tensors = np.flatnonzero(np.asarray(i.traffic) > 0).astype(np.int64)
    if tensors.size == 0 or L < 2:
        return best, 0
    groups = _same_size(i, tensors)
    swappable = tensors[np.isin(np.asarray(i.size)[tensors], list(groups))].astype(np.int64)
    addressed = np.asarray(i.addressed, bool)
    tries = 0
    while time.perf_counter() < deadline and (max_tries is None or tries < max_tries):
        h = homes.copy()
        o = None if offsets is None else offsets.copy()
        if swappable.size and rng.random() < 0.5:
            t = int(swappable[rng.integers(swappable.size)])
            group = groups[int(i.size[t])]
            others = group[homes[group] != homes[t]]
            if others.size == 0:
                continue
            u = int(others[rng.integers(others.size)])
            h[t], h[u] = homes[u], homes[t]
            if o is not None:
                o[t], o[u] = offsets[u], offsets[t]
        else:
            t = int(tensors[rng.integers(tensors.size)])
            if homes[t] >= L - 1:
                continue
            level = int(rng.integers(homes[t] + 1, L))
            if addressed[level]:
                continue
            h[t] = level
            if o is not None:
                o[t] = NO_OFFSET
        tries += 1
        sol, _ = assign_windows(i, h, o, deadline=deadline)
        if violations(i, sol):
            continue
        sol.latency = simulate(i, sol)
        if sol.latency < best.latency * (1 - 1e-9):
            best, homes, offsets = sol, h, o
    return best, tries

