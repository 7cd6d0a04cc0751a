"""The compiled move loop of the residency `sa`: propose, re-simulate incrementally, keep or undo.

`sa.Annealer` is the plain-Python reference: the same moves over `layout.Layout` and
`Simulation`, one Python call per move (~11 µs of Python around ~1 µs of kernel on
bert-base@nnpi). Here the whole loop is Numba, over three records of arrays:

- `Rules` (the instance as the moves read it): live ranges, sizes, producers, each
  tensor's sorted access ops, capacities, alignments, which levels are addressed, the
  tensors a move may pick and their cumulative traffic;
- `Board` (the solution, as `Layout` keeps it): homes and home offsets, windows in
  numbered slots (a row `tensor, level, start, first, last, evict issue, evict due,
  offset`, tensor -1 for an empty slot), each tensor's slots as a linked list, and what
  is in use (`occupancy.Occupancy`, the family's one occupancy record: home of t booked
  as id t, slot s's window as id T + s); plus the undo log of a home move and the best solution
  seen with a journal of the slots and tensors changed since it was copied;
- the simulator's own records (`Sim`, `Enc`, `State`, `Checkpoints`, see
  `memplace.model.residency.kernels`).

A window move is re-simulated by `kernels.try_change_kernel` (from the checkpoint before
the change, stopping where the run meets the old one), kept by `kernels.accept_kernel`
or undone by `kernels.change_kernel`. A home move (re-home, stream) changes every copy of
its tensor: the encoding is edited copy by copy and re-simulated from the checkpoint at
the tensor's first op, which both runs share (its copies are issued no earlier, so they
sort after every copy joined before it). Validity is the reference's: every change is
checked by the rules of one tensor (`_tensor_ok`, `Layout.tensor_ok`), the capacity over
its ops and, on addressed levels, a best-fit offset (`occupancy.fits`, `occupancy.best_fit`,
the kernels every residency solver asks); a refused change is not made.

`run_moves` tries a number of moves at one temperature and returns; the caller (sa.py)
keeps the clock, the cooling and the offers between calls. Its random numbers come from
Numba's generator, seeded by the caller at each call.
"""
from __future__ import annotations

import time
from typing import Callable, NamedTuple

import numpy as np

from memplace.model.core.jit import njit
from memplace.model.instance import Instance
from memplace.model.residency import ResidencySolution, Window, producer_of
from memplace.model.residency import kernels
from memplace.model.residency.encoding import empty_checkpoints, encode, initial_state, sim_of
from memplace.solvers.residency.machinery import occupancy as oc

NEVER = np.iinfo(np.int64).max
ROW = 8  # tensor, level, start, first, last, issue, due, offset
GROW, DONE = 1, 0  # run_moves' status: out of slots (the caller grows the board), or done
JOURNAL = 4096  # slots / tensors changed since the best was copied, before a full copy


class Rules(NamedTuple):
    start: np.ndarray  # int64[T]
    end: np.ndarray
    size: np.ndarray
    producer: np.ndarray  # -1 without one
    acc_ptr: np.ndarray  # int64[T + 1]: tensor t's distinct access ops acc_op[acc_ptr[t]:acc_ptr[t+1]]
    acc_op: np.ndarray
    capacity: np.ndarray  # int64[L]
    alignment: np.ndarray
    addressed: np.ndarray  # int64[L], 1 where offsets are kept
    tensors: np.ndarray  # int64[M]: the tensors a move picks (those with accesses)
    by_traffic: np.ndarray  # float64[M] cumulative traffic share; empty: uniform only
    tensor_ptr: np.ndarray  # the instance's access index, for `kernels.change_kernel`
    tensor_access: np.ndarray
    access_op: np.ndarray


class Board(NamedTuple):
    homes: np.ndarray  # int64[T]
    offsets: np.ndarray  # int64[T], -1 off addressed levels
    win: np.ndarray  # int64[S, ROW]
    head: np.ndarray  # int64[T]: tensor t's first slot, -1
    nxt: np.ndarray  # int64[S]
    prv: np.ndarray
    occ: oc.Occupancy  # what is in use: home of t booked as id t, slot s's window as T + s
    meta: np.ndarray  # int64[4]: lowest slot that may be free, slots used (top), best top, journal overflow
    cand: np.ndarray  # int64[W, ROW] scratch: one tensor's windows under a change
    served: np.ndarray  # int64[W] scratch
    undo: np.ndarray  # int64[W, ROW + 1]: a home move's old windows (slot, row)
    row_old: np.ndarray  # int64[7] rows as the simulator reads them
    row_new: np.ndarray
    rows: np.ndarray  # int64[3, ROW] scratch: a proposed window, the one it replaces, a home move's
    shift: np.ndarray  # int64[2L] scratch: the copies each queue gains by a change
    best_homes: np.ndarray
    best_offsets: np.ndarray
    best_win: np.ndarray  # int64[S, ROW]
    journal: np.ndarray  # int64[2, JOURNAL + 1]: slots, tensors changed since the best copy (count last)
    stats: np.ndarray  # float64[4]: latency, best latency, moves tried, moves kept

    @property
    def load(self) -> np.ndarray:
        """Bytes in use per level and op."""
        return self.occ.load


# ---------------------------------------------------------------------- the board, built in Python
def access_ops(instance: Instance) -> tuple[np.ndarray, np.ndarray]:
    """Each tensor's distinct access ops, sorted, as (ptr, ops)."""
    i = instance
    owner = np.repeat(np.arange(i.n_tensors, dtype=np.int64), np.diff(i.tensor_ptr))
    pairs = np.unique(np.stack([owner, i.access_op[i.tensor_access].astype(np.int64)]), axis=1)
    ptr = np.zeros(i.n_tensors + 1, np.int64)
    np.cumsum(np.bincount(pairs[0], minlength=i.n_tensors), out=ptr[1:])
    return ptr, np.ascontiguousarray(pairs[1])


