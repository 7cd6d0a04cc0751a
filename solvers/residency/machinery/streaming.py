"""Weight streaming: weights homed below the fastest level copied into it in the order the
ops read them, each as early as the fastest level's room and the channel's order allow,
and an annealed climb over each tensor's home and whether it is streamed.

This is what an NPU compiler does with weights that do not all fit in its SRAM (double
buffering grown to the whole buffer): while the ops of one layer run, the next layers'
weights move in behind them. On small transformers whose weights outgrow the SRAM (the
eighth round of unseen architectures, docs/zoo.md: ESM, BigBird, GPT-Neo, CodeGen, 2
layers of 256, 6.5-8.5 MB of weights against nnpi's 4 MiB) the anneals of `sa` and
`multistart` add windows a few ops ahead of their reads and keep the 1 MB projections in
the LLC, read directly; streaming them from the best known's homes took BigBird's best
known from 11.540 to 9.891 µs and ESM's from 8.302 to 7.782.

`windows(instance, homes, streamed)` builds the windows: for every access of a streamed
tensor, in op order, a prefetch into the fastest level whose start is the earliest op
such that the level holds the tensor from there to the access (homes and the windows
placed so far counted), no earlier than the start of the window before it (the channel's
queue is first in, first out: a copy issued earlier but due later would hold up the
ones behind it) nor than the tensor's previous window. An access with no room for a
copy before it is read from the home. `search` climbs from a start (annealing-style: a
slower move is kept now and then, less often as the climb cools): a move changes one
to three tensors (a weight to the fastest level, or to a slower level streamed or not; an
activation to another level), the windows are built again and the move is kept when the
simulated latency is no worse (sideways moves walk plateaus) or by the Metropolis rule.

Only programs whose levels are not addressed are streamed (windows there need offsets,
which this construction does not pack); `search` returns its start unchanged otherwise.
"""
from __future__ import annotations

import math
import time
from typing import Iterable

import numpy as np

from memplace.model.instance import Instance
from memplace.model.residency import ResidencySolution, Window, simulate
from memplace.model.static.cost import load_profile
from memplace.solvers.residency.machinery.move_loop import cached_access_ops

FAST = 0  # the level weights are streamed into: the fastest
T_START, T_END = 1e-2, 1e-5  # the climb's temperature (relative latency change), cooling geometrically


def home_loads(instance: Instance, homes: np.ndarray) -> np.ndarray | None:
    """Each level's load at each op from the homes alone ([level, op], the static model's
    `load_profile`), or None when a capacitated level overflows."""
    load = load_profile(instance, homes)
    return None if (load > instance.capacity[:, None]).any() else load


def windows(instance: Instance, homes: np.ndarray, streamed: Iterable[int]) -> list[Window] | None:
    """The prefetch windows into the fastest level for the accesses of `streamed` (tensors
    without a producer homed slower), as early as room and order allow; None when the homes
    overflow a level."""
    load = home_loads(instance, homes)
    if load is None:
        return None
    fast = load[FAST].copy()
    cap = int(instance.capacity[FAST])
    ptr, ops = cached_access_ops(instance)
    items = sorted((int(a), int(t)) for t in streamed for a in ops[ptr[t]:ptr[t + 1]])
    out: list[Window] = []
    floor = 0
    after: dict[int, int] = {}
    for a, t in items:
        size = int(instance.size[t])
        if a == 0 or fast[a] + size > cap:
            continue
        lo = max(floor, after.get(t, -1) + 1)
        s = a
        while s - 1 >= lo and fast[s - 1] + size <= cap:
            s -= 1
        if s == a:
            continue  # no room for a copy before the read: the home serves it
        fast[s:a + 1] += size
        out.append(Window(t, FAST, s, a, a))
        after[t] = a
        floor = s
    return out


def streamable(instance: Instance) -> bool:
    """Whether streaming applies: more than one level and none addressed."""
    return instance.n_levels > 1 and not instance.has_addressed_levels


def _solution(instance: Instance, homes: np.ndarray, streamed: set[int]) -> ResidencySolution | None:
    found = windows(instance, homes, streamed)
    if found is None:
        return None
    sol = ResidencySolution(instance.name, homes.copy(), None, tuple(found))
    sol.latency = simulate(instance, sol)
    return sol


def _closer(instance: Instance, homes: np.ndarray, streamed: set[int]) -> None:
    """Streamed weights homed in the last level moved to the second fastest, the largest
    first, while it has room: their copies then run on its faster channel."""
    last = instance.n_levels - 1
    if last < 2:
        return
    for t in sorted((t for t in streamed if homes[t] == last), key=lambda t: -instance.size[t]):
        homes[t] = 1
        if home_loads(instance, homes) is None:
            homes[t] = last


def search(instance: Instance, start: ResidencySolution, rng: np.random.Generator,
           deadline: float) -> tuple[ResidencySolution, int]:
    """A climb over homes and streaming from `start`'s homes (every weight homed below the
    fastest level streamed, those in the last level first moved to the second fastest
    where it has room; `start`'s own windows are not kept, the streaming windows are built
    anew) until `deadline` (perf_counter seconds), accepting a slower move with the
    Metropolis probability at a temperature cooling from T_START to T_END. Returns the best
    solution (`start` itself when nothing was better) and the moves tried."""
    if not streamable(instance):
        return start, 0
    homes = np.array(start.placement, np.int64)
    weights = np.flatnonzero(instance.is_weight == 1)
    others = np.flatnonzero((instance.is_weight == 0) & (instance.traffic > 0))
    streamed = {int(t) for t in weights if homes[t] != FAST}
    _closer(instance, homes, streamed)
    current = _solution(instance, homes, streamed)
    if current is None:
        return start, 0
    best = current if current.latency < start.latency else start
    tensors = np.concatenate([weights, others])
    if tensors.size == 0:
        return best, 0
    levels = instance.n_levels
    tries = 0
    began = time.perf_counter()
    span = max(deadline - began, 1e-9)
    while (now := time.perf_counter()) < deadline:
        tries += 1
        temp = T_START * (T_END / T_START) ** min(1.0, (now - began) / span)
        new_homes, new_streamed = homes.copy(), set(streamed)
        for _ in range(int(rng.choice((1, 1, 2, 3)))):
            t = int(tensors[rng.integers(tensors.size)])
            level = int(rng.integers(levels))
            new_homes[t] = level
            if instance.is_weight[t] and level != FAST and rng.random() < 2 / 3:
                new_streamed.add(t)
            else:
                new_streamed.discard(t)
        found = _solution(instance, new_homes, new_streamed)
        if found is None:
            continue
        worse = found.latency / current.latency - 1
        if worse > 0 and rng.random() >= math.exp(-worse / temp):
            continue
        homes, streamed, current = new_homes, new_streamed, found
        if found.latency < best.latency * (1 - 1e-12):
            best = found
    return best, tries
