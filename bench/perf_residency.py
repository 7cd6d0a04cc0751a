"""Speed of the residency simulator (docs/spec.md section 11): kernel, C loop, Python reference,
batch, and incremental against full re-simulation of random one-window changes.

The workload is a solution with a window in the fastest level for every access that can
have one (`every_access_windows`), homes in the slowest level. The C loop is the
yardstick: the kernel's simulation loop written in C, compiled here with the machine's C
compiler (without floating-point contraction, so it rounds as the kernel does) and run
through ctypes on the very arrays the kernel reads. Kernel timings run inside compiled
loops, as the C ones do, so neither pays Python's call overhead; the Python API's
per-call time of `Simulation.try_change` is printed beside them.
"""
from __future__ import annotations

import ctypes
import time
from dataclasses import dataclass

import numpy as np

from memplace.bench.perf import best_of, c_library
from memplace.model import Instance
from memplace.model.core.jit import njit
from memplace.model.residency import Simulation, Window, reference, simulate_batch, valid_from
from memplace.model.residency import encoding, kernels

C_SOURCE = r"""
#include <stdint.h>
#define MAXQ 64
#define SIZE(q, i) c_size[q_copy[(q) * cap + (i)]]
static double advance(int64_t h, double idle, int until, int64_t tr_, int64_t tw_, int64_t *head,
                      int64_t *tail, double *left, const double *c_size, const int64_t *q_copy,
                      int64_t cap, double cb) {
    int64_t qr = 2 * h, qw = qr + 1;
    double used = 0.0;
    for (;;) {
        int r = head[qr] < tail[qr], w = head[qw] < tail[qw];
        if (!r && !w) return used;
        if (until && head[qr] > tr_ && head[qw] > tw_) return used;
        double dt;
        if (r && w) {
            double rate = cb / 2, x;
            double tr = left[qr] / rate, tw = left[qw] / rate;
            dt = tr < tw ? tr : tw;
            if (!until && dt > idle) {
                x = left[qr] - idle * rate; left[qr] = x > 0.0 ? x : 0.0;
                x = left[qw] - idle * rate; left[qw] = x > 0.0 ? x : 0.0;
                return used + idle;
            }
            if (tr <= dt) { head[qr]++; left[qr] = head[qr] < tail[qr] ? SIZE(qr, head[qr]) : 0.0; }
            else { x = left[qr] - dt * rate; left[qr] = x > 0.0 ? x : 0.0; }
            if (tw <= dt) { head[qw]++; left[qw] = head[qw] < tail[qw] ? SIZE(qw, head[qw]) : 0.0; }
            else { x = left[qw] - dt * rate; left[qw] = x > 0.0 ? x : 0.0; }
        } else {
            int64_t q = r ? qr : qw;
            dt = left[q] / cb;
            if (!until && dt > idle) {
                double x = left[q] - idle * cb; left[q] = x > 0.0 ? x : 0.0;
                return used + idle;
            }
            head[q]++; left[q] = head[q] < tail[q] ? SIZE(q, head[q]) : 0.0;
        }
        used += dt;
        if (!until) idle -= dt;
    }
}

static int64_t last_due(int64_t q, int64_t k, int64_t n, const int64_t *due_q, const int64_t *c_due,
                        const int64_t *q_copy, int64_t cap, const int64_t *head, const int64_t *tail) {
    if (due_q[q * n + k] == 0) return -1;
    for (int64_t i = tail[q] - 1; i >= head[q]; i--)
        if (c_due[q_copy[q * cap + i]] == k) return i;
    return -1;
}

double simulate(int64_t n, int64_t L, const double *compute, const int64_t *op_ptr,
                const double *access_time, const int64_t *serve, const double *cbw,
                const int64_t *c_issue, const int64_t *c_due, const double *c_size,
                const int64_t *q_copy, const int64_t *q_len, int64_t cap,
                const int64_t *due_count, const int64_t *due_q, int64_t reps) {
    int64_t head[MAXQ], tail[MAXQ], Q = 2 * L;
    double left[MAXQ], busy[MAXQ], need[MAXQ], clock = 0.0;
    for (int64_t rep = 0; rep < reps; rep++) {
        clock = 0.0;
        for (int64_t q = 0; q < Q; q++) { head[q] = 0; tail[q] = 0; left[q] = 0.0; }
        for (int64_t k = 0; k < n; k++) {
            double wait = 0.0;
            if (due_count[k] > 0) {
                for (int64_t h = 0; h < L; h++) {
                    int64_t tr = last_due(2 * h, k, n, due_q, c_due, q_copy, cap, head, tail);
                    int64_t tw = last_due(2 * h + 1, k, n, due_q, c_due, q_copy, cap, head, tail);
                    need[h] = 0.0;
                    if (tr >= 0 || tw >= 0)
                        need[h] = advance(h, 0.0, 1, tr, tw, head, tail, left, c_size, q_copy, cap, cbw[h]);
                    if (need[h] > wait) wait = need[h];
                }
                for (int64_t h = 0; h < L; h++)
                    advance(h, wait - need[h], 0, -1, -1, head, tail, left, c_size, q_copy, cap, cbw[h]);
            }
            clock += wait;
            for (int64_t q = 0; q < Q; q++)
                while (tail[q] < q_len[q] && c_issue[q_copy[q * cap + tail[q]]] <= k) {
                    if (head[q] == tail[q]) left[q] = SIZE(q, tail[q]);
                    tail[q]++;
                }
            double memory = 0.0;
            for (int64_t h = 0; h < L; h++) busy[h] = 0.0;
            for (int64_t a = op_ptr[k]; a < op_ptr[k + 1]; a++) {
                double x = access_time[a * L + serve[a]];
                memory += x;
                busy[serve[a]] += x;
            }
            double c = compute[k];
            double elapsed = c >= memory ? c : memory;
            for (int64_t h = 0; h < L; h++)
                if (head[2 * h] < tail[2 * h] || head[2 * h + 1] < tail[2 * h + 1]) {
                    double idle = elapsed - busy[h];
                    advance(h, idle > 0.0 ? idle : 0.0, 0, -1, -1, head, tail, left, c_size, q_copy, cap, cbw[h]);
                }
            clock += elapsed;
        }
    }
    return clock;
}
"""


