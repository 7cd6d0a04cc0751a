"""A MILP relaxation of the residency simulator (docs/spec.md sections 10-11): a lower bound.

Every valid residency solution maps to a feasible point of this model whose objective
is at most its simulated latency, so the model's optimum -- or the dual bound HiGHS has
proven when its time limit stops it -- is a lower bound on the residency optimum.

Columns (fractions of a tensor, times in units of `scale` seconds):

    x[t, l]      binary: t is homed in level l (sum_l x[t, l] = 1)
    s[a, l]      binary (continuous for an access of 0 bytes): access a = (t, k) is
                 served by level l (sum_l s[a, l] = 1; s[a, l] <= sum_{h >= l} x[t, h])
    w[t, l, i]   t's i-th access is served by a window in l: s[a_i, l] - x[t, l] <= w <= s[a_i, l],
                 w <= sum_{h > l} x[t, h], sum_l w[t, l, i] <= 1 (one window covers an access)
    g[t, l, i]   the defining window of t in l serves access i (g[., 1] = w[., 1] for a
                 tensor with a producer, non-increasing in i)
    c[t, l, i]   a prefetch window in l serving access i-1 also serves access i
                 (c[., i] <= c[., i-1] + sum_h F[t, l, h, i-1, last])
    F[t, l, h, i, j]  cumulative share of a prefetch copy (home h > l, window in l whose
                 first served access is i) moved by the end of interval j, for
                 j in lo_t .. k_i - 1 (lo_t = producer + 1, or the live start without a
                 producer); non-decreasing in j; its last value is the prefetch's
                 indicator (<= x[t, h])
    V[t, h, j]   cumulative share of t's eviction (home h) moved by the end of
                 interval j, j in producer + 1 .. end_t - 1 (<= x[t, h])
    Q[t, l, j]   binary (`binary_holds`): the defining window in l occupies step j:
                 >= g[t, l, i] over (k_{i-1}, k_i] and >= w[t, l, 1] - sum_h V[t, h, j - 1]
    Y[t, l, i, j]  binary (`binary_starts`): the prefetch window first serving access i
                 has started by step j: non-decreasing, sum_h F[., j] <= Y[j] (no byte
                 moves before the start), Y[k_i - 1] = sum_h F[., k_i - 1]; in the
                 capacity rows Y replaces F (the window occupies every step from its start)
    E[k]         length of interval k: op k's run plus the wait before op k + 1

    w[t, l, i] <= g[t, l, i] + c[t, l, i] + sum_h F[t, l, h, i, k_i - 1]
    s[a_i, h] - w[t, h, i] + sum_l F[t, l, h, i, k_i - 1] <= x[t, h]   (home h serves access i
                 directly or through a prefetch window first serving it, not both)
    sum_h V[t, h, k_i - 1] >= sum_l w[t, l, 1] - sum_l g[t, l, i]   (i >= 2, producer)
    E[k] >= compute_k
    E[k] >= sum_{a of k, l} s[a, l] * b_a / bandwidth_l                       (memory)
    E[k] >= sum_{a of k} s[a, h] * b_a / bandwidth_h
            + (copy shares moved on h's channel in interval k) * size / copy_bandwidth_h
    load of level l at step j: homes live at j (x) + occupancy terms (Q, c over
            (k_{i-1}, k_i], F[., j] before k_i and F[., k_i - 1] at k_i) <= capacity_l
    minimise sum_k E[k]

Why every valid solution is a feasible point (the argument, step by step):

1. Time. Cut the simulation into intervals: interval k is op k's run followed by the
   wait before op k + 1 (none after the last op, and op 0 never waits: no copy can be
   due at op 0). The latency is the sum of all runs and waits = sum_k E[k] with
   E[k] = elapsed_k + wait_{k+1}. elapsed_k = max(compute_k, memory_k) gives the first
   two rows, with s the solution's serving levels (section 10).
2. Channels. A channel moves at most copy_bandwidth bytes per second in total (one
   front at copy_bandwidth, or two at half each), and only while idle: during op k's
   run for elapsed_k - busy_hk seconds, busy_hk = sum of b / bandwidth_h over op k's
   accesses served by h, and throughout every wait. So the copy bytes moved on h's
   channel in interval k are at most copy_bandwidth_h * (E[k] - busy_hk): the third
   row. Waits are not separate columns: they are the slack inside E[k].
3. Where copies move. A prefetch issued before op `start` joins its queue after op
   start's wait and must be complete before op `first` runs, so all its bytes move in
   intervals start .. first - 1; its first *served* access k_i is >= first, and
   start >= lo_t (start >= valid_from >= producer + 1, or the live start). An
   eviction (issue, due) moves in intervals issue .. due - 1, issue >= producer + 1.
   So F and V, set to the cumulative shares actually moved, satisfy their ranges, and
   their increments are the bytes of the row in step 2 (a subset of all copies: only
   windows that serve an access are counted; dropping the others only lowers every
   left-hand side).
4. Serving. An access served in l by a window makes w = 1 and that window is the
   defining one (g), or continues from the previous access (c), or is a prefetch
   window first serving this access (F's last value = 1 for its home, and then the
   home serves the access neither directly nor through another window). A tensor
   whose defining window stops serving at access i >= 2 serves access i from the home
   (needs k_i >= due) or from a prefetch window (start >= valid_from = due) or from a
   window that started after due: in every case the eviction is complete before op
   k_i, so V[., k_i - 1] = 1 (and without an eviction the home is never valid, so the
   defining window must serve every access: the same row with V = 0).
5. Capacity. A window occupies start .. hold. The defining window occupies p .. hold
   with hold >= k_i while it serves access i and hold >= due - 1 while its eviction is
   incomplete (Q <= 1 = its occupancy); a continuing window occupies (k_{i-1}, k_i];
   a prefetch window occupies every step from its start (<= the first interval F > 0)
   to k_i, and F <= 1 there; Y, where modelled, is exactly [start <= j]. Q, binary or
   not, is at most the defining window's 0/1 occupancy. Terms of one window never overlap in a step and two
   windows of one tensor in one level have disjoint occupancies, so the sum of terms
   of t in l at step j is at most t's true occupancy: every capacity row holds (on
   addressed levels offsets are ignored, which only relaxes).
6. Homes: x as the solution's homes, windows strictly faster than home (s <= sum over
   h >= l of x), everything else zero.

Every row holds at this point and its objective is the latency, so min <= latency for
every valid solution: the optimum (and any dual bound below it) is a lower bound.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from memplace.model import Instance, latency
from memplace.solvers.highs import new_highs, run
from memplace.solvers.box_lp import BoxLP, Rows
from memplace.solvers.residency.machinery.delivery_bound import op_row_terms

INF = math.inf


@dataclass
class Relaxation:
    """The MILP of one instance (module docstring) and the column of every variable."""

    instance: Instance
    scale: float  # seconds per model time unit
    builder: Rows
    x: np.ndarray  # (T, L) column of x[t, l], -1 where t cannot be homed in l
    s: dict[tuple[int, int], int]  # (access index, level) -> column
    prefetch: dict[tuple[int, int, int, int], list[int]]  # (t, l, h, i) -> F columns over lo..k_i-1
    lo: np.ndarray  # lo_t of every tensor
    evict: dict[tuple[int, int], list[int]]  # (t, h) -> V columns over p+1 .. end-1
    starts: dict[tuple[int, int, int], list[int]] = field(default_factory=dict)  # (t, l, i) -> Y columns
    stats: dict = field(default_factory=dict)


def tensor_accesses(inst: Instance, t: int) -> list[tuple[int, int, int]]:
    """(op, bytes, access index) of tensor t in op order."""
    idx = inst.tensor_access[inst.tensor_ptr[t]:inst.tensor_ptr[t + 1]]
    return [(int(inst.access_op[a]), int(inst.op_bytes[a]), int(a)) for a in idx]


def model_columns(inst: Instance, binary_starts: bool = False) -> int:
    """How many columns `formulate` makes, counted without building the model (the
    prefetch and eviction shares dominate: one per interval between a tensor's earliest
    copy and each of its accesses, per pair of levels the tensor fits). `formulate`'s
    column count is this, exactly; the binaries of `binary_holds` change no count."""
    T, L, n = inst.n_tensors, inst.n_levels, inst.n_ops
    fits = inst.size[:, None] <= inst.capacity[None, :]
    fits[:, L - 1] = True
    p = np.array([-1 if t["producer"] is None else t["producer"] for t in inst.tensors], np.int64)
    lo = np.where(p >= 0, p + 1, inst.start)
    n_acc = np.diff(inst.tensor_ptr)
    owner = np.repeat(np.arange(T), n_acc)
    k = inst.access_op[inst.tensor_access]
    fit_count = fits.sum(axis=1)
    cols = n + int(fit_count.sum()) + int(fit_count[owner].sum())  # E, x, s
    evicts = (p >= 0) & (inst.end - 1 >= p + 1) & (n_acc >= 2)
    for h in range(1, L):  # V: an eviction to each home below a level the tensor fits
        homes = evicts & fits[:, h] & fits[:, :h].any(axis=1)
        cols += int((inst.end - p - 1)[homes].sum())
    span = np.maximum(k - lo[owner], 0)  # F (and Y) columns of one window first serving an access
    for l in range(L - 1):  # windows in level l, over the homes below it
        inside = fits[:, l]
        below = fits[:, l + 1:].sum(axis=1)
        per_tensor = n_acc + (n_acc - 1) + np.where(p >= 0, n_acc - 1 + inst.end - p + 1, 0)  # w, c; g, Q
        per_access = span * (below[owner] + int(binary_starts))
        cols += int(per_tensor[inside].sum()) + int(per_access[inside[owner]].sum())
    weights = inst.is_weight == 1
    for l in range(L):  # each level's weight load
        if not (l == L - 1 and inst.levels[l].capacity is None) and fits[weights, l].any():
            cols += 1
    return cols


class BuildTimeout(Exception):
    """`formulate` reached its deadline before the model was built."""


@dataclass
class _Terms:
    """Row terms gathered while the tensors are formulated, written as rows at the end."""

    memory: list[list[tuple[int, float]]]  # per op: E[k] and its accesses' memory time
    busy: list[list[list[tuple[int, float]]]]  # [level][op]: accesses served by the level
    copy: list[list[list[tuple[int, float]]]]  # [level][interval]: copy shares moved
    occupancy: list[list[list[tuple[int, float]]]]  # [level][step]: (column, bytes) of windows


@dataclass
class _Tensor:
    """One tensor as the rows see it: its accesses, producer (-1: none), earliest copy
    interval, live end, and the columns made for it so far."""

    t: int
    acc: list[tuple[int, int, int]]
    size: float
    p: int
    lo: int
    end: int
    V: dict[int, list[int]] = field(default_factory=dict)  # eviction shares per home
    w_first: list[int] = field(default_factory=list)  # w[., l, 1] of every level l
    w_any: list[list[int]] = field(default_factory=list)  # w columns per access
    w_of: dict[tuple[int, int], int] = field(default_factory=dict)  # (l, i) -> w
    g_cols: dict[int, list[int]] = field(default_factory=dict)  # l -> g columns per access

    def v_at(self, j: int) -> list[int]:
        """V columns at interval j (none before p + 1)."""
        return [cols[j - (self.p + 1)] for cols in self.V.values()
                if self.p + 1 <= j < self.p + 1 + len(cols)]


class _Formulation:
    """The state `formulate` builds the model in: the builder, the homes' columns, the
    gathered terms and the maps a decoder reads; one method per group of rows."""

    def __init__(self, inst: Instance, binary_starts: bool, binary_holds: bool) -> None:
        T, L, n = inst.n_tensors, inst.n_levels, inst.n_ops
        self.inst, self.binary_starts, self.binary_holds = inst, binary_starts, binary_holds
        self.b = Rows()
        slow = latency(inst, inst.slowest_placement())
        self.scale = slow / n if slow > 0 else 1.0  # seconds per unit: the slowest op time is ~1
        self.fits = inst.size[:, None] <= inst.capacity[None, :]
        self.fits[:, L - 1] = True
        self.E = [self.b.col(inst.compute[k] / self.scale, INF, 1.0) for k in range(n)]
        self.x = np.full((T, L), -1, np.int64)
        self.terms = _Terms([[(self.E[k], 1.0)] for k in range(n)],
                            [[[] for _ in range(n)] for _ in range(L)],
                            [[[] for _ in range(n)] for _ in range(L)],
                            [[[] for _ in range(n)] for _ in range(L)])
        self.s: dict[tuple[int, int], int] = {}
        self.prefetch: dict[tuple[int, int, int, int], list[int]] = {}
        self.evict: dict[tuple[int, int], list[int]] = {}
        self.starts: dict[tuple[int, int, int], list[int]] = {}
        self.lo_of = np.zeros(T, np.int64)

    def homes(self, t: int) -> None:
        """x[t, .] and its row: one home."""
        for l in range(self.inst.n_levels):
            if self.fits[t, l]:
                self.x[t, l] = self.b.col(integer=True)
        self.b.row([(int(c), 1.0) for c in self.x[t] if c >= 0], 1.0, 1.0)

    def tensor(self, t: int) -> _Tensor:
        inst = self.inst
        p = int(inst.tensors[t]["producer"]) if inst.tensors[t]["producer"] is not None else -1
        lo = p + 1 if p >= 0 else int(inst.start[t])
        self.lo_of[t] = lo
        acc = tensor_accesses(inst, t)
        return _Tensor(t, acc, float(inst.size[t]), p, lo, int(inst.end[t]), w_any=[[] for _ in acc])

    def shares(self, cols: list[int], first_j: int, h: int, t: int) -> None:
        """Monotone cumulative shares, their increments on h's channel."""
        coeff = float(self.inst.size[t]) / self.inst.copy_bandwidth[h] / self.scale
        copy = self.terms.copy
        for m, col in enumerate(cols):
            if m:
                self.b.row([(col, 1.0), (cols[m - 1], -1.0)], 0.0)
            j = first_j + m
            copy[h][j].append((col, coeff))
            if m + 1 < len(cols):
                copy[h][j + 1].append((col, -coeff))

    def serving(self, tt: _Tensor) -> None:
        """s[a, l] of every access: served by its home or a faster level."""
        inst, b, x, t = self.inst, self.b, self.x, tt.t
        L = inst.n_levels
        for (k, nbytes, a) in tt.acc:
            cols = []
            for l in range(L):
                if not self.fits[t, l]:
                    continue
                col = b.col(integer=nbytes > 0)
                self.s[a, l] = col
                cols.append(col)
                if nbytes:
                    self.terms.memory[k].append((col, -inst.access_time[a, l] / self.scale))
                    self.terms.busy[l][k].append((col, inst.access_time[a, l] / self.scale))
                b.row([(col, 1.0)] + [(int(x[t, h]), -1.0) for h in range(l, L) if x[t, h] >= 0], hi=0.0)
            b.row([(c, 1.0) for c in cols], 1.0, 1.0)

    def eviction_shares(self, tt: _Tensor) -> None:
        """V[t, h, .]: one eviction per tensor, on its home's channel."""
        inst, t, p = self.inst, tt.t, tt.p
        if not (p >= 0 and tt.end - 1 >= p + 1 and len(tt.acc) >= 2):
            return
        for h in range(1, inst.n_levels):
            if self.x[t, h] < 0 or not any(self.fits[t, l] for l in range(h)):
                continue
            cols = [self.b.col() for _ in range(p + 1, tt.end)]
            self.b.row([(cols[-1], 1.0), (int(self.x[t, h]), -1.0)], hi=0.0)
            self.shares(cols, p + 1, h, t)
            tt.V[h] = cols
            self.evict[t, h] = cols

    def level_windows(self, tt: _Tensor, l: int, homes_above: list[int]) -> None:
        """Windows of t in level l: w, g, c per access, the prefetch shares F (and start
        indicators Y) of a window first serving each access, the defining window's Q."""
        b, t, p, size = self.b, tt.t, tt.p, tt.size
        occupancy = self.terms.occupancy
        prev_k, c_prev, g_prev = -1, -1, -1
        w_prev_pf: list[int] = []
        tt.g_cols[l] = []
        for i, (k, nbytes, a) in enumerate(tt.acc):
            w = b.col()
            terms = [(w, 1.0), (self.s[a, l], -1.0)]
            if self.x[t, l] >= 0:
                terms.append((int(self.x[t, l]), 1.0))
            b.row(terms, 0.0)
            b.row([(w, 1.0), (self.s[a, l], -1.0)], hi=0.0)  # a window covering k serves it
            b.row([(w, 1.0)] + [(col, -1.0) for col in homes_above], hi=0.0)
            tt.w_any[i].append(w)
            tt.w_of[l, i] = w
            serve = [(w, 1.0)]
            if p >= 0:
                if i == 0:
                    g = w
                    tt.w_first.append(w)
                else:
                    g = b.col()
                    b.row([(g, 1.0), (g_prev, -1.0)], hi=0.0)
                    serve.append((g, -1.0))
                tt.g_cols[l].append(g)
                g_prev = g
            c = -1
            if i:
                c = b.col()
                b.row([(c, 1.0)] + ([(c_prev, -1.0)] if c_prev >= 0 else [])
                      + [(col, -1.0) for col in w_prev_pf], hi=0.0)
                serve.append((c, -1.0))
                for j in range(prev_k + 1, k + 1):
                    occupancy[l][j].append((c, size))
            pf_last = self.prefetch_shares(tt, l, i, k, serve) if tt.lo <= k - 1 else []
            if not (p >= 0 and i == 0):  # w[., 1] with a producer is the defining window itself
                b.row(serve, hi=0.0)
            w_prev_pf, c_prev, prev_k = pf_last, c, k
        if p >= 0:
            self.defining_hold(tt, l)

    def prefetch_shares(self, tt: _Tensor, l: int, i: int, k: int,
                        serve: list[tuple[int, float]]) -> list[int]:
        """F[t, l, h, i, .] from every home h below l (and Y, with binary starts); adds
        their last values to `serve`; returns those last values."""
        b, t, size, lo = self.b, tt.t, tt.size, tt.lo
        occupancy = self.terms.occupancy
        pf_cols: list[list[int]] = []
        for h in range(l + 1, self.inst.n_levels):
            if self.x[t, h] < 0:
                continue
            cols = [b.col() for _ in range(lo, k)]
            self.prefetch[t, l, h, i] = cols
            b.row([(cols[-1], 1.0), (int(self.x[t, h]), -1.0)], hi=0.0)
            self.shares(cols, lo, h, t)
            pf_cols.append(cols)
            serve.append((cols[-1], -1.0))
        if self.binary_starts and pf_cols:
            # Y[j]: the window has started by step j (binary, non-decreasing);
            # no byte moves before it, and it occupies every step from it
            ys = [b.col(integer=True) for _ in range(lo, k)]
            for m, y in enumerate(ys):
                if m:
                    b.row([(y, 1.0), (ys[m - 1], -1.0)], 0.0)
                b.row([(y, -1.0)] + [(cols[m], 1.0) for cols in pf_cols], hi=0.0)
                occupancy[l][lo + m].append((y, size))
            b.row([(ys[-1], 1.0)] + [(cols[-1], -1.0) for cols in pf_cols], 0.0, 0.0)
            self.starts[t, l, i] = ys
        else:
            for cols in pf_cols:
                for m, col in enumerate(cols):
                    occupancy[l][lo + m].append((col, size))
        for cols in pf_cols:
            occupancy[l][k].append((cols[-1], size))
        return [cols[-1] for cols in pf_cols]

    def defining_hold(self, tt: _Tensor, l: int) -> None:
        """Q[t, l, .]: the defining window's occupancy, held until it is evicted."""
        b, acc = self.b, tt.acc
        wi = tt.w_first[-1]
        for j in range(tt.p, tt.end + 1):
            q = b.col(integer=self.binary_holds)  # binary: held until evicted
            self.terms.occupancy[l][j].append((q, tt.size))
            for i, (k, _, _) in enumerate(acc):  # >= g over (k_{i-1}, k_i]
                k_prev = acc[i - 1][0] if i else k - 1
                if k_prev < j <= k:
                    b.row([(q, 1.0), (tt.g_cols[l][i], -1.0)], 0.0)
            if j >= tt.p + 1:
                b.row([(q, 1.0), (wi, -1.0)] + [(col, 1.0) for col in tt.v_at(j - 1)], 0.0)

    def tensor_rows(self, tt: _Tensor) -> None:
        """Rows across t's levels: a home serves an access itself or through the prefetch
        first serving it, never both; one window at most covers an access; the eviction
        completes before any access the defining window no longer serves."""
        b, t, acc = self.b, tt.t, tt.acc
        for i, (k, nbytes, a) in enumerate(acc):
            for h in range(1, self.inst.n_levels):
                pfs = [self.prefetch[t, l, h, i][-1] for l in range(h) if (t, l, h, i) in self.prefetch]
                if not pfs or (a, h) not in self.s:
                    continue
                terms = [(self.s[a, h], 1.0), (int(self.x[t, h]), -1.0)] + [(c, 1.0) for c in pfs]
                if (h, i) in tt.w_of:
                    terms.append((tt.w_of[h, i], -1.0))
                b.row(terms, hi=0.0)
        for cols in tt.w_any:
            if len(cols) > 1:
                b.row([(c, 1.0) for c in cols], hi=1.0)
        if tt.p >= 0 and tt.w_first:
            for i in range(1, len(acc)):
                terms = [(col, 1.0) for col in tt.v_at(acc[i][0] - 1)]
                terms += [(col, -1.0) for col in tt.w_first]
                terms += [(tt.g_cols[l][i], 1.0) for l in tt.g_cols if tt.g_cols[l]]
                b.row(terms, 0.0)

    def time_rows(self) -> None:
        """The memory row of every op and the channel row of every level and interval."""
        b, terms = self.b, self.terms
        for k in range(self.inst.n_ops):
            b.row(terms.memory[k], 0.0)
            for h in range(1, self.inst.n_levels):
                if terms.copy[h][k]:
                    b.row([(self.E[k], 1.0)] + [(c, -v) for c, v in terms.busy[h][k]]
                          + [(c, -v) for c, v in terms.copy[h][k]], 0.0)

    def op_rows(self) -> None:
        """Per op that is compute-bound with every access at the fastest bandwidth, its op
        row (`delivery_bound.py`'s module docstring, "Op rows", where the argument is):
        E[k] >= compute_k + sum over its accesses a and levels l of
        (delta(a, l) - slack_k)^+ * s[a, l], the terms of `delivery_bound.op_row_terms`."""
        inst, b = self.inst, self.b
        for k in range(inst.n_ops):
            extras = op_row_terms(inst, k)
            if extras is None:
                continue
            terms = [(self.s[a, l], -extra[l] / self.scale) for a, extra in extras.items()
                     for l in range(inst.n_levels) if (a, l) in self.s and extra[l] > 0]
            if terms:
                b.row([(self.E[k], 1.0)] + terms, float(inst.compute[k]) / self.scale)

    def capacity_rows(self, check) -> int:
        """Every level with a capacity at every step: homes live there and windows; the
        weights' home load through one column per level, as the static MILP does."""
        inst, b, x = self.inst, self.b, self.x
        L, n = inst.n_levels, inst.n_ops
        weights = np.flatnonzero(inst.is_weight == 1)
        n_cap = 0
        for l in range(L):
            cap = float(inst.capacity[l])
            if l == L - 1 and inst.levels[l].capacity is None:
                continue
            wl = -1
            wcols = [(int(x[t, l]), inst.size[t] / cap) for t in weights if x[t, l] >= 0]
            if wcols:
                # at most every weight's share (x <= 1): a finite bound the LP implies,
                # so a dual vector needs no infinite term there (certificate.py)
                wl = b.col(0.0, sum(v for _, v in wcols) * (1 + 1e-9))
                b.row([(wl, 1.0)] + [(c, -v) for c, v in wcols], 0.0, 0.0)
            for j in range(n):
                if j % 256 == 0:
                    check(f"capacity rows of level {l}, step {j} of {n}")
                live = np.flatnonzero((inst.start <= j) & (inst.end >= j) & (inst.is_weight == 0))
                terms = [(int(x[t, l]), inst.size[t] / cap) for t in live if x[t, l] >= 0]
                terms += [(c, v / cap) for c, v in self.terms.occupancy[l][j]]
                if wl >= 0:
                    terms.append((wl, 1.0))
                if terms:
                    b.row(terms, hi=1.0)
                    n_cap += 1
        return n_cap


