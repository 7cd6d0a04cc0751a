"""The delivery relaxation: the access relaxation plus where prefetched bytes wait, a lower bound.

The access relaxation (`access_bound.py`) charges a prefetch window to fast memory only
from the first access it serves: the steps between its copy's issue and that access,
when the window already holds its level's space, are free. On programs whose weights
do not fit the fast levels (synth-1000@nnpi: 85 MiB of weights, 28 MiB of SRAM and LLC)
that is what the optimum pays for: a 2 MiB weight takes 31 µs to cross DRAM's channel,
about fifteen ops, and holds half of SRAM all that time; so the relaxation served every
access at SRAM speed and proved no more than the closed-form bounds. This LP follows,
per channel and fast level, the bytes delivered so far (a fluid schedule of the channel,
cumulative, step by step): what is delivered must be there by its due op, the channel
delivers at most its idle time's worth in each interval, and what is delivered but not
yet due sits in the fast level, so it counts against that level's capacity.

Columns (fractions; times in units of `scale` seconds; bytes on channel h in units of
`copy_bandwidth_h * scale`, i.e. channel time), for tensor t with accesses
i = 0..m-1 at ops k_0 < ... < k_{m-1} and pairs (l, h), l < h, of levels t fits:

    y[t, h]          t is homed in h (sum_h y = 1)
    w[t, i, l, h]    access i of the part of t homed in h is served by a window in l
                     (sum_l w[t, i, l, h] <= y[t, h]; the rest is served by the home)
    c[t, i, l, h]    i >= 1: accesses i - 1 and i are served by one window in l
                     (c <= w[t, i - 1, l, h], c <= w[t, i, l, h])
    f[t, i, l, h]    a prefetch from h into l first serves access i:
                     f >= w[t, i, l, h] - c[t, i, l, h] (i >= 1, or i = 0 without producer)
    e[t, h]          t (with a producer) is evicted to h:
                     e >= w[t, 0, l, h] - c[t, i, l, h] for every l and i >= 1
    E[k]             interval k: op k's run and the wait before op k + 1 (E >= compute_k)
    I[h, k]          channel h's idle time in interval k: E[k] - op k's accesses served by h
    N[h, l, k]       channel time of the prefetches h -> l due by op k + 1 (their f summed,
                     weighted by size / copy_bandwidth_h): N[k] - N[k-1] = those due at k + 1
    D[h, l, k]       channel time of the prefetches h -> l delivered by the end of interval k:
                     D[k] >= N[k], D[k] >= D[k-1], sum_l (D[h, l, k] - D[h, l, k-1]) <= I[h, k]

    E[k] >= memory time of op k (each access at the bandwidth of the level serving it)
    window rows (as the access relaxation): over a span [A, B) of intervals, the idle time
        of h covers the copy time of every f and e on h that can only move inside it
    capacity of level l at step j: homes live at j + windows serving an access at j (w)
        + windows kept between two accesses (c)
        + sum_h (D[h, l, j] - N[h, l, j - 1]) * copy_bandwidth_h * scale   <= capacity_l
    minimise sum_k E[k]

Why every valid solution is a feasible point whose objective is its latency: steps 1-5
of `access_bound.py`'s argument map it to y, w, c, f, e, E, I (u there is y - sum_l w here)
and show every row but the delivery ones holds; for those, set D[h, l, k] to the bytes
(as channel time) that the copies of the prefetch windows counted by f (h -> l) have moved
by the end of interval k, and N as defined.

6. A prefetch window first serving access i has `first <= k_i`, and its copy completes
   before op `first` runs, so by the end of interval k_i - 1: D[k] >= N[k]. Cumulative
   bytes never fall: D[k] >= D[k - 1]. In interval k channel h moves at most
   copy_bandwidth_h * (its idle time there) bytes over all its copies (section 11): the
   channel row (copies not counted by f only add to the true left-hand side).
7. At step j, D[h, l, j] - N[h, l, j - 1] is the part moved by the end of interval j of
   the copies h -> l whose window first serves an access at an op > j (those due at ops
   <= j are complete, and counted whole in both). Each such copy has moved, so it was
   issued before an op <= j: its window occupies step j (start <= j < k_i <= last), with
   its whole size, at least the part moved. That window serves no access at an op <= j
   (the first access it serves is later), so the capacity row's w and c terms, which
   count at j only windows serving an access at j or kept between two accesses around j,
   do not count it: no window is counted twice, and the row's left-hand side stays at
   most the true load of l at j.

Op rows (`with_op_rows`, on request: a certificate that has them says so). The memory
row charges an access served partly by a slow level for that part only, and an op whose
compute hides the rest costs nothing more: a 1 MiB weight read by a matrix product of
0.73 µs takes 1.54 µs from LLC, and the LP reads 47% of it there, and prefetches the rest,
at no cost to the op. At a valid solution's point one level serves each access. So for
op k with compute c, F the time of its accesses all at the fastest bandwidth, and
s = c - F >= 0 (the op is compute-bound when all is fast), and delta(a, x) the extra
time of access a served by level x over the fastest (`bytes / bandwidth_x - bytes /
fastest`):

    E[k] >= c + sum over accesses a and levels x of (delta(a, x) - s)^+ * served(a, x)

where served(a, x) is y[t, x] - sum_l w[t, i, l, x] for the home and w[t, i, x, h] for a
window (one of them is 1, the others 0). Why it holds: with P the accesses whose served
level has delta > s, the right-hand side is c if P is empty, else c + sum_P delta - |P| s
<= c - s + sum_a delta = F + sum_a delta, op k's memory time with those levels; and
E[k] >= elapsed_k >= both. An op with s < 0 gets no row (there the memory row is the
stronger). This is the convex hull of max(compute, memory) over the choice of one level
per access, where the memory row alone is not.

So min <= latency for every valid solution. The bound is recomputed from the row duals
by weak LP duality (`dual_bound`: every column has finite bounds, E and I capped at a
known valid latency, N and D at the total channel time of all copies), so the row dual
vector is a certificate anyone can re-check with one sparse product.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace

import numpy as np

from memplace.model import Instance, latency
from memplace.solvers.highs import new_highs
from memplace.solvers.box_lp import AddedRow, BoxLP, Rows

INF = math.inf
SPAN_SCALES = (4, 32, 256, 2048)  # grid steps G of the window rows' spans [A, A + 2G)
MARGIN = 1e-7  # relative: float64 sums over millions of terms stay far below it


@dataclass
class DeliveryModel:
    """The LP of one instance (module docstring)."""

    instance: Instance
    scale: float  # seconds per model time unit
    lp: BoxLP  # (its `scale` is the model's)
    homes: np.ndarray  # (T, L) column of y[t, l], -1 where not built (t does not fit l, or
    #                    has no access in the block)
    stats: dict = field(default_factory=dict)
    resident: dict = field(default_factory=dict)  # `_Builder.resident`
    # per tensor built: its serving and kept window columns (`TensorColumns`)
    columns: dict[int, "TensorColumns"] = field(default_factory=dict)
    # per level h: its copies (column, channel time, earliest issue, due step) and its
    # idle columns, one per interval (empty where it has no copies)
    copies: list[list[tuple[int, float, int, int]]] = field(default_factory=list)
    idle: list[list[int]] = field(default_factory=list)
    # per (home h, window level l) with prefetches: the columns N[h, l, k] and D[h, l, k]
    # by interval k, and per interval the (f, channel time) of the prefetches due at its end;
    # per (level, step) its capacity row; per prefetch column f its tensor
    delivered: dict[tuple[int, int], tuple[list[int], list[int]]] = field(default_factory=dict)
    due: dict[tuple[int, int], list[list[tuple[int, float]]]] = field(default_factory=dict)
    capacity: dict[tuple[int, int], int] = field(default_factory=dict)
    prefetched: dict[int, int] = field(default_factory=dict)
    # the prefetches left out of N and D (`formulate`'s `apart`): (tensor, access, window
    # level, home, f column, channel time, earliest issue, due step); per (home, interval)
    # its channel row, where built (both for `start_columns.py`)
    apart: list[tuple[int, int, int, int, int, float, int, int]] = field(default_factory=list)
    channel_rows: dict[tuple[int, int], int] = field(default_factory=dict)
    elapsed: list[int] = field(default_factory=list)  # E[k] by interval (step) of the block
    lo: int = 0  # the block's first op


@dataclass
class TensorColumns:
    """One tensor's 0/1 columns: `ops[i]` the step (in the block) of access i, `windows[i]`
    its w columns by (l, h), `kept[i]` its c columns by (l, h) (the window kept from access
    i - 1 to i, occupying the steps between; in a block, for i = 0, one carried in)."""

    ops: list[int]
    windows: list[dict[tuple[int, int], int]]
    kept: list[dict[tuple[int, int], int]]
    accesses: list[int] = field(default_factory=list)  # access i's index (`Instance.op_tensor`)


class _Builder:
    """Per-op and per-step term lists filled tensor by tensor, turned into rows at the end.

    With `ops = (lo, hi)` it builds the model of the intervals lo .. hi - 1 alone (the
    block relaxation of `horizon_bound.py`): only accesses at those ops, a window may be
    carried in from before lo (it then occupies every step from lo to the first access it
    serves, and its copy, if any, is not charged), the delivery rows start with any
    amount already delivered (it waits in fast memory like any other), and a copy is
    charged to a span only if its earliest issue and its due op both lie in the block."""

    def __init__(self, inst: Instance, scale: float, ceiling: float,
                 ops: tuple[int, int] | None = None, apart: frozenset[int] = frozenset()) -> None:
        L = inst.n_levels
        self.lo, self.hi = (0, inst.n_ops) if ops is None else ops
        n = self.hi - self.lo
        self.inst, self.scale, self.b = inst, scale, Rows()
        self.cap = ceiling / scale * (1 + 1e-6)
        self.E = [self.b.col(inst.compute[k] / scale, max(self.cap, inst.compute[k] / scale), 1.0)
                  for k in range(self.lo, self.hi)]
        # per step of the block (index k - lo)
        self.memory: list[list[tuple[int, float]]] = [[] for _ in range(n)]
        self.busy = [[[] for _ in range(n)] for _ in range(L)]  # busy[h][k]: (col, time)
        self.occupancy = [[[] for _ in range(n)] for _ in range(L)]  # (col, bytes)
        self.copies: list[list[tuple[int, float, int, int]]] = [[] for _ in range(L)]  # local steps
        self.due: dict[tuple[int, int], list[list[tuple[int, float]]]] = {}  # (h, l) -> per step
        self.homes = np.full((inst.n_tensors, L), -1, np.int64)
        self.columns: dict[int, TensorColumns] = {}
        # (t, step) -> the w and c columns of t's windows over a home in the last level that
        # occupy that step (`cover_cuts.py` counts them; the LP does not use this)
        self.resident: dict[tuple[int, int], list[int]] = {}
        self.delivered: dict[tuple[int, int], tuple[list[int], list[int]]] = {}
        self.capacity: dict[tuple[int, int], int] = {}  # (level, step) -> row
        self.prefetched: dict[int, int] = {}  # prefetch column -> tensor
        self.apart, self.apart_copies = apart, []
        self.channel_rows: dict[tuple[int, int], int] = {}

    def tensor(self, t: int) -> None:
        """Tensor t's columns and rows: a home, the level serving each access in the block,
        the copies that deliver its windows and the eviction of a defining one."""
        inst, b, L, lo = self.inst, self.b, self.inst.n_levels, self.lo
        self._t = t
        acc = inst.tensor_access[inst.tensor_ptr[t]:inst.tensor_ptr[t + 1]]
        ops_all = inst.access_op[acc]
        inside = (ops_all >= lo) & (ops_all < self.hi)
        if not inside.any():
            return
        acc, ops = acc[inside].tolist(), [int(k) - lo for k in ops_all[inside]]
        fits = [h == L - 1 or inst.size[t] <= inst.capacity[h] for h in range(L)]
        y = [b.col() if fits[h] else -1 for h in range(L)]
        self.homes[t] = y
        b.row([(c, 1.0) for c in y if c >= 0], 1.0, 1.0)
        pairs = [(l, h) for h in range(L) for l in range(h) if fits[l] and fits[h]]
        size = float(inst.size[t])
        producer = inst.tensors[t]["producer"]
        earliest = (int(inst.start[t]) if producer is None else int(producer) + 1) - lo
        defining = producer is not None and producer >= lo  # the producer's write is access 0
        carried = int(inst.start[t]) < lo  # a window may come from before the block
        w = [self._served(acc_a, k, y, pairs, size) for acc_a, k in zip(acc, ops)]
        kept = self._delivered(w, ops, size, earliest, defining, carried)
        self.columns[t] = TensorColumns(ops, w, kept, acc)
        last = int(inst.end[t]) - lo  # an eviction is due by the tensor's last access
        if not defining or len(ops) < 2 or last >= len(self.E):
            return
        self._evicted(w, kept, ops, size, earliest, last)

    def _served(self, a: int, k: int, y: list[int], pairs: list[tuple[int, int]],
                size: float) -> dict[tuple[int, int], int]:
        """Access a at step k served by the home (column y[h]) or by a window of level l
        over home h: the window columns by (l, h)."""
        inst, b = self.inst, self.b
        nbytes = float(inst.op_bytes[a])
        w_of: dict[tuple[int, int], int] = {}
        for h in range(len(y)):
            if y[h] < 0:
                continue
            t_h = nbytes / inst.bandwidth[h] / self.scale
            if nbytes:
                self.memory[k].append((y[h], t_h))
                self.busy[h][k].append((y[h], t_h))
            served = [(y[h], -1.0)]
            for l in range(h):
                if (l, h) not in pairs:
                    continue
                col = b.col()
                w_of[l, h] = col
                served.append((col, 1.0))
                self.occupancy[l][k].append((col, size))
                if h == len(y) - 1:
                    self.resident.setdefault((self._t, k + self.lo), []).append(col)
                if nbytes:
                    self.memory[k].append((col, nbytes / inst.bandwidth[l] / self.scale - t_h))
                    self.busy[h][k].append((col, -t_h))
            if len(served) > 1:
                b.row(served, hi=0.0)
        return w_of

    def _delivered(self, w: list[dict[tuple[int, int], int]], ops: list[int], size: float,
                   earliest: int, defining: bool, carried: bool) -> list[dict[tuple[int, int], int]]:
        """Each window column either kept from the previous access (the columns returned,
        by access and (l, h)), carried in from before the block, or delivered by a copy."""
        inst, b, lo = self.inst, self.b, self.lo
        kept: list[dict[tuple[int, int], int]] = [{} for _ in ops]
        for i, w_of in enumerate(w):
            for (l, h), win in w_of.items():
                c = -1
                if i and (l, h) in w[i - 1]:
                    c = b.col()
                    b.row([(c, 1.0), (w[i - 1][l, h], -1.0)], hi=0.0)
                    b.row([(c, 1.0), (win, -1.0)], hi=0.0)
                    kept[i][l, h] = c
                    for j in range(ops[i - 1] + 1, ops[i]):
                        self.occupancy[l][j].append((c, size))
                        if h == inst.n_levels - 1:
                            self.resident.setdefault((self._t, j + lo), []).append(c)
                elif i == 0 and carried:  # a window from before the block: no copy here
                    c = b.col()
                    b.row([(c, 1.0), (win, -1.0)], hi=0.0)
                    for j in range(0, ops[0]):
                        self.occupancy[l][j].append((c, size))
                if i == 0 and defining:
                    continue  # the producer's write goes into the defining window: no copy
                f = b.col(0.0, 1.0 if ops[i] + lo >= 1 else 0.0)  # nothing is due at op 0
                self.prefetched[f] = self._t
                tau = size / inst.copy_bandwidth[h] / self.scale
                self.copies[h].append((f, tau, earliest, ops[i]))
                if self._t in self.apart:  # its delivery is `start_columns.py`'s
                    self.apart_copies.append((self._t, i, l, h, f, tau, earliest, ops[i]))
                elif ops[i] >= 1:  # due by the end of interval ops[i] - 1 of the block
                    if (h, l) not in self.due:
                        self.due[h, l] = [[] for _ in self.E]
                    self.due[h, l][ops[i] - 1].append((f, tau))
                b.row([(f, 1.0), (win, -1.0)] + ([(c, 1.0)] if c >= 0 else []), lo=0.0)
        return kept

    def _evicted(self, w: list[dict[tuple[int, int], int]], kept: list[dict[tuple[int, int], int]],
                 ops: list[int], size: float, earliest: int, last: int) -> None:
        """A defining window's eviction to home h, due by step `last`, whenever a later
        access is not served by the window kept from the write."""
        inst, b = self.inst, self.b
        evict: dict[int, int] = {}
        for (l, h), win in w[0].items():
            if h not in evict:
                evict[h] = b.col()
                self.copies[h].append((evict[h], size / inst.copy_bandwidth[h] / self.scale,
                                       earliest, last))
            for i in range(1, len(ops)):
                c = kept[i].get((l, h))
                b.row([(evict[h], 1.0), (win, -1.0)] + ([(c, 1.0)] if c is not None else []), lo=0.0)

    def time_rows(self) -> tuple[list[list[int]], int]:
        """Memory rows, idle columns and window rows; returns the idle columns per level."""
        inst, b = self.inst, self.b
        n, L = len(self.E), inst.n_levels
        for k in range(n):
            if self.memory[k]:
                b.row([(self.E[k], 1.0)] + [(c, -v) for c, v in self.memory[k]], lo=0.0)
        idle: list[list[int]] = [[] for _ in range(L)]
        spans = 0
        for h in range(1, L):
            if not self.copies[h]:
                continue
            idle[h] = [b.col(0.0, self.cap) for _ in range(n)]
            for k in range(n):
                b.row([(idle[h][k], 1.0), (self.E[k], -1.0)] + self.busy[h][k], 0.0, 0.0)
            inside = [(col, v, lo, due) for col, v, lo, due in self.copies[h] if lo >= 0]
            if inside:
                b.row([(c, 1.0) for c in idle[h]] + [(col, -v) for col, v, _, _ in inside], lo=0.0)
                spans += 1
            for G in SPAN_SCALES:
                if 2 * G >= n:
                    break
                groups: dict[int, list[tuple[int, float]]] = {}
                for col, v, lo, due in inside:
                    for A in range(max(0, -((2 * G - due) // G) * G), lo // G * G + 1, G):
                        groups.setdefault(A, []).append((col, v))  # lo >= A, due <= A + 2G
                for A, terms in groups.items():
                    B = min(A + 2 * G, n)
                    b.row([(idle[h][k], 1.0) for k in range(A, B)] + [(c, -v) for c, v in terms], lo=0.0)
                    spans += 1
        return idle, spans

    def delivery_rows(self, idle: list[list[int]]) -> dict[int, list[list[tuple[int, float]]]]:
        """N and D columns of every (home, window level) pair with prefetches, their rows and
        the channel rows; returns, per window level, the buffered terms of each step. In a
        block that does not start the program, the first interval's delivery is not capped
        (bytes may have moved before the block)."""
        inst, b = self.inst, self.b
        n = len(self.E)
        buffered: dict[int, list[list[tuple[int, float]]]] = {}
        channel: dict[int, list[list[tuple[int, float]]]] = {}
        for (h, l), due in sorted(self.due.items()):
            total = sum(v for terms in due for _, v in terms) * (1 + 1e-6) + 1e-9
            rate = inst.copy_bandwidth[h] * self.scale  # bytes per unit of channel time
            N = [b.col(0.0, total) for _ in range(n)]
            D = [b.col(0.0, total) for _ in range(n)]
            self.delivered[h, l] = (N, D)
            steps = buffered.setdefault(l, [[] for _ in range(n)])
            moved = channel.setdefault(h, [[] for _ in range(n)])
            for k in range(n):
                b.row([(N[k], 1.0)] + ([(N[k - 1], -1.0)] if k else []) + [(f, -v) for f, v in due[k]],
                      0.0, 0.0)
                b.row([(D[k], 1.0), (N[k], -1.0)], lo=0.0)
                if k:
                    b.row([(D[k], 1.0), (D[k - 1], -1.0)], lo=0.0)
                if k or self.lo == 0:
                    moved[k] += [(D[k], 1.0)] + ([(D[k - 1], -1.0)] if k else [])
                steps[k] += [(D[k], rate)] + ([(N[k - 1], -rate)] if k else [])
        for h, moved in channel.items():
            for k in range(n):
                if moved[k]:
                    self.channel_rows[h, k] = b.row(moved[k] + [(idle[h][k], -1.0)], hi=0.0)
        return buffered

    def capacity_rows(self, buffered: dict[int, list[list[tuple[int, float]]]], deadline: float) -> int:
        inst, b = self.inst, self.b
        n, L, lo = len(self.E), inst.n_levels, self.lo
        x = self.homes
        built = np.flatnonzero(x.max(axis=1) >= 0)
        weights = built[inst.is_weight[built] == 1]
        others = built[inst.is_weight[built] == 0]
        rows = 0
        for l in range(L):
            if l == L - 1 and inst.levels[l].capacity is None:
                continue
            cap = float(inst.capacity[l])
            homes: list[list[tuple[int, float]]] = [[] for _ in range(n)]
            for t in others[x[others, l] >= 0].tolist():
                term = (int(x[t, l]), float(inst.size[t]) / cap)
                for j in range(max(int(inst.start[t]), lo), min(int(inst.end[t]) + 1, self.hi)):
                    homes[j - lo].append(term)
            fixed: list[tuple[int, float]] = []
            wcols = [(int(x[t, l]), float(inst.size[t]) / cap) for t in weights if x[t, l] >= 0]
            if wcols:
                load = b.col(0.0, 1.0)  # weights live at every step: one column for their load
                b.row([(load, 1.0)] + [(c, -v) for c, v in wcols], 0.0, 0.0)
                fixed = [(load, 1.0)]
            waiting = buffered.get(l, [[] for _ in range(n)])
            for j in range(n):
                if j % 512 == 0 and time.perf_counter() >= deadline:
                    raise TimeoutError(f"capacity rows of level {l}, step {j + lo} of {inst.n_ops}")
                terms = homes[j] + [(c, v / cap) for c, v in self.occupancy[l][j]] + \
                    [(c, v / cap) for c, v in waiting[j]]
                if terms:
                    self.capacity[l, j + lo] = b.row(terms + fixed, hi=1.0)
                    rows += 1
        return rows


def model_scale(inst: Instance) -> float:
    """Seconds per model time unit: the all-slowest latency per op (ops then take about 1)."""
    slow = latency(inst, inst.slowest_placement())
    return slow / inst.n_ops if slow > 0 else 1.0


def formulate(inst: Instance, ceiling: float, deadline: float = INF,
              ops: tuple[int, int] | None = None, scale: float | None = None,
              apart: frozenset[int] = frozenset(), op_rows: bool = False) -> DeliveryModel:
    """Build the delivery relaxation of `inst` (module docstring), or of its intervals
    `ops = (lo, hi)` alone (`_Builder`); `ceiling` is the latency (seconds) of a valid
    solution, which caps the interval columns. The prefetches of the tensors `apart` are
    left out of the delivery columns N and D (the model is then no bound until
    `start_columns.py` charges them). With `op_rows`, the op rows follow the others
    (`with_op_rows`). Raises TimeoutError once `time.perf_counter()` passes `deadline`."""
    scale = model_scale(inst) if scale is None else scale
    m = _Builder(inst, scale, ceiling, ops, frozenset(apart))
    for t in range(inst.n_tensors):
        if t % 256 == 0 and time.perf_counter() >= deadline:
            raise TimeoutError(f"tensor {t} of {inst.n_tensors}")
        m.tensor(t)
    idle, spans = m.time_rows()
    buffered = m.delivery_rows(idle)
    n_cap = m.capacity_rows(buffered, deadline)
    b = m.b
    stats = {"columns": len(b.lo), "rows": len(b.rlo), "nonzeros": len(b.v),
             "capacity_rows": n_cap, "span_rows": spans, "delivery_pairs": len(m.due)}
    model = DeliveryModel(inst, scale, b.arrays(scale), m.homes, stats, m.resident, m.columns, m.copies,
                          idle, m.delivered, m.due, m.capacity, m.prefetched, m.apart_copies,
                          m.channel_rows, m.E, m.lo)
    return with_op_rows(model) if op_rows else model


def op_row_terms(inst: Instance, op: int) -> dict[int, list[float]] | None:
    """Op `op`'s row terms (module docstring, "Op rows"), in seconds: for each of its
    accesses a that moves bytes, (delta(a, x) - s)^+ for every level x; None when the op
    gets no row (s < 0). `relaxation._Formulation.op_rows` states the same row over its
    own columns."""
    fastest = float(inst.bandwidth.max())
    lo, hi = int(inst.op_ptr[op]), int(inst.op_ptr[op + 1])
    slack = float(inst.compute[op]) - float(inst.op_bytes[lo:hi].sum()) / fastest
    if slack < 0:
        return None
    terms = {}
    for a in range(lo, hi):
        nbytes = float(inst.op_bytes[a])
        if nbytes:
            terms[a] = [max(0.0, nbytes / float(inst.bandwidth[x]) - nbytes / fastest - slack)
                        for x in range(inst.n_levels)]
    return terms


def op_rows(model: DeliveryModel) -> list[AddedRow]:
    """The op rows of the module docstring: one per op of the block whose compute is at
    least its accesses' time at the fastest bandwidth and some access can cost more."""
    inst, scale = model.instance, model.scale
    extras = [op_row_terms(inst, k + model.lo) for k in range(len(model.elapsed))]
    terms: dict[int, dict[int, float]] = {}  # per step: column -> its extra time
    for t, cols in model.columns.items():
        y = model.homes[t]
        for k, w_of, a in zip(cols.ops, cols.windows, cols.accesses):
            extra = (extras[k] or {}).get(a)
            if extra is None:
                continue
            extra = [e / scale for e in extra]
            row = terms.setdefault(k, {})
            served = [(int(y[h]), extra[h]) for h in range(inst.n_levels) if y[h] >= 0]
            served += [(col, extra[l] - extra[h]) for (l, h), col in w_of.items()]
            for col, v in served:
                row[col] = row.get(col, 0.0) + v
    rows: list[AddedRow] = []
    for k, row in sorted(terms.items()):
        used = [(col, v) for col, v in row.items() if v]
        if used:
            c = float(inst.compute[k + model.lo]) / scale
            rows.append(([model.elapsed[k]] + [col for col, _ in used], [1.0] + [-v for _, v in used],
                         c, INF))
    return rows


