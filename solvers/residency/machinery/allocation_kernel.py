"""msa's allocator compiled: XLA's `AllocateSegment` loop over fixed homes in one Numba kernel.

`allocation_reference.py` is the plain-Python reference (`IntervalPicker`, `FastMemory`,
`Simulation` called once per step); this module computes exactly what it computes, in
the same float order, so both give the same windows, offsets and latency (the tests hold
one against the other). `assign_kernel` takes buffers in the given order, each with its
own preferred overlap, over three records of arrays:

- `Rules` (the instance and the homes as the allocator reads them): live ranges, sizes,
  producers, homes, the access index, the copy bandwidths, what each access saves served
  by each faster level (`CostAnalysis.access_savings`), and the picker's prefix sums of
  the op times with the homes (`IntervalPicker.cum`) and its `min`/`max` ratios;
- `occupancy.Occupancy` (the family's one occupancy record, which `FastMemory` keys for
  the reference): the load of every level per op and one booking per id (the home of
  tensor t is id t, windows take ids T, T+1, ... as they are allocated, `meta[0]` the
  next), placed by `occupancy.py`'s kernels;
- `Progress`: the windows kept so far (rows `tensor, level, start, first, last, evict
  issue, evict due, booking id, defining`), counters, and the incremental simulator's
  records (`Sim`, `Enc`, `State`, `Checkpoints`, `memplace.model.residency.kernels`):
  every window is tried by `kernels.try_change_kernel`, kept by `accept_kernel` or undone
  by `change_kernel`, in slot = number of windows tried so far (the reference's
  `Simulation` slots).

The caller (`allocation.Allocator`) builds the records once per homes, copies them per
run, calls the kernel on slices of the order (checking its deadline between calls) and
turns the kept rows into a `ResidencySolution`.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from memplace.model.core.jit import njit
from memplace.model.residency import kernels
from memplace.solvers.residency.machinery import occupancy as oc

EXPLORED_EARLIER = 3  # XLA's kNumExploredDecreasingIntervals (interval_picker.py)
KEPT = 9  # a kept row: tensor, level, start, first, last, issue, due, booking id, defining
OK, REPLAY_DIFFERS = 0, 1  # assign_kernel's status


class Rules(NamedTuple):
    start: np.ndarray  # int64[T]
    end: np.ndarray
    size: np.ndarray
    producer: np.ndarray  # -1 without one
    homes: np.ndarray  # int64[T]
    tensor_ptr: np.ndarray  # the instance's access index
    tensor_access: np.ndarray
    access_op: np.ndarray
    copy_bandwidth: np.ndarray  # float64[L]
    savings: np.ndarray  # float64[L - 1, A]: seconds access a saves served by level l
    cum: np.ndarray  # float64[n + 1]: prefix sums of the op times with the homes
    ratios: np.ndarray  # float64[2]: the picker's min and max overlap ratios


class Progress(NamedTuple):
    kept: np.ndarray  # int64[W, KEPT]
    meta: np.ndarray  # int64[4]: kept, windows tried (slots used), rejected, status
    latency: np.ndarray  # float64[1]: the simulated latency with the kept windows
    row_old: np.ndarray  # int64[7] rows as the simulator reads them (old is always empty)
    row_new: np.ndarray
    max_el: np.ndarray  # float64[L] scratch: the picker's max overlap per faster level


# ---------------------------------------------------------------------- bookings under the next id
@njit(cache=True, nogil=True)
def _place(occ, level, lo, hi, size):
    """`occupancy.place` under the next free id once the load is known to leave room:
    that id, or -1 (nothing booked)."""
    b = occ.meta[0]
    if not oc.place(occ, b, level, lo, hi, size):
        return -1
    occ.meta[0] = b + 1
    return b


@njit(cache=True, nogil=True)
def _allocate(occ, level, lo, hi, size):
    """`occupancy.allocate` under the next free id: that id, or -1 (nothing booked)."""
    if not oc.fits(occ, level, lo, hi, size):
        return -1
    return _place(occ, level, lo, hi, size)


# ---------------------------------------------------------------------- the interval picker
@njit(cache=True, nogil=True)
def _search(cum, x, right):
    """`np.searchsorted(cum, x, "right" if right else "left")` of the sorted prefix sums."""
    lo, hi = 0, cum.shape[0]
    while lo < hi:
        mid = (lo + hi) // 2
        if cum[mid] < x or (right and cum[mid] == x):
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True)
def _latest_start(cum, min_ratio, copy_s, lo, first, reduction):
    """`IntervalPicker.latest_start`."""
    need = min_ratio * copy_s
    s = _search(cum, cum[first] - (need - reduction), True) - 1
    s = min(max(s, lo - 1), first - 1)
    while s + 1 <= first - 1 and not need > (cum[first] - cum[s + 1]) + reduction:
        s += 1
    while s >= lo and need > (cum[first] - cum[s]) + reduction:
        s -= 1
    return s


@njit(cache=True, nogil=True)
def _earliest_start(cum, lo, latest, first, max_elapsed):
    """`IntervalPicker.earliest_start`."""
    s = _search(cum, cum[first] - max_elapsed, False)
    s = min(max(s, lo), latest)
    while s - 1 >= lo and not (cum[first] - cum[s - 1]) > max_elapsed:
        s -= 1
    while s < latest and (cum[first] - cum[s]) > max_elapsed:
        s += 1
    return s


@njit(cache=True, nogil=True)
def _preferred_start(cum, preferred, copy_s, earliest, latest, first):
    """`IntervalPicker.preferred_start` (the earliest of equally close starts)."""
    target = preferred * copy_s
    best, best_gap = earliest, abs(target - (cum[first] - cum[earliest]))
    for s in range(earliest + 1, latest + 1):
        gap = abs(target - (cum[first] - cum[s]))
        if gap < best_gap:
            best, best_gap = s, gap
    return best


@njit(cache=True, nogil=True)
def _reach(occ, level, k, low, s):
    """Extend `occ.top[x]` = the most bytes of `level` in use over ops x .. k, known for
    x >= low, down to x = s; returns the new low. The starts tried for one use all end at
    k and nothing is booked between the tries, so each op's load is read once per use,
    where `occupancy.fits` would read it once per start."""
    while low > s:
        low -= 1
        v = occ.load[level, low]
        if low < k and occ.top[low + 1] > v:
            v = occ.top[low + 1]
        occ.top[low] = v
    return low


@njit(cache=True, nogil=True)
def _try_start(occ, level, s, k, size, low):
    """`_allocate` of a prefetch starting at s for the use at k, the load read through
    `_reach`: (id or -1, the new low)."""
    low = _reach(occ, level, k, low, s)
    if not occ.top[s] + size <= occ.capacity[level]:
        return -1, low
    return _place(occ, level, s, k, size), low


@njit(cache=True, nogil=True)
def _prefetch(rules, occ, level, size, copy_s, lo, k, max_elapsed, reduction, preferred):
    """The first start `IntervalPicker.iter_starts` proposes for a use at op k whose
    booking `_allocate` makes: its id and start, or (-1, -1)."""
    cum = rules.cum
    latest = _latest_start(cum, rules.ratios[0], copy_s, lo, k, reduction)
    if latest < lo:
        return -1, -1
    earliest = _earliest_start(cum, lo, latest, k, max_elapsed)
    if (cum[k] - cum[earliest]) > max_elapsed:
        return -1, -1
    s = _preferred_start(cum, preferred, copy_s, earliest, latest, k)
    b, low = _try_start(occ, level, s, k, size, k + 1)
    if b >= 0:
        return b, s
    later, earlier = s + 1, s - 1
    widest = cum[k] - cum[earliest]
    use_later = True
    while later <= latest or earlier >= earliest:
        if (use_later and later <= latest) or earlier < earliest:
            s = later
            later += 1
        else:
            s = earlier
            target = 0.0
            if later > latest:  # only earlier ones are left: jump in thirds
                target = (cum[k] - cum[earlier]) + widest / EXPLORED_EARLIER
            earlier -= 1
            while earlier >= earliest and (cum[k] - cum[earlier]) < target:
                earlier -= 1
        use_later = not use_later
        b, low = _try_start(occ, level, s, k, size, low)
        if b >= 0:
            return b, s
    return -1, -1


@njit(cache=True, nogil=True)
def _eviction_due(cum, preferred, copy_s, issue, latest):
    """`IntervalPicker.eviction_due`."""
    due = issue + 1
    while due < latest and (cum[due] - cum[issue]) < preferred * copy_s:
        due += 1
    return due


# ---------------------------------------------------------------------- one window, one tensor
@njit(cache=True, nogil=True)
def _close(rules, occ, pro, sim, enc, state, ck, scratch, K, shift, t, b, level, start, first,
           last, defining, next_use, copy_s, preferred):
    """`_Assignment._close`: evict a defining window when a later access (`next_use` >= 0)
    needs the home, then keep it if the simulator says it lowers the latency. Returns the
    last op it holds (-1: dropped) and its eviction's due op (-1: none)."""
    issue, due = -1, -1
    if defining and next_use >= 0:
        issue = start + 1  # XLA starts an eviction as soon as the value is defined
        due = max(_eviction_due(rules.cum, preferred, copy_s, issue, next_use), last + 1, issue + 1)
        if due > next_use or not oc.extend(occ, b, start, max(last, due - 1)):
            oc.release(occ, b)
            return -1, -1
    new = pro.row_new
    new[0], new[1], new[2], new[3], new[4], new[5], new[6] = t, level, start, first, last, issue, due
    slot = pro.meta[1]
    pro.meta[1] = slot + 1
    cur = pro.latency[0]
    lat = kernels.try_change_kernel(sim, enc, state, ck, scratch, K, rules.homes, rules.tensor_ptr,
                                    rules.tensor_access, rules.access_op, rules.size, slot,
                                    pro.row_old, new, shift, cur)
    if not lat < cur:
        kernels.change_kernel(enc, rules.homes, rules.tensor_ptr, rules.tensor_access,
                              rules.access_op, rules.size, slot, new, pro.row_old)
        oc.release(occ, b)
        pro.meta[2] += 1
        return -1, -1
    stop = state.stop[0]
    again = kernels.accept_kernel(sim, enc, state, ck, scratch, K, start // K, shift, cur, lat)
    if again != lat or state.stop[0] != stop:
        pro.meta[3] = REPLAY_DIFFERS
    pro.latency[0] = lat
    row = pro.kept[pro.meta[0]]
    row[0], row[1], row[2], row[3], row[4], row[5], row[6] = t, level, start, first, last, issue, due
    row[7], row[8] = b, 1 if defining else 0
    pro.meta[0] += 1
    return (last if issue < 0 else max(last, due - 1)), due


@njit(cache=True, nogil=True)
def _assign(rules, occ, pro, sim, enc, state, ck, scratch, K, shift, t, preferred):
    """`_Assignment.assign`: AllocateSegment for every access of tensor t, in time order."""
    cum = rules.cum
    h = rules.homes[t]
    size = rules.size[t]
    copy_bw = rules.copy_bandwidth[h]
    copy_s = size / copy_bw
    max_el = pro.max_el
    for l in range(h):
        max_el[l] = rules.ratios[1] * float(occ.capacity[l]) / copy_bw
    p = rules.producer[t]
    live_lo = rules.start[t]
    valid = 0 if p < 0 else p + 1  # first op the home holds the data
    prev_hold = -1  # last op occupied by the previous window of t
    cb, cl, cs, cf, cz, cd = -1, -1, -1, -1, -1, False  # the open window: id, level, ops, defining
    if p >= 0:
        for l in range(h):
            b = _allocate(occ, l, p, p, size)
            if b >= 0:
                cb, cl, cs, cf, cz, cd = b, l, p, p, p, True
                break
    for x in range(rules.tensor_ptr[t], rules.tensor_ptr[t + 1]):
        a = rules.tensor_access[x]
        k = rules.access_op[a]
        if k == p:
            continue
        if cb >= 0:
            if (cum[k] - cum[cs]) < max_el[cl] and oc.extend(occ, cb, cs, k):
                cz = k
                continue
            hold, due = _close(rules, occ, pro, sim, enc, state, ck, scratch, K, shift, t, cb, cl,
                               cs, cf, cz, cd, k, copy_s, preferred)
            if hold >= 0:
                prev_hold = hold
                if due >= 0:
                    valid = due
            cb = -1
        lo = max(valid, prev_hold + 1, live_lo)
        for l in range(h):
            saved = rules.savings[l, a]
            if saved <= 0:
                continue
            b, s = _prefetch(rules, occ, l, size, copy_s, lo, k, max_el[l], saved, preferred)
            if b >= 0:
                cb, cl, cs, cf, cz, cd = b, l, s, k, k, False
                break
    if cb >= 0:
        _close(rules, occ, pro, sim, enc, state, ck, scratch, K, shift, t, cb, cl, cs, cf, cz, cd,
               -1, copy_s, preferred)


@njit(cache=True, nogil=True)
def assign_kernel(rules, occ, pro, sim, enc, state, ck, scratch, K, shift, order, preferred):
    """Every tensor of `order` in turn (`preferred[t]`: its preferred overlap in copy times);
    stops at the first replay that disagrees with its try (`pro.meta[3]`). Returns the status."""
    for j in range(order.shape[0]):
        t = order[j]
        _assign(rules, occ, pro, sim, enc, state, ck, scratch, K, shift, t, preferred[t])
        if pro.meta[3] != OK:
            break
    return pro.meta[3]