def formulate(inst: Instance, binary_starts: bool = True, binary_holds: bool = True,
              deadline: float = INF, op_rows: bool = False) -> Relaxation:
    """Build the relaxation of `inst` (module docstring). `binary_starts` adds the
    binary start indicators Y of prefetch windows, `binary_holds` makes the defining
    window's occupancy Q binary (both: stronger bound, exact occupancies, slower);
    `op_rows` adds the op rows after the time rows (`_Formulation.op_rows`).
    Raises `BuildTimeout` once `time.perf_counter()` passes `deadline`."""

    def check(where: str) -> None:
        if time.perf_counter() >= deadline:
            raise BuildTimeout(f"deadline passed at {where}")
    f = _Formulation(inst, binary_starts, binary_holds)
    T, L = inst.n_tensors, inst.n_levels
    for t in range(T):
        f.homes(t)
    for t in range(T):
        check(f"tensor {t} of {T}")  # per tensor: one can take tenths of a second
        tt = f.tensor(t)
        f.serving(tt)
        f.eviction_shares(tt)
        for l in range(L - 1):
            above = [int(f.x[t, h]) for h in range(l + 1, L) if f.x[t, h] >= 0]
            if f.fits[t, l] and above:
                f.level_windows(tt, l, above)
        f.tensor_rows(tt)
    f.time_rows()
    if op_rows:
        f.op_rows()
    n_cap = f.capacity_rows(check)
    b = f.b
    stats = {"columns": len(b.lo), "rows": len(b.rlo), "nonzeros": len(b.v),
             "binaries": int(sum(b.integer)), "capacity_rows": n_cap}
    return Relaxation(inst, f.scale, b, f.x, f.s, f.prefetch, f.lo_of, f.evict, f.starts, stats)


