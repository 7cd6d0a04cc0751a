"""Random window sets that obey every rule of docs/spec.md section 10 except capacity and offsets
(the simulator does not read either), for property tests."""
from __future__ import annotations

import numpy as np

from memplace.model import Instance
from memplace.bench.perf_residency import every_access_windows  # noqa: F401 (re-exported)
from memplace.model.residency import Window


def random_homes(inst: Instance, rng: np.random.Generator) -> np.ndarray:
    """Homes anywhere (capacity ignored), mostly below level 0 so windows are possible."""
    return rng.integers(min(1, inst.n_levels - 1), inst.n_levels, inst.n_tensors).astype(np.int64)


def random_windows(inst: Instance, placement: np.ndarray, rng: np.random.Generator,
                   density: float = 0.7) -> list[Window]:
    """Per tensor: maybe a defining window (evicted or covering every access), then prefetch
    windows in increasing, disjoint occupancies starting where the home is valid."""
    out: list[Window] = []
    for t in range(inst.n_tensors):
        h = int(placement[t])
        if h == 0 or rng.random() > density:
            continue
        lo, hi = int(inst.start[t]), int(inst.end[t])
        p = inst.tensors[t]["producer"]
        steps = sorted(k for k, _ in inst.tensors[t]["accesses"])
        cursor, valid = lo, 0 if p is None else p + 1
        if p is not None and rng.random() < 0.5:
            level = int(rng.integers(0, h))
            if hi >= p + 2 and rng.random() < 0.6:
                due = int(rng.integers(p + 2, hi + 1))
                issue = int(rng.integers(p + 1, due))
                before = [k for k in steps if k < due]  # accesses before due must be in the window
                last = int(rng.integers(max(before), hi + 1))
                win = Window(t, level, p, p, last, evict=(issue, due))
                valid = due
            else:
                last = int(rng.integers(steps[-1], hi + 1))
                win = Window(t, level, p, p, last)
                valid = hi + 1  # never: no later window
            out.append(win)
            cursor = win.hold + 1
        while rng.random() < 0.8:
            begin = max(cursor, valid)
            if begin >= hi:
                break
            start = int(rng.integers(begin, hi))
            first = int(rng.integers(start + 1, min(hi, start + 4) + 1))
            last = int(rng.integers(first, min(hi, first + 3) + 1))
            out.append(Window(t, int(rng.integers(0, h)), start, first, last))
            cursor = last + 1
    order = rng.permutation(len(out))
    return [out[j] for j in order]
