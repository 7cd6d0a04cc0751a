"""`dp`: dynamic programming over the schedule, exact up to its discretisation and beam.

The ops are processed in schedule order. After op k the *tracked* tensors are the
ones accessed both at or before k and after k; their levels are the DP key (the
future cost and the future occupancy of activations depend on nothing else). A
key holds a Pareto set of *labels* (cost so far, and per capacitated level l:
M_l the peak bytes of activations in l over the steps so far, W_l the bytes of
weights placed in l so far). Weights are live at every step, so a placement is
valid exactly when M_l + W_l <= capacity_l for every level at the end; both only
grow, so labels breaking it are dropped as soon as they do, and a label is
dropped when another label of the same key is no worse in cost and in every
M_l and W_l. At op k the tensors first accessed there branch over their allowed
levels (those they fit in alone; tensors that save nothing anywhere only get the
slowest level, as in the MILP), the op's time max(compute, memory) is added, the
activations live at step k update M, and the tensors not accessed after k leave
the key (keys that become equal merge their labels).

What is exact and what is approximate:
  * A capacitated level that holds every tensor at once (each size rounded up to its
    unit) dominates the levels below it: a tensor allowed there is not branched lower
    (no access slower, no capacity broken), so programs that fit in the LLC branch over
    two levels, not three. Exact: the optimum is unchanged.
  * Bytes are counted in units of ceil(capacity_l / buckets) per level, rounded
    up (M per step, W per weight): every label is truly capacity-valid, so every
    placement the DP returns is valid (a restriction: its latency is >= the
    optimum). With buckets >= capacity_l (one-byte units) nothing is rounded.
  * Without rounding and without beam truncation the DP is exact on any DAG: the
    key carries every level that the future depends on. Its size grows as
    L^(number of tracked tensors): on a chain (each activation read by the next
    op, weights read by one op) the key holds at most one activation, so only
    the labels can grow; on DAGs with skip connections or multi-use tensors more
    tensors are tracked at once (BERT: up to 192 keys after an op).
  * The beam keeps at most `max_keys` keys after each op (those with the
    cheapest label), at most `BRANCHING_KEYS * max_keys` while an op's new tensors
    branch (the cheapest label plus the op's access time so far: an op first reading
    dozens of tensors, as an XLA program's entry, would otherwise multiply them past
    any limit), and about `max_labels` labels per key: the cheapest label in
    each cell of a grid over how full each level is ((M_l + W_l) / capacity_l),
    like a knapsack DP at coarser resolution (very large label sets are thinned
    the same way, 16x finer, before the quadratic dominance filter).
  * Labels whose cost plus an optimistic cost of the remaining ops (every tensor
    in its fastest allowed level) exceeds the best heuristic's latency are
    dropped: that never loses a placement better than the heuristic, which the
    solver offers first. If no label survives, the DP found nothing better.
  * When the beam cut anything, or any level was rounded, the result is a
    heuristic placement (valid, latency >= optimum) with no bound; `ctx.notes`
    says which (`truncated_keys`, `truncated_labels`, `rounded_levels`, `exact`).
    When nothing was cut or rounded and no level is addressed, the DP is exact:
    its placement (or, if no label survived, the heuristic) is reported optimal
    with its latency as the bound.
  * Addressed levels: offsets are not modelled (capacity only); the result is
    packed (`ctx.packer`) and tensors that cannot be packed move down
    canonically, so it is never claimed optimal there.
"""
from __future__ import annotations

import bisect
import math

import numpy as np

from memplace.model import Instance, latency
from memplace.model.core.jit import njit
from memplace.solvers import Param, SearchContext, register
from memplace.solvers.static.milp_highs import formulate
from memplace.solvers.static.placements import best_start, offer_valid

BRANCHING_KEYS = 32  # keys kept while an op's tensors branch, per key kept after an op


@njit(cache=True, nogil=True)
def pareto_kernel(res, keep):
    """keep[i] = no earlier row j with keep[j] is <= row i in every column (rows sorted
    by cost, so an earlier row is never dearer)."""
    m, d = res.shape
    kept = np.empty(m, np.int64)
    n_kept = 0
    for i in range(m):
        dominated = False
        for q in range(n_kept):
            j = kept[q]
            worse = True
            for c in range(d):
                if res[j, c] > res[i, c]:
                    worse = False
                    break
            if worse:
                dominated = True
                break
        keep[i] = not dominated
        if not dominated:
            kept[n_kept] = i
            n_kept += 1
    return n_kept


