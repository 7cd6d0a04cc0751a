"""The placement MILP as sparse arrays, and its solve with HiGHS through highspy.

The model (docs/spec.md sections 3 and 4, exact without addressed levels):

    y[t, l] in {0, 1}    tensor t in level l, for l < L-1 (the slowest level is the
                         rest: sum_l y[t, l] <= 1); no column where t cannot fit l
    memory_k = base_k + sum over accesses (t, b) of op k, l < L-1:
                   y[t, l] * (b / bw[l] - b / bw[L-1])      (base_k: all in L-1)
    time_k  >= compute_k,  time_k >= memory_k
    minimise  sum_k time_k
    capacity: for every maximal set C of simultaneously live activations (a maximal
              clique of the interval graph) and every capacitated level l < L-1:
              sum_{t in C} size_t y[t, l] + W_l <= cap_l, where W_l >= the bytes of
              weights in l (weights are live everywhere: one column, one row)

The last level holds everything at every step (docs/spec.md section 2), so it needs no row.
Reductions that keep every optimum's latency:
  * an op that is compute-bound whatever the placement costs compute_k, a constant;
    one that is memory-bound whatever the placement costs memory_k, linear: only
    the ops in between get a time column;
  * a tensor whose accesses are all in always-compute-bound ops (or move no bytes)
    is fixed to the slowest level: it saves nothing and frees capacity there;
  * capacity rows whose tensors fit whatever happens are left out (the clique
    steps give each maximal live set once, so no row's set is inside another's).
Times are scaled so the slowest placement's mean op time is 1 (HiGHS's absolute
tolerances then mean the same on every instance).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from memplace.model import Instance, latency
from memplace.solvers.highs import column_lp, new_highs, run


@dataclass
class Formulation:
    """The reduced MILP of one instance, in HiGHS's column-wise form.

    Columns: the binaries y (one per allowed (tensor, level < L-1) pair), one time
    column per op in `mixed_ops`, one weight-load column per level in `load_levels`.
    Rows: one assignment row per tensor with two or more columns, one time row per
    mixed op, one weight-load row per load level, then the capacity rows.
    """

    instance: Instance
    capacity: np.ndarray  # bytes per level the rows use (the instance's unless shrunk)
    scale: float  # model time units per second
    offset: float  # seconds: constant part of the objective
    var_tensor: np.ndarray  # tensor of each binary column
    var_level: np.ndarray  # level of each binary column
    var_index: np.ndarray  # (T, L-1) column of y[t, l], -1 when there is none
    memory_ops: np.ndarray  # ops memory-bound whatever the placement
    mixed_ops: np.ndarray  # ops with a time column
    base: np.ndarray  # seconds: memory time of each op with everything in the slowest level
    cliques: list[np.ndarray]  # live activation sets of the capacity rows (before per-level filtering)
    weights: np.ndarray  # weights with columns (in every capacity row, through the load columns)
    load_levels: np.ndarray  # levels with a weight-load column, in column order after the times
    cost: np.ndarray  # scaled objective per column
    col_lower: np.ndarray
    col_upper: np.ndarray
    integrality: np.ndarray  # 1 for binaries, 0 for time columns
    row_lower: np.ndarray
    row_upper: np.ndarray
    a_start: np.ndarray  # column-wise sparse matrix
    a_index: np.ndarray
    a_value: np.ndarray
    stats: dict = field(default_factory=dict)

    @property
    def n_binaries(self) -> int:
        return int(self.var_tensor.size)

    @property
    def n_cols(self) -> int:
        return int(self.cost.size)

    @property
    def n_rows(self) -> int:
        return int(self.row_lower.size)

    # ------------------------------------------------------------ placements
    def placement(self, values: np.ndarray) -> np.ndarray:
        """The placement encoded by column values (binaries rounded at 0.5)."""
        inst = self.instance
        place = inst.slowest_placement()
        chosen = np.flatnonzero(np.asarray(values[:self.n_binaries]) > 0.5)
        # at most one per tensor in a feasible point; keep the largest value if not
        order = chosen[np.argsort(np.asarray(values)[chosen], kind="stable")]
        place[self.var_tensor[order]] = self.var_level[order]
        return place

    def columns(self, placement: np.ndarray) -> np.ndarray:
        """Column values of a placement. A tensor in a level where it has no column (a
        fixed tensor) counts as in the slowest level, which only frees capacity and
        costs nothing; time columns are max(compute, memory) of the result."""
        inst = self.instance
        place = np.asarray(placement, np.int64)
        values = np.zeros(self.n_cols)
        if self.var_index.shape[1]:
            fast = np.flatnonzero(place < inst.n_levels - 1)
            cols = self.var_index[fast, place[fast]]
            values[cols[cols >= 0]] = 1.0
        effective = self.placement(values)
        times = op_times(inst, effective)
        n_time = self.n_binaries + self.mixed_ops.size
        values[self.n_binaries:n_time] = times[self.mixed_ops] * self.scale
        for j, l in enumerate(self.load_levels.tolist()):
            in_l = self.weights[effective[self.weights] == l]
            values[n_time + j] = inst.size[in_l].sum() / self.capacity[l]
        return values


def op_times(inst: Instance, placement: np.ndarray) -> np.ndarray:
    """time_k of every op under a placement (seconds)."""
    memory = np.zeros(inst.n_ops)
    np.add.at(memory, inst.access_op, inst.access_time[np.arange(inst.op_tensor.size),
                                                        placement[inst.op_tensor]])
    return np.maximum(inst.compute, memory)


def clique_steps(start: np.ndarray, end: np.ndarray, n_ops: int) -> np.ndarray:
    """Steps whose live sets are the maximal cliques of the intervals [start, end]:
    the step where a tensor ends, if some tensor started since the last such step."""
    starts = np.zeros(n_ops, bool)
    ends = np.zeros(n_ops, bool)
    starts[start] = True
    ends[end] = True
    steps = []
    opened = False
    for k in range(n_ops):
        opened |= bool(starts[k])
        if ends[k] and opened:
            steps.append(k)
            opened = False
    return np.array(steps, np.int64)


def clique_members(tensors: np.ndarray, start: np.ndarray, end: np.ndarray,
                   steps: np.ndarray) -> list[np.ndarray]:
    """For each of the (increasing) `steps`, the `tensors` live there, in their given
    order. Each tensor's steps form a run found by two sorted searches, so this is
    O(n log n + output) where testing every tensor at every step was O(n x steps)
    (64 s of a 100k-op build)."""
    first = np.searchsorted(steps, start, side="left")
    last = np.searchsorted(steps, end, side="right")
    counts = np.maximum(last - first, 0)
    owner = np.repeat(np.arange(tensors.size), counts)
    clique = np.repeat(first, counts) + (np.arange(owner.size)
                                         - np.repeat(np.cumsum(counts) - counts, counts))
    order = np.argsort(clique, kind="stable")  # stable: the given order inside a clique
    bounds = np.searchsorted(clique[order], np.arange(steps.size + 1))
    members = tensors[owner[order]]
    return [members[bounds[i]:bounds[i + 1]] for i in range(steps.size)]


def formulate(inst: Instance, capacity: np.ndarray | None = None) -> Formulation:
    """Build the reduced MILP (see the module docstring); `capacity` replaces the
    instance's capacities (the milp solver shrinks addressed levels with it)."""
    T, L, n = inst.n_tensors, inst.n_levels, inst.n_ops
    capacity = inst.capacity if capacity is None else np.asarray(capacity, np.int64)
    last = L - 1
    at = inst.access_time  # (A, L) seconds
    A = at.shape[0]
    t_of = inst.op_tensor
    k_of = inst.access_op

    # Levels each tensor may use: those it fits in alone (size <= capacity).
    fits = inst.size[:, None] <= capacity[None, :]  # (T, L)
    fits[:, last] = True
    a_fits = fits[t_of]  # (A, L)
    big = np.where(a_fits, at, -np.inf).max(axis=1)
    small = np.where(a_fits, at, np.inf).min(axis=1)
    mem_max = np.bincount(k_of, weights=big, minlength=n)
    mem_min = np.bincount(k_of, weights=small, minlength=n)
    always_compute = inst.compute >= mem_max
    always_memory = (~always_compute) & (inst.compute <= mem_min)
    # Tensors that matter: some access with bytes in an op that is not always compute-bound.
    matters = np.zeros(T, bool)
    useful = (~always_compute[k_of]) & (inst.op_bytes > 0)
    matters[t_of[useful]] = True
    fixed = np.flatnonzero(~matters)
    var_index = np.full((T, max(L - 1, 0)), -1, np.int64)
    allowed = fits[:, :last] & matters[:, None]
    pairs = np.argwhere(allowed)  # row-major: by tensor, then level
    var_tensor = pairs[:, 0].astype(np.int64)
    var_level = pairs[:, 1].astype(np.int64)
    nb = var_tensor.size
    var_index[var_tensor, var_level] = np.arange(nb)

    compute_ops = np.flatnonzero(always_compute)
    memory_ops = np.flatnonzero(always_memory)
    mixed_ops = np.flatnonzero(~always_compute & ~always_memory)
    base = np.bincount(k_of, weights=at[:, last], minlength=n)

    slow_latency = latency(inst, inst.slowest_placement())
    scale = n / slow_latency if slow_latency > 0 else 1.0
    offset = float(inst.compute[compute_ops].sum() + base[memory_ops].sum())
    # the spec's order of summation is not needed here: this is the model's constant

    # One weight-load column per capacitated level: the share of the level held by
    # weights, which are in every capacity row (entering it once instead of in every
    # row makes the matrix much sparser: BERT's rows shrink from 116k to 6k nonzeros).
    free = np.flatnonzero(np.bincount(var_tensor, minlength=T) > 0)
    free_weights = free[inst.is_weight[free] == 1]
    load_levels = np.array([l for l in range(L - 1) if (var_index[free_weights, l] >= 0).any()],
                           np.int64)
    n_cols = nb + mixed_ops.size + load_levels.size
    cost = np.zeros(n_cols)
    col_lower = np.zeros(n_cols)
    col_upper = np.ones(n_cols)
    integrality = np.zeros(n_cols, np.int32)
    integrality[:nb] = 1
    n_time = nb + mixed_ops.size
    col_lower[nb:n_time] = inst.compute[mixed_ops] * scale
    col_upper[nb:n_time] = np.inf
    cost[nb:n_time] = 1.0
    load_col = np.full(L, -1, np.int64)
    load_col[load_levels] = n_time + np.arange(load_levels.size)  # bounds [0, 1]: weights fit

    entries: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (rows, columns, values)
    row_lower: list[np.ndarray] = []
    row_upper: list[np.ndarray] = []
    n_rows = 0

    # Assignment rows: sum_l y[t, l] <= 1 for tensors with at least two columns
    # (one column is already bounded by 1).
    per_tensor = np.bincount(var_tensor, minlength=T)
    multi = np.flatnonzero(per_tensor >= 2)
    row_of_tensor = np.full(T, -1, np.int64)
    row_of_tensor[multi] = np.arange(multi.size)
    sel = row_of_tensor[var_tensor] >= 0
    entries.append((row_of_tensor[var_tensor[sel]], np.flatnonzero(sel), np.ones(int(sel.sum()))))
    row_lower.append(np.full(multi.size, -np.inf))
    row_upper.append(np.ones(multi.size))
    n_rows += multi.size

    # Savings per (access, level) column: (b/bw[l] - b/bw[last]) * scale.
    acc = np.repeat(np.arange(A), L - 1) if L > 1 else np.zeros(0, np.int64)
    lev = np.tile(np.arange(L - 1), A) if L > 1 else np.zeros(0, np.int64)
    col = var_index[t_of[acc], lev] if L > 1 else np.zeros(0, np.int64)
    coef = (at[acc, lev] - at[acc, last]) * scale if L > 1 else np.zeros(0)
    keep = (col >= 0) & (coef != 0)
    acc, col, coef = acc[keep], col[keep], coef[keep]
    op = k_of[acc]

    # Memory-bound ops: their savings go straight into the objective.
    is_memory = always_memory[op]
    np.add.at(cost, col[is_memory], coef[is_memory])

    # Time rows of mixed ops: time_k - sum coef * y >= base_k * scale.
    row_of_op = np.full(n, -1, np.int64)
    row_of_op[mixed_ops] = n_rows + np.arange(mixed_ops.size)
    is_mixed = row_of_op[op] >= 0
    entries.append((row_of_op[op[is_mixed]], col[is_mixed], -coef[is_mixed]))
    entries.append((row_of_op[mixed_ops], nb + np.arange(mixed_ops.size), np.ones(mixed_ops.size)))
    row_lower.append(base[mixed_ops] * scale)
    row_upper.append(np.full(mixed_ops.size, np.inf))
    n_rows += mixed_ops.size

    # Weight-load rows: load_l >= sum over weights of size / cap_l * y[w, l].
    for l in load_levels:
        cols_l = var_index[free_weights, l]
        ok = cols_l >= 0
        entries.append((np.full(int(ok.sum()) + 1, n_rows, np.int64),
                        np.concatenate([[load_col[l]], cols_l[ok]]),
                        np.concatenate([[1.0], -inst.size[free_weights[ok]] / capacity[l]])))
        row_lower.append(np.array([0.0]))
        row_upper.append(np.array([np.inf]))
        n_rows += 1

    # Capacity rows over the maximal cliques of the activations that have columns.
    free_acts = free[inst.is_weight[free] == 0]
    steps = clique_steps(inst.start[free_acts], inst.end[free_acts], n)
    cliques = clique_members(free_acts, inst.start[free_acts], inst.end[free_acts], steps)
    n_cap = 0
    for l in range(L - 1):
        cap = int(capacity[l])
        weights_l = free_weights[var_index[free_weights, l] >= 0]
        weight_bytes = int(inst.size[weights_l].sum())
        for members in cliques:
            cols_l = var_index[members, l]
            ok = cols_l >= 0
            if not ok.any() or int(inst.size[members[ok]].sum()) + weight_bytes <= cap:
                continue
            cols_r = cols_l[ok]
            vals_r = inst.size[members[ok]] / cap  # scaled: capacity 1
            if load_col[l] >= 0:
                cols_r = np.concatenate([cols_r, [load_col[l]]])
                vals_r = np.concatenate([vals_r, [1.0]])
            entries.append((np.full(cols_r.size, n_rows, np.int64), cols_r, vals_r))
            row_lower.append(np.array([-np.inf]))
            row_upper.append(np.array([1.0]))
            n_rows += 1
            n_cap += 1

    rows, cols, vals = (np.concatenate(part) for part in zip(*entries))
    rows, cols, vals = rows.astype(np.int64), cols.astype(np.int64), vals.astype(np.float64)
    order = np.lexsort((rows, cols))
    rows, cols, vals = rows[order], cols[order], vals[order]
    a_start = np.zeros(n_cols + 1, np.int64)
    np.cumsum(np.bincount(cols, minlength=n_cols), out=a_start[1:])
    stats = {"binaries": int(nb), "time_columns": int(mixed_ops.size), "rows": int(n_rows),
             "capacity_rows": int(n_cap), "cliques": len(cliques), "fixed_tensors": int(fixed.size),
             "nonzeros": int(vals.size)}
    return Formulation(inst, capacity, scale, offset, var_tensor, var_level, var_index, memory_ops,
                       mixed_ops, base, cliques, free_weights, load_levels, cost, col_lower,
                       col_upper, integrality, np.concatenate(row_lower), np.concatenate(row_upper),
                       a_start, rows, vals, stats)


