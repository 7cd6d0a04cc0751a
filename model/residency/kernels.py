"""Numba kernels of the residency latency (docs/spec.md section 11), typed by arrays.

They compute exactly what `reference.py` computes, in the same float order (see its
docstring), so results agree to the last bit or within rounding.

Records (NamedTuples of arrays, see `encoding.py`):

- `Sim` (the instance): `compute[k]`, `op_ptr`, `op_tensor`, `access_time[a, l]`,
  `copy_bandwidth[l]`.
- `Enc` (one solution's windows): `serve[a]` the level serving access a; copy `c = 2w`
  (window w's prefetch) and `2w + 1` (its eviction) with `c_issue[c]`, `c_due[c]`,
  `c_tensor[c]`, `c_size[c]` (float bytes); the copies as `Q = 2 * L` FIFO queues
  (queue `2h` = prefetches on channel h, `2h+1` = evictions), each a row `q_copy[q, :q_len[q]]`
  of copy ids sorted by (issue op, due op, tensor), so that a queue's joined copies are a
  prefix of it; `due_count[k]` copies due at op k, `due_q[q, k]` those of queue q.
- `State`: `clock[0]`, `head[q]` (front copy), `tail[q]` (copies joined), `left[q]`
  (bytes left of the front copy), `stop[0]` (the checkpoint where a run stopped early, -1),
  `stop[1]` and `guard` (the last tried change's stop rule, see `_stop_rules`);
  `busy`, `need` (float64[L]) are scratch, `no_times`/`no_done` empty timeline outputs.

A checkpoint is the state before op k's wait, for every k multiple of `K`.
"""
from __future__ import annotations

import numpy as np

from memplace.model.core.jit import njit

_U = np.uint64  # indices cast to unsigned skip Numba's negative-index wraparound


@njit(cache=True, nogil=True, inline="always")
def _save(c, state, ck):
    ck.clock[c] = state.clock[0]
    for q in range(state.head.shape[0]):
        ck.head[c, q] = state.head[q]
        ck.tail[c, q] = state.tail[q]
        ck.left[c, q] = state.left[q]


@njit(cache=True, nogil=True, inline="always")
def _same_as(c, state, old, shift):
    """The state equals old checkpoint c, heads and tails shifted by `shift[q]`."""
    for q in range(state.head.shape[0]):
        if state.head[q] != old.head[c, q] + shift[q] or state.tail[q] != old.tail[c, q] + shift[q]:
            return False
        if state.left[q] != old.left[c, q]:
            return False
    return True


@njit(cache=True, nogil=True, inline="always")
def _guarded(c, state, old):
    """Every copy in `state.guard` is done at checkpoint c: row (run, queue, position) with
    run 0 the new run (its head past the position now), 1 the old one (in checkpoint c)."""
    g = state.guard
    for j in range(g.shape[0]):
        run, q, p = g[j, 0], g[j, 1], g[j, 2]
        if run == 0 and state.head[q] <= p:
            return False
        if run == 1 and old.head[c, q] <= p:
            return False
    return True


@njit(cache=True, nogil=True, inline="always")
def _last_due(enc, state, q, k):
    """Position of the last copy of queue q due at op k still pending, -1 if none; scans
    back from the tail (copies due soon were issued late, so they sit near it)."""
    if enc.due_q[q, k] == 0:
        return -1
    i = state.tail[q] - 1
    while i >= state.head[q]:
        if enc.c_due[enc.q_copy[q, i]] == k:
            return i
        i -= 1
    return -1


@njit(cache=True, nogil=True, inline="always")
def _finish_front(enc, state, q, done, track, op):
    """The front copy of queue q completes during op `op`: the next one moves up."""
    head, tail = state.head, state.tail
    if track:
        done[q, head[q]] = op
    head[q] += 1
    state.left[q] = enc.c_size[enc.q_copy[q, head[q]]] if head[q] < tail[q] else 0.0