def cached_access_ops(instance: Instance) -> tuple[np.ndarray, np.ndarray]:
    """`access_ops`, built once per instance (`Instance.derived`)."""
    return instance.derived("residency.access_ops", access_ops)


def rules_of(instance: Instance) -> Rules:
    i = instance
    ptr, ops = cached_access_ops(i)  # read only here and in the kernels
    tensors = np.flatnonzero(np.diff(ptr) > 0).astype(np.int64)
    traffic = np.asarray(i.traffic, np.float64)[tensors]
    by_traffic = np.cumsum(traffic) / traffic.sum() if traffic.sum() > 0 else np.zeros(0)
    producer = np.array([producer_of(i, t) for t in range(i.n_tensors)], np.int64)
    return Rules(np.asarray(i.start, np.int64), np.asarray(i.end, np.int64),
                 np.asarray(i.size, np.int64), producer, ptr, ops,
                 np.asarray(i.capacity, np.int64), np.asarray(i.alignment, np.int64),
                 np.asarray(i.addressed, np.int64), tensors, by_traffic, i.tensor_ptr,
                 i.tensor_access, i.access_op)


def window_rows(windows, slots: int) -> np.ndarray:
    win = np.full((slots, ROW), -1, np.int64)
    for s, w in enumerate(windows):
        if w is not None:
            issue, due = (-1, -1) if w.evict is None else w.evict
            win[s] = (w.tensor, w.level, w.start, w.first, w.last, issue, due,
                      -1 if w.offset is None else w.offset)
    return win


def new_board(instance: Instance, rules: Rules, solution: ResidencySolution, slots: int) -> Board:
    """The board of a valid solution, with room for `slots` windows."""
    i = instance
    T, L = i.n_tensors, i.n_levels
    W = len(solution.windows)
    homes = np.array(solution.placement, np.int64)
    offsets = (np.full(T, -1, np.int64) if solution.offsets is None
               else np.array(solution.offsets, np.int64))
    win = window_rows(solution.windows, slots)
    widest = int(np.diff(rules.acc_ptr).max(initial=0)) + 2
    board = Board(homes=homes, offsets=offsets, win=win, head=np.full(T, -1, np.int64),
                  nxt=np.full(slots, -1, np.int64), prv=np.full(slots, -1, np.int64),
                  occ=oc.with_homes(i, homes, offsets, T + slots),
                  meta=np.array([W, W, W, 0], np.int64), cand=np.zeros((widest, ROW), np.int64),
                  served=np.zeros(widest, np.int64), undo=np.zeros((widest, ROW + 1), np.int64),
                  row_old=np.zeros(7, np.int64), row_new=np.zeros(7, np.int64),
                  rows=np.zeros((3, ROW), np.int64), shift=np.zeros(2 * L, np.int64),
                  best_homes=homes.copy(), best_offsets=offsets.copy(), best_win=win.copy(),
                  journal=np.zeros((2, JOURNAL + 1), np.int64), stats=np.zeros(4))
    _book_windows(rules, board)
    return board


def grown(board: Board, slots: int) -> Board:
    """The same board with room for `slots` windows."""
    S = board.win.shape[0]
    win = np.full((slots, ROW), -1, np.int64)
    win[:S] = board.win
    best = np.full((slots, ROW), -1, np.int64)
    best[:S] = board.best_win
    nxt, prv = np.full(slots, -1, np.int64), np.full(slots, -1, np.int64)
    nxt[:S], prv[:S] = board.nxt, board.prv
    T = board.homes.shape[0]
    return board._replace(win=win, best_win=best, nxt=nxt, prv=prv,
                          occ=oc.with_room(board.occ, T + slots))


def windows_of(win: np.ndarray, top: int) -> list[Window | None]:
    """Slot rows as `Window`s (None for an empty slot)."""
    out: list[Window | None] = []
    for r in win[:top].tolist():
        if r[0] < 0:
            out.append(None)
            continue
        out.append(Window(r[0], r[1], r[2], r[3], r[4], None if r[7] < 0 else r[7],
                          None if r[5] < 0 else (r[5], r[6])))
    return out


def best_solution(instance: Instance, board: Board) -> ResidencySolution:
    i = instance
    offsets = board.best_offsets.copy() if i.has_addressed_levels else None
    windows = tuple(w for w in windows_of(board.best_win, int(board.meta[2])) if w is not None)
    return ResidencySolution(i.name, board.best_homes.copy(), offsets, windows)


def current_solution(instance: Instance, board: Board) -> ResidencySolution:
    i = instance
    offsets = board.offsets.copy() if i.has_addressed_levels else None
    windows = tuple(w for w in windows_of(board.win, int(board.meta[1])) if w is not None)
    return ResidencySolution(i.name, board.homes.copy(), offsets, windows)


class Search(NamedTuple):
    """Everything `run_moves` reads and writes."""

    rules: Rules
    board: Board
    sim: tuple
    enc: tuple
    state: tuple
    ck: tuple
    scratch: tuple
    K: int
    hstate: tuple  # the simulator's state for home moves (room to guard every copy of a tensor)