def every_access_windows(inst: Instance, placement: np.ndarray, level: int = 0,
                         lead: int = 2) -> list[Window]:
    """A window in `level` for every access that can have one: the producer's write (and a
    read right after it) in a defining window evicted at once, every other access in a
    prefetch window of its own issued up to `lead` ops ahead. Deterministic."""
    out: list[Window] = []
    for t in range(inst.n_tensors):
        if placement[t] <= level:
            continue
        lo, hi = int(inst.start[t]), int(inst.end[t])
        p = inst.tensors[t]["producer"]
        steps = sorted(k for k, _ in inst.tensors[t]["accesses"])
        cursor, valid = lo, 0
        for k in steps:
            if p is not None and k == p:
                if hi >= p + 2:
                    last = p + 1 if p + 1 in steps else p
                    out.append(Window(t, level, p, p, last, evict=(p + 1, p + 2)))
                    cursor, valid = p + 2, p + 2
                else:
                    out.append(Window(t, level, p, p, hi))
                    cursor = valid = hi + 1
                continue
            if p is not None and valid == 0:
                valid = p + 1
            if k < cursor:
                continue  # already in the defining window
            start = max(cursor, valid, k - lead)
            if start < k:
                out.append(Window(t, level, start, k, k))
                cursor = k + 1
    return out


