"""The horizon bound: the delivery relaxation cut into blocks of the schedule, coupled by prices.

`delivery_bound.py`'s LP grows with the program and HiGHS's time on it grows faster
(synth-10000@nnpi: 354,000 columns, minutes of simplex). Here the schedule is cut into
blocks of `BLOCK_OPS` consecutive ops and each block gets the delivery relaxation of its
own intervals (`delivery_bound.formulate(..., ops=(lo, hi))`): its accesses only, a
window may be carried in from before the block (it holds its space from the block's first
step, its copy is free), bytes may have been delivered before the block (they wait in
fast memory like any other), and a copy is charged to a span of the block only if it
cannot move outside it. Every valid solution restricted to a block's intervals is a
feasible point of that block's LP whose objective is the time of those intervals (the
argument of `delivery_bound.py`, each relaxed row only losing terms), so the sum over the
blocks of their LPs bounds the latency.

Alone, each block would home its weights in the fast levels as if no other block had
any: weights are live at every step, and the fast levels hold at most `capacity_l` bytes
of them in all. That constraint, sum over weights of size * y[t, l] <= capacity_l (each
weight counted in one block, that of its first access), is relaxed with a price
mu_l >= 0 per byte (Lagrangian relaxation): for any mu >= 0,

    sum_b LP_b(mu) - sum_l mu_l * capacity_l <= latency of every valid solution,

LP_b(mu) being block b's LP with mu_l * size added to the cost of each of its weights'
y[t, l]. (A valid solution is feasible in every block and meets the constraint, so its
priced objective is at most its latency plus sum_l mu_l * capacity_l.) Any mu gives a
bound; `horizon_bound` searches mu_l by bisection on the sign of the constraint's slack
(the subgradient), re-solving the blocks from their last basis, and keeps the best. Each
block's LP value is recomputed from its row duals by weak duality
(`delivery_bound.dual_bound`), so the certificate is the prices and one dual vector per
block: `check` rebuilds the blocks and recomputes the figure.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from memplace.model import Instance
from memplace.solvers.highs import new_highs
from memplace.solvers.residency.machinery.delivery_bound import (MARGIN, DeliveryModel, dual_bound,
                                                                 formulate, model_scale)

BLOCK_OPS = 250
INF = math.inf


def blocks(n_ops: int, block_ops: int = BLOCK_OPS) -> list[tuple[int, int]]:
    """Consecutive blocks of at most `block_ops` ops covering the schedule."""
    return [(lo, min(lo + block_ops, n_ops)) for lo in range(0, n_ops, block_ops)]


def _priced(inst: Instance, model: DeliveryModel, lo: int, hi: int) -> list[tuple[int, int, float]]:
    """(column, level, size) of y[t, l] for the weights whose first access is in the block,
    on every level with a capacity."""
    out = []
    L = inst.n_levels
    for t in np.flatnonzero((inst.is_weight == 1) & (model.homes.max(axis=1) >= 0)).tolist():
        first = int(inst.access_op[inst.tensor_access[inst.tensor_ptr[t]:inst.tensor_ptr[t + 1]]].min())
        if not lo <= first < hi:
            continue
        for l in range(L):
            if model.homes[t, l] >= 0 and not (l == L - 1 and inst.levels[l].capacity is None):
                out.append((int(model.homes[t, l]), l, float(inst.size[t])))
    return out


def _capacities(inst: Instance) -> np.ndarray:
    L = inst.n_levels
    return np.array([float(inst.capacity[l]) if not (l == L - 1 and inst.levels[l].capacity is None)
                     else 0.0 for l in range(L)])


def _price(model: DeliveryModel, base: np.ndarray, priced: list[tuple[int, int, float]],
           mu: np.ndarray) -> None:
    """Set the model's costs to its base costs plus mu_l * size on each priced column."""
    cost = base.copy()
    for col, l, size in priced:
        cost[col] += mu[l] * size
    model.lp.cost = cost


@dataclass
class HorizonBound:
    """The proven bound (seconds, -inf if none), how it was reached, and its certificate:
    the prices (per level, model units per byte) and the row duals of every block."""

    bound: float
    status: str
    seconds: float
    stats: dict
    prices: np.ndarray | None = None
    row_duals: list[np.ndarray] = field(default_factory=list)


def combine(inst: Instance, models: list[DeliveryModel], duals: list[np.ndarray], mu: np.ndarray) -> float:
    """The Lagrangian bound (seconds) of blocks priced with mu, from their row duals."""
    scale = models[0].scale
    total = sum(dual_bound(m, z) for m, z in zip(models, duals))
    total -= float(np.dot(mu, _capacities(inst))) * scale
    return total * (1 - MARGIN) if total > 0 else total


def _highs_of(m: DeliveryModel, threads: int, seed: int):
    """HiGHS holding block model m's LP relaxation."""
    h = new_highs(threads, seed, None)
    h.passModel(m.lp.highs_lp())
    return h