def checkpoint_interval(n_ops: int) -> int:
    """Ops between the simulator's checkpoints in the search: a tried move re-simulates up to
    about K ops more than it must, a kept one rewrites the checkpoints after it (about
    n_ops / K of them: their clocks shift), so K grows as the square root of the program
    (2 up to about 1,000 ops, 8 at 10^4, 26 at 10^5)."""
    return max(2, int(np.sqrt(n_ops) / 12))


def new_search(instance: Instance, start: ResidencySolution, K: int | None = None,
               spare: int = 256) -> Search:
    """The compiled search's records for a valid start (checkpoints every K ops, default
    `checkpoint_interval`); its latency simulated (stats[0])."""
    i = instance
    K = checkpoint_interval(i.n_ops) if K is None else K
    rules = rules_of(i)
    slots = len(start.windows) + max(spare, int(np.diff(rules.acc_ptr).max(initial=0)) + 2)
    board = new_board(i, rules, start, slots)
    enc = encode(i, board.homes, windows_of(board.win, slots), slots=slots)
    state = initial_state(i)
    ck, scratch = empty_checkpoints(i, K), empty_checkpoints(i, K)
    shift = np.zeros(2 * i.n_levels, np.int64)
    lat = kernels.run_kernel(sim_of(i), enc, state, 0, K, ck, True, -1, ck, shift, 0.0,
                             state.no_times, state.no_times, state.no_done)
    board.stats[0] = board.stats[1] = lat
    hstate = initial_state(i)._replace(guard=np.full((4 * board.cand.shape[0], 3), -1, np.int64))
    return Search(rules, board, sim_of(i), enc, state, ck, scratch, K, hstate)


def grow(instance: Instance, search: Search) -> Search:
    """Twice the room for windows: the board's arrays and the encoding (the simulator's state
    and checkpoints do not change)."""
    S = 2 * search.board.win.shape[0] + 64
    board = grown(search.board, S)
    enc = encode(instance, board.homes, windows_of(board.win, S), slots=S)
    return search._replace(board=board, enc=enc)


# ---------------------------------------------------------------------- booking
@njit(cache=True, nogil=True, _nrt=False)
def _copy(dst, src):
    """dst[:] = src element by element (a slice assignment may allocate a temporary)."""
    for j in range(dst.shape[0]):
        dst[j] = src[j]


@njit(cache=True, nogil=True, _nrt=False)
def _hold(r):
    """Last op window row r occupies."""
    return r[4] if r[5] < 0 else max(r[4], r[6] - 1)


@njit(cache=True, nogil=True, _nrt=False)
def _book_home(rules, b, t, level, sign):
    """Tensor t's home in `level` at b.offsets[t] booked (sign 1) or freed (-1)."""
    if sign > 0:
        oc.book(b.occ, t, level, rules.start[t], rules.end[t], rules.size[t], b.offsets[t])
    else:
        oc.release(b.occ, t)


@njit(cache=True, nogil=True, _nrt=False)
def _book_window(rules, b, s, r, sign):
    """Slot s's window, row r, booked (sign 1) or freed (-1)."""
    if sign > 0:
        oc.book(b.occ, b.homes.shape[0] + s, r[1], r[2], _hold(r), rules.size[r[0]], r[7])
    else:
        oc.release(b.occ, b.homes.shape[0] + s)


@njit(cache=True, nogil=True, _nrt=False)
def _book_windows(rules, b):
    """Every window of the board booked (its homes are) and linked; the load summed once."""
    T = b.homes.shape[0]
    for s in range(b.meta[1]):
        r = b.win[s]
        if r[0] >= 0:
            _link(b, s, r[0])
            oc.record(b.occ, T + s, r[1], r[2], _hold(r), rules.size[r[0]], r[7])
    oc.sum_load(b.occ)


@njit(cache=True, nogil=True, _nrt=False)
def _link(b, s, t):
    b.nxt[s] = b.head[t]
    b.prv[s] = -1
    if b.head[t] >= 0:
        b.prv[b.head[t]] = s
    b.head[t] = s


@njit(cache=True, nogil=True, _nrt=False)
def _unlink(b, s, t):
    if b.prv[s] >= 0:
        b.nxt[b.prv[s]] = b.nxt[s]
    else:
        b.head[t] = b.nxt[s]
    if b.nxt[s] >= 0:
        b.prv[b.nxt[s]] = b.prv[s]
    b.nxt[s] = b.prv[s] = -1


# ---------------------------------------------------------------------- the rules of one tensor
@njit(cache=True, nogil=True, _nrt=False)
def _gather(b, t, skip, new, has_new):
    """Tensor t's windows into b.cand: its slots but `skip`, plus `new`; returns how many."""
    m = 0
    s = b.head[t]
    while s >= 0:
        if s != skip:
            _copy(b.cand[m], b.win[s])
            m += 1
        s = b.nxt[s]
    if has_new:
        _copy(b.cand[m], new)
        m += 1
    return m


@njit(cache=True, nogil=True, _nrt=False)
def _tensor_ok(rules, b, t, home, m):
    """Section 10's rules of tensor t with this home and the m windows in b.cand (space aside):
    `Layout.tensor_ok`."""
    lo, hi, p = rules.start[t], rules.end[t], rules.producer[t]
    v = 0 if p < 0 else p + 1
    defining = 0
    c = b.cand
    for j in range(m):
        st, fi, la, iss, due = c[j, 2], c[j, 3], c[j, 4], c[j, 5], c[j, 6]
        if not (c[j, 1] < home and st <= fi <= la and lo <= st and la <= hi):
            return False
        is_def = st == fi == p
        if not is_def and not st < fi:
            return False
        if iss >= 0 and not (is_def and p < iss < due <= hi):
            return False
        if is_def:
            defining += 1
            v = NEVER if iss < 0 else due
    if defining > 1:
        return False
    for j in range(m):
        for x in range(j + 1, m):
            if not (_hold(c[j]) < c[x, 2] or _hold(c[x]) < c[j, 2]):
                return False
    for j in range(m):
        if c[j, 2] < c[j, 3] and c[j, 2] < v:
            return False
    for a in range(rules.acc_ptr[t], rules.acc_ptr[t + 1]):
        k = rules.acc_op[a]
        if k != p and k < v:
            covered = False
            for j in range(m):
                if c[j, 3] <= k <= c[j, 4]:
                    covered = True
                    break
            if not covered:
                return False
    return True


