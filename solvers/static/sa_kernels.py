"""Numba kernels of simulated annealing (`sa.py`): capacity bookkeeping and the move loop.

Capacity bookkeeping keeps the two kinds of tensors apart (docs/spec.md section 3):

- weights are live at every step, so level l holds `weight_bytes[l]` at every step;
- activations live a few steps, so `act_load[l, k]` is kept per step, with a
  max segment tree over steps (`tree_max`, `tree_add`, the layout of
  `memplace.model.static.load_tree`) whose root `tree_max[l, 1]` is the activation
  peak of level l.

The load of level l at step k is `weight_bytes[l] + act_load[l, k]`; the level fits
when `weight_bytes[l] + tree_max[l, 1] <= capacity[l]`. Moving a weight is O(1),
moving an activation O(live range + log steps).

The search keeps feasibility: a move is tried only if every level that gains
bytes still fits, so every state visited is a capacity-valid placement.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from memplace.model.core.jit import njit
from memplace.model.static.kernels import move_delta_kernel
from memplace.model.static.load_tree import tree_range_add as _tree_range_add


class Bookkeeping(NamedTuple):
    """A placement's capacity bookkeeping (see the module docstring), one record."""

    weight_bytes: np.ndarray  # int64[L]: weight bytes per level
    act_load: np.ndarray  # int64[L, n_ops]: activation bytes per level and step
    tree_max: np.ndarray  # int64[L, 2 leaves]: max tree over act_load
    tree_add: np.ndarray  # int64[L, 2 leaves]: pending range adds of the tree
    leaves: int


@njit(cache=True, nogil=True)
def move_load(t, a, b, book, arrays):
    """Move tensor t's bytes over its live range from level a to level b in the bookkeeping."""
    weight_bytes, act_load, tree_max, tree_add, leaves = book
    size, start, end, is_weight = arrays.size, arrays.start, arrays.end, arrays.is_weight
    v = size[t]
    if is_weight[t]:
        weight_bytes[a] -= v
        weight_bytes[b] += v
    else:
        for k in range(start[t], end[t] + 1):
            act_load[a, k] -= v
            act_load[b, k] += v
        _tree_range_add(tree_max, tree_add, leaves, a, start[t], end[t], -v)
        _tree_range_add(tree_max, tree_add, leaves, b, start[t], end[t], v)


@njit(cache=True, nogil=True)
def build_state(place, arrays, leaves):
    """The `Bookkeeping` of a placement."""
    size, start, end, is_weight = arrays.size, arrays.start, arrays.end, arrays.is_weight
    n_levels, n_ops = arrays.capacity.shape[0], arrays.compute.shape[0]
    weight_bytes = np.zeros(n_levels, np.int64)
    act_load = np.zeros((n_levels, n_ops), np.int64)
    tree_max = np.zeros((n_levels, 2 * leaves), np.int64)
    tree_add = np.zeros((n_levels, 2 * leaves), np.int64)
    for t in range(place.shape[0]):
        if is_weight[t]:
            weight_bytes[place[t]] += size[t]
        else:
            for k in range(start[t], end[t] + 1):
                act_load[place[t], k] += size[t]
    for l in range(n_levels):
        for k in range(n_ops):
            tree_max[l, leaves + k] = act_load[l, k]
        for p in range(leaves - 1, 0, -1):
            a = tree_max[l, 2 * p]
            b = tree_max[l, 2 * p + 1]
            tree_max[l, p] = a if a > b else b
    return Bookkeeping(weight_bytes, act_load, tree_max, tree_add, leaves)


@njit(cache=True, nogil=True)
def _single_fits(t, b, book, arrays):
    """Whether tensor t fits into level b, given the current bookkeeping."""
    weight_bytes, act_load, tree_max = book.weight_bytes, book.act_load, book.tree_max
    size, start, end, is_weight = arrays.size, arrays.start, arrays.end, arrays.is_weight
    capacity = arrays.capacity
    if is_weight[t]:
        return weight_bytes[b] + size[t] + tree_max[b, 1] <= capacity[b]
    peak = 0
    for k in range(start[t], end[t] + 1):
        if act_load[b, k] > peak:
            peak = act_load[b, k]
    return weight_bytes[b] + peak + size[t] <= capacity[b]