@njit(cache=True, nogil=True, inline="always")
def _advance(sim, enc, state, done, track, h, idle, until, tr, tw, op):
    """Move channel h's copies for `idle` seconds, or (with `until`) until its queues' heads
    pass positions `tr`/`tw`; return the seconds used. Both queues pending share the
    bandwidth; the one that finishes first moves up and the other keeps what it moved.
    (Inlined: a call taking the records would cost more than its work.)"""
    head, tail, left = state.head, state.tail, state.left
    cb = sim.copy_bandwidth[h]
    qr = 2 * h
    qw = qr + 1
    used = 0.0
    while True:
        r = head[qr] < tail[qr]
        w = head[qw] < tail[qw]
        if not r and not w:
            return used
        if until and head[qr] > tr and head[qw] > tw:
            return used
        if r and w:
            rate = cb / 2
            tr_ = left[qr] / rate
            tw_ = left[qw] / rate
            dt = tr_ if tr_ < tw_ else tw_
            if not until and dt > idle:
                x = left[qr] - idle * rate
                left[qr] = x if x > 0.0 else 0.0
                x = left[qw] - idle * rate
                left[qw] = x if x > 0.0 else 0.0
                return used + idle
            if tr_ <= dt:
                _finish_front(enc, state, qr, done, track, op)
            else:
                x = left[qr] - dt * rate
                left[qr] = x if x > 0.0 else 0.0
            if tw_ <= dt:
                _finish_front(enc, state, qw, done, track, op)
            else:
                x = left[qw] - dt * rate
                left[qw] = x if x > 0.0 else 0.0
        else:
            q = qr if r else qw
            dt = left[q] / cb
            if not until and dt > idle:
                x = left[q] - idle * cb
                left[q] = x if x > 0.0 else 0.0
                return used + idle
            _finish_front(enc, state, q, done, track, op)
        used += dt
        if not until:
            idle -= dt


@njit(cache=True, nogil=True, inline="always")
def _pending(state, h):
    """Channel h has copies in its queues."""
    return state.head[2 * h] < state.tail[2 * h] or state.head[2 * h + 1] < state.tail[2 * h + 1]


@njit(cache=True, nogil=True, inline="always")
def _wait_for_due(sim, enc, state, done, track, k):
    """Step 1 of op k: wait until the copies due at k are done, every channel moving copies
    meanwhile; return the wait."""
    wait = 0.0
    if enc.due_count[k] == 0:
        return wait
    L = sim.copy_bandwidth.shape[0]
    need = state.need
    for h in range(L):
        tr = _last_due(enc, state, 2 * h, k)
        tw = _last_due(enc, state, 2 * h + 1, k)
        need[h] = 0.0
        if tr >= 0 or tw >= 0:
            need[h] = _advance(sim, enc, state, done, track, h, 0.0, True, tr, tw, k)
        if need[h] > wait:
            wait = need[h]
    for h in range(L):
        if _pending(state, h):
            _advance(sim, enc, state, done, track, h, wait - need[h], False, -1, -1, k)
    return wait


@njit(cache=True, nogil=True, inline="always")
def _join_issued(enc, state, k):
    """Step 2 of op k: the copies issued before op k join their queues."""
    head, tail, left = state.head, state.tail, state.left
    for q in range(head.shape[0]):
        while tail[q] < enc.q_len[q] and enc.c_issue[enc.q_copy[q, tail[q]]] <= k:
            if head[q] == tail[q]:
                left[q] = enc.c_size[enc.q_copy[q, tail[q]]]
            tail[q] += 1


@njit(cache=True, nogil=True, inline="always")
def _run_op(sim, enc, state, done, track, k):
    """Step 3 of op k: run it (the longer of its compute and its accesses); each channel
    moves copies in its idle time. Returns the op's elapsed time."""
    busy = state.busy
    memory = 0.0
    busy[:] = 0.0
    for a in range(_U(sim.op_ptr[k]), _U(sim.op_ptr[k + 1])):  # unsigned: no wraparound checks
        l = _U(enc.serve[a])
        x = sim.access_time[a, l]
        memory += x
        busy[l] += x
    compute = sim.compute[k]
    elapsed = compute if compute >= memory else memory
    for h in range(sim.copy_bandwidth.shape[0]):
        if _pending(state, h):
            idle = elapsed - busy[h]
            _advance(sim, enc, state, done, track, h, idle if idle > 0.0 else 0.0, False, -1, -1, k)
    return elapsed


