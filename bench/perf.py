"""Speed of the cost model: single, batch, delta and the Python reference, against a C loop.

The C loop is the yardstick of the foundation issue ("within 2x of a tight C loop
over the same CSR arrays"): it is compiled here from the source below with the
machine's C compiler (if there is one) and run through ctypes on the very arrays
the Numba kernels read, so both sides do the same work.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memplace.model import Instance
from memplace.model.core.jit import njit
from memplace.model.static import kernels
from memplace.model.static import reference as ref

C_SOURCE = r"""
#include <stdint.h>
void latency_batch(const int64_t *pop, int64_t P, int64_t T, const double *compute,
                   int64_t n_ops, const int64_t *op_ptr, const int64_t *op_tensor,
                   const double *access_time, int64_t L, double *out) {
    for (int64_t p = 0; p < P; p++) {
        const int64_t *place = pop + p * T;
        double total = 0.0;
        for (int64_t k = 0; k < n_ops; k++) {
            double memory = 0.0;
            for (int64_t a = op_ptr[k]; a < op_ptr[k + 1]; a++)
                memory += access_time[a * L + place[op_tensor[a]]];
            double c = compute[k];
            total += c > memory ? c : memory;
        }
        out[p] = total;
    }
}
"""


@njit(cache=True, nogil=True)
def _delta_loop(place, tensors, levels, a):
    total = 0.0
    for i in range(tensors.shape[0]):
        total += kernels.move_delta_kernel(place, tensors[i], levels[i], a)
    return total


@dataclass
class PerfFigures:
    single_ns: float
    batch_ns: float
    delta_ns: float
    python_ref_ns: float
    c_batch_ns: float | None

    def line(self) -> str:
        c = "nan" if self.c_batch_ns is None else f"{self.c_batch_ns:.1f}"
        return (f"perf single_ns={self.single_ns:.1f} batch_ns={self.batch_ns:.1f} "
                f"delta_ns={self.delta_ns:.1f} python_ref_ns={self.python_ref_ns:.1f} c_batch_ns={c}")


def best_of(fn, repeats: int, clock=time.perf_counter) -> float:
    """Least seconds of `repeats` calls of `fn` by `clock` (wall time unless told)."""
    best = float("inf")
    for _ in range(repeats):
        began = clock()
        fn()
        best = min(best, clock() - began)
    return best


def c_library(source: str, stem: str, flags: tuple[str, ...] = ()) -> ctypes.CDLL | None:
    """`source` compiled (-O3 -march=native, plus `flags`) into a shared library, once per
    source text (cached in the temporary folder by its hash); None without a C compiler
    or when it does not compile. The C loops are the speed references of `memplace perf`."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return None
    digest = hashlib.sha256(source.encode()).hexdigest()[:12]
    folder = Path(tempfile.gettempdir()) / "memplace-perf"
    folder.mkdir(exist_ok=True)
    lib = folder / f"{stem}_{digest}.so"
    if not lib.exists():
        src = folder / f"{stem}_{digest}.c"
        src.write_text(source)
        tmp = folder / f".{os.getpid()}.so"
        done = subprocess.run([compiler, "-O3", "-march=native", *flags, "-shared", "-fPIC", str(src),
                               "-o", str(tmp)], capture_output=True)
        if done.returncode != 0:
            return None
        os.replace(tmp, lib)
    return ctypes.CDLL(str(lib))


def _c_batch_ns(inst: Instance, pop: np.ndarray, repeats: int) -> float | None:
    lib = c_library(C_SOURCE, "latency")
    if lib is None:
        return None
    out = np.empty(pop.shape[0])
    ptr = lambda a: a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
    args = (ptr(pop), ctypes.c_int64(pop.shape[0]), ctypes.c_int64(pop.shape[1]), ptr(inst.compute),
            ctypes.c_int64(inst.n_ops), ptr(inst.op_ptr), ptr(inst.op_tensor), ptr(inst.access_time),
            ctypes.c_int64(inst.n_levels), ptr(out))
    seconds = best_of(lambda: lib.latency_batch(*args), repeats)
    expected = np.empty(pop.shape[0])
    kernels.latency_batch_kernel(pop, inst.compute, inst.op_ptr, inst.op_tensor, inst.access_time, expected)
    if not np.allclose(out, expected, rtol=1e-12, atol=0):
        raise RuntimeError("the C yardstick disagrees with the Numba kernel")
    return seconds / pop.shape[0] * 1e9