def with_op_rows(model: DeliveryModel) -> DeliveryModel:
    """The model with its op rows appended (in op order)."""
    return replace(model, lp=model.lp.with_rows(op_rows(model)))


def dual_bound(model: DeliveryModel, row_dual: np.ndarray) -> float:
    """The LP's weak-duality bound (seconds) from any row dual vector z: for
    min c x, rlo <= A x <= rhi, lo <= x <= hi, it is
    sum_r z_r * (rlo_r if z_r > 0 else rhi_r) + sum_j min(d_j lo_j, d_j hi_j), d = c - A^T z.
    A dual of the wrong sign for a one-sided row is set to 0 first (still a dual vector),
    so the figure is a bound whatever vector it is given."""
    p = model.lp
    z = np.asarray(row_dual, np.float64).copy()
    if z.shape != p.rlo.shape or not np.all(np.isfinite(z)):
        raise ValueError(f"a dual vector of {p.rlo.size} finite values is needed, got shape {z.shape}")
    z[(z > 0) & ~np.isfinite(p.rlo)] = 0.0
    z[(z < 0) & ~np.isfinite(p.rhi)] = 0.0
    d = p.cost - np.bincount(p.c, weights=p.v * z[p.r], minlength=p.cost.size)
    used = z != 0
    total = float(np.sum(z[used] * np.where(z[used] > 0, p.rlo[used], p.rhi[used])))
    total += float(np.sum(np.minimum(d * p.lo, d * p.hi)))
    return total * model.scale