@njit(cache=True, nogil=True, _nrt=False)  # not inlined: one compiled copy of the simulation
# loop serves every caller (inlined into each, it was typed and optimised once per caller)
def run_kernel(sim, enc, state, k0, K, ck, write_ck, stop_from, old, shift, old_latency,
               wait_out, elapsed_out, done):
    """Simulate ops k0 .. n-1 from `state` (the state before op k0's wait); return the latency.

    With `write_ck`, checkpoint k // K is written into `ck` at every op k multiple of K.
    With `stop_from` >= 0, at every checkpoint op c >= stop_from where the copies of
    `state.guard` are done, the state is compared with the old run's checkpoint `old`
    (heads shifted by `shift`); when equal, the rest of the old run applies and the latency
    is `clock + (old_latency - old.clock[c])`.
    `wait_out`/`elapsed_out` (length n, or 0 to skip) and `done[q, i]` (the op in whose
    wait or run copy i of queue q completed; shape (0, 0) to skip) record the timeline.
    """
    n = sim.compute.shape[0]
    state.stop[0] = -1
    record = wait_out.shape[0] > 0
    track = done.shape[0] > 0
    until_ck = (K - k0 % K) % K  # ops until the next checkpoint (0: op k0 is one)
    clock = state.clock[0]  # a local: kept in a register, not reloaded past every array store
    for k in range(k0, n):
        if until_ck == 0:
            until_ck = K
            c = k // K
            state.clock[0] = clock
            if write_ck:
                _save(c, state, ck)
            if stop_from >= 0 and k >= stop_from and _guarded(c, state, old) \
                    and _same_as(c, state, old, shift):
                state.stop[0] = c
                return clock + (old_latency - old.clock[c])
        until_ck -= 1
        wait = _wait_for_due(sim, enc, state, done, track, k)
        clock += wait
        _join_issued(enc, state, k)
        elapsed = _run_op(sim, enc, state, done, track, k)
        if record:
            wait_out[k] = wait
            elapsed_out[k] = elapsed
        clock += elapsed
    state.clock[0] = clock
    return clock


@njit(cache=True, nogil=True)
def encode_kernel(place, tensor_ptr, tensor_access, access_op, op_tensor, size, n_ops,
                  w_tensor, w_level, w_start, w_first, w_last, w_issue, w_due, enc):
    """Fill `enc` from windows (a window with tensor -1 is an empty slot); return copies made."""
    for a in range(op_tensor.shape[0]):
        enc.serve[a] = place[op_tensor[a]]
    W = w_tensor.shape[0]
    for w in range(W):
        t = w_tensor[w]
        if t < 0:
            continue
        for i in range(tensor_ptr[t], tensor_ptr[t + 1]):
            a = tensor_access[i]
            k = access_op[a]
            if w_first[w] <= k <= w_last[w]:
                enc.serve[a] = w_level[w]
    # copies: key (queue, issue, due, tensor), unique within a queue
    keys = np.empty(2 * W, np.int64)
    ids = np.empty(2 * W, np.int64)
    m = 0
    T = size.shape[0]
    for w in range(W):
        t = w_tensor[w]
        if t < 0:
            continue
        h = place[t]
        for kind in range(2):
            c = 2 * w + kind
            if kind == 0 and w_start[w] < w_first[w]:
                enc.c_issue[c] = w_start[w]
                enc.c_due[c] = w_first[w]
            elif kind == 1 and w_issue[w] >= 0:
                enc.c_issue[c] = w_issue[w]
                enc.c_due[c] = w_due[w]
            else:
                continue
            enc.c_tensor[c] = t
            enc.c_size[c] = size[t]
            keys[m] = (((2 * h + kind) * n_ops + enc.c_issue[c]) * n_ops + enc.c_due[c]) * T + t
            ids[m] = c
            m += 1
    order = np.argsort(keys[:m])
    enc.q_len[:] = 0
    enc.due_count[:] = 0
    enc.due_q[:, :] = 0
    for j in range(m):
        c = ids[order[j]]
        q = 2 * place[enc.c_tensor[c]] + c % 2
        enc.q_copy[q, enc.q_len[q]] = c
        enc.q_len[q] += 1
        enc.due_count[enc.c_due[c]] += 1
        enc.due_q[q, enc.c_due[c]] += 1
    return m