def _thin(labels: np.ndarray, n_bins: int, cells: np.ndarray) -> np.ndarray:
    """The cheapest label (labels sorted cheapest first) in each cell of a grid over the
    share of each level it uses ((M_l + W_l) / capacity_l), about `n_bins` cells:
    like a knapsack DP, every degree of fullness keeps a representative."""
    Lc = cells.size
    per = max(1, int(round(n_bins ** (1.0 / max(Lc, 1)))))  # bins per level
    use = (labels[:, 1:1 + Lc] + labels[:, 1 + Lc:1 + 2 * Lc]) / cells
    bins = np.zeros(labels.shape[0], np.int64)
    for l in range(Lc):
        bins = bins * per + np.minimum((use[:, l] * per).astype(np.int64), per - 1)
    first = np.unique(bins, return_index=True)[1]
    return labels[np.sort(first)]


def _pareto(labels: np.ndarray, max_labels: int, cells: np.ndarray) -> tuple[np.ndarray, bool]:
    """Non-dominated labels (column 0 cost, columns 1..-2 resources, last id), cheapest
    first, at most `max_labels`; also whether any label was cut beyond dominance."""
    if labels.shape[0] <= 1:
        return labels, False
    res = labels[:, 1:-1]
    order = np.lexsort((res.sum(axis=1), labels[:, 0]))
    labels = labels[order]
    cut = False
    if labels.shape[0] > 16 * max_labels:  # thin first: dominance is quadratic
        labels = _thin(labels, 16 * max_labels, cells)
        cut = True
    keep = np.empty(labels.shape[0], np.bool_)
    pareto_kernel(np.ascontiguousarray(labels[:, 1:-1]), keep)
    labels = labels[keep]
    if labels.shape[0] <= max_labels:
        return labels, cut
    return _thin(labels, max_labels, cells), True


def _future_bounds(inst: Instance, allowed: list[list[int]]) -> np.ndarray:
    """future[k]: a lower bound on the time of ops k+1..n-1 (every tensor in its
    fastest allowed level, capacities ignored)."""
    fastest = np.array([max(levels, key=lambda l: inst.bandwidth[l]) for levels in allowed])
    times = np.maximum(inst.compute, np.bincount(
        inst.access_op, weights=inst.access_time[np.arange(inst.op_tensor.size),
                                                 fastest[inst.op_tensor]],
        minlength=inst.n_ops))
    future = np.zeros(inst.n_ops)
    future[:-1] = np.cumsum(times[::-1])[::-1][1:]
    return future


def _keep_above_a_level_holding_everything(inst: Instance, allowed: list[list[int]],
                                           size_cells: np.ndarray, cells: np.ndarray) -> None:
    """Drop from `allowed` the levels below the fastest capacitated level l that holds
    every tensor at once by the DP's own count (`size_cells`: each size in l's units). Moving a
    tensor up to l then never breaks l's capacity and never slows an access, so a slower
    level is dominated and the DP's optimum is unchanged; each tracked tensor multiplies the
    keys by its levels, and small programs (everything fits in the LLC) branch over two
    levels instead of three."""
    for l in range(len(cells)):
        if int(size_cells[:, l].sum()) > int(cells[l]):
            continue
        for t, levels in enumerate(allowed):
            if l not in levels:
                continue
            acc = inst.tensor_access[inst.tensor_ptr[t]:inst.tensor_ptr[t + 1]]
            times = inst.access_time[acc]
            allowed[t] = [m for m in levels
                          if m <= l or not (times[:, l] <= times[:, m]).all()]
        return


def _cheapest_while_branching(inst: Instance, k: int, frontier: dict[tuple, np.ndarray],
                              tracked: list[int], keep: int) -> dict[tuple, np.ndarray]:
    """The `keep` keys of `frontier` cheapest by their cheapest label plus op k's access
    time over the tensors branched so far (a lower bound on the op's memory time)."""
    a0, a1 = int(inst.op_ptr[k]), int(inst.op_ptr[k + 1])
    access = {int(inst.op_tensor[a]): a for a in range(a0, a1)}
    read = [(i, access[t]) for i, t in enumerate(tracked) if t in access]

    def cost(key: tuple) -> float:
        return float(frontier[key][:, 0].min()) + sum(float(inst.access_time[a, key[i]])
                                                      for i, a in read)
    return {key: frontier[key] for key in sorted(frontier, key=cost)[:keep]}