# ---------------------------------------------------------------------- changes (Layout's)
@njit(cache=True, nogil=True, _nrt=False)
def _free_slot(b):
    s = b.meta[0]
    while s < b.meta[1] and b.win[s, 0] >= 0:
        s += 1
    b.meta[0] = s
    return s


@njit(cache=True, nogil=True, _nrt=False)
def _put(b, s, r, t):
    """Slot s holds row r (tensor t's), linked; its old content must be unlinked."""
    _copy(b.win[s], r)
    _link(b, s, t)
    if s >= b.meta[1]:
        b.meta[1] = s + 1


@njit(cache=True, nogil=True, _nrt=False)
def _clear(b, s):
    _unlink(b, s, b.win[s, 0])
    b.win[s, :] = -1
    if s < b.meta[0]:
        b.meta[0] = s


@njit(cache=True, nogil=True, _nrt=False)
def _set_window(rules, b, s, t, new, has_new):
    """Replace slot s (tensor t's window or empty) by `new` (a row; none without `has_new`):
    `Layout.set_window`. False (nothing changed) when a rule breaks or it does not fit;
    on success the slot holds the new row with its best-fit offset."""
    has_old = b.win[s, 0] >= 0
    m = _gather(b, t, s, new, has_new)
    if not _tensor_ok(rules, b, t, b.homes[t], m):
        return False
    if has_old:
        _book_window(rules, b, s, b.win[s], -1)
    if has_new:
        size = rules.size[t]
        hold = _hold(new)
        ok = oc.fits(b.occ, new[1], new[2], hold, size)
        off = -1
        if ok and rules.addressed[new[1]]:
            off = oc.best_fit(b.occ, new[1], new[2], hold, size, -1)
            ok = off >= 0
        if not ok:
            if has_old:
                _book_window(rules, b, s, b.win[s], 1)
            return False
        new[7] = off
        _book_window(rules, b, s, new, 1)
    if has_old:
        _clear(b, s)
    if has_new:
        _put(b, s, new, t)
    return True


@njit(cache=True, nogil=True, _nrt=False)
def _set_home(rules, b, t, level):
    """`Layout.set_home`: False (unchanged) when a rule breaks or the level lacks room."""
    m = _gather(b, t, -1, b.cand[0], False)
    if not _tensor_ok(rules, b, t, level, m):
        return False
    old = b.homes[t]
    _book_home(rules, b, t, old, -1)
    lo, hi, size = rules.start[t], rules.end[t], rules.size[t]
    ok = oc.fits(b.occ, level, lo, hi, size)
    off = -1
    if ok and rules.addressed[level]:
        off = oc.best_fit(b.occ, level, lo, hi, size, -1)
        ok = off >= 0
    if not ok:
        _book_home(rules, b, t, old, 1)
        return False
    b.homes[t] = level
    b.offsets[t] = off
    _book_home(rules, b, t, level, 1)
    return True


# ---------------------------------------------------------------------- proposals (the reference's moves)
@njit(cache=True, nogil=True, _nrt=False)
def _lead(lead):
    return 1 + int(np.random.exponential(lead)) if lead > 0 else 1


@njit(cache=True, nogil=True, _nrt=False)
def _covered(b, t, k):
    s = b.head[t]
    while s >= 0:
        if b.win[s, 3] <= k <= b.win[s, 4]:
            return True
        s = b.nxt[s]
    return False


@njit(cache=True, nogil=True, _nrt=False)
def _served_by_home(rules, b, t):
    """Tensor t's access ops no window serves, into b.served (sorted); returns how many."""
    m = 0
    for a in range(rules.acc_ptr[t], rules.acc_ptr[t + 1]):
        k = rules.acc_op[a]
        if not _covered(b, t, k):
            b.served[m] = k
            m += 1
    return m


@njit(cache=True, nogil=True, _nrt=False)
def _new_window(rules, b, t, lead, out):
    """`Annealer._new_window`: a window for a random access of t its home serves."""
    home = b.homes[t]
    n = _served_by_home(rules, b, t)
    if home == 0 or n == 0:
        return False
    j = np.random.randint(0, n)
    k = b.served[j]
    level = np.random.randint(0, home)
    last = b.served[min(n - 1, j + np.random.randint(0, 3))]
    s = b.head[t]  # consecutive home-served accesses only: a window may not cover another
    while s >= 0:
        if k < b.win[s, 3] <= last:
            last = k
            break
        s = b.nxt[s]
    p = rules.producer[t]
    out[0], out[1], out[7] = t, level, -1
    if k == p:
        later = -1
        for x in range(n):
            if b.served[x] > last:
                later = b.served[x]
                break
        out[2], out[3], out[4], out[5], out[6] = p, p, last, -1, -1
        if later >= 0 or np.random.random() < 0.5:
            issue = p + 1
            hi = later if later >= 0 else rules.end[t]
            if issue < hi:
                out[5], out[6] = issue, np.random.randint(issue + 1, hi + 1)
            elif later >= 0:
                return False
        return True
    start = max(k - _lead(lead), rules.start[t])
    out[2], out[3], out[4], out[5], out[6] = start, k, last, -1, -1
    return start < k


