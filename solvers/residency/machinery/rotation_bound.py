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

import itertools
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
    """Keep (cost, deficit) at `key` unless another pair (c, d) there is no worse: at one
    key the future adds the same to both deficits, and max(0, d + x) - max(0, deficit + x)
    <= d - deficit, so c <= cost and c + d <= cost + deficit suffice."""
    pairs = states.setdefault(key, [])
    total = cost + deficit
    for c, d in pairs:
        if c <= cost and c + d <= total:
            return
    pairs[:] = [(c, d) for c, d in pairs if not (cost <= c and total <= c + d)]
    pairs.append((cost, deficit))


def bound(inst: Instance, family: cover_cuts.Family, start: int = 0) -> float:
    """The rotation bound (seconds, module docstring) of an `eligible` family, not margined;
    with `start`, of the ops start .. n - 1 alone (the same argument over them, copies
    issued before op start left out): at most their sum of dur_k."""
    S = list(family.tensors)
    n = inst.n_ops
    m, prefix, inc, nxt, tau = _terms(inst, S)
    # state (d_j, end of the open union or -1) -> Pareto pairs (cost so far, deficit of
    # the open union: its tau minus its m so far)
    states: dict[tuple[int, int], list[tuple[float, float]]] = {}
    for X in S:
        _keep(states, (X, -1), inc.get((X, start), 0.0), 0.0)
    for j in range(start + 1, n):
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
    return float(prefix[n] - prefix[start] + least)


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


# --- The rotation over levels (model residency-rotation-levels) ---------------------------
#
# The bound above asks only which member is out of every fast level. On albert-base@nnpi it
# keeps one attention weight out and reads it from DRAM once a layer, every other op at its
# fastest: all three other attention weights read from SRAM, which holds one of them. The
# rotation over levels follows every member's fastest level, for each way of homing them.
#
# Let S be a set of weights (live at every step, no producer), z the last level. A *home
# assignment* h gives each member a level it fits (z always), the members homed in each
# level l < z fitting cap(l). A *state* f gives each member a level f(X) <= h(X) (index) it
# fits, such that for every l < z the members with h(X) = l or f(X) = l fit cap(l); then
# R_l(f) = cap(l) minus their sizes. For op k and state f:
#
#     bw_f(X) = max(bw[f(X)], bw[h(X)]) for a member X; for any other tensor t, the largest
#     bw[l] over l = z and the l < z with size_t <= R_l(f),
#     c_k(f) = max(compute_k, sum over op k's accesses (t, b) of b / bw_f(t)),
#     D_k(f) = sum of b / bw[z] over op k's accesses of members with f(X) = z and of other
#              tensors that fit no R_l(f).
#
# A pattern is a state f_j for every step j, with f_{-1} = h. At step j a member with
# f_j(X) < f_{j-1}(X) and h(X) = z *enters*; with a = the least op >= j reading X (b > 0),
# if any, it is *transit* (a > j: an interval [j, a - 1], tau_X = size_X / copy_bw[z]) or
# *direct* (penalty max(c, Mmin_a + x) - max(c, Mmin_a) at op a, x = b / bw[z] - b /
# bw_f(X) with f = f_j, c = compute_a, Mmin_a the least memory time of op a over the
# states). The pattern costs
#
#     sum_k c_k(f_k) + its direct penalties
#     + sum over the unions U of overlapping transit intervals of
#           max(0, sum of their tau - sum_{k in U} (c_k(f_k) - D_k(f_k))),
#
# and the bound is the least cost over every home assignment and pattern (`level_bound`).
#
# Why every valid solution's latency T is at least that. Take its homes as h and, at every
# step j, f_j(X) = the fastest (least index) level X occupies (its home, and at most one
# window: a tensor's windows have disjoint occupancies).
#
# 1. f_j is a state: X occupies h(X) at every step (a weight is live at every step) and
#    f_j(X); the load of level l counts all of them. h itself is one (f_{-1}: before op 0 no
#    window occupies anything).
# 2. An access is served by a level holding its tensor at that step (a serving window
#    occupies it), so at least as fast as bw_f: a member is held only in h(X) and f_j(X);
#    any other tensor in level l < z shares it with the members there, so fits R_l(f_j).
#    Hence elapsed_k >= c_k(f_k), and an access counted in D_k is served by z.
# 3. An entering member X is in level f_j(X) at j, not at j - 1, and not homed there
#    (h(X) >= f_{j-1}(X) > f_j(X)): a prefetch window starts at j, its copy of size_X on
#    z's channel before its `first` > j, moving in the intervals j .. first - 1 (interval
#    k: op k and the wait before op k + 1). If first <= a, inside [j, a - 1]. Otherwise
#    the window occupies a before its `first` and no other window of X occupies a, so the
#    home (z) serves op a's access while f_a(X) = f_j(X): op a's memory time is at least
#    M_a(f_a) + x, and x -> max(c, M + x) - max(c, M) is convex, 0 at 0 (superadditive
#    over several such reads at one op) and nondecreasing in M, so elapsed_a exceeds
#    c_a(f_a) by at least the sum of the penalties. Each is a distinct access (the window
#    holds X from j through a, so no other entry of X is direct at a).
# 4. Let dur_k = elapsed_k + the wait before op k + 1; T >= sum_k dur_k. In a union U every
#    copy of it moves on z's channel at copy_bw[z] while the channel is idle, dur_k minus
#    busy_k (the time of op k's accesses served by z, at least D_k plus the direct reads'
#    b / bw[z] >= their penalties). So sum_U dur_k >= sum tau + sum_U D_k + the penalties
#    in U, and >= sum_U c_k + the penalties in U by steps 2-3. Unions are disjoint, so T
#    >= the pattern's cost >= the bound.
#
# Members homed above z enter at no charge (their copies run on other channels; leaving a
# time out only lowers the bound), and a member that leaves a level costs nothing.
# The certificate is the set S; `verify` checks it (distinct weights, at most
# LEVEL_MEMBERS, at most LEVEL_STATES states per home assignment) and runs the program
# again: no solver. The home assignments are searched best first, each abandoned once what
# it has spent plus the least the remaining ops can cost reaches the least bound so far,
# which leaves the minimum exact.