@njit(cache=True, nogil=True)
def _swap_fits(l, t_out, t_in, book, arrays):
    """Whether level l fits at every step once t_out has left it and t_in has come in
    (exact; the bookkeeping is left as it was)."""
    weight_bytes, act_load, tree_max, tree_add, leaves = book
    size, start, end, is_weight = arrays.size, arrays.start, arrays.end, arrays.is_weight
    capacity = arrays.capacity
    w = weight_bytes[l]
    if is_weight[t_out]:
        w -= size[t_out]
    if is_weight[t_in]:
        w += size[t_in]
        if w + tree_max[l, 1] <= capacity[l]:
            return True
        if is_weight[t_out]:
            return False
        # The peak may have been in t_out's live range: take it out for a moment.
        _tree_range_add(tree_max, tree_add, leaves, l, start[t_out], end[t_out], -size[t_out])
        ok = w + tree_max[l, 1] <= capacity[l]
        _tree_range_add(tree_max, tree_add, leaves, l, start[t_out], end[t_out], size[t_out])
        return ok
    # t_in is an activation: only its live range gains bytes.
    out_act = not is_weight[t_out]
    peak = 0
    for k in range(start[t_in], end[t_in] + 1):
        v = act_load[l, k]
        if out_act and start[t_out] <= k and k <= end[t_out]:
            v -= size[t_out]
        if v > peak:
            peak = v
    return w + peak + size[t_in] <= capacity[l]


@njit(cache=True, nogil=True, inline="always")
def _end_chain(place, best_place, at_best, state_f, lat, temp, best, stats, n_moves, infeasible,
               accepted, improved):
    """Write a chain's state back: the best placement if the chain ends on it, the
    latency, temperature and best latency, and the move counts."""
    if at_best:
        best_place[:] = place
    state_f[0] = lat
    state_f[1] = temp
    state_f[2] = best
    stats[0] += n_moves
    stats[1] += infeasible
    stats[2] += accepted
    stats[3] += improved


@njit(cache=True, nogil=True)
def anneal_kernel(place, state_f, best_place, book, n_moves, alpha, swap_fraction, seed, stats,
                  arrays):
    """`n_moves` Metropolis moves from `place` (changed in place, kept capacity-valid).

    state_f = [latency, temperature, best latency]: read on entry, written on exit;
    the temperature is multiplied by `alpha` before every move. A move is, with
    probability `swap_fraction`, a swap of two tensors on different levels, else
    one tensor to another level. `best_place` receives every placement better
    than the best latency. stats += [moves, infeasible, accepted, improved best].
    """
    np.random.seed(seed)
    n_tensors = place.shape[0]
    n_levels = arrays.capacity.shape[0]
    lat = state_f[0]
    temp = state_f[1]
    best = state_f[2]
    # The best placement is copied out lazily: only when the chain leaves it (or at
    # the end), so a run of improving moves costs no copies.
    at_best = lat == best
    infeasible = 0
    accepted = 0
    improved = 0
    for _ in range(n_moves):
        temp *= alpha
        if np.random.random() < swap_fraction:
            t1 = np.random.randint(0, n_tensors)
            a = place[t1]
            t2 = -1
            for _try in range(8):
                u = np.random.randint(0, n_tensors)
                if place[u] != a:
                    t2 = u
                    break
            if t2 < 0:
                continue
            b = place[t2]
            if not (_swap_fits(a, t1, t2, book, arrays)
                    and _swap_fits(b, t2, t1, book, arrays)):
                infeasible += 1
                continue
            d1 = move_delta_kernel(place, t1, b, arrays)
            place[t1] = b
            d2 = move_delta_kernel(place, t2, a, arrays)
            delta = d1 + d2
            if not (delta <= 0.0 or np.random.random() < math.exp(-delta / temp)):
                place[t1] = a
                continue
            place[t2] = a
            if at_best:  # leaving the best placement: keep a copy of it
                best_place[:] = place
                best_place[t1] = a
                best_place[t2] = b
                at_best = False
            move_load(t1, a, b, book, arrays)
            move_load(t2, b, a, book, arrays)
        else:
            t1 = np.random.randint(0, n_tensors)
            a = place[t1]
            b = np.random.randint(0, n_levels - 1)
            if b >= a:
                b += 1
            if not _single_fits(t1, b, book, arrays):
                infeasible += 1
                continue
            delta = move_delta_kernel(place, t1, b, arrays)
            if not (delta <= 0.0 or np.random.random() < math.exp(-delta / temp)):
                continue
            if at_best:
                best_place[:] = place
                at_best = False
            place[t1] = b
            move_load(t1, a, b, book, arrays)
        accepted += 1
        lat += delta
        if lat < best:
            best = lat
            at_best = True
            improved += 1
    _end_chain(place, best_place, at_best, state_f, lat, temp, best, stats, n_moves, infeasible,
               accepted, improved)