# HiGHS's dual bound is proven up to its feasibility tolerances: the bound reported is
# lowered by this relative margin so rounding can never lift it above a true latency.
BOUND_MARGIN = 1e-6


@dataclass
class Outcome:
    """What HiGHS returned: the bound (seconds), the best point, and how it ended."""

    bound: float
    values: np.ndarray | None
    status: str
    nodes: int
    seconds: float


# HiGHS's presolve modes by name (its `presolve_mode` option): "full" is its default,
# "light" skips the costly reductions, among them probing every binary
PRESOLVE_MODES = {"full": 0, "light": 2}


def solve_relaxation(model: Relaxation, time_limit: float | None, gap: float = 1e-4,
                     threads: int = 1, seed: int = 0, should_stop=None,
                     presolve: str = "full") -> Outcome:
    """Run HiGHS on the model; the bound is its proven dual bound (lowered by
    BOUND_MARGIN). `presolve` is a key of PRESOLVE_MODES: its time limit is not heard
    inside presolve, whose probing took 25 of 37 s on the start-binary model of
    bert-base[seq_len=256]@edge-npu (34,855 binaries) and reduced it by 5%."""
    h = new_highs(threads, seed, time_limit)
    h.setOptionValue("mip_rel_gap", float(gap))
    h.setOptionValue("presolve_mode", PRESOLVE_MODES[presolve])
    h.passModel(model.builder.arrays().highs_lp(integral=True))
    seconds = run(h, should_stop)
    status = h.modelStatusToString(h.getModelStatus())
    info = h.getInfo()
    values = None
    if info.primal_solution_status == 2:
        values = np.array(h.getSolution().col_value, dtype=np.float64)
    bound = info.mip_dual_bound * model.scale
    floor = model.instance.compute_floor()
    bound = max(bound * (1 - BOUND_MARGIN), floor) if math.isfinite(bound) else floor
    return Outcome(bound, values, status, int(info.mip_node_count), seconds)