@njit(cache=True, nogil=True, _nrt=False)
def _shift_start(rules, w, lead, out):
    """Move a prefetch's start by a random lead, earlier or later, within the tensor's life
    and before its first access."""
    d = _lead(lead) * (1 if np.random.random() < 0.5 else -1)
    out[2] = min(max(w[2] + d, rules.start[w[0]]), w[3] - 1)
    return out[2] != w[2]


@njit(cache=True, nogil=True, _nrt=False)
def _move_last(rules, w, out):
    """Extend the window to the next access after its last, or shorten it to the access
    before its last within it; an eviction due before the new last is dropped."""
    t = w[0]
    lo, hi = rules.acc_ptr[t], rules.acc_ptr[t + 1]
    pick = -1
    if np.random.random() < 0.5:  # the next access after last
        for a in range(lo, hi):
            if rules.acc_op[a] > w[4]:
                pick = rules.acc_op[a]
                break
    else:  # the access before last within the window
        for a in range(lo, hi):
            if w[3] <= rules.acc_op[a] < w[4]:
                pick = rules.acc_op[a]
    if pick < 0 or pick == w[4] or pick < w[3]:
        return False
    out[4] = pick
    if not (w[5] < 0 or w[6] > pick):
        out[5] = out[6] = -1
    return True


@njit(cache=True, nogil=True, _nrt=False)
def _move_first(rules, w, out):
    """A prefetch's first access becomes another of its accesses after its start (the last
    moving with it when later); the eviction is dropped."""
    t = w[0]
    lo, hi = rules.acc_ptr[t], rules.acc_ptr[t + 1]
    n = 0
    for a in range(lo, hi):
        k = rules.acc_op[a]
        if w[2] < k <= w[4] and k != w[3]:
            n += 1
    if n == 0:
        return False
    x = np.random.randint(0, n)
    for a in range(lo, hi):
        k = rules.acc_op[a]
        if w[2] < k <= w[4] and k != w[3]:
            if x == 0:
                out[3], out[4] = k, max(k, w[4])
                break
            x -= 1
    out[5] = out[6] = -1
    return True


@njit(cache=True, nogil=True, _nrt=False)
def _other_level(w, home, out):
    """Another level faster than the tensor's home."""
    level = np.random.randint(0, home - 1)
    out[1] = level + (level >= w[1])
    return True


@njit(cache=True, nogil=True, _nrt=False)
def _toggle_eviction(rules, w, out):
    """A window from the producer loses its eviction, or gains one at a random due op."""
    if w[5] >= 0:
        out[5] = out[6] = -1
        return True
    hi = rules.end[w[0]]
    issue = w[2] + 1
    if issue + 1 > hi:
        return False
    out[5], out[6] = issue, np.random.randint(issue + 1, hi + 1)
    return True


@njit(cache=True, nogil=True, _nrt=False)
def _changed_window(rules, b, s, lead, out):
    """`Annealer._changed_window`: one random edit of slot s's window (its kinds drawn
    evenly; a kind that does not apply to the window is no move)."""
    w = b.win[s]
    t, home = w[0], b.homes[w[0]]
    _copy(out, w)
    out[7] = -1
    kind = np.random.randint(0, 4)
    if kind == 0:
        return w[2] < w[3] and _shift_start(rules, w, lead, out)
    if kind == 1:  # extend or shorten
        if np.random.random() < 0.5:
            return _move_last(rules, w, out)
        return w[2] < w[3] and _move_first(rules, w, out)
    if kind == 2:
        return home > 1 and _other_level(w, home, out)
    return w[2] == w[3] == rules.producer[t] and _toggle_eviction(rules, w, out)


# ---------------------------------------------------------------------- the best and its journal
@njit(cache=True, nogil=True, _nrt=False)
def _note(b, kind, x):
    """Slot (kind 0) or tensor (kind 1) x changed since the best was copied."""
    n = b.journal[kind, JOURNAL]
    if n >= JOURNAL:
        b.meta[3] = 1
        return
    b.journal[kind, n] = x
    b.journal[kind, JOURNAL] = n + 1


@njit(cache=True, nogil=True, _nrt=False)
def _keep_best(b):
    """The current solution becomes the best: replay the journal (or copy everything)."""
    if b.meta[3]:
        for t in range(b.homes.shape[0]):
            b.best_homes[t] = b.homes[t]
            b.best_offsets[t] = b.offsets[t]
        for s in range(b.win.shape[0]):
            _copy(b.best_win[s], b.win[s])
    else:
        for j in range(b.journal[0, JOURNAL]):
            s = b.journal[0, j]
            _copy(b.best_win[s], b.win[s])
        for j in range(b.journal[1, JOURNAL]):
            t = b.journal[1, j]
            b.best_homes[t] = b.homes[t]
            b.best_offsets[t] = b.offsets[t]
    b.meta[2] = b.meta[1]
    b.meta[3] = 0
    b.journal[0, JOURNAL] = b.journal[1, JOURNAL] = 0


# ---------------------------------------------------------------------- moves, simulated
@njit(cache=True, nogil=True, _nrt=False)
def _row7(r, out):
    for j in range(7):
        out[j] = r[j]