@njit(cache=True, nogil=True)
def batch_kernel(sim, place, tensor_ptr, tensor_access, access_op, size, w_ptr, w_tensor,
                 w_level, w_start, w_first, w_last, w_issue, w_due, enc, state, ck, shift, out):
    """Latency of every solution p (homes `place`, windows w_ptr[p]:w_ptr[p+1]) into `out`."""
    n = sim.compute.shape[0]
    for p in range(w_ptr.shape[0] - 1):
        lo, hi = w_ptr[p], w_ptr[p + 1]
        encode_kernel(place, tensor_ptr, tensor_access, access_op, sim.op_tensor, size, n,
                      w_tensor[lo:hi], w_level[lo:hi], w_start[lo:hi], w_first[lo:hi],
                      w_last[lo:hi], w_issue[lo:hi], w_due[lo:hi], enc)
        state.clock[0] = 0.0
        state.head[:] = 0
        state.tail[:] = 0
        state.left[:] = 0.0
        out[p] = run_kernel(sim, enc, state, 0, n + 1, ck, False, -1, ck, shift, 0.0,
                            state.no_times, state.no_times, state.no_done)
    return out


@njit(cache=True, nogil=True, inline="always")
def _before(q_copy, c_issue, c_due, c_tensor, q, pos, issue, due, t):
    """The copy at position `pos` of queue q sorts before the key (issue, due, tensor)."""
    cp = q_copy[q, pos]
    ci, cd = c_issue[cp], c_due[cp]
    return ci < issue or (ci == issue and (cd < due or (cd == due and c_tensor[cp] < t)))


@njit(cache=True, nogil=True, inline="always")
def _shift_left(row, lo, hi):
    """row[lo:hi] = row[lo + 1:hi + 1], front to back (unsigned indices: no wraparound checks,
    so that the loop is a plain memmove)."""
    for j in range(_U(lo), _U(hi)):
        row[j] = row[j + _U(1)]


@njit(cache=True, nogil=True, inline="always")
def _shift_right(row, lo, hi):
    """row[lo + 1:hi + 1] = row[lo:hi], back to front."""
    j = _U(hi)
    while j > _U(lo):
        row[j] = row[j - _U(1)]
        j -= _U(1)


@njit(cache=True, nogil=True, inline="always")
def _change_queue(q_copy, q_len, c_issue, c_due, c_tensor, c_size, due_count, due_q,
                  q, c, t, sz, has_old, issue, due, has_new, new_issue, new_due):
    """Copy c of queue q removed, inserted or re-keyed, shifting only the copies between its
    old and new places. Both places are found by binary search and the copies between them
    moved by a plain shift (no key comparison per copy moved). Takes arrays, not the record:
    a call passing the record costs more than this work. Returns the copy's old position
    (in the queue before) and new one (after), -1 for none."""
    if not has_old and not has_new:
        return -1, -1
    m = q_len[q]
    p = m  # the old place; m (past the end) for an insertion
    if has_old:
        lo, hi = 0, m  # binary search for c (keys are unique)
        while lo < hi:
            mid = (lo + hi) // 2
            if _before(q_copy, c_issue, c_due, c_tensor, q, mid, issue, due, t):
                lo = mid + 1
            else:
                hi = mid
        p = lo
        due_count[due] -= 1
        due_q[q, due] -= 1
        if not has_new:
            _shift_left(q_copy[q], p, m - 1)
            q_len[q] = m - 1
            return p, -1
    else:
        m += 1
        q_len[q] = m
    # the new place r among the other m - 1 copies (index j of them is position j, or j + 1
    # from the old place p on)
    lo, hi = 0, m - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if _before(q_copy, c_issue, c_due, c_tensor, q, mid if mid < p else mid + 1,
                   new_issue, new_due, t):
            lo = mid + 1
        else:
            hi = mid
    r = lo
    if r <= p:
        _shift_right(q_copy[q], r, p)
    else:
        _shift_left(q_copy[q], p, r)
    q_copy[q, r] = c
    c_issue[c] = new_issue
    c_due[c] = new_due
    c_tensor[c] = t
    c_size[c] = sz
    due_count[new_due] += 1
    due_q[q, new_due] += 1
    return p if has_old else -1, r