@njit(cache=True, nogil=True)
def sample_uphill_kernel(place, n_samples, swap_fraction, seed, book, arrays):
    """Latency increases of up to `n_samples` random feasible moves from `place` (none
    applied; the bookkeeping is left as it was): the scale that sets the start temperature."""
    np.random.seed(seed)
    n_tensors = place.shape[0]
    n_levels = arrays.capacity.shape[0]
    out = np.empty(n_samples, np.float64)
    m = 0
    for _ in range(4 * n_samples):
        if m == n_samples:
            break
        t1 = np.random.randint(0, n_tensors)
        a = place[t1]
        if np.random.random() < swap_fraction:
            t2 = np.random.randint(0, n_tensors)
            b = place[t2]
            if b == a:
                continue
            if not (_swap_fits(a, t1, t2, book, arrays)
                    and _swap_fits(b, t2, t1, book, arrays)):
                continue
            delta = move_delta_kernel(place, t1, b, arrays)
            place[t1] = b
            delta += move_delta_kernel(place, t2, a, arrays)
            place[t1] = a
        else:
            b = np.random.randint(0, n_levels - 1)
            if b >= a:
                b += 1
            if not _single_fits(t1, b, book, arrays):
                continue
            delta = move_delta_kernel(place, t1, b, arrays)
        if delta > 0.0:
            out[m] = delta
            m += 1
    return out[:m]


@njit(cache=True, nogil=True)
def max_gain_kernel(access_time, tensor_ptr, tensor_access):
    """For every tensor, an upper bound of the latency any change of its level can save
    (op times change by at most the change of their memory time)."""
    n_tensors = tensor_ptr.shape[0] - 1
    out = np.zeros(n_tensors, np.float64)
    for t in range(n_tensors):
        for i in range(tensor_ptr[t], tensor_ptr[t + 1]):
            a = tensor_access[i]
            lo = access_time[a, 0]
            hi = access_time[a, 0]
            for l in range(access_time.shape[1]):
                lo = min(lo, access_time[a, l])
                hi = max(hi, access_time[a, l])
            out[t] += hi - lo
    return out * (1.0 + 1e-9) + 1e-300


@njit(cache=True, nogil=True, inline="always")
def _overflow(l, book, capacity):
    """Bytes by which level l's peak load exceeds its capacity (0 when it fits)."""
    weight_bytes, tree_max = book.weight_bytes, book.tree_max
    v = weight_bytes[l] + tree_max[l, 1] - capacity[l]
    return v if v > 0 else 0


