"""The rotation bound: weights that the fast levels cannot all hold take turns, and every turn is a copy.

memplace-lib's albert-base@nnpi shares one layer's weights across its 12 layers: two FFN
weights of 9.44 MB and four attention weights of 2.36 MB, of which SRAM (4 MiB) and LLC
(24 MiB) hold at most five at any step. Every layer reads all of them, so the one left out
keeps changing, and each change is a 2.36 MB copy from DRAM that must arrive between the
weight's last use and its next: the LP relaxations spread those copies fractionally and
proved 611 µs against a best known of 900. This bound follows the turns step by step.

Let S be a set of weights such that no |S| of them fit the levels other than the last at
once (a cover family with r = |S| - 1, `cover_cuts.family_holds`). With z the last level
(bandwidth B, copy bandwidth beta), for each tensor t let bwfast(t) be the largest
bandwidth of a level t fits (z included), and for op k

    M_k = sum over op k's accesses (t, b) of b / bwfast(t),   m_k = max(compute_k, M_k),
    inc(X, k) = max(compute_k, M_k + b / B - b / bwfast(X)) - m_k   (X in S read by op k, b > 0),
    tau_X = size_X / beta,   next_X(j) = the least op >= j that reads X with b > 0.

A *pattern* is a member d_j of S for every step j; a step j >= 1 with d_j != d_{j-1} is a
*change* of X = d_{j-1}, with a next access a = next_X(j) (if any) and one of two cases:
*transit* (a > j: an interval [j, a - 1]) or *direct* (a penalty inc(X, a)). Its cost is

    sum of inc(d_k, k) over the steps k whose d_k is read there (b > 0)
    + sum of inc(X, a) over the direct changes
    + sum over the unions U of overlapping transit intervals of
          max(0, sum of their tau_X - sum_{k in U} m_k),

and the bound is sum_k m_k plus the least cost over all patterns (`bound`: a dynamic
program over the steps, its state the member d_j and the open union's end and deficit).

Why every valid solution's latency T is at least that:

1. At every step j some member of S occupies no level but the last (the family), so is
   homed in z (a weight occupies its home at every step). Pick d_j among them: d_{j-1}
   while it is still such a member, else any. This is the solution's pattern.
2. Each access is served by a level holding its tensor whole, so elapsed_k >= m_k. If
   d_k = X is read by op k, X is in no fast level: the home in z serves it, and op k's
   memory time is at least M_k + b / B - b / bwfast(X). Several such reads of distinct
   accesses at one op add: x -> max(c, M + x) - max(c, M) is convex and 0 at 0, so
   superadditive, and elapsed_k >= m_k + the sum of their inc.
3. At a change at j, X = d_{j-1} is in a fast level at j but not at j - 1: a window of X
   starts at j (a prefetch: a weight has no producer), its copy on z's channel issued
   before op j and complete before op `first` > j; it moves only in intervals j ..
   first - 1 (interval k: op k and the wait before op k + 1). If first <= a, it moves
   inside [j, a - 1] (transit). Otherwise op a's access lies in the window's occupancy
   before its `first`, so no window serves it (a tensor's windows never overlap) and the
   home does (direct, step 2). The window holds X from j through a, so this access is
   neither a step with d_a = X nor the direct access of another change of X: every
   penalty counted is a distinct access.
4. Let dur_k = elapsed_k + the wait before op k + 1; T >= sum_k dur_k. In a union U of
   transit intervals every copy of it moves inside U on one channel at most beta bytes
   a second, while the channel is idle (dur_k - busy_k, busy_k the time of op k's
   accesses served by z, at least its penalties' b / B >= their inc): so
   sum_U dur_k >= sum tau + sum_U inc, and sum_U dur_k >= sum_U (m_k + inc) by step 2.
   Unions are disjoint, so T >= sum_k m_k + the pattern's cost >= the bound.

The certificate is the family; `verify` checks it (`cover_cuts.family_holds`, every member a
weight, r = |S| - 1) and runs the dynamic program again: no solver.
"""
from __future__ import annotations

import math

import numpy as np

from memplace.model import Instance
from memplace.solvers.residency.machinery import cover_cuts

MAX_MEMBERS = 16  # the largest S the bound is computed for
MARGIN = 1e-9  # relative: the dynamic program sums in another order than the simulator


def eligible(inst: Instance, family: cover_cuts.Family) -> bool:
    """A family the bound holds for: weights only, at most |S| - 1 of them fast."""
    return (family.at_most == len(family.tensors) - 1 and len(family.tensors) <= MAX_MEMBERS
            and all(inst.is_weight[t] == 1 for t in family.tensors))