LEVEL_MEMBERS = 8  # the largest S the rotation over levels is computed for
LEVEL_STATES = 256  # ... and the most states of one home assignment


def level_eligible(inst: Instance, S: tuple[int, ...]) -> bool:
    """A set the rotation over levels is computed for: distinct weights, at most
    LEVEL_MEMBERS, no home assignment with more than LEVEL_STATES states."""
    if not (2 <= len(S) <= LEVEL_MEMBERS and len(set(S)) == len(S) and inst.n_levels >= 2):
        return False
    if not all(0 <= t < inst.n_tensors and inst.is_weight[t] == 1 and inst.tensors[t]["producer"] is None
               for t in S):
        return False
    return all(len(_states(inst, S, h)) <= LEVEL_STATES for h in _homes(inst, S))


def _levels_of(inst: Instance, t: int, below: int) -> list[int]:
    """The levels up to `below` (index) that tensor t fits, the last level always."""
    z = inst.n_levels - 1
    return [l for l in range(below + 1) if l == z or inst.size[t] <= inst.capacity[l]]


def _loads_fit(inst: Instance, S: tuple[int, ...], h: tuple[int, ...], f: tuple[int, ...]) -> bool:
    z = inst.n_levels - 1
    load = [0] * z
    for X, hx, fx in zip(S, h, f):
        for l in {hx, fx}:
            if l < z:
                load[l] += int(inst.size[X])
    return all(load[l] <= inst.capacity[l] for l in range(z))


def _homes(inst: Instance, S: tuple[int, ...]) -> list[tuple[int, ...]]:
    z = inst.n_levels - 1
    return [h for h in itertools.product(*[_levels_of(inst, X, z) for X in S]) if _loads_fit(inst, S, h, h)]