def random_changes(inst: Instance, windows: list[Window], count: int,
                   rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`count` random one-window changes that keep the windows well-formed: a prefetch's
    start moved anywhere its tensor's other windows and home allow (70%), or the window
    removed (30%). Returns slots, old rows and new rows (rows as `kernels.change_kernel`)."""
    by_tensor: dict[int, list[Window]] = {}
    for w in windows:
        by_tensor.setdefault(w.tensor, []).append(w)
    lowest = []
    for w in windows:
        others = [u.hold for u in by_tensor[w.tensor] if u.hold < w.start]
        v = valid_from(inst, by_tensor[w.tensor], w.tensor)
        lowest.append(max([int(inst.start[w.tensor]), v, *(h + 1 for h in others)]))
    slots = rng.integers(0, len(windows), count)
    old = np.empty((count, 7), np.int64)
    new = np.full((count, 7), -1, np.int64)
    for j, s in enumerate(slots.tolist()):
        w = windows[s]
        old[j] = _row(w)
        if w.is_prefetch and rng.random() < 0.7 and lowest[s] < w.first:
            start = int(rng.integers(lowest[s], w.first))
            new[j] = _row(Window(w.tensor, w.level, start, w.first, w.last))
    return slots.astype(np.int64), old, new


def _row(w: Window) -> np.ndarray:
    return np.array([w.tensor, w.level, w.start, w.first, w.last,
                     -1 if w.evict is None else w.evict[0], -1 if w.evict is None else w.evict[1]],
                    np.int64)


@njit(cache=True, nogil=True, _nrt=False)
def _repeat(reps, sim, enc, state, ck, shift):
    total = 0.0
    for _ in range(reps):
        state.clock[0] = 0.0
        state.head[:] = 0
        state.tail[:] = 0
        state.left[:] = 0.0
        total += kernels.run_kernel(sim, enc, state, 0, 1 << 40, ck, False, -1, ck, shift, 0.0,
                                    state.no_times, state.no_times, state.no_done)
    return total


@njit(cache=True, nogil=True, _nrt=False)
def _changes(incremental, sim, enc, state, ck, scratch, K, place, tensor_ptr, tensor_access,
             access_op, size, slots, old, new, shift, latency, out):
    """Latency after each change (undone after it), incrementally or by a full re-simulation."""
    for j in range(slots.shape[0]):
        if incremental:
            out[j] = kernels.try_change_kernel(sim, enc, state, ck, scratch, K, place, tensor_ptr,
                                               tensor_access, access_op, size, slots[j], old[j],
                                               new[j], shift, latency)
        else:
            kernels.change_kernel(enc, place, tensor_ptr, tensor_access, access_op, size, slots[j],
                                  old[j], new[j])
            out[j] = _repeat(1, sim, enc, state, ck, shift)
        kernels.change_kernel(enc, place, tensor_ptr, tensor_access, access_op, size, slots[j],
                              new[j], old[j])
    return out


@dataclass
class ResidencyPerf:
    windows: int
    copies: int
    kernel_ns: float
    c_ns: float | None
    python_ref_ns: float
    encode_ns: float
    batch_ns: float
    full_ns: float
    incremental_ns: float
    api_ns: float
    early_stops: float  # share of incremental runs that met the old run before the end

    def line(self) -> str:
        c = "nan" if self.c_ns is None else f"{self.c_ns:.1f}"
        return (f"perf-residency kernel_ns={self.kernel_ns:.1f} c_ns={c} "
                f"python_ref_ns={self.python_ref_ns:.1f} encode_ns={self.encode_ns:.1f} "
                f"batch_ns={self.batch_ns:.1f} full_ns={self.full_ns:.1f} "
                f"incremental_ns={self.incremental_ns:.1f} api_ns={self.api_ns:.1f}")


def _best_of(fn, repeats: int) -> float:
    """Least CPU seconds of `repeats` calls: CPU time, not wall time, so that other jobs on
    a shared machine do not count (each timed call runs on one thread)."""
    return best_of(fn, repeats, time.thread_time)


def _c_ns(inst: Instance, enc: encoding.Enc, reps: int, repeats: int, expected: float) -> float | None:
    lib = c_library(C_SOURCE, "residency", ("-ffp-contract=off",))
    if lib is None or 2 * inst.n_levels > 64:
        return None
    lib.simulate.restype = ctypes.c_double
    ptr = lambda a: a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
    i64 = ctypes.c_int64
    args = (i64(inst.n_ops), i64(inst.n_levels), ptr(inst.compute), ptr(inst.op_ptr),
            ptr(inst.access_time), ptr(enc.serve), ptr(inst.copy_bandwidth), ptr(enc.c_issue),
            ptr(enc.c_due), ptr(enc.c_size), ptr(enc.q_copy), ptr(enc.q_len), i64(enc.q_copy.shape[1]),
            ptr(enc.due_count), ptr(enc.due_q))
    got = lib.simulate(*args, i64(1))
    if not np.isclose(got, expected, rtol=1e-12, atol=0):
        raise RuntimeError(f"the C yardstick ({got!r}) disagrees with the Numba kernel ({expected!r})")
    return _best_of(lambda: lib.simulate(*args, i64(reps)), repeats) / reps * 1e9


def measure(inst: Instance, changes: int = 2000, K: int = 2, seed: int = 0,
            repeats: int = 5) -> ResidencyPerf:
    """Nanoseconds per simulation (kernel, C, reference, batch) and per one-window change."""
    i = inst
    rng = np.random.default_rng(seed)
    place = i.slowest_placement()
    windows = every_access_windows(i, place)
    enc = encoding.encode(i, place, windows)
    sim, state = encoding.sim_of(i), encoding.initial_state(i)
    ck = encoding.no_checkpoints(i)
    shift = np.zeros(2 * i.n_levels, np.int64)
    expected = _repeat(1, sim, enc, state, ck, shift)
    reps = 200
    kernel = _best_of(lambda: _repeat(reps, sim, enc, state, ck, shift), repeats) / reps
    c_ns = _c_ns(i, enc, reps, repeats, expected)
    plain = place.tolist()
    python_ref = _best_of(lambda: reference.simulate(i.data, plain, windows), 2)
    encode_s = _best_of(lambda: encoding.encode(i, place, windows), repeats)
    sets = [windows] * 32
    simulate_batch(i, place, sets[:1])
    batch = _best_of(lambda: simulate_batch(i, place, sets), repeats) / len(sets)
    # one-window changes, each undone after it is measured: full vs incremental re-simulation
    slots, old, new = random_changes(i, windows, changes, rng)
    model = Simulation(i, place, windows, K=K, spare=8)
    args = (model.sim, model.enc, model.state, model.ck, model.scratch, K, place, i.tensor_ptr,
            i.tensor_access, i.access_op, i.size, slots, old, new, model.shift, model.latency)
    out_full, out_incr = np.empty(changes), np.empty(changes)
    _changes(False, *args, out_full)
    _changes(True, *args, out_incr)
    if not np.allclose(out_full, out_incr, rtol=1e-12, atol=0):
        raise RuntimeError("incremental and full re-simulation disagree")
    full = incremental = float("inf")
    for _ in range(repeats):  # interleaved, so that both see the same machine
        full = min(full, _best_of(lambda: _changes(False, *args, out_full), 1) / changes)
        incremental = min(incremental, _best_of(lambda: _changes(True, *args, out_incr), 1) / changes)
    model.try_change(int(slots[0]), None)  # compile (or load) the Python path's kernels first
    model.reject()
    stops = 0
    began = time.thread_time()
    for j in range(changes):
        w = None if new[j, 0] < 0 else Window(*(int(x) for x in new[j, :5]))
        model.try_change(int(slots[j]), w)
        stops += model._pending is not None and model._pending[4] >= 0
        model.reject()
    api = (time.thread_time() - began) / changes
    return ResidencyPerf(len(windows), int(enc.q_len.sum()), kernel * 1e9, c_ns, python_ref * 1e9,
                         encode_s * 1e9, batch * 1e9, full * 1e9, incremental * 1e9, api * 1e9,
                         stops / changes)


@dataclass
class SaSpeed:
    engine: str
    moves: int  # evaluations: moves tried (a refused move counts, as in the search's own count)
    anneal_s: float  # seconds inside the anneals (msa's start left out)
    latency: float
    msa_latency: float

    @property
    def per_s(self) -> float:
        return self.moves / self.anneal_s if self.anneal_s > 0 else 0.0


def sa_speed(inst: Instance, seconds: float, engines=("python", "compiled"), seed: int = 0) -> list[SaSpeed]:
    """`sa` run through solve() for `seconds` with each move loop (one anneal from msa's
    solution, no static start, so that the seconds go to moves), after a short warm run
    that loads its kernels: moves tried per second of annealing, and the latency reached."""
    from memplace.solvers import solve
    msa = solve(inst, "msa", time_limit=None, problem="residency", homes="best").latency
    out = []
    for engine in engines:
        solve(inst, "sa", time_limit=None, problem="residency", engine=engine, iterations=200,
              restarts=1, static_moves=0)
        res = solve(inst, "sa", time_limit=seconds, problem="residency", seed=seed, engine=engine,
                    restarts=1, static_moves=0)
        out.append(SaSpeed(engine, int(res.notes.get("moves", 0)), float(res.notes.get("anneal_s", 0.0)),
                           res.latency, msa))
    return out


@dataclass
class GaSpeed:
    engine: str
    evaluations: int  # chromosomes decoded by msa's allocator and simulated
    decode_s: float  # seconds spent evaluating them (the GA's operators left out)
    latency: float
    msa_latency: float

    @property
    def per_s(self) -> float:
        return self.evaluations / self.decode_s if self.decode_s > 0 else 0.0


def ga_speed(inst: Instance, seconds: float, engines=("python", "compiled"), seed: int = 0) -> list[GaSpeed]:
    """`ga` run through solve() for `seconds` with each decoder (msa's allocator in plain
    Python, compiled), homes slowest and compiler only (no static sa start, so that the
    seconds go to evaluations), after a short warm run that loads its kernels: chromosomes
    evaluated per second of evaluating, and the latency reached."""
    from memplace.solvers import solve
    msa = solve(inst, "msa", time_limit=None, problem="residency", homes="best").latency
    out = []
    for engine in engines:
        solve(inst, "ga", time_limit=None, problem="residency", engine=engine, generations=1,
              static_moves=0)
        res = solve(inst, "ga", time_limit=seconds, problem="residency", seed=seed, engine=engine,
                    static_moves=0)
        out.append(GaSpeed(engine, int(res.notes.get("decoded", 0)),
                           float(res.notes.get("decode_s", 0.0)), res.latency, msa))
    return out
