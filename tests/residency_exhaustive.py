"""The residency optimum of a tiny instance by exhaustive search (a test oracle).

Every home of every tensor, and for each home every set of at most two windows of the
tensor (each window: any faster level, any start/first/last in the live range, a
defining window with or without any eviction), combined over all tensors and kept when
`violations` finds nothing. Only for instances of a few ops and tensors, such as
`tiny_instance`'s, on which the bound tests hold each relaxation below this optimum."""
from __future__ import annotations

import itertools

import numpy as np

from memplace.model import Instance
from memplace.model.residency import ResidencySolution, Window, simulate, violations
from randominst import random_instance_dict


def _windows(inst: Instance, t: int, home: int) -> list[Window]:
    lo, hi = int(inst.start[t]), int(inst.end[t])
    p = inst.tensors[t]["producer"]
    out = []
    for level in range(home):
        if p is not None:
            for last in range(p, hi + 1):
                out.append(Window(t, level, p, p, last))
                for due in range(p + 2, hi + 1):
                    for issue in range(p + 1, due):
                        out.append(Window(t, level, p, p, last, evict=(issue, due)))
        for start in range(lo, hi + 1):
            for first in range(start + 1, hi + 1):
                for last in range(first, hi + 1):
                    out.append(Window(t, level, start, first, last))
    return out


def _options(inst: Instance, t: int) -> list[tuple[int, tuple[Window, ...]]]:
    """(home, windows) of tensor t that break no rule on their own (others in the last level)."""
    L = inst.n_levels
    others = np.full(inst.n_tensors, L - 1, np.int64)
    out = []
    for home in range(L):
        if home < L - 1 and inst.size[t] > inst.capacity[home]:
            continue
        wins = _windows(inst, t, home)
        for n in range(3):
            for chosen in itertools.combinations(wins, n):
                homes = others.copy()
                homes[t] = home
                if not violations(inst, ResidencySolution(inst.name, homes, None, chosen)):
                    out.append((home, chosen))
    return out


def exhaustive_optimum(inst: Instance) -> float:
    """The least latency (seconds) over every valid solution searched (module docstring)."""
    assert not inst.has_addressed_levels
    options = [_options(inst, t) for t in range(inst.n_tensors)]
    best = np.inf
    for combo in itertools.product(*options):
        homes = np.array([home for home, _ in combo], np.int64)
        windows = tuple(w for _, wins in combo for w in wins)
        sol = ResidencySolution(inst.name, homes, None, windows)
        if not violations(inst, sol):
            best = min(best, simulate(inst, sol))
    return float(best)


def tiny_instance(seed: int, slow_copies: bool = False) -> Instance:
    """A random residency instance small enough for `exhaustive_optimum`: 3 or 4 ops, 3
    tensors, 2 or 3 levels, a positive latency, fast memory from tight to roomy, and on about half the levels
    a copy bandwidth slower or faster than the access bandwidth. `slow_copies`: on about
    70% of the levels, mostly slower (prefetches then wait in fast memory, where the
    delivery relaxation's rows bind)."""
    rng = np.random.default_rng(seed)
    data = random_instance_dict(seed, n_ops=int(rng.integers(3, 5)), n_tensors=3,
                                n_levels=int(rng.integers(2, 4)), tight=float(rng.choice([0.5, 1.0, 2.0])))
    share, ratios = (0.7, [0.02, 0.1, 0.3, 1.0, 3.0]) if slow_copies else (0.5, [0.05, 0.3, 1.0, 3.0])
    for level in data["hardware"]["levels"]:
        if rng.random() < share:
            level["copy_bandwidth"] = level["bandwidth"] * float(rng.choice(ratios))
    ops, tensors = data["workload"]["ops"], data["workload"]["tensors"]
    if not any(op["flops"] for op in ops) and not any(b for t in tensors for _, b in t["accesses"]):
        ops[0]["flops"] = 1000.0  # else the optimum is 0 and no bound has anything to prove (seed 6275)
    return Instance.from_dict(data)


def tiny_case(seed: int, slow_copies: bool = False) -> tuple[Instance, float]:
    """`tiny_instance(seed, slow_copies)` and its exhaustive optimum (finite: every tiny
    instance has a valid solution, all in the slowest level)."""
    inst = tiny_instance(seed, slow_copies)
    best = exhaustive_optimum(inst)
    assert np.isfinite(best)
    return inst, best