@njit(cache=True, nogil=True, inline="always")
def _overflow_after(l, m, mt, mfrom, mto, book, arrays):
    """Overflow of level l once the move (tensors mt[:m] from mfrom to mto) is made,
    computed without changing the bookkeeping (the tree is touched only when an
    activation leaves an overflowing level, and restored)."""
    weight_bytes, act_load, tree_max, tree_add, leaves = book
    size, start, end, is_weight = arrays.size, arrays.start, arrays.end, arrays.is_weight
    capacity = arrays.capacity
    w = weight_bytes[l]
    act_leaves = False
    for i in range(m):
        t = mt[i]
        if is_weight[t]:
            if mfrom[i] == l:
                w -= size[t]
            if mto[i] == l:
                w += size[t]
        elif mfrom[i] == l:
            act_leaves = True
    # Upper bound of the new activation peak (exact when no activation leaves l): the old
    # peak, or a step of an arriving activation with every change of the move counted.
    peak = tree_max[l, 1]
    for i in range(m):
        t = mt[i]
        if mto[i] != l or is_weight[t]:
            continue
        for k in range(start[t], end[t] + 1):
            v = act_load[l, k]
            for j in range(m):
                u = mt[j]
                if is_weight[u] or k < start[u] or k > end[u]:
                    continue
                if mto[j] == l:
                    v += size[u]
                if mfrom[j] == l:
                    v -= size[u]
            if v > peak:
                peak = v
    over = w + peak - capacity[l]
    if over <= 0:
        return 0
    if not act_leaves:
        return over
    for i in range(m):  # exact: make the move's activation changes on l for a moment
        t = mt[i]
        if not is_weight[t] and mfrom[i] != mto[i]:
            if mfrom[i] == l:
                _tree_range_add(tree_max, tree_add, leaves, l, start[t], end[t], -size[t])
            if mto[i] == l:
                _tree_range_add(tree_max, tree_add, leaves, l, start[t], end[t], size[t])
    over = w + tree_max[l, 1] - capacity[l]
    for i in range(m):
        t = mt[i]
        if not is_weight[t] and mfrom[i] != mto[i]:
            if mfrom[i] == l:
                _tree_range_add(tree_max, tree_add, leaves, l, start[t], end[t], size[t])
            if mto[i] == l:
                _tree_range_add(tree_max, tree_add, leaves, l, start[t], end[t], -size[t])
    return over if over > 0 else 0


@njit(cache=True, nogil=True)
def anneal_penalty_kernel(place, state_f, best_place, book, n_moves, alpha, swap_fraction,
                          group_fraction, group_max, seed, lam_up, lam_down, lam_min, lam_max,
                          max_gain, stats, arrays):
    """`n_moves` Metropolis moves on latency + lam x (sum over levels of peak overflow bytes).

    Moves: with probability `swap_fraction` a swap (t1 on level a <-> t2 on level b),
    of which a fraction `group_fraction` swaps t1 against 2 (half of them) or
    3..`group_max` tensors of level b (one big tensor out, several smaller in);
    otherwise one tensor to another level.
    Placements may overflow; `best_place` receives only capacity-valid ones.
    state_f = [latency, temperature, best valid latency, lam]. After every move lam is
    multiplied by `lam_up` if the placement overflows, else by `lam_down` (clamped to
    [lam_min, lam_max]), so the search hovers at the capacity boundary and can cross
    infeasible ground. `max_gain[t]` bounds the latency any move of t can save.
    stats += [moves, infeasible states, accepted, improved best].
    """
    capacity = arrays.capacity
    np.random.seed(seed)
    lam = state_f[3]
    n_tensors = place.shape[0]
    n_levels = capacity.shape[0]
    lat = state_f[0]
    temp = state_f[1]
    best = state_f[2]
    over = np.empty(n_levels, np.int64)
    total_over = 0
    for l in range(n_levels):
        over[l] = _overflow(l, book, capacity)
        total_over += over[l]
    at_best = total_over == 0 and lat == best  # the best is copied out lazily, as above
    mt = np.empty(group_max + 1, np.int64)  # the tensors a move changes, their levels
    mto = np.empty(group_max + 1, np.int64)
    mfrom = np.empty(group_max + 1, np.int64)
    infeasible = 0
    accepted = 0
    improved = 0
    for _ in range(n_moves):
        temp *= alpha
        t1 = np.random.randint(0, n_tensors)
        a = place[t1]
        m = 1
        mt[0] = t1
        if np.random.random() < swap_fraction:
            group = np.random.random() < group_fraction
            for _try in range(8):
                u = np.random.randint(0, n_tensors)
                if place[u] != a:
                    mt[1] = u
                    m = 2
                    break
            if m == 2 and group:
                b = place[mt[1]]
                want = 2  # pairs half the time, else 3..group_max tensors
                if group_max > 2 and np.random.random() < 0.5:
                    want = np.random.randint(3, group_max + 1)
                for _try in range(8 * want):
                    if m > want:
                        break
                    u = np.random.randint(0, n_tensors)
                    if place[u] != b:
                        continue
                    fresh = True
                    for j in range(1, m):
                        if mt[j] == u:
                            fresh = False
                    if fresh:
                        mt[m] = u
                        m += 1
        if m == 1:
            b = np.random.randint(0, n_levels - 1)
            if b >= a:
                b += 1
        else:
            b = place[mt[1]]
        mto[0] = b
        for i in range(1, m):
            mto[i] = a
        for i in range(m):
            mfrom[i] = place[mt[i]]
        over_a = _overflow_after(a, m, mt, mfrom, mto, book, arrays)
        over_b = _overflow_after(b, m, mt, mfrom, mto, book, arrays)
        d_over = over_a - over[a] + over_b - over[b]
        # Metropolis: accept when the energy change is below -temp*log(u); a move whose
        # penalty alone exceeds that by more than its largest possible gain is rejected
        # without computing its latency change.
        threshold = -temp * math.log(1.0 - np.random.random())
        penalty = lam * d_over
        continue_move = True
        if penalty > 0.0:
            bound = 0.0
            for i in range(m):
                bound += max_gain[mt[i]]
            continue_move = not (penalty - bound > threshold)
        delta = 0.0
        if continue_move:
            for i in range(m):
                t = mt[i]
                delta += move_delta_kernel(place, t, mto[i], arrays)
                place[t] = mto[i]
        if continue_move and delta + penalty <= threshold:
            if at_best:  # leaving the best placement: keep a copy of it
                best_place[:] = place
                for i in range(m):
                    best_place[mt[i]] = mfrom[i]
                at_best = False
            for i in range(m):
                move_load(mt[i], mfrom[i], mto[i], book, arrays)
            over[a] = over_a
            over[b] = over_b
            total_over += d_over
            lat += delta
            accepted += 1
            if total_over == 0 and lat < best:
                best = lat
                at_best = True
                improved += 1
        elif continue_move:
            for i in range(m - 1, -1, -1):
                place[mt[i]] = mfrom[i]
        if total_over > 0:
            infeasible += 1
            lam *= lam_up
            if lam > lam_max:
                lam = lam_max
        else:
            lam *= lam_down
            if lam < lam_min:
                lam = lam_min
    state_f[3] = lam
    _end_chain(place, best_place, at_best, state_f, lat, temp, best, stats, n_moves, infeasible,
               accepted, improved)


