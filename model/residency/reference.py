"""The residency latency (docs/spec.md section 11) in plain Python, written to read like docs/spec.md.

This is the oracle the Numba kernels (`kernels.py`) are tested against. It reads the
instance's JSON dict (not the `Instance` arrays) and the solution's `Window`s, so the
two share no code but the spec. It assumes a solution whose windows pass section 10's
structural rules (order, kind, eviction range, disjoint occupancies); `validate` checks
those before it simulates.

Float arithmetic, where the spec leaves the order open (it fixes only "float64 in the
order above, each channel keeping the bytes left of its front copies"):

- A channel given `idle` seconds repeatedly takes the time `dt` to the next completion
  (`remaining / rate` for each front copy, `rate = copy_bandwidth / 2` when both queues
  have a front, else `copy_bandwidth`), and if `dt <= idle` completes that copy exactly
  (and any other front whose time is `<= dt`), subtracts `dt * rate` bytes from the other
  front and `dt` from `idle`; else subtracts `idle * rate` bytes from every front
  (clamped at 0) and stops.
- The wait before op k: each channel runs, as above, with no limit, until its copies
  due at k are complete; that takes `need[c]` seconds. The wait is `max(need)`; every
  channel then runs for its remaining `wait - need[c]` seconds.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

INF = float("inf")


@dataclass
class Copy:
    """One asynchronous copy: a prefetch (read queue) or an eviction (write queue)."""

    window: int  # index of its window in the solution
    tensor: int
    home: int  # level whose channel moves it
    issue: int  # joins its queue before op `issue` runs
    due: int  # must be complete before op `due` begins
    evict: bool
    remaining: float  # bytes left
    done_op: int = -1  # the op during whose wait or run it completed


@dataclass
class Timeline:
    """What `simulate` saw, op by op, and when each copy completed."""

    latency: float
    begin: list[float]  # clock when op k starts running (after its wait)
    wait: list[float]  # seconds waited before op k
    elapsed: list[float]  # seconds op k ran
    copies: list[Copy]  # in the order they joined their queues


class Channel:
    """A level's channel: two FIFO queues sharing the idle bandwidth (docs/spec.md section 11)."""

    def __init__(self, copy_bandwidth: float):
        self.copy_bandwidth = copy_bandwidth
        self.read: list[Copy] = []  # prefetches, front first
        self.write: list[Copy] = []  # evictions, front first

    def fronts(self) -> list[Copy]:
        return [queue[0] for queue in (self.read, self.write) if queue]

    def run(self, idle: float, op: int, until_done_due: int = -1) -> float:
        """Move copies for `idle` seconds (or, with `until_done_due` >= 0, for as long as a
        copy due at that op is in a queue, `idle` ignored); return the seconds used."""
        used = 0.0
        while True:
            fronts = self.fronts()
            if not fronts:
                return used
            if until_done_due >= 0 and not any(c.due == until_done_due for q in (self.read, self.write)
                                               for c in q):
                return used
            rate = self.copy_bandwidth / 2 if len(fronts) == 2 else self.copy_bandwidth
            times = [c.remaining / rate for c in fronts]
            dt = min(times)
            if until_done_due < 0 and dt > idle:
                for c in fronts:
                    c.remaining = max(c.remaining - idle * rate, 0.0)
                return used + idle
            for c, time in zip(fronts, times):
                if time <= dt:
                    c.remaining = 0.0
                    c.done_op = op
                    (self.read if not c.evict else self.write).pop(0)
                else:
                    c.remaining = max(c.remaining - dt * rate, 0.0)
            used += dt
            if until_done_due < 0:
                idle -= dt


def _copies(data: dict[str, Any], placement: Sequence[int], windows: Sequence[Any]) -> list[Copy]:
    """Every prefetch and eviction of the windows (docs/spec.md sections 10 and 11)."""
    tensors = data["workload"]["tensors"]
    out = []
    for w, win in enumerate(windows):
        t = win.tensor
        size = float(tensors[t]["size"])
        if win.start < win.first:
            out.append(Copy(w, t, placement[t], win.start, win.first, False, size))
        if win.evict is not None:
            out.append(Copy(w, t, placement[t], win.evict[0], win.evict[1], True, size))
    return out


def timeline(data: dict[str, Any], placement: Sequence[int], windows: Sequence[Any]) -> Timeline:
    """Simulate one inference (docs/spec.md section 11) and return the per-op figures."""
    ops = data["workload"]["ops"]
    tensors = data["workload"]["tensors"]
    levels = data["hardware"]["levels"]
    rate = data["hardware"]["compute_rate"]
    bandwidth = [level["bandwidth"] for level in levels]
    channels = [Channel(level.get("copy_bandwidth", level["bandwidth"])) for level in levels]
    accesses_of_op: list[list[tuple[int, int]]] = [[] for _ in ops]
    for t, tensor in enumerate(tensors):
        for k, b in tensor["accesses"]:
            accesses_of_op[k].append((t, b))

    def serving_level(t: int, k: int) -> int:
        """Section 10: the window of t whose first..last contains k, else the home."""
        for win in windows:
            if win.tensor == t and win.first <= k <= win.last:
                return win.level
        return placement[t]

    copies = _copies(data, placement, windows)
    joined: list[Copy] = []
    clock = 0.0
    begin, waits, elapsed_of = [], [], []
    for k, op in enumerate(ops):
        # 1. Wait while a copy due at k is not complete; every channel is idle throughout.
        need = [channel.run(0.0, k, until_done_due=k) for channel in channels]
        wait = max(need)
        for channel, used in zip(channels, need):
            channel.run(wait - used, k)
        clock += wait
        # 2. Copies issued before op k join their queues, by (due op, tensor index).
        for c in sorted((c for c in copies if c.issue == k), key=lambda c: (c.due, c.tensor)):
            (channels[c.home].write if c.evict else channels[c.home].read).append(c)
            joined.append(c)
        # 3. Run op k; each channel moves copies during its idle time inside the op.
        compute = float(op["flops"]) / rate
        memory = 0.0
        busy = [0.0] * len(levels)
        for t, b in sorted(accesses_of_op[k]):
            level = serving_level(t, k)
            memory += b / bandwidth[level]
            busy[level] += b / bandwidth[level]
        elapsed = max(compute, memory)
        for level, channel in enumerate(channels):
            channel.run(max(elapsed - busy[level], 0.0), k)
        begin.append(clock)
        waits.append(wait)
        elapsed_of.append(elapsed)
        clock += elapsed
    return Timeline(clock, begin, waits, elapsed_of, joined)


def simulate(data: dict[str, Any], placement: Sequence[int], windows: Sequence[Any]) -> float:
    """The latency of a residency solution (docs/spec.md section 11), in seconds."""
    return timeline(data, placement, windows).latency