@njit(cache=True, nogil=True, _nrt=False)
def _accept(new, cur, temperature):
    if new <= cur:
        return True
    if temperature <= 0:
        return False
    return np.random.random() < np.exp(-(new - cur) / (temperature * cur))


@njit(cache=True, nogil=True, _nrt=False)
def _window_proposal(rules, b, t, lead, new):
    """The slot a window move of t changes and whether it writes `new` there (a new or
    changed window; else the slot's window is dropped); slot -1 when there is no move."""
    r = np.random.random()
    nslots = 0
    s = b.head[t]
    while s >= 0:
        nslots += 1
        s = b.nxt[s]
    if nslots == 0 or r < 0.35:
        if not _new_window(rules, b, t, lead, new):
            return -1, False
        return _free_slot(b), True
    x = np.random.randint(0, nslots)
    slot = b.head[t]
    for _ in range(x):
        slot = b.nxt[slot]
    has_new = r >= 0.5
    if has_new and not _changed_window(rules, b, slot, lead, new):
        return -1, False
    return slot, has_new


@njit(cache=True, nogil=True, _nrt=False)
def _window_step(rules, b, sim, enc, state, ck, scratch, K, shift, t, lead, temperature):
    """`Annealer._window_move` tried: 1 kept, 0 not."""
    new, old = b.rows[0], b.rows[1]
    slot, has_new = _window_proposal(rules, b, t, lead, new)
    if slot < 0:
        return 0
    if slot < b.meta[1]:
        _copy(old, b.win[slot])
    else:
        old[:] = -1
    if not _set_window(rules, b, slot, t, new, has_new):
        return 0
    _row7(old, b.row_old)
    if has_new:
        _row7(new, b.row_new)
    else:
        b.row_new[:] = -1
    cur = b.stats[0]
    lat = kernels.try_change_kernel(sim, enc, state, ck, scratch, K, b.homes, rules.tensor_ptr,
                                    rules.tensor_access, rules.access_op, rules.size, slot,
                                    b.row_old, b.row_new, shift, cur)
    if _accept(lat, cur, temperature):
        c0 = 1 << 62
        for row in (b.row_old, b.row_new):
            if row[0] >= 0:
                c0 = min(c0, row[2])
        again = kernels.accept_kernel(sim, enc, state, ck, scratch, K, c0 // K, shift, cur, lat)
        if again != lat:
            raise AssertionError("replaying a kept window change gave another latency")
        b.stats[0] = lat
        _note(b, 0, slot)
        return 1
    _undo_window(rules, b, enc, slot, t, old, has_new)
    return 0


@njit(cache=True, nogil=True, _nrt=False)
def _undo_window(rules, b, enc, slot, t, old, has_new):
    """A window move not kept, undone in the encoding and on the board: exactly the old
    row (its offset included)."""
    kernels.change_kernel(enc, b.homes, rules.tensor_ptr, rules.tensor_access, rules.access_op,
                          rules.size, slot, b.row_new, b.row_old)
    if has_new:
        _book_window(rules, b, slot, b.win[slot], -1)
        _clear(b, slot)
    if old[0] >= 0:
        _book_window(rules, b, slot, old, 1)
        _put(b, slot, old, t)


@njit(cache=True, nogil=True, _nrt=False)
def _home_change(rules, b, t, lead):
    """`Annealer._home_move` on the board (the undo log holds what it started from); True
    when the result is valid."""
    home = b.homes[t]
    L = rules.capacity.shape[0]
    if L < 2:
        return False
    new = b.rows[2]
    if rules.producer[t] < 0 and home < L - 1 and np.random.random() < 0.5:  # stream
        new_home = np.random.randint(home + 1, L)
        s = b.head[t]
        while s >= 0:
            nxt = b.nxt[s]
            if not _set_window(rules, b, s, t, new, False):
                return False
            s = nxt
        if not _set_home(rules, b, t, new_home):
            return False
        for a in range(rules.acc_ptr[t], rules.acc_ptr[t + 1]):
            k = rules.acc_op[a]
            start = max(k - _lead(lead), 0)
            if start < k and not _covered(b, t, k):
                new[0], new[1], new[2], new[3], new[4], new[5], new[6], new[7] = t, home, start, k, k, -1, -1, -1
                slot = _free_slot(b)
                _set_window(rules, b, slot, t, new, True)
        return True
    new_home = np.random.randint(0, L - 1)
    new_home += new_home >= home
    s = b.head[t]
    while s >= 0:
        nxt = b.nxt[s]
        if b.win[s, 1] >= new_home and not _set_window(rules, b, s, t, new, False):
            return False
        s = nxt
    return _set_home(rules, b, t, new_home)


@njit(cache=True, nogil=True, _nrt=False)
def _encode_tensor(rules, b, enc, t, home, add, logged):
    """Take tensor t's copies out of the encoding (`add` False) or put them in (True): its
    logged old windows (`logged` > 0: that many undo rows) or its current ones, with home
    `home` (b.homes[t] is set to it; accesses no window serves are served by it)."""
    b.homes[t] = home
    b.row_old[:] = -1
    if add:
        for a in range(rules.tensor_ptr[t], rules.tensor_ptr[t + 1]):
            enc.serve[rules.tensor_access[a]] = home
    j = 0
    s = b.head[t] if logged < 0 else -1
    while True:
        if logged >= 0:
            if j >= logged:
                break
            slot = b.undo[j, 0]
            _row7(b.undo[j, 1:], b.row_new)
            j += 1
        else:
            if s < 0:
                break
            slot = s
            _row7(b.win[s], b.row_new)
            s = b.nxt[s]
        if add:
            kernels.change_kernel(enc, b.homes, rules.tensor_ptr, rules.tensor_access,
                                  rules.access_op, rules.size, slot, b.row_old, b.row_new)
        else:
            kernels.change_kernel(enc, b.homes, rules.tensor_ptr, rules.tensor_access,
                                  rules.access_op, rules.size, slot, b.row_new, b.row_old)


@njit(cache=True, nogil=True, _nrt=False)
def _position(enc, q, issue, due, t):
    """Position of the copy keyed (issue, due, tensor) in queue q (binary search)."""
    lo, hi = 0, enc.q_len[q]
    while lo < hi:
        mid = (lo + hi) // 2
        if kernels._before(enc.q_copy, enc.c_issue, enc.c_due, enc.c_tensor, q, mid, issue, due, t):
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True, _nrt=False)
def _guard_copies(b, enc, guard, g, t, run, home, logged, shift):
    """Rows (run, queue, position) of tensor t's copies in `enc` (its `logged` undo rows, or
    with logged < 0 its current windows) appended to `guard` from row g, and the copies
    counted into shift (+1 for the new run 0, -1 for the old run 1). Returns the rows used,
    -1 when the guard has no room (then no early stop)."""
    j = 0
    s = b.head[t] if logged < 0 else -1
    while g >= 0:
        if logged >= 0:
            if j >= logged:
                break
            r = b.undo[j, 1:]
            j += 1
        else:
            if s < 0:
                break
            r = b.win[s]
            s = b.nxt[s]
        for kind in range(2):
            if kind == 0 and r[2] < r[3]:
                issue, due = r[2], r[3]
            elif kind == 1 and r[5] >= 0:
                issue, due = r[5], r[6]
            else:
                continue
            q = 2 * home + kind
            shift[q] += 1 if run == 0 else -1
            if g >= guard.shape[0]:
                g = -1
                break
            guard[g, 0], guard[g, 1], guard[g, 2] = run, q, _position(enc, q, issue, due, t)
            g += 1
    return g