def capped(rel: Relaxation, ceiling: float) -> BoxLP:
    """`rel`'s LP with its interval columns capped by `ceiling` (seconds; `capped_lp`),
    integrality dropped: every bound of x finite; `integer` marks the columns `formulate`
    made binary (0 or 1 at the point of every valid solution, module docstring)."""
    lp = rel.builder.arrays(rel.scale)
    n = rel.instance.n_ops
    lp.hi[:n] = np.maximum(ceiling / rel.scale * (1 + 1e-6), lp.lo[:n])  # the E columns come first
    return lp


def capped_lp(inst: Instance, ceiling: float, deadline: float = INF, op_rows: bool = False) -> BoxLP:
    """The capped relaxation of `inst`. Why it is a relaxation of every solution at least
    as good as one of latency `ceiling` (seconds): such a solution maps to a point of
    `formulate`'s model (module docstring) with E[k] = elapsed_k + wait_{k+1} <= its
    latency <= ceiling, so capping E[k] there cuts it off from no such point; the other
    columns are shares in [0, 1] and each level's weight load, whose row bounds it by the
    sum of its terms. So its minimum is a lower bound on the optimum whenever `ceiling`
    is a valid latency, and with every column bounded any dual vector bounds the minimum
    (`weak_duality`). The same holds with the start and hold binaries built
    (`start_tree.py` branches on them), and with the op rows (`op_rows`)."""
    return capped(formulate(inst, binary_starts=False, binary_holds=False, deadline=deadline,
                            op_rows=op_rows), ceiling)


