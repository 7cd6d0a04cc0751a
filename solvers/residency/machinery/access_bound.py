"""The access relaxation: an LP over which level serves each access, a lower bound that scales.

`relaxation.py`'s MILP follows every copy interval by interval (a column per interval
between a tensor's earliest copy and each of its accesses): on a few hundred ops its LP
alone does not solve in minutes, beyond a few thousand it is not built. This LP keeps
what makes the residency problem hard -- the fast levels' capacity at every step, the
copies that a tensor not kept in a fast level costs on its home's channel, the ops'
memory time -- and drops the timing of each copy inside its interval. Its size is
linear in the accesses and the live ranges, so it is built and solved on programs of
10^4 ops.

Columns (fractions; times in units of `scale` seconds), for tensor t with accesses
i = 0..m-1 at ops k_0 < ... < k_{m-1}:

    y[t, h]          t is homed in h (sum_h y = 1)
    u[t, i, h]       access i of the part of t homed in h is served by the home
    w[t, i, l, h]    ... by a window in l < h; per home: u + sum_l w = y[t, h] (so a
                     fraction of t homed in h is served from h or from copies of h's
                     bytes: a home never lends its copies to another home's fraction)
    c[t, i, l, h]    i >= 1: accesses i - 1 and i are served by one window in l
                     (c <= w[t, i - 1, l, h], c <= w[t, i, l, h])
    f[t, i, l, h]    a prefetch from h into l brings t for access i:
                     f >= w[t, i, l, h] - c[t, i, l, h] (i >= 1, or i = 0 without producer)
    e[t, h]          t (with a producer) is evicted to h:
                     e >= w[t, 0, l, h] - c[t, i, l, h] for every l and i >= 1
    E[k]             interval k: op k's run and the wait before op k + 1
    I[h, k]          channel h's idle time in interval k (E[k] - busy), used by the window rows

    E[k] >= compute_k,  E[k] >= sum over op k's accesses of (u * b / bandwidth_h
                                 + sum_l w * b / bandwidth_l)
    I[h, k] = E[k] - sum over op k's accesses of u[., h] * b / bandwidth_h   (>= 0)
    window rows: for a span [A, B) of intervals, sum_{A <= k < B} I[h, k] >= the copy time
        (size / copy_bandwidth_h) of every f and e on h's channel that can only move
        inside the span (earliest issue >= A, due <= B); spans: the whole program, and
        at several scales the spans [A, A + 2G) for A on a grid of G
    capacity of level l at step j: homes live at j (y; weights through one column per
        level) + windows serving an access at j (w, every home) + windows kept between
        two accesses (c) <= capacity_l
    minimise sum_k E[k]

Why every valid solution is a feasible point whose objective is its latency:

1. Set y to the homes, u and w (of the home h) to the serving levels (docs/spec.md
   section 10), c to 1 where one window serves both accesses i - 1 and i, f to 1 where
   a prefetch window first serves access i, e to 1 where the defining window is evicted;
   every column of another home is 0.
2. Serving rows hold by definition (a window is strictly faster than its home). A window
   serving access i but not i - 1 has `first` in (k_{i-1}, k_i]; it is not the defining
   window (that one starts at the producer, the first access, so it would contain
   k_{i-1}), so it is a prefetch: f = 1 and its copy is due at `first <= k_i`. For
   i = 0 without a producer the window serving it is a prefetch too.
3. A defining window in l that is never evicted leaves the home never valid (section
   10): no access may then be served by the home and no prefetch may start, so the
   defining window serves every access and c[t, i, l] = 1 for all i >= 1; otherwise
   e = 1. Either way the eviction rows hold.
4. Time and channels as in `relaxation.py` (steps 1-3 of its argument): the latency is
   sum_k E[k] with E[k] = elapsed_k + wait_{k+1}; channel h is idle for
   E[k] - busy_hk >= 0 in interval k and moves at most copy_bandwidth_h bytes a second
   in all. A copy issued before op `start` moves in intervals start .. due - 1, with
   start >= the tensor's earliest issue (its producer + 1, or its live start; an
   eviction is issued after the producer) and due <= k_i (a prefetch) or <= the last
   access (an eviction). So every copy whose earliest issue and latest due lie in a
   span moves inside it, and the span's idle time covers them all: the window rows.
5. Capacity: at step j, a tensor's home counts if it is live; a window serving an
   access at j occupies j (first <= j <= last); a window serving accesses i - 1 and i
   occupies every step between. The terms of one tensor and level never count two
   windows at one step, and a home and a window are never in one level, so each
   capacity row's left-hand side is at most the true load (offsets ignored).

So min <= latency for every valid solution, and so for the optimum. Rather than trust
HiGHS's optimal objective, the bound is recomputed from its row duals by weak LP
duality (`dual_bound`), which holds for any dual vector: every column has finite
bounds (E[k] and I[h, k] are capped at a known valid latency, which the optimum's point
never exceeds), so the recomputed figure is a proven bound even when HiGHS stops early
or its tolerances are loose.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from memplace.model import Instance, latency
from memplace.solvers.box_lp import Rows
from memplace.solvers.highs import new_highs

INF = math.inf
SPAN_SCALES = (4, 32, 256, 2048)  # grid steps G of the window rows' spans [A, A + 2G)
# Weak duality is evaluated in float64 over up to millions of terms: the bound is
# lowered by this relative margin, far above that rounding.
MARGIN = 1e-7


@dataclass
class AccessModel:
    """The LP of one instance (module docstring)."""

    instance: Instance
    scale: float  # seconds per model time unit
    rows: Rows
    homes: np.ndarray  # (T, L) column of y[t, l], -1 where t does not fit l
    stats: dict = field(default_factory=dict)


@dataclass
class _Copies:
    """Copy-time terms on each channel, with the span each copy must move inside."""

    terms: list[list[tuple[int, float, int, int]]]  # per level: (column, time, earliest, due)


def _serving(b: Rows, inst: Instance, t: int, fits: np.ndarray, y: list[int],
             memory: list[list[tuple[int, float]]], busy: list[list[list[tuple[int, float]]]],
             occupancy: list[list[list[tuple[int, float]]]], scale: float
             ) -> tuple[list[dict[tuple[int, int], int]], list[int]]:
    """h and w columns of every access of t, their memory and busy terms; returns the w
    columns per access ({(level, home): column}) and the access ops."""
    L = inst.n_levels
    acc = inst.tensor_access[inst.tensor_ptr[t]:inst.tensor_ptr[t + 1]]
    ops = [int(inst.access_op[a]) for a in acc]
    size = float(inst.size[t])
    windows: list[dict[tuple[int, int], int]] = []
    for a, k in zip(acc.tolist(), ops):
        nbytes = float(inst.op_bytes[a])
        w_of: dict[tuple[int, int], int] = {}
        for h in range(L):
            if y[h] < 0:
                continue
            # the part of t homed in h is served by h or by windows in faster levels
            home = b.col()
            served = [(home, 1.0)]
            terms = [(home, h, nbytes / inst.bandwidth[h] / scale)]
            for l in range(h):
                if fits[t, l]:
                    win = b.col()
                    served.append((win, 1.0))
                    terms.append((win, l, nbytes / inst.bandwidth[l] / scale))
                    w_of[l, h] = win
                    occupancy[l][k].append((win, size))
            b.row(served + [(y[h], -1.0)], 0.0, 0.0)
            if nbytes:
                busy[h][k].append(terms[0][::2])
                memory[k] += [(col, v) for col, _, v in terms]
        windows.append(w_of)
    return windows, ops


def _copies(b: Rows, inst: Instance, t: int, y: list[int],
            windows: list[dict[tuple[int, int], int]], ops: list[int],
            occupancy: list[list[list[tuple[int, float]]]], copies: _Copies, scale: float) -> None:
    """c, f and e columns of t: windows kept between accesses, prefetches, the eviction."""
    size = float(inst.size[t])
    producer = inst.tensors[t]["producer"]
    earliest = int(inst.start[t]) if producer is None else int(producer) + 1
    kept: list[dict[tuple[int, int], int]] = [{} for _ in ops]
    for i, w_of in enumerate(windows):
        for (l, h), win in w_of.items():
            c = -1
            if i and (l, h) in windows[i - 1]:
                c = b.col()
                b.row([(c, 1.0), (windows[i - 1][l, h], -1.0)], hi=0.0)
                b.row([(c, 1.0), (win, -1.0)], hi=0.0)
                kept[i][l, h] = c
                for j in range(ops[i - 1] + 1, ops[i]):
                    occupancy[l][j].append((c, size))
            if i == 0 and producer is not None:
                continue  # the producer's write: into the defining window, no copy
            f = b.col()
            copies.terms[h].append((f, size / inst.copy_bandwidth[h] / scale, earliest, ops[i]))
            b.row([(f, 1.0), (win, -1.0)] + ([(c, 1.0)] if c >= 0 else []), lo=0.0)
    if producer is None or len(ops) < 2:
        return
    evict: dict[int, int] = {}
    for (l, h), win in windows[0].items():
        if h not in evict:
            evict[h] = b.col()
            copies.terms[h].append((evict[h], size / inst.copy_bandwidth[h] / scale, earliest, ops[-1]))
        for i in range(1, len(ops)):
            c = kept[i].get((l, h))
            b.row([(evict[h], 1.0), (win, -1.0)] + ([(c, 1.0)] if c is not None else []), lo=0.0)


def _time_rows(b: Rows, inst: Instance, E: list[int], memory: list[list[tuple[int, float]]],
               busy: list[list[list[tuple[int, float]]]], copies: _Copies, cap: float) -> int:
    """Memory rows of every op, idle columns and window rows of every channel; returns
    the number of window rows."""
    n, L = inst.n_ops, inst.n_levels
    for k in range(n):
        if len(memory[k]) > 0:
            b.row([(E[k], 1.0)] + [(c, -v) for c, v in memory[k]], lo=0.0)
    spans = 0
    for h in range(1, L):
        if not copies.terms[h]:
            continue
        idle = [b.col(0.0, cap) for _ in range(n)]
        for k in range(n):
            b.row([(idle[k], 1.0), (E[k], -1.0)] + list(busy[h][k]), 0.0, 0.0)
        # the whole program
        b.row([(c, 1.0) for c in idle] + [(col, -v) for col, v, _, _ in copies.terms[h]], lo=0.0)
        spans += 1
        for G in SPAN_SCALES:
            if 2 * G >= n:
                break
            groups: dict[int, list[tuple[int, float]]] = {}
            for col, v, lo, due in copies.terms[h]:
                for A in range(max(0, -((2 * G - due) // G) * G), lo // G * G + 1, G):
                    groups.setdefault(A, []).append((col, v))  # lo >= A, due <= A + 2G
            for A, terms in groups.items():
                B = min(A + 2 * G, n)
                b.row([(idle[k], 1.0) for k in range(A, B)] + [(c, -v) for c, v in terms], lo=0.0)
                spans += 1
    return spans


def _capacity_rows(b: Rows, inst: Instance, x: np.ndarray,
                   occupancy: list[list[list[tuple[int, float]]]], deadline: float) -> int:
    """One row per level with a capacity and step: homes live there, windows at the step."""
    n, L = inst.n_ops, inst.n_levels
    weights = np.flatnonzero(inst.is_weight == 1)
    others = np.flatnonzero(inst.is_weight == 0)
    rows = 0
    for l in range(L):
        if l == L - 1 and inst.levels[l].capacity is None:
            continue
        cap = float(inst.capacity[l])
        homes: list[list[tuple[int, float]]] = [[] for _ in range(n)]
        for t in others[x[others, l] >= 0].tolist():
            term = (int(x[t, l]), float(inst.size[t]) / cap)
            for j in range(int(inst.start[t]), int(inst.end[t]) + 1):
                homes[j].append(term)
        fixed: list[tuple[int, float]] = []
        wcols = [(int(x[t, l]), float(inst.size[t]) / cap) for t in weights if x[t, l] >= 0]
        if wcols:
            load = b.col(0.0, 1.0)  # weights are live at every step: their load fits
            b.row([(load, 1.0)] + [(c, -v) for c, v in wcols], 0.0, 0.0)
            fixed = [(load, 1.0)]
        for j in range(n):
            if j % 512 == 0 and time.perf_counter() >= deadline:
                raise TimeoutError(f"capacity rows of level {l}, step {j} of {n}")
            terms = homes[j] + [(c, v / cap) for c, v in occupancy[l][j]]
            if terms:
                b.row(terms + fixed, hi=1.0)
                rows += 1
    return rows


def formulate(inst: Instance, ceiling: float, deadline: float = INF) -> AccessModel:
    """Build the access relaxation of `inst` (module docstring); `ceiling` is the latency
    (seconds) of a valid solution, which caps the interval columns. Raises TimeoutError
    once `time.perf_counter()` passes `deadline`."""
    T, L, n = inst.n_tensors, inst.n_levels, inst.n_ops
    b = Rows()
    slow = latency(inst, inst.slowest_placement())
    scale = slow / n if slow > 0 else 1.0
    cap = ceiling / scale * (1 + 1e-6)
    fits = inst.size[:, None] <= inst.capacity[None, :]
    fits[:, L - 1] = True
    E = [b.col(inst.compute[k] / scale, max(cap, inst.compute[k] / scale), 1.0) for k in range(n)]
    x = np.full((T, L), -1, np.int64)
    memory: list[list[tuple[int, float]]] = [[] for _ in range(n)]
    busy: list[list[list[tuple[int, float]]]] = [[[] for _ in range(n)] for _ in range(L)]
    occupancy: list[list[list[tuple[int, float]]]] = [[[] for _ in range(n)] for _ in range(L)]
    copies = _Copies([[] for _ in range(L)])
    for t in range(T):
        if t % 256 == 0 and time.perf_counter() >= deadline:
            raise TimeoutError(f"tensor {t} of {T}")
        for l in range(L):
            if fits[t, l]:
                x[t, l] = b.col()
        b.row([(int(c), 1.0) for c in x[t] if c >= 0], 1.0, 1.0)
        y = [int(c) for c in x[t]]
        windows, ops = _serving(b, inst, t, fits, y, memory, busy, occupancy, scale)
        _copies(b, inst, t, y, windows, ops, occupancy, copies, scale)
    spans = _time_rows(b, inst, E, memory, busy, copies, cap)
    n_cap = _capacity_rows(b, inst, x, occupancy, deadline)
    stats = {"columns": len(b.lo), "rows": len(b.rlo), "nonzeros": len(b.v),
             "capacity_rows": n_cap, "span_rows": spans}
    return AccessModel(inst, scale, b, x, stats)


def dual_bound(model: AccessModel, row_dual: np.ndarray) -> float:
    """The LP's weak-duality bound (seconds) from any row dual vector: for
    min c x, rlo <= A x <= rhi, lo <= x <= hi, every dual z gives
    sum_r z_r * (rlo_r if z_r > 0 else rhi_r) + sum_j min(d_j lo_j, d_j hi_j),
    d = c - A^T z. A row dual of the wrong sign for a one-sided row is set to 0 first
    (still a dual vector), so the figure is a bound whatever HiGHS returned."""
    lp = model.rows.arrays(model.scale)
    cost, lo, hi, rlo, rhi, r, c, v = lp.cost, lp.lo, lp.hi, lp.rlo, lp.rhi, lp.r, lp.c, lp.v
    z = np.asarray(row_dual, np.float64).copy()
    z[(z > 0) & ~np.isfinite(rlo)] = 0.0
    z[(z < 0) & ~np.isfinite(rhi)] = 0.0
    d = cost - np.bincount(c, weights=v * z[r], minlength=cost.size)
    used = z != 0
    total = float(np.sum(z[used] * np.where(z[used] > 0, rlo[used], rhi[used])))
    total += float(np.sum(np.minimum(d * lo, d * hi)))
    return total * model.scale


@dataclass
class AccessBound:
    """The proven bound (seconds, -inf if none), HiGHS's status and the model's size."""

    bound: float
    status: str
    seconds: float
    stats: dict


def access_bound(inst: Instance, ceiling: float, time_limit: float | None = None,
                 threads: int = 1, seed: int = 0) -> AccessBound:
    """Build and solve the access relaxation; the bound is recomputed from the duals
    (`dual_bound`) and lowered by MARGIN. `ceiling` is a valid solution's latency."""
    began = time.perf_counter()
    deadline = INF if time_limit is None else began + time_limit
    try:
        model = formulate(inst, ceiling, deadline)
    except TimeoutError as late:
        return AccessBound(-INF, f"not built in time ({late})", time.perf_counter() - began, {})
    lp = model.rows.arrays(model.scale).highs_lp()
    left = None if time_limit is None else max(0.05, deadline - time.perf_counter())
    h = new_highs(threads, seed, left)
    h.passModel(lp)
    h.run()
    status = h.modelStatusToString(h.getModelStatus())
    sol = h.getSolution()
    bound = -INF
    if sol.dual_valid:
        bound = dual_bound(model, np.array(sol.row_dual))
        bound = max(bound * (1 - MARGIN) if bound > 0 else bound, inst.compute_floor())
    return AccessBound(bound, status, time.perf_counter() - began, model.stats)