@njit(cache=True, nogil=True, _nrt=False)
def _changed_ops(rules, b, t, logged):
    """The first and last ops whose inputs a home move of t changes: its accesses (served by
    the home or by windows dropped or added), and its copies before (the `logged` undo rows)
    and after (its current windows), from the first issue to the last due. Before the first,
    both runs are the same (t's copies, issued no earlier, sort after every copy joined
    then); past the last, they meet once the changed copies are done (`kernels._stop_rules`).
    A weight is live over the whole program but accessed at a few ops: its home move
    re-simulates those ops, not the program."""
    lo, hi = rules.acc_op[rules.acc_ptr[t]], rules.acc_op[rules.acc_ptr[t + 1] - 1]
    for j in range(logged):
        lo, hi = min(lo, b.undo[j, 3]), max(hi, b.undo[j, 4], b.undo[j, 7])
    s = b.head[t]
    while s >= 0:
        lo, hi = min(lo, b.win[s, 2]), max(hi, b.win[s, 3], b.win[s, 6])
        s = b.nxt[s]
    return lo, hi


@njit(cache=True, nogil=True, _nrt=False)
def _home_step(rules, b, sim, enc, hstate, ck, scratch, K, shift, t, lead, temperature):
    """A home move tried: 1 kept, 0 not."""
    old_home, old_off = b.homes[t], b.offsets[t]
    m = _log_windows(b, t)
    if _home_change(rules, b, t, lead):
        new_home = b.homes[t]
        c0 = _encode_home_move(rules, b, enc, hstate, K, shift, t, old_home, new_home, m)
        cur = b.stats[0]
        lat = kernels.replay_kernel(sim, enc, hstate, ck, scratch, K, c0, shift, cur, True)
        if _accept(lat, cur, temperature):
            kernels.keep_kernel(ck, scratch, c0, hstate.stop[0], shift)
            b.stats[0] = lat
            _note(b, 1, t)
            for j in range(m):
                _note(b, 0, b.undo[j, 0])
            s = b.head[t]
            while s >= 0:
                _note(b, 0, s)
                s = b.nxt[s]
            return 1
        _encode_tensor(rules, b, enc, t, new_home, False, -1)
        _encode_tensor(rules, b, enc, t, old_home, True, m)
        b.homes[t] = new_home  # (the board's undo below books it out)
    _undo_home(rules, b, t, old_home, old_off, m)
    return 0


@njit(cache=True, nogil=True, _nrt=False)
def _log_windows(b, t):
    """t's windows into the undo log (slot, then the row); returns how many."""
    m = 0
    s = b.head[t]
    while s >= 0:
        b.undo[m, 0] = s
        _copy(b.undo[m, 1:], b.win[s])
        m += 1
        s = b.nxt[s]
    return m


@njit(cache=True, nogil=True, _nrt=False)
def _encode_home_move(rules, b, enc, hstate, K, shift, t, old_home, new_home, m):
    """t's copies moved in the encoding from its old home and `m` logged windows to its
    new ones, the replay's early stop set; returns the chunk the replay starts from."""
    # where the new run may meet the old one: past the tensor's last op, once every copy
    # of it is done in both runs (see kernels._stop_rules; the argument holds for any
    # number of changed copies), queues shifted by the copies they gained
    guard = hstate.guard
    guard[:, :] = -1
    shift[:] = 0
    g = _guard_copies(b, enc, guard, 0, t, 1, old_home, m, shift)
    _encode_tensor(rules, b, enc, t, old_home, False, m)
    _encode_tensor(rules, b, enc, t, new_home, True, -1)
    g = _guard_copies(b, enc, guard, g, t, 0, new_home, -1, shift)
    lo, hi = _changed_ops(rules, b, t, m)
    hstate.stop[1] = hi + 1 if g >= 0 else -1
    return lo // K