def _round(models: list[DeliveryModel], solvers: list, base: list[np.ndarray], priced: list,
           mu: np.ndarray, deadline: float) -> tuple[list[np.ndarray], np.ndarray]:
    """Every block solved at prices `mu`, in turn until `deadline`: the row duals of those
    solved, and the capacity their priced weights use per level."""
    duals, used = [], np.zeros(mu.shape[0])
    for m, h, b, pr in zip(models, solvers, base, priced):
        left = deadline - time.perf_counter()
        if left <= 0.05:
            break
        _price(m, b, pr, mu)
        h.changeColsCost(m.lp.cost.size, np.arange(m.lp.cost.size, dtype=np.int32), m.lp.cost)
        h.setOptionValue("time_limit", left if math.isfinite(left) else INF)
        h.run()
        sol = h.getSolution()
        if not sol.dual_valid:
            break
        duals.append(np.array(sol.row_dual))
        x = np.array(sol.col_value)
        for col, l, size in pr:
            used[l] += x[col] * size
    return duals, used


def horizon_bound(inst: Instance, ceiling: float, time_limit: float | None = None,
                  threads: int = 1, seed: int = 0, block_ops: int = BLOCK_OPS,
                  rounds: int = 12) -> HorizonBound:
    """Build the blocks' LPs, then solve them for up to `rounds` price vectors (module
    docstring); `ceiling` is a valid solution's latency. Stops at `time_limit`, keeping
    the best bound of the rounds completed."""
    began = time.perf_counter()
    deadline = INF if time_limit is None else began + time_limit
    scale = model_scale(inst)
    spans = blocks(inst.n_ops, block_ops)
    models: list[DeliveryModel] = []
    try:
        for lo, hi in spans:
            models.append(formulate(inst, ceiling, deadline, ops=(lo, hi), scale=scale))
    except TimeoutError as late:
        return HorizonBound(-INF, f"not built in time ({late})", time.perf_counter() - began,
                            {"blocks": len(spans), "built": len(models)})
    priced = [_priced(inst, m, lo, hi) for m, (lo, hi) in zip(models, spans)]
    base = [m.lp.cost.copy() for m in models]
    solvers = [_highs_of(m, threads, seed) for m in models]
    built_s = time.perf_counter() - began
    best, mu, trace = _search(inst, models, solvers, base, priced, rounds, deadline, began)
    best.seconds = time.perf_counter() - began
    best.stats = {"blocks": len(spans), "block_ops": block_ops, "rounds": len(trace),
                  "built_s": round(built_s, 2), "trace": trace,
                  "columns": sum(m.lp.cost.size for m in models),
                  "prices": [float(v) for v in (best.prices if best.prices is not None else mu)]}
    best.bound = max(best.bound, inst.compute_floor()) if math.isfinite(best.bound) else best.bound
    return best


def _search(inst: Instance, models: list[DeliveryModel], solvers: list, base: list[np.ndarray],
            priced: list, rounds: int, deadline: float, began: float
            ) -> tuple[HorizonBound, np.ndarray, list]:
    """Up to `rounds` rounds of the blocks at prices mu, mu bisected per level between
    rounds; the best bound (its prices and duals), the last prices, and per completed
    round: seconds, bound, capacity used by the priced weights per level."""
    caps = _capacities(inst)
    L = inst.n_levels
    mu = np.zeros(L)
    low = np.zeros(L)
    high = np.where(caps > 0, 1.0 / float(inst.bandwidth[L - 1]) / models[0].scale, 0.0)
    best = HorizonBound(-INF, "no round completed", 0.0, {"blocks": len(models)})
    trace: list = []
    for r in range(rounds):
        duals, used = _round(models, solvers, base, priced, mu, deadline)
        if len(duals) < len(models):
            break
        value = combine(inst, models, duals, mu)
        share = [float(u / c) if c > 0 else 0.0 for u, c in zip(used, caps)]
        trace.append((round(time.perf_counter() - began, 2), value, share))
        if value > best.bound:
            best = HorizonBound(value, f"round {r + 1}", 0.0, {}, mu.copy(), duals)
        _bisect(mu, low, high, used, caps)
    return best, mu, trace


def _bisect(mu: np.ndarray, low: np.ndarray, high: np.ndarray, used: np.ndarray,
            caps: np.ndarray) -> None:
    """The next price of each level with a capacity, by bisection (geometric once a
    lower end is known) on the sign of its slack: over-full raises it, else lowers it."""
    for l in np.flatnonzero(caps > 0).tolist():
        if used[l] > caps[l]:
            low[l] = mu[l]
        else:
            high[l] = mu[l]
        mu[l] = math.sqrt(low[l] * high[l]) if low[l] > 0 else high[l] / 8


def check(inst: Instance, ceiling: float, prices: np.ndarray, duals: list[np.ndarray],
          block_ops: int = BLOCK_OPS) -> float:
    """Re-check a certificate: rebuild the blocks priced with `prices` and recompute the
    bound (seconds) from the row duals by weak duality; no solver needed."""
    scale = model_scale(inst)
    spans = blocks(inst.n_ops, block_ops)
    if len(duals) != len(spans) or np.any(np.asarray(prices) < 0):
        raise ValueError(f"a certificate needs {len(spans)} dual vectors and prices >= 0")
    models = []
    for lo, hi in spans:
        m = formulate(inst, ceiling, ops=(lo, hi), scale=scale)
        _price(m, m.lp.cost, _priced(inst, m, lo, hi), np.asarray(prices, np.float64))
        models.append(m)
    return combine(inst, models, duals, np.asarray(prices, np.float64))