def _states(inst: Instance, S: tuple[int, ...], h: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Every state of home assignment h, h itself first."""
    out = [f for f in itertools.product(*[_levels_of(inst, X, hx) for X, hx in zip(S, h)])
           if _loads_fit(inst, S, h, f)]
    out.remove(h)
    return [h] + out


def _step_terms(inst: Instance, S: tuple[int, ...], h: tuple[int, ...], f: tuple[int, ...]):
    """c_k(f), D_k(f) over every op (seconds), and op k's memory time M_k(f)."""
    n, z = inst.n_ops, inst.n_levels - 1
    bw = inst.bandwidth.astype(np.float64)
    room = np.array([float(inst.capacity[l]) for l in range(z)])
    for X, hx, fx in zip(S, h, f):
        for l in {hx, fx}:
            if l < z:
                room[l] -= float(inst.size[X])
    best = np.full(inst.n_tensors, bw[z])
    slow_only = np.ones(inst.n_tensors, np.bool_)
    for l in range(z):
        ok = inst.size <= room[l]
        best[ok] = np.maximum(best[ok], bw[l])
        slow_only &= ~ok
    for X, hx, fx in zip(S, h, f):
        best[X] = max(bw[fx], bw[hx])
        slow_only[X] = fx == z
    ops = inst.access_op
    nbytes = inst.op_bytes.astype(np.float64)
    M = np.bincount(ops, weights=nbytes / best[inst.op_tensor], minlength=n)
    D = np.bincount(ops, weights=np.where(slow_only[inst.op_tensor], nbytes / bw[z], 0.0), minlength=n)
    return np.maximum(np.asarray(inst.compute, np.float64), M), D, M


def _cover_rate(inst: Instance, S: tuple[int, ...], h: tuple[int, ...]) -> float:
    """The least copy time a step of a union costs: a transit of a z-homed member X covers
    at most the longest run of steps up to one of its reads, for tau_X (inf: none can)."""
    z = inst.n_levels - 1
    rate = math.inf
    for X, hx in zip(S, h):
        if hx != z:
            continue
        ops = sorted({int(inst.access_op[a]) for a in
                      inst.tensor_access[inst.tensor_ptr[X]:inst.tensor_ptr[X + 1]].tolist() if inst.op_bytes[a] > 0})
        if ops:
            longest = max(b - a for a, b in zip([-1] + ops, ops))  # transit [j, a - 1], j > the read before
            rate = min(rate, float(inst.size[X]) / float(inst.copy_bandwidth[z]) / longest)
    return rate


def _assignment(inst: Instance, S: tuple[int, ...], h: tuple[int, ...], ceiling: float) -> float:
    """The least cost of a pattern of home assignment h (seconds), or `ceiling` when none
    costs less (the search drops a partial pattern once it cannot)."""
    n, z = inst.n_ops, inst.n_levels - 1
    bw, beta = inst.bandwidth.astype(np.float64), float(inst.copy_bandwidth[z])
    states = _states(inst, S, h)
    terms = [_step_terms(inst, S, h, f) for f in states]
    c = np.array([t[0] for t in terms])
    D = np.array([t[1] for t in terms])
    Mmin = np.min([t[2] for t in terms], axis=0)
    # the least the ops k..n-1 cost, and the least their D_k (an open union's ops give back
    # c_k - D_k at most)
    rest = np.concatenate([np.cumsum(c.min(axis=0)[::-1])[::-1], [0.0]]).tolist()
    if rest[0] >= ceiling:
        return ceiling
    compute = np.asarray(inst.compute, np.float64)
    rho = _cover_rate(inst, S, h)
    # ops after an open union's end give back c_k - D_k only if some copy covers them, at
    # least rho a step: G_k = min(c_k, D_k + rho) over the states
    G = np.minimum(c, D + rho).min(axis=0)
    tail_G = np.concatenate([np.cumsum(G[::-1])[::-1], [0.0]]).tolist()
    prefix_D = np.concatenate([[0.0], np.cumsum(D.min(axis=0))]).tolist()
    cost_of, slack_of = c.tolist(), (c - D).tolist()
    nxt, tau, penalty = [], [], []
    for i, X in enumerate(S):
        acc = inst.tensor_access[inst.tensor_ptr[X]:inst.tensor_ptr[X + 1]]
        at = {int(inst.access_op[a]): float(inst.op_bytes[a]) for a in acc.tolist() if inst.op_bytes[a] > 0}
        following = [-1] * (n + 1)
        for k in range(n - 1, -1, -1):
            following[k] = k if k in at else following[k + 1]
        nxt.append(following)
        tau.append(float(inst.size[X]) / beta)
        # the direct penalty at op a of entering level l: x = b / bw[z] - b / bw_f(X)
        penalty.append({(l, a): max(compute[a], Mmin[a] + b / bw[z] - b / max(bw[l], bw[z]))
                        - max(compute[a], Mmin[a]) for a, b in at.items() for l in range(z)})
    # per pair of states: the z-homed members entering, with the level they enter
    entering = [[[(i, g[i]) for i in range(len(S)) if g[i] < f[i] and h[i] == z] for g in states]
                for f in states]
    targets = range(len(states))
    frontier: dict[tuple[int, int], list[tuple[float, float]]] = {(0, -1): [(0.0, 0.0)]}
    for j in range(n):
        new: dict[tuple[int, int], list[tuple[float, float]]] = {}
        after = rest[j + 1]
        for (fi, was), pairs in frontier.items():
            moves = entering[fi]
            for cost0, deficit0 in pairs:
                cost, deficit, end = cost0, deficit0, was
                if 0 <= end < j:  # the union closes
                    cost, deficit, end = cost + max(0.0, deficit), 0.0, -1
                for gi in targets:
                    options = [(cost, deficit, end)]
                    for i, level in moves[gi]:
                        a = nxt[i][j]
                        if a < 0:
                            continue
                        p = penalty[i][level, a]
                        grown = [(cst + p, dft, e) for cst, dft, e in options]
                        if a > j:
                            grown += [(cst, dft + tau[i], max(e, a - 1)) for cst, dft, e in options]
                        options = grown
                    step, back = cost_of[gi][j], slack_of[gi][j]
                    for cst, dft, e in options:
                        cst += step
                        if e >= j:
                            dft -= back
                            held = dft + prefix_D[e + 1] - prefix_D[j + 1] + tail_G[e + 1]
                            if cst + max(after, held) < ceiling:
                                _keep(new, (gi, e), cst, dft)
                        elif cst + after < ceiling:
                            _keep(new, (gi, e), cst, 0.0)
        frontier = new
        if not frontier:
            return ceiling
    least = min((cost + max(0.0, deficit) for pairs in frontier.values() for cost, deficit in pairs),
                default=ceiling)
    return float(min(least, ceiling))


def _first_copies(inst: Instance, S: tuple[int, ...], h: tuple[int, ...], split: int) -> float:
    """At most the sum of dur_k over the ops before `split` (every member's first read is
    among them): each z-homed member's first read is served by z (elapsed_a >= m_a + its
    inc, superadditive at one op, and z busy b / bw[z]), or by a window whose copy (tau_X on
    z's channel) completed before it, inside those ops. The least over those choices of
    max(sum of m_k + the reads' inc, sum of the copies' tau + the reads' b / bw[z])."""
    z = inst.n_levels - 1
    m, prefix, inc, nxt, tau = _terms(inst, list(S))
    B = float(inst.bandwidth[z])
    firsts = []
    for X, hx in zip(S, h):
        a = nxt[X][0]
        if hx == z and 0 <= a < split:
            acc = inst.tensor_access[inst.tensor_ptr[X]:inst.tensor_ptr[X + 1]].tolist()
            b = sum(float(inst.op_bytes[i]) for i in acc if int(inst.access_op[i]) == a)
            firsts.append((inc[X, a], b / B, tau[X]))
    least = math.inf
    for served in itertools.product((False, True), repeat=len(firsts)):  # True: read from z
        ops = float(prefix[split]) + sum(p for (p, _, _), s in zip(firsts, served) if s)
        channel = sum(busy if s else t for (_, busy, t), s in zip(firsts, served))
        least = min(least, max(ops, channel))
    return least


def level_bound(inst: Instance, S: tuple[int, ...], cap: float = math.inf) -> float:
    """The rotation over levels (seconds, the comment above) of a `level_eligible` set, not
    margined, or `cap` when that is less: the least over home assignments, those with
    fewest states first. An assignment is searched only when a quicker bound of its
    solutions is below the least so far: `_first_copies` over the ops before every
    member's first read has been, plus the rotation bound of the cover family S (if it is
    one, at most |S| - 1 fast) over the ops after them (`bound` with `start`)."""
    S = tuple(S)
    least = float(cap)
    reads = [int(inst.access_op[a]) for X in S
             for a in inst.tensor_access[inst.tensor_ptr[X]:inst.tensor_ptr[X + 1]].tolist() if inst.op_bytes[a] > 0]
    firsts = [min(int(inst.access_op[a]) for a in inst.tensor_access[inst.tensor_ptr[X]:inst.tensor_ptr[X + 1]].tolist()
                  if inst.op_bytes[a] > 0) for X in S if any(
                      inst.op_bytes[a] > 0 for a in inst.tensor_access[inst.tensor_ptr[X]:inst.tensor_ptr[X + 1]].tolist())]
    split = max(firsts) + 1 if reads else 0
    family = cover_cuts.Family(S, len(S) - 1)
    after = None
    for h in sorted(_homes(inst, S), key=lambda h: (len(_states(inst, S, h)), h)):
        if math.isfinite(least) and split < inst.n_ops:
            if after is None:
                after = (bound(inst, family, split)
                         if cover_cuts.family_holds(inst, family.to_json()) == family else 0.0)
            if _first_copies(inst, S, h, split) + after >= least:
                continue
        least = min(least, _assignment(inst, S, h, least))
    return least


def level_members(inst: Instance) -> tuple[int, ...] | None:
    """Where the rotation over levels looks: the family of `best` (the weights the fast
    levels cannot all hold), when it is `level_eligible`."""
    _, family = best(inst)
    if family is None or not level_eligible(inst, family.tensors):
        return None
    return tuple(family.tensors)