def measure(inst: Instance, population: int = 1024, moves: int = 1_000_000, seed: int = 0,
            repeats: int = 5) -> PerfFigures:
    """Nanoseconds per placement (single call, inside a batch, Python reference) and per move."""
    rng = np.random.default_rng(seed)
    i = inst
    pop = rng.integers(0, i.n_levels, (population, i.n_tensors)).astype(np.int64)
    place = pop[0].copy()
    out = np.empty(population)
    args = (i.compute, i.op_ptr, i.op_tensor, i.access_time)
    kernels.latency_kernel(place, *args)  # compile / load from cache before timing
    calls = 2000
    single = best_of(lambda: [kernels.latency_kernel(place, *args) for _ in range(calls)], repeats) / calls
    batch = best_of(lambda: kernels.latency_batch_kernel(pop, *args, out), repeats) / population
    tensors = rng.integers(0, i.n_tensors, moves).astype(np.int64)
    levels = rng.integers(0, i.n_levels, moves).astype(np.int64)
    delta_args = (place, tensors, levels, i.arrays)
    _delta_loop(*delta_args)
    delta = best_of(lambda: _delta_loop(*delta_args), repeats) / moves
    plain = place.tolist()
    ref_calls = 3
    python_ref = best_of(lambda: [ref.latency(i.data, plain) for _ in range(ref_calls)], 2) / ref_calls
    return PerfFigures(single * 1e9, batch * 1e9, delta * 1e9, python_ref * 1e9,
                       _c_batch_ns(i, pop, repeats))


# ---------------------------------------------------------------------------
# Scaling: how each step grows with the instance, on the synthetic generator.

SCALING_HARDWARE = "nnpi"
# compiler = xla-msa; random-greedy is timed with RANDOM_GREEDY_SAMPLES fills (each
# costs one xla-msa fill), the others are one fill each.
SCALING_HEURISTICS = ("compiler", "greedy-size", "topo-first-fit", "benefit-density",
                      "random-greedy", "all-slowest")
RANDOM_GREEDY_SAMPLES = 10
SA_MOVES = 1_000_000


@dataclass
class ScalingRow:
    n_ops: int
    n_tensors: int
    seconds: dict[str, float]  # column -> seconds


def scaling_columns(sa_moves: int = SA_MOVES) -> list[str]:
    """Column names of the scaling table, in order."""
    heur = [f"{h} ({RANDOM_GREEDY_SAMPLES} fills)" if h == "random-greedy" else h
            for h in SCALING_HEURISTICS]
    return ["load JSON", *heur, f"sa {sa_moves:.0e} moves".replace("+0", ""), "MILP build"]


def _synthetic_file(n_ops: int, folder: Path) -> Path:
    """The instance file of synth-{n_ops}@nnpi (built by the catalog's synthetic
    generator, as `memplace instances export` writes it), written once into `folder`."""
    import json
    from memplace.instances import build_instance
    from memplace.model.core.files import write_atomically
    path = folder / f"synth-{n_ops}@{SCALING_HARDWARE}.json"
    if not path.exists():
        write_atomically(path, json.dumps(build_instance(f"synth-{n_ops}", SCALING_HARDWARE)),
                         "instance file")
    return path


def scaling_row(n_ops: int, folder: Path, sa_moves: int = SA_MOVES) -> ScalingRow:
    """Seconds of every scaling column on synth-{n_ops}@nnpi (warm: run one on a
    small instance first, so that no column includes Numba compile time)."""
    from memplace.instances import load
    from memplace.solvers import solve
    from memplace.solvers.scaling import anneal_seconds, milp_build_seconds
    path = _synthetic_file(n_ops, folder)
    columns = scaling_columns(sa_moves)
    seconds: dict[str, float] = {}
    began = time.perf_counter()
    inst = load(path)
    seconds[columns[0]] = time.perf_counter() - began
    for column, solver in zip(columns[1:], SCALING_HEURISTICS):
        params = {"samples": RANDOM_GREEDY_SAMPLES} if solver == "random-greedy" else {}
        began = time.perf_counter()
        solve(inst, solver, time_limit=3600, **params)
        seconds[column] = time.perf_counter() - began
    seconds[columns[-2]] = anneal_seconds(inst, sa_moves)
    seconds[columns[-1]] = milp_build_seconds(inst)
    return ScalingRow(inst.n_ops, inst.n_tensors, seconds)


def scaling_table(rows: list[ScalingRow], sa_moves: int = SA_MOVES) -> str:
    """The rows as a Markdown table, seconds with 3 significant digits."""
    columns = scaling_columns(sa_moves)
    lines = ["| ops | tensors | " + " | ".join(columns) + " |",
             "|" + "---:|" * (len(columns) + 2)]
    for row in rows:
        cells = [f"{row.seconds[c]:.3g}" for c in columns]
        lines.append(f"| {row.n_ops:,} | {row.n_tensors:,} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