@njit(cache=True, nogil=True, _nrt=False)
def _undo_home(rules, b, t, old_home, old_off, m):
    """The board back to t's old home, offset and `m` logged windows."""
    s = b.head[t]
    while s >= 0:
        nxt = b.nxt[s]
        _book_window(rules, b, s, b.win[s], -1)
        _clear(b, s)
        s = nxt
    _book_home(rules, b, t, b.homes[t], -1)
    b.homes[t], b.offsets[t] = old_home, old_off
    _book_home(rules, b, t, old_home, 1)
    for j in range(m):
        _book_window(rules, b, b.undo[j, 0], b.undo[j, 1:], 1)
        _put(b, b.undo[j, 0], b.undo[j, 1:], t)


@njit(cache=True, nogil=True, _nrt=False)
def run_moves(rules, b, sim, enc, state, ck, scratch, K, hstate, moves, temperature, cooling,
              home_rate, lead, seed):
    """Try `moves` moves from `temperature` (relative to the latency; multiplied by `cooling`
    after each move), keeping each by the Metropolis rule; b.stats holds the latency, the best latency, the moves tried and kept.
    Returns GROW (the moves stop early) when a move might need more slots than the board
    has, else DONE."""
    np.random.seed(seed)
    shift = b.shift
    M = rules.tensors.shape[0]
    if M == 0:
        b.stats[2] += moves
        return DONE
    room = b.cand.shape[0] + 1  # the most windows one move adds
    for _ in range(moves):
        if b.meta[1] + room > b.win.shape[0]:
            return GROW
        if rules.by_traffic.shape[0] > 0 and np.random.random() < 0.5:
            j = min(np.searchsorted(rules.by_traffic, np.random.random(), side="right"), M - 1)
        else:
            j = np.random.randint(0, M)
        t = rules.tensors[j]
        b.stats[2] += 1
        if np.random.random() < home_rate:
            kept = _home_step(rules, b, sim, enc, hstate, ck, scratch, K, shift, t, lead, temperature)
        else:
            kept = _window_step(rules, b, sim, enc, state, ck, scratch, K, shift, t, lead, temperature)
        temperature *= cooling
        if kept:
            b.stats[3] += 1
            if b.stats[0] < b.stats[1] * (1 - 1e-12):
                b.stats[1] = b.stats[0]
                _keep_best(b)
    return DONE


# ---------------------------------------------------------------------- the anneal, driven from Python
FIXED_CHUNK = 1024  # moves per call with a move budget (then a run depends only on its seed)
CHUNK_SECONDS = 0.01  # with a time budget: calls of about this long (the clock is read between them)


def anneal(instance: Instance, start: ResidencySolution, rng: np.random.Generator,
           iterations: int, t_start: float, t_end: float, home_rate: float = 0.1,
           lead: float = 4.0, should_stop: Callable[[], bool] = lambda: False,
           on_best: Callable[[ResidencySolution, float], None] | None = None,
           seconds: float | None = None, best_every: float = 0.0) -> tuple[ResidencySolution, int]:
    """`sa.anneal` compiled: the same cooling and moves; `on_best(solution, latency)` hears
    the best at most every `best_every` seconds (between calls of the loop) and the
    solution returned is the best seen. Given both `iterations` and `seconds`, it cools
    over whichever runs out first."""
    if iterations <= 0 and not seconds:
        raise ValueError("anneal needs iterations > 0 or seconds")
    search = new_search(instance, start)
    ratio = (t_end / t_start) if t_start > 0 and t_end > 0 else 0.0
    began = time.perf_counter()
    heard, told = float(search.board.stats[1]), began
    chunk, per_move = 64, 0.0
    while True:
        b = search.board
        tried = int(b.stats[2])
        by_moves = tried / iterations if iterations > 0 else 0.0
        by_clock = (time.perf_counter() - began) / seconds if seconds else 0.0
        if max(by_moves, by_clock) >= 1.0 or should_stop():
            break
        if iterations > 0 and by_moves >= by_clock:  # the moves lead: the reference's schedule
            frac, n = by_moves, min(FIXED_CHUNK, iterations - tried)
            step = 1.0 / iterations  # of frac, per move
        else:
            frac, n = by_clock, chunk
            step = per_move / seconds  # the last call's seconds per move
            if iterations > 0:
                n = min(n, iterations - tried)
        temp = t_start * ratio ** frac if ratio > 0 else 0.0
        cooling = ratio ** step if ratio > 0 else 1.0
        t0 = time.perf_counter()
        status = run_moves(search.rules, b, search.sim, search.enc, search.state, search.ck,
                           search.scratch, search.K, search.hstate, n, temp, cooling, home_rate, lead,
                           int(rng.integers(2**31)))
        dt = time.perf_counter() - t0
        per_move = dt / max(1, int(search.board.stats[2]) - tried)
        if status == GROW:
            search = grow(instance, search)
        elif seconds:  # the next call about CHUNK_SECONDS long
            chunk = int(min(max(chunk * min(CHUNK_SECONDS / max(dt, 1e-6), 4.0), 16), 1 << 20))
        best = float(search.board.stats[1])
        if on_best is not None and best < heard and time.perf_counter() - told >= best_every:
            on_best(best_solution(instance, search.board), best)
            heard, told = best, time.perf_counter()
    return best_solution(instance, search.board), int(search.board.stats[2])