def _terms(inst: Instance, S: list[int]):
    """m_k, its prefix sums, inc by (member, op), next_X per step, tau_X (seconds)."""
    n, z = inst.n_ops, inst.n_levels - 1
    B, beta = float(inst.bandwidth[z]), float(inst.copy_bandwidth[z])
    bwfast = np.full(inst.n_tensors, B)
    for l in range(z):
        ok = inst.size <= inst.capacity[l]
        bwfast[ok] = np.maximum(bwfast[ok], float(inst.bandwidth[l]))
    ops = inst.access_op.astype(np.int64)
    nbytes = inst.op_bytes.astype(np.float64)
    M = np.bincount(ops, weights=nbytes / bwfast[inst.op_tensor], minlength=n)
    compute = np.asarray(inst.compute, np.float64)
    m = np.maximum(compute, M)
    prefix = np.concatenate([[0.0], np.cumsum(m)])
    inc: dict[tuple[int, int], float] = {}
    nxt: dict[int, list[int]] = {}
    for X in S:
        acc = inst.tensor_access[inst.tensor_ptr[X]:inst.tensor_ptr[X + 1]]
        for a in acc.tolist():
            k, b = int(inst.access_op[a]), float(inst.op_bytes[a])
            if b > 0:
                inc[X, k] = max(compute[k], M[k] + b / B - b / bwfast[X]) - m[k]
        following = [-1] * (n + 1)
        for k in range(n - 1, -1, -1):
            following[k] = k if (X, k) in inc else following[k + 1]
        nxt[X] = following
    tau = {X: float(inst.size[X]) / beta for X in S}
    return m, prefix, inc, nxt, tau


def _keep(states: dict, key: tuple[int, int], cost: float, deficit: float) -> None:
    """Keep (cost, deficit) at `key` unless another pair there is no worse in both."""
    pairs = states.setdefault(key, [])
    for c, d in pairs:
        if c <= cost and d <= deficit:
            return
    pairs[:] = [(c, d) for c, d in pairs if not (cost <= c and deficit <= d)]
    pairs.append((cost, deficit))


def bound(inst: Instance, family: cover_cuts.Family) -> float:
    """The rotation bound (seconds, module docstring) of an `eligible` family, not margined."""
    S = list(family.tensors)
    n = inst.n_ops
    m, prefix, inc, nxt, tau = _terms(inst, S)
    # state (d_j, end of the open union or -1) -> Pareto pairs (cost so far, deficit of
    # the open union: its tau minus its m so far)
    states: dict[tuple[int, int], list[tuple[float, float]]] = {}
    for X in S:
        _keep(states, (X, -1), inc.get((X, 0), 0.0), 0.0)
    for j in range(1, n):
        new: dict[tuple[int, int], list[tuple[float, float]]] = {}
        for (X, was), pairs in states.items():
            for cost, deficit in pairs:
                end = was
                if end >= 0 and end < j:  # no interval from j on overlaps it: the union closes
                    cost, deficit, end = cost + max(0.0, deficit), 0.0, -1
                for Y in S:
                    here = cost + inc.get((Y, j), 0.0)
                    if Y == X:
                        _keep(new, (Y, end), here, deficit)
                        continue
                    a = nxt[X][j]
                    if a < 0:  # X is not read again: its copy bounds nothing here
                        _keep(new, (Y, end), here, deficit)
                        continue
                    _keep(new, (Y, end), here + inc[X, a], deficit)  # direct
                    if a > j:  # transit in [j, a - 1]
                        if end < 0:
                            _keep(new, (Y, a - 1), here, tau[X] - (prefix[a] - prefix[j]))
                        else:
                            grown = max(end, a - 1)
                            _keep(new, (Y, grown), here,
                                  deficit + tau[X] - (prefix[grown + 1] - prefix[end + 1]))
        states = new
    least = min(cost + max(0.0, deficit) for pairs in states.values() for cost, deficit in pairs)
    return float(prefix[n] + least)


def families(inst: Instance) -> list[cover_cuts.Family]:
    """Where the bound looks (validity is `eligible` and `cover_cuts.family_holds`): for
    each m up to MAX_MEMBERS, the m largest weights when they do not all fit the fast
    levels, less as many of them as can go (those read least first) with the rest still
    not fitting: a weight read once or never can be the one left out at no cost."""
    if inst.n_levels < 2:
        return []
    bins = cover_cuts.fast_capacities(inst)
    weights = np.flatnonzero(inst.is_weight == 1)
    order = [int(t) for t in weights[np.lexsort((weights, -inst.size[weights]))][:MAX_MEMBERS]]
    reads = {t: int(np.count_nonzero(inst.op_bytes[inst.tensor_access[inst.tensor_ptr[t]:inst.tensor_ptr[t + 1]]]))
             for t in order}
    out: list[cover_cuts.Family] = []
    for m in range(2, len(order) + 1):
        S = order[:m]
        if cover_cuts.packs([int(inst.size[t]) for t in S], bins) is not False:
            continue
        for t in sorted(S, key=lambda t: (reads[t], -t)):
            rest = [u for u in S if u != t]
            if len(rest) >= 2 and cover_cuts.packs([int(inst.size[u]) for u in rest], bins) is False:
                S = rest
        fam = cover_cuts.Family(tuple(S), len(S) - 1)
        if fam not in out:
            out.append(fam)
    return out


def best(inst: Instance) -> tuple[float, cover_cuts.Family | None]:
    """The highest bound (seconds, margined; -inf without one) over `families`, and its
    family."""
    top, chosen = -math.inf, None
    for fam in families(inst):
        value = bound(inst, fam) * (1 - MARGIN)
        if value > top:
            top, chosen = value, fam
    return top, chosen
