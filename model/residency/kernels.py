"""Numba kernels of the residency latency (spec section 11), typed by arrays.

They compute exactly what `reference.py` computes, in the same float order (see its
docstring), so results agree to the last bit or within rounding.

Records (NamedTuples of arrays, see `encoding.py`):

- `Sim` (the instance): `compute[k]`, `op_ptr`, `op_tensor`, `access_time[a, l]`,
  `copy_bandwidth[l]`.
- `Enc` (one solution's windows): `serve[a]` the level serving access a; the copies as
  `Q = 2 * L` FIFO queues (queue `2h` = reads/prefetches of channel h, `2h+1` = writes/
  evictions), each sorted by (issue op, due op, tensor) so that a queue's joined copies
  are a prefix of it: `q_issue[q, i]`, `q_due`, `q_tensor`, `q_window`, `q_size` (float
  bytes), `q_len[q]`; `due_count[k]` copies due at op k.
- `State`: `clock[0]`, `head[q]` (front copy), `tail[q]` (copies joined), `left[q]`
  (bytes left of the front copy), `stop[0]` (the checkpoint where a run stopped early, -1).

A checkpoint is the state before op k's wait, for every k multiple of `K`.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _advance(h, idle, until, target_r, target_w, enc, state, cb, op, done):
    """Move channel h's copies for `idle` seconds, or (with `until`) until its queues'
    heads pass positions `target_r`/`target_w`; return the seconds used."""
    qr = 2 * h
    qw = qr + 1
    head, tail, left = state.head, state.tail, state.left
    used = 0.0
    while True:
        r = head[qr] < tail[qr]
        w = head[qw] < tail[qw]
        if not r and not w:
            return used
        if until and head[qr] > target_r and head[qw] > target_w:
            return used
        if r and w:
            rate = cb / 2
            tr = left[qr] / rate
            tw = left[qw] / rate
            dt = tr if tr < tw else tw
            if not until and dt > idle:
                x = left[qr] - idle * rate
                left[qr] = x if x > 0.0 else 0.0
                x = left[qw] - idle * rate
                left[qw] = x if x > 0.0 else 0.0
                return used + idle
            for q, t in ((qr, tr), (qw, tw)):
                if t <= dt:
                    if done.shape[0] > 0:
                        done[q, head[q]] = op
                    head[q] += 1
                    left[q] = enc.q_size[q, head[q]] if head[q] < tail[q] else 0.0
                else:
                    x = left[q] - dt * rate
                    left[q] = x if x > 0.0 else 0.0
        else:
            q = qr if r else qw
            dt = left[q] / cb
            if not until and dt > idle:
                x = left[q] - idle * cb
                left[q] = x if x > 0.0 else 0.0
                return used + idle
            if done.shape[0] > 0:
                done[q, head[q]] = op
            head[q] += 1
            left[q] = enc.q_size[q, head[q]] if head[q] < tail[q] else 0.0
        used += dt
        if not until:
            idle -= dt


@njit(cache=True, nogil=True)
def _last_due(q, k, enc, state):
    """Position of the last joined copy of queue q due at op k, -1 if none is pending."""
    last = -1
    for i in range(state.head[q], state.tail[q]):
        if enc.q_due[q, i] == k:
            last = i
    return last


@njit(cache=True, nogil=True)
def _save(c, state, ck):
    ck.clock[c] = state.clock[0]
    for q in range(state.head.shape[0]):
        ck.head[c, q] = state.head[q]
        ck.tail[c, q] = state.tail[q]
        ck.left[c, q] = state.left[q]


@njit(cache=True, nogil=True)
def _same_as(c, state, old, shift):
    """The state equals old checkpoint c, heads and tails shifted by `shift[q]`."""
    for q in range(state.head.shape[0]):
        if state.head[q] != old.head[c, q] + shift[q] or state.tail[q] != old.tail[c, q] + shift[q]:
            return False
        if state.left[q] != old.left[c, q]:
            return False
    return True


@njit(cache=True, nogil=True)
def run_kernel(sim, enc, state, k0, K, ck, write_ck, stop_from, old, shift, old_latency,
               wait_out, elapsed_out, done):
    """Simulate ops k0 .. n-1 from `state` (the state before op k0's wait); return the latency.

    With `write_ck`, checkpoint k // K is written into `ck` at every op k multiple of K.
    With `stop_from` >= 0, at every checkpoint op c >= stop_from the state is compared
    with the old run's checkpoint `old` (heads shifted by `shift`); when equal, the rest
    of the old run applies and the latency is `clock + (old_latency - old.clock[c])`.
    `wait_out`/`elapsed_out` (length n, or 0 to skip) and `done[q, i]` (the op in whose
    wait or run copy i of queue q completed; shape (0, 0) to skip) record the timeline.
    """
    n = sim.compute.shape[0]
    L = sim.copy_bandwidth.shape[0]
    Q = 2 * L
    state.stop[0] = -1
    busy = np.zeros(L)
    need = np.zeros(L)
    record = wait_out.shape[0] > 0
    for k in range(k0, n):
        if k % K == 0:
            c = k // K
            if write_ck:
                _save(c, state, ck)
            if stop_from >= 0 and k >= stop_from and _same_as(c, state, old, shift):
                state.stop[0] = c
                return state.clock[0] + (old_latency - old.clock[c])
        # 1. wait for the copies due at k
        wait = 0.0
        if enc.due_count[k] > 0:
            for h in range(L):
                tr = _last_due(2 * h, k, enc, state)
                tw = _last_due(2 * h + 1, k, enc, state)
                need[h] = 0.0
                if tr >= 0 or tw >= 0:
                    need[h] = _advance(h, 0.0, True, tr, tw, enc, state, sim.copy_bandwidth[h], k, done)
                if need[h] > wait:
                    wait = need[h]
            for h in range(L):
                _advance(h, wait - need[h], False, -1, -1, enc, state, sim.copy_bandwidth[h], k, done)
        state.clock[0] += wait
        # 2. copies issued before op k join their queues
        for q in range(Q):
            while state.tail[q] < enc.q_len[q] and enc.q_issue[q, state.tail[q]] <= k:
                if state.head[q] == state.tail[q]:
                    state.left[q] = enc.q_size[q, state.tail[q]]
                state.tail[q] += 1
        # 3. run op k; each channel moves copies in its idle time
        memory = 0.0
        busy[:] = 0.0
        for a in range(sim.op_ptr[k], sim.op_ptr[k + 1]):
            l = enc.serve[a]
            x = sim.access_time[a, l]
            memory += x
            busy[l] += x
        compute = sim.compute[k]
        elapsed = compute if compute >= memory else memory
        for h in range(L):
            if state.head[2 * h] < state.tail[2 * h] or state.head[2 * h + 1] < state.tail[2 * h + 1]:
                idle = elapsed - busy[h]
                _advance(h, idle if idle > 0.0 else 0.0, False, -1, -1, enc, state,
                         sim.copy_bandwidth[h], k, done)
        if record:
            wait_out[k] = wait
            elapsed_out[k] = elapsed
        state.clock[0] += elapsed
    return state.clock[0]


@njit(cache=True, nogil=True)
def encode_kernel(place, tensor_ptr, tensor_access, access_op, op_tensor, size, n_levels, n_ops,
                  w_tensor, w_level, w_start, w_first, w_last, w_issue, w_due, enc):
    """Fill `enc` (arrays of capacity >= copies per queue) from windows; return copies made."""
    for a in range(op_tensor.shape[0]):
        enc.serve[a] = place[op_tensor[a]]
    W = w_tensor.shape[0]
    for w in range(W):
        t = w_tensor[w]
        for i in range(tensor_ptr[t], tensor_ptr[t + 1]):
            a = tensor_access[i]
            k = access_op[a]
            if w_first[w] <= k <= w_last[w]:
                enc.serve[a] = w_level[w]
    # copies: key (queue, issue, due, tensor), unique within a queue
    keys = np.empty(2 * W, np.int64)
    src = np.empty(2 * W, np.int64)
    m = 0
    T = size.shape[0]
    for w in range(W):
        t = w_tensor[w]
        h = place[t]
        if w_start[w] < w_first[w]:
            keys[m] = (((2 * h) * n_ops + w_start[w]) * n_ops + w_first[w]) * T + t
            src[m] = w
            m += 1
        if w_issue[w] >= 0:
            keys[m] = (((2 * h + 1) * n_ops + w_issue[w]) * n_ops + w_due[w]) * T + t
            src[m] = -w - 1
            m += 1
    order = np.argsort(keys[:m])
    enc.q_len[:] = 0
    enc.due_count[:] = 0
    for j in range(m):
        s = src[order[j]]
        w = s if s >= 0 else -s - 1
        t = w_tensor[w]
        q = 2 * place[t] + (0 if s >= 0 else 1)
        i = enc.q_len[q]
        enc.q_issue[q, i] = w_start[w] if s >= 0 else w_issue[w]
        enc.q_due[q, i] = w_first[w] if s >= 0 else w_due[w]
        enc.q_tensor[q, i] = t
        enc.q_window[q, i] = w
        enc.q_size[q, i] = size[t]
        enc.due_count[enc.q_due[q, i]] += 1
        enc.q_len[q] = i + 1
    return m


@njit(cache=True, nogil=True)
def batch_kernel(sim, place, tensor_ptr, tensor_access, access_op, size, n_levels, w_ptr,
                 w_tensor, w_level, w_start, w_first, w_last, w_issue, w_due, enc, state, ck, shift,
                 out):
    """Latency of every solution p (homes `place`, windows w_ptr[p]:w_ptr[p+1]) into `out`."""
    n = sim.compute.shape[0]
    empty = np.zeros(0)
    no_done = np.zeros((0, 0), np.int64)
    for p in range(w_ptr.shape[0] - 1):
        lo, hi = w_ptr[p], w_ptr[p + 1]
        encode_kernel(place, tensor_ptr, tensor_access, access_op, sim.op_tensor, size, n_levels, n,
                      w_tensor[lo:hi], w_level[lo:hi], w_start[lo:hi], w_first[lo:hi],
                      w_last[lo:hi], w_issue[lo:hi], w_due[lo:hi], enc)
        state.clock[0] = 0.0
        state.head[:] = 0
        state.tail[:] = 0
        state.left[:] = 0.0
        out[p] = run_kernel(sim, enc, state, 0, n + 1, ck, False, -1, ck, shift, 0.0,
                            empty, empty, no_done)
    return out


@njit(cache=True, nogil=True)
def _remove_copy(enc, q, slot):
    for i in range(enc.q_len[q]):
        if enc.q_window[q, i] == slot:
            enc.due_count[enc.q_due[q, i]] -= 1
            for j in range(i, enc.q_len[q] - 1):
                enc.q_issue[q, j] = enc.q_issue[q, j + 1]
                enc.q_due[q, j] = enc.q_due[q, j + 1]
                enc.q_tensor[q, j] = enc.q_tensor[q, j + 1]
                enc.q_window[q, j] = enc.q_window[q, j + 1]
                enc.q_size[q, j] = enc.q_size[q, j + 1]
            enc.q_len[q] -= 1
            return


@njit(cache=True, nogil=True)
def _insert_copy(enc, q, issue, due, t, slot, size):
    i = enc.q_len[q]
    while i > 0:
        a, b, c = enc.q_issue[q, i - 1], enc.q_due[q, i - 1], enc.q_tensor[q, i - 1]
        if a < issue or (a == issue and (b < due or (b == due and c < t))):
            break
        enc.q_issue[q, i] = a
        enc.q_due[q, i] = b
        enc.q_tensor[q, i] = c
        enc.q_window[q, i] = enc.q_window[q, i - 1]
        enc.q_size[q, i] = enc.q_size[q, i - 1]
        i -= 1
    enc.q_issue[q, i] = issue
    enc.q_due[q, i] = due
    enc.q_tensor[q, i] = t
    enc.q_window[q, i] = slot
    enc.q_size[q, i] = size
    enc.q_len[q] += 1
    enc.due_count[due] += 1


@njit(cache=True, nogil=True)
def change_kernel(enc, place, tensor_ptr, tensor_access, access_op, size, slot, old, new):
    """Replace window `slot` (`old`, or none when old[0] < 0) by `new` (none when new[0] < 0)
    in `enc`, in place. A window is (tensor, level, start, first, last, issue, due)."""
    if old[0] >= 0:
        t = old[0]
        h = place[t]
        if old[2] < old[3]:
            _remove_copy(enc, 2 * h, slot)
        if old[5] >= 0:
            _remove_copy(enc, 2 * h + 1, slot)
        for i in range(tensor_ptr[t], tensor_ptr[t + 1]):
            a = tensor_access[i]
            if old[3] <= access_op[a] <= old[4]:
                enc.serve[a] = h
    if new[0] >= 0:
        t = new[0]
        h = place[t]
        if new[2] < new[3]:
            _insert_copy(enc, 2 * h, new[2], new[3], t, slot, float(size[t]))
        if new[5] >= 0:
            _insert_copy(enc, 2 * h + 1, new[5], new[6], t, slot, float(size[t]))
        for i in range(tensor_ptr[t], tensor_ptr[t + 1]):
            a = tensor_access[i]
            if new[3] <= access_op[a] <= new[4]:
                enc.serve[a] = new[1]