def highs_model(form: Formulation, relax: bool = False):
    """A highspy HighsLp of the formulation (integrality dropped when `relax`)."""
    return column_lp(form.cost, form.col_lower, form.col_upper, form.row_lower, form.row_upper,
                     form.a_start, form.a_index, form.a_value, form.integrality, relax,
                     offset=form.offset * form.scale)


@dataclass
class HighsOutcome:
    values: np.ndarray | None  # best column values found (None: none)
    bound: float  # seconds: HiGHS's proven lower bound (-inf if none)
    status: str  # HiGHS model status
    nodes: int
    seconds: float
    presolve: bool = True  # HiGHS's presolve ran (see `presolve_fits`)


# HiGHS's MIP set-up after its presolve (1.16) reads no clock and polls no callback: with
# presolve on, 0.3-0.6 s at 30,000-45,000 nonzeros, 2.4 s at 75,000 and 9-12 s at 150,000
# (synth-10000) whatever the time limit (measured at load 9); with presolve off the root LP
# starts at once. Taken as quadratic in the nonzeros through the largest point.
PRESOLVE_SETUP_S = 12.0  # at PRESOLVE_SETUP_NONZEROS
PRESOLVE_SETUP_NONZEROS = 150_000


def presolve_fits(nonzeros: int, time_limit: float | None) -> bool:
    """Whether HiGHS's presolve may run: its uninterruptible set-up, as estimated above,
    takes at most a quarter of the time limit (always without a limit)."""
    if time_limit is None or not math.isfinite(time_limit):
        return True
    return PRESOLVE_SETUP_S * (nonzeros / PRESOLVE_SETUP_NONZEROS) ** 2 <= time_limit / 4