@dataclass
class DeliveryBound:
    """The proven bound (seconds, -inf if none), HiGHS's status, the model's size and the
    certificate: the row duals (re-checked by `dual_bound` on the rebuilt model)."""

    bound: float
    status: str
    seconds: float
    stats: dict
    row_dual: np.ndarray | None = None


def solve_lp(model: DeliveryModel, time_limit: float | None, threads: int = 1,
             seed: int = 0) -> tuple[str, np.ndarray | None]:
    """HiGHS on the model: its status and row duals (None when it has none)."""
    h = new_highs(threads, seed, time_limit)
    h.passModel(model.lp.highs_lp())
    h.run()
    status = h.modelStatusToString(h.getModelStatus())
    sol = h.getSolution()
    return status, (np.array(sol.row_dual) if sol.dual_valid else None)


def delivery_bound(inst: Instance, ceiling: float, time_limit: float | None = None,
                   threads: int = 1, seed: int = 0) -> DeliveryBound:
    """Build and solve the delivery relaxation; the bound is recomputed from the duals
    (`dual_bound`) and lowered by MARGIN. `ceiling` is a valid solution's latency."""
    began = time.perf_counter()
    deadline = INF if time_limit is None else began + time_limit
    try:
        model = formulate(inst, ceiling, deadline)
    except TimeoutError as late:
        return DeliveryBound(-INF, f"not built in time ({late})", time.perf_counter() - began, {})
    left = None if time_limit is None else max(0.05, deadline - time.perf_counter())
    status, z = solve_lp(model, left, threads, seed)
    bound = -INF
    if z is not None:
        bound = dual_bound(model, z)
        bound = max(bound * (1 - MARGIN) if bound > 0 else bound, inst.compute_floor())
    return DeliveryBound(bound, status, time.perf_counter() - began, model.stats, z)