def weak_duality(lp: BoxLP, y: np.ndarray) -> float:
    """The bound (seconds) any row dual vector `y` proves on the capped LP:
    sum_r y_r * (rlo_r if y_r > 0 else rhi_r) + sum_j min(d_j lo_j, d_j hi_j), d = cost - A'y
    (weak duality; a dual of the wrong sign on a one-sided row is taken as 0, still a dual
    vector); -inf if a column with a nonzero reduced cost had an infinite bound."""
    y = np.asarray(y, np.float64).copy()
    y[(y > 0) & ~np.isfinite(lp.rlo)] = 0.0
    y[(y < 0) & ~np.isfinite(lp.rhi)] = 0.0
    d = lp.cost - np.bincount(lp.c, weights=lp.v * y[lp.r], minlength=lp.cost.size)
    used = y != 0
    with np.errstate(invalid="ignore"):
        rows = float(np.sum(y[used] * np.where(y[used] > 0, lp.rlo[used], lp.rhi[used])))
        cols = np.where(d > 0, d * lp.lo, np.where(d < 0, d * lp.hi, 0.0))
    if not np.isfinite(cols).all():
        return -INF
    return (rows + float(np.sum(cols))) * lp.scale


@dataclass
class CappedBound:
    """The capped LP's proven bound (seconds; -inf if none), its row duals, how it ended."""

    bound: float
    duals: np.ndarray | None
    status: str
    seconds: float