def run_highs(form: Formulation, *, gap: float, threads: int, seed: int,
              time_limit: float | None, warm: np.ndarray | None = None,
              should_stop=None, on_solution=None, log: bool = False) -> HighsOutcome:
    """Solve the MILP with highspy. `warm`: column values of a feasible start.
    `should_stop()` is polled by HiGHS; `on_solution(values)` sees each improving
    incumbent (column values of the original model)."""
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    h = new_highs(threads, seed, time_limit, log)
    presolve = presolve_fits(form.stats["nonzeros"], time_limit)
    if not presolve:
        h.setOptionValue("presolve", "off")
    h.setOptionValue("mip_rel_gap", float(gap))
    h.setOptionValue("mip_abs_gap", 0.0)
    # At the default 1e-6 HiGHS may take y = 1 - 1e-6 as integral and "save" 1e-6 of
    # an op's time, which the rounded placement does not: tolerances far below `gap`.
    h.setOptionValue("mip_feasibility_tolerance", 1e-9)
    h.setOptionValue("primal_feasibility_tolerance", 1e-9)
    h.passModel(highs_model(form))
    if warm is not None:
        h.setSolution(_solution(warm))
    if on_solution is not None:
        def improving(event):
            on_solution(np.array(event.data_out.mip_solution, dtype=np.float64))
        h.cbMipImprovingSolution.subscribe(improving)
    seconds = run(h, should_stop, deadline)
    status = h.modelStatusToString(h.getModelStatus())
    info = h.getInfo()
    values = None
    if info.primal_solution_status == 2:  # feasible
        values = np.array(h.getSolution().col_value, dtype=np.float64)
    bound = info.mip_dual_bound
    bound = bound / form.scale if math.isfinite(bound) else -math.inf
    return HighsOutcome(values, bound, status, int(info.mip_node_count), seconds, presolve)


def _solution(values: np.ndarray):
    import highspy
    sol = highspy.HighsSolution()
    sol.col_value = list(map(float, values))
    sol.value_valid = True
    return sol