@njit(cache=True, nogil=True)
def polish_kernel(place, book, threshold, max_passes, max_pairs, arrays):
    """Local search on a capacity-valid placement (changed in place, kept valid): apply
    every single move and every swap that lowers the latency by more than `threshold`,
    in index order, until a pass finds none (or `max_passes`; swaps are looked at up to
    `max_pairs` times in all, which bounds the time on large instances). Returns the
    latency change."""
    n_tensors = place.shape[0]
    n_levels = arrays.capacity.shape[0]
    total = 0.0
    pairs = 0
    for _pass in range(max_passes):
        improved = False
        for t in range(n_tensors):
            for b in range(n_levels):
                a = place[t]
                if b == a or not _single_fits(t, b, book, arrays):
                    continue
                d = move_delta_kernel(place, t, b, arrays)
                if d < -threshold:
                    place[t] = b
                    move_load(t, a, b, book, arrays)
                    total += d
                    improved = True
        for t1 in range(n_tensors):
            if pairs >= max_pairs:
                break
            for t2 in range(t1 + 1, n_tensors):
                a = place[t1]
                b = place[t2]
                if a == b:
                    continue
                pairs += 1
                if not (_swap_fits(a, t1, t2, book, arrays)
                        and _swap_fits(b, t2, t1, book, arrays)):
                    continue
                d1 = move_delta_kernel(place, t1, b, arrays)
                place[t1] = b
                d = d1 + move_delta_kernel(place, t2, a, arrays)
                if d < -threshold:
                    place[t2] = a
                    move_load(t1, a, b, book, arrays)
                    move_load(t2, b, a, book, arrays)
                    total += d
                    improved = True
                else:
                    place[t1] = a
        if not improved:
            break
    return total