def dp_placement(inst: Instance, buckets: int = 1024, max_keys: int = 64,
                 max_labels: int = 256, should_stop=None,
                 upper: float = math.inf) -> tuple[np.ndarray | None, dict]:
    """The DP's best placement (None if stopped) and facts about the run. Labels whose
    cost plus a lower bound on the rest exceeds `upper` (the latency of a known valid
    placement) are dropped: that cannot lose an optimum."""
    T, L, n = inst.n_tensors, inst.n_levels, inst.n_ops
    last = L - 1
    Lc = L - 1  # capacitated levels that can bind (the last holds everything)
    unit = np.array([-(-int(inst.capacity[l]) // buckets) for l in range(Lc)], np.int64)
    cells = np.array([int(inst.capacity[l]) // int(unit[l]) for l in range(Lc)], np.int64)
    form = formulate(inst)
    allowed = [[last] for _ in range(T)]
    for t, l in zip(form.var_tensor.tolist(), form.var_level.tolist()):
        allowed[t].insert(len(allowed[t]) - 1, l)
    first = np.full(T, n, np.int64)
    lastacc = np.full(T, -1, np.int64)
    np.minimum.at(first, inst.op_tensor, inst.access_op)
    np.maximum.at(lastacc, inst.op_tensor, inst.access_op)
    new_at = [[] for _ in range(n)]
    for t in np.argsort(first, kind="stable").tolist():
        new_at[int(first[t])].append(t)
    size_cells = np.stack([-(-inst.size // unit[l]) for l in range(Lc)], axis=1) if Lc else \
        np.zeros((T, 0), np.int64)
    is_weight = inst.is_weight.astype(bool)
    _keep_above_a_level_holding_everything(inst, allowed, size_cells, cells)
    future = _future_bounds(inst, allowed)
    limit = upper * (1 + 1e-12) if math.isfinite(upper) else math.inf

    # Label ids: label 0 is the root; each branch adds a block of consecutive ids that
    # share (tensor, level) and keep their parents' ids in an array.
    block_first: list[int] = [1]
    block_parents: list[np.ndarray] = []
    block_choice: list[tuple[int, int]] = []
    tracked: list[int] = []
    # key (levels of `tracked`) -> labels [cost, M_0.., W_0.., id]
    frontier: dict[tuple, np.ndarray] = {(): np.zeros((1, 2 + 2 * Lc))}
    facts = {"truncated_keys": 0, "truncated_labels": 0, "max_keys_seen": 1,
             "rounded_levels": int((unit > 1).sum())}
    stop = should_stop or (lambda: False)  # checked per op and per key, each stage
    for k in range(n):
        if stop():
            return None, facts
        # Branch the tensors first accessed at op k over their levels.
        for t in new_at[k]:
            grown: dict[tuple, np.ndarray] = {}
            for key, labels in frontier.items():
                if stop():  # the keys multiply by the levels with each tensor branched
                    return None, facts
                for l in allowed[t]:
                    lab = labels.copy()
                    if is_weight[t] and l < Lc:
                        lab[:, 1 + Lc + l] += size_cells[t, l]
                        ok = lab[:, 1 + l] + lab[:, 1 + Lc + l] <= cells[l]
                        lab = lab[ok]
                        if lab.shape[0] == 0:
                            continue
                    first_id = block_first[-1]
                    block_parents.append(lab[:, -1].astype(np.int64))
                    block_choice.append((t, l))
                    block_first.append(first_id + lab.shape[0])
                    lab[:, -1] = np.arange(first_id, first_id + lab.shape[0])
                    grown[key + (l,)] = lab
            frontier = grown
            tracked.append(t)
            if len(frontier) > BRANCHING_KEYS * max_keys:  # an op first reading many tensors
                facts["truncated_keys"] += 1
                frontier = _cheapest_while_branching(inst, k, frontier, tracked,
                                                     BRANCHING_KEYS * max_keys)
        # Close op k: its time, the activations live at step k, then drop finished tensors.
        a0, a1 = int(inst.op_ptr[k]), int(inst.op_ptr[k + 1])
        position = {t: i for i, t in enumerate(tracked)}
        acc_pos = [position[int(inst.op_tensor[a])] for a in range(a0, a1)]
        live_acts = [i for i, t in enumerate(tracked)
                     if not is_weight[t] and inst.start[t] <= k <= inst.end[t]]
        keep_pos = [i for i, t in enumerate(tracked) if lastacc[t] > k]
        closed: dict[tuple, list[np.ndarray]] = {}
        for key, labels in frontier.items():
            if stop():
                return None, facts
            memory = 0.0
            for a, i in zip(range(a0, a1), acc_pos):
                memory += inst.access_time[a, key[i]]
            op_time = max(float(inst.compute[k]), memory)
            lab = labels.copy()
            lab[:, 0] += op_time
            ok = lab[:, 0] + future[k] <= limit
            for l in range(Lc):
                act = sum(int(inst.size[tracked[i]]) for i in live_acts if key[i] == l)
                if act:
                    lab[:, 1 + l] = np.maximum(lab[:, 1 + l], -(-act // int(unit[l])))
                ok &= lab[:, 1 + l] + lab[:, 1 + Lc + l] <= cells[l]
            lab = lab[ok]
            if lab.shape[0]:
                closed.setdefault(tuple(key[i] for i in keep_pos), []).append(lab)
        tracked = [tracked[i] for i in keep_pos]
        frontier = {}
        for key, parts in closed.items():
            if stop():  # a key's Pareto filter is quadratic in its labels
                return None, facts
            labels, cut = _pareto(np.concatenate(parts), max_labels, cells.astype(np.float64))
            facts["truncated_labels"] += int(cut)
            frontier[key] = labels
        facts["max_keys_seen"] = max(facts["max_keys_seen"], len(frontier))
        if len(frontier) > max_keys:
            facts["truncated_keys"] += 1
            best = sorted(frontier, key=lambda key: float(frontier[key][0, 0]))[:max_keys]
            frontier = {key: frontier[key] for key in best}
        if not frontier:  # nothing the DP can represent beats `upper`
            facts["none_below_upper"] = True
            return None, facts
    labels = np.concatenate(list(frontier.values()))
    best = labels[int(np.argmin(labels[:, 0]))]
    place = inst.slowest_placement()
    node = int(best[-1])
    while node > 0:
        b = bisect.bisect_right(block_first, node) - 1
        t, l = block_choice[b]
        parent = int(block_parents[b][node - block_first[b]])
        place[t] = l
        node = parent
    facts["dp_latency"] = float(best[0])
    return place, facts


@register("dp", "dynamic programming over the schedule (Pareto labels per tracked-level key); "
          "exact on chains at one-byte buckets", params={
              "buckets": Param(1024, int, 1, doc="capacity units per level (bytes rounded up to them)"),
              "max_keys": Param(64, int, 1, doc="beam: keys kept per step"),
              "max_labels": Param(256, int, 1, doc="Pareto labels kept per key")})
def solve_dp(ctx: SearchContext, buckets: int, max_keys: int, max_labels: int) -> None:
    inst = ctx.instance
    warm, warm_offsets = best_start(inst)
    ctx.count(1)
    ctx.offer(warm, offsets=warm_offsets)  # the bound the DP prunes against
    place, facts = dp_placement(inst, buckets, max_keys, max_labels, ctx.should_stop,
                                latency(inst, warm))
    ctx.notes.update(facts)
    exact = (facts["truncated_keys"] == 0 and facts["truncated_labels"] == 0
             and facts["rounded_levels"] == 0 and not inst.has_addressed_levels)
    ctx.notes["exact"] = exact
    if place is None:
        if exact and facts.get("none_below_upper"):  # the warm start is optimal
            ctx.lower_bound = ctx.best_latency
            ctx.proven_optimal = True
        return
    ctx.count(1)
    offered = offer_valid(ctx, place, packer=ctx.packer)
    if exact and offered.tolist() == place.tolist():
        lat = latency(inst, offered)
        if math.isclose(lat, ctx.best_latency, rel_tol=0.0, abs_tol=0.0):
            ctx.lower_bound = lat
            ctx.proven_optimal = True