def solve_capped(inst: Instance, ceiling: float, time_limit: float | None = None,
                 threads: int = 1, seed: int = 0, op_rows: bool = False) -> CappedBound:
    """The capped LP by HiGHS's interior point method without crossover (the simplex does
    not finish it in minutes at 200-340 ops): its duals are approximate, which costs
    nothing in validity since any dual vector proves a bound; the bound is recomputed from
    them (`weak_duality`) and lowered by BOUND_MARGIN for float64 rounding."""
    began = time.perf_counter()
    deadline = INF if time_limit is None else began + time_limit
    try:
        lp = capped_lp(inst, ceiling, deadline, op_rows)
    except BuildTimeout as late:
        return CappedBound(-INF, None, f"not built in time ({late})", time.perf_counter() - began)
    model = lp.highs_lp()
    left = None if time_limit is None else max(0.05, deadline - time.perf_counter())
    h = new_highs(threads, seed, left)
    h.setOptionValue("solver", "ipm")
    h.setOptionValue("run_crossover", "off")
    h.passModel(model)
    h.run()
    status = h.modelStatusToString(h.getModelStatus())
    solution = h.getSolution()
    if not solution.dual_valid:
        return CappedBound(-INF, None, status, time.perf_counter() - began)
    duals = np.asarray(solution.row_dual, np.float64)
    bound = weak_duality(lp, duals)
    bound = bound * (1 - BOUND_MARGIN) if bound > 0 else bound
    return CappedBound(bound, duals, status, time.perf_counter() - began)