@njit(cache=True, nogil=True, _nrt=False)  # allocates nothing: no reference counts (they
# cost more than a short re-simulation); not inlined: compiled once, not once per caller
def change_kernel(enc, place, tensor_ptr, tensor_access, access_op, size, slot, old, new):
    """Replace window `slot` (`old`, or none when old[0] < 0) by `new` (none when new[0] < 0)
    in `enc`, in place. A window is (tensor, level, start, first, last, issue, due); a copy
    that stays in its queue is re-keyed in place. Returns the queue positions of the slot's
    copies: old prefetch, old eviction (in the queues before), new prefetch, new eviction
    (after); -1 for none."""
    q_copy, q_len, c_issue, c_due = enc.q_copy, enc.q_len, enc.c_issue, enc.c_due
    c_tensor, c_size, due_count, due_q = enc.c_tensor, enc.c_size, enc.due_count, enc.due_q
    same = old[0] >= 0 and old[0] == new[0]
    op_, oe, np_, ne = -1, -1, -1, -1
    if old[0] >= 0:
        t = old[0]
        h = place[t]
        for x in range(tensor_ptr[t], tensor_ptr[t + 1]):
            acc = tensor_access[x]
            if old[3] <= access_op[acc] <= old[4]:
                enc.serve[acc] = h
        sz = float(size[t])
        if old[2] < old[3] or (same and new[2] < new[3]):
            op_, np_ = _change_queue(q_copy, q_len, c_issue, c_due, c_tensor, c_size, due_count,
                                     due_q, 2 * h, 2 * slot, t, sz, old[2] < old[3], old[2], old[3],
                                     same and new[2] < new[3], new[2], new[3])
        if old[5] >= 0 or (same and new[5] >= 0):
            oe, ne = _change_queue(q_copy, q_len, c_issue, c_due, c_tensor, c_size, due_count,
                                   due_q, 2 * h + 1, 2 * slot + 1, t, sz, old[5] >= 0, old[5],
                                   old[6], same and new[5] >= 0, new[5], new[6])
    if new[0] >= 0:
        t = new[0]
        h = place[t]
        if not same:
            sz = float(size[t])
            if new[2] < new[3]:
                _, np_ = _change_queue(q_copy, q_len, c_issue, c_due, c_tensor, c_size, due_count,
                                       due_q, 2 * h, 2 * slot, t, sz, False, 0, 0, True, new[2],
                                       new[3])
            if new[5] >= 0:
                _, ne = _change_queue(q_copy, q_len, c_issue, c_due, c_tensor, c_size, due_count,
                                      due_q, 2 * h + 1, 2 * slot + 1, t, sz, False, 0, 0, True,
                                      new[5], new[6])
        for x in range(tensor_ptr[t], tensor_ptr[t + 1]):
            acc = tensor_access[x]
            if new[3] <= access_op[acc] <= new[4]:
                enc.serve[acc] = new[1]
    return op_, oe, np_, ne


@njit(cache=True, nogil=True, inline="always")
def _stop_rules(old, new, pos, place, guard, shift):
    """Where a re-simulation after the change old -> new may meet the old run: returns the
    last op whose inputs differ between the runs (an access served elsewhere, a copy issued
    or due elsewhere; -1 for none) and fills `guard` with the copies that differ, which must
    be done in both runs first, and `shift[q]`, the copies queue q gained.

    Why it is exact: a checkpoint after that op, with those copies done, sees the same
    inputs for every later op; a queue differs only in where the changed copy sits, and
    once it is done in both runs the first `head` positions hold the same set of copies
    (the others keep their order), so equal heads (shifted by the copies gained), tails
    and bytes left of the front copy mean equal futures."""
    guard[:, :] = -1
    shift[:] = 0
    has_o, has_n = old[0] >= 0, new[0] >= 0
    m = -1
    if not (has_o and has_n and old[0] == new[0] and old[1] == new[1] and old[3] == new[3]
            and old[4] == new[4]):
        for row, there in ((old, has_o), (new, has_n)):  # accesses served elsewhere
            if there:
                m = max(m, row[4], row[3])
    g = 0
    for kind in range(2):  # 0: the prefetch (issue start, due first), 1: the eviction
        i, d = (2, 3) if kind == 0 else (5, 6)
        o = has_o and (old[2] < old[3] if kind == 0 else old[5] >= 0)
        n = has_n and (new[2] < new[3] if kind == 0 else new[5] >= 0)
        if o:
            shift[2 * place[old[0]] + kind] -= 1
        if n:
            shift[2 * place[new[0]] + kind] += 1
        if o != n or (o and (old[0] != new[0] or old[i] != new[i] or old[d] != new[d])):
            if o:
                m = max(m, old[i])
                guard[g, 0], guard[g, 1], guard[g, 2] = 1, 2 * place[old[0]] + kind, pos[kind]
                g += 1
            if n:
                m = max(m, new[i])
                guard[g, 0], guard[g, 1], guard[g, 2] = 0, 2 * place[new[0]] + kind, pos[2 + kind]
                g += 1
            if o != n or old[0] != new[0] or old[d] != new[d]:  # due counts differ
                if o:
                    m = max(m, old[d])
                if n:
                    m = max(m, new[d])
    return m


@njit(cache=True, nogil=True, _nrt=False)  # allocates nothing: no reference counts (they
# cost more than a short re-simulation); not inlined: compiled once, not once per caller
def try_change_kernel(sim, enc, state, ck, scratch, K, place, tensor_ptr, tensor_access, access_op,
                      size, slot, old, new, shift, latency):
    """Replace window `slot` (`old` -> `new`, rows as in `change_kernel`) and return the new
    latency: re-simulate from the checkpoint at or before the first op the change touches
    (the smaller start), writing no checkpoints (`replay_kernel` writes them into `scratch`
    once the change is kept: most tried changes are not), and stop early at a checkpoint
    after the last op whose inputs the change alters, once the changed copies are done in
    both runs, where the state equals the old run's in `ck` (heads shifted by the copies
    added or removed, `shift[q]`; see `_stop_rules`)."""
    if old[0] < 0 and new[0] < 0:
        return latency
    pos = change_kernel(enc, place, tensor_ptr, tensor_access, access_op, size, slot, old, new)
    state.stop[1] = max(_stop_rules(old, new, pos, place, state.guard, shift) + 1, 0)
    s = 1 << 62
    for row in (old, new):
        if row[0] >= 0:
            s = min(s, row[2])
    return replay_kernel(sim, enc, state, ck, scratch, K, s // K, shift, latency, False)


@njit(cache=True, nogil=True, _nrt=False)
def replay_kernel(sim, enc, state, ck, scratch, K, c0, shift, latency, write):
    """Re-simulate the change `try_change_kernel` made from checkpoint c0, with its stop rule
    (`state.stop[1]`, `state.guard`, `shift`); with `write`, checkpoints go into `scratch`."""
    state.clock[0] = ck.clock[c0]
    for q in range(state.head.shape[0]):  # element by element: no temporary, no allocation
        state.head[q] = ck.head[c0, q]
        state.tail[q] = ck.tail[c0, q]
        state.left[q] = ck.left[c0, q]
    return run_kernel(sim, enc, state, c0 * K, K, scratch, write, state.stop[1], ck, shift, latency,
                      state.no_times, state.no_times, state.no_done)


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def keep_kernel(ck, scratch, c0, stop, shift):
    """A re-simulation from checkpoint c0 that wrote its checkpoints into `scratch` and met
    the old run at checkpoint `stop` (-1: it ran to the end) is kept: its checkpoints become
    the run's own from c0 on; past `stop` the old checkpoints stay, their clocks shifted by
    the difference there and their heads and tails by the copies each queue gained (`shift`)."""
    C = ck.clock.shape[0]
    end = C if stop < 0 else stop + 1
    if stop >= 0:
        delta = scratch.clock[stop] - ck.clock[stop]
        for c in range(end, C):
            ck.clock[c] += delta
            for q in range(shift.shape[0]):
                ck.head[c, q] += shift[q]
                ck.tail[c, q] += shift[q]
    for c in range(c0, end):
        ck.clock[c] = scratch.clock[c]
        for q in range(shift.shape[0]):
            ck.head[c, q] = scratch.head[c, q]
            ck.tail[c, q] = scratch.tail[c, q]
            ck.left[c, q] = scratch.left[c, q]


@njit(cache=True, nogil=True, _nrt=False)
def accept_kernel(sim, enc, state, ck, scratch, K, c0, shift, latency, new_latency):
    """Keep the change `try_change_kernel` tried last (from checkpoint c0, old latency
    `latency`, its result `new_latency`): replay it writing checkpoints into `scratch`, then
    `keep_kernel`. Returns the replayed latency, which must equal `new_latency` (the caller
    checks: the same run twice)."""
    again = replay_kernel(sim, enc, state, ck, scratch, K, c0, shift, latency, True)
    keep_kernel(ck, scratch, c0, state.stop[0], shift)
    return again
