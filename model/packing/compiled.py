"""The compiled packing core (`_core.c`), as the packing library calls it.

`memplace pack` must start like a binary, so its kernels are C built at install
time by the package's build backend (setup.py), not Numba compiled at run time:
importing this module loads no JIT. The Numba kernels (`heuristics`,
`offset_index`, `search`) stay beside it as the reference the tests hold it
against, and as the kernels other parts of memplace (rectify, the residency
solvers) call from their own Numba code.
"""
from __future__ import annotations

import warnings

import numpy as np

from memplace.model.packing.rules import (BEST_FIT, FIRST_FIT, HEURISTICS,  # noqa: F401
                                          INFEASIBLE, NODE_LIMIT, PACKED, STOPPED, TIME_LIMIT)

try:
    from memplace.model.packing import _core
except ImportError:  # installed without a C compiler (setup.py: optional), or not rebuilt
    _core = None
    warnings.warn("memplace's compiled packing core is not built (pip install builds it when "
                  "a C compiler and the Python headers are there): packing falls back to the "
                  "Numba kernels, which compile on first use", RuntimeWarning, stacklevel=2)


def heuristic_offsets(sizes: np.ndarray, lowers: np.ndarray, uppers: np.ndarray,
                      alignments: np.ndarray, capacity: int, which: int,
                      deadline: float | None = None) -> np.ndarray:
    """Offsets by heuristic number `which` (see `heuristics.heuristic_offsets`); -1 = did
    not fit. The core stops at `deadline` (`time.perf_counter()` seconds), leaving the
    buffers not yet placed at -1; the Numba fallback ignores it."""
    if _core is None:
        from memplace.model.packing import heuristics
        return heuristics.heuristic_offsets(_i64(sizes), _i64(lowers), _i64(uppers),
                                            _i64(alignments), np.int64(capacity), which)
    out = np.full(sizes.size, -1, np.int64)
    _core.heuristic_offsets(_i64(sizes), _i64(lowers), _i64(uppers), _i64(alignments),
                            int(capacity), int(which), out, _stop(deadline))
    return out


def place_in_order(order: np.ndarray, sizes: np.ndarray, lowers: np.ndarray,
                   uppers: np.ndarray, alignments: np.ndarray, capacity: int,
                   gap_rule: int, deadline: float | None = None) -> np.ndarray:
    """Offsets for buffers placed in `order` by `gap_rule` (see `heuristics.place_in_order`);
    `deadline` as for `heuristic_offsets`."""
    if _core is None:
        from memplace.model.packing import heuristics
        return heuristics.place_in_order(_i64(order), _i64(sizes), _i64(lowers), _i64(uppers),
                                         _i64(alignments), np.int64(capacity), gap_rule)
    out = np.full(sizes.size, -1, np.int64)
    _core.place_in_order(_i64(order), _i64(sizes), _i64(lowers), _i64(uppers),
                         _i64(alignments), int(capacity), int(gap_rule), out, _stop(deadline))
    return out


def place_around(order: np.ndarray, sizes: np.ndarray, lowers: np.ndarray, uppers: np.ndarray,
                 alignments: np.ndarray, capacity: int, gap_rule: int,
                 fixed: np.ndarray, deadline: float | None = None) -> np.ndarray:
    """Offsets with every buffer whose `fixed` offset is >= 0 kept there and the others, in
    `order`, placed around them by `gap_rule` (see `heuristics.place_around`); -1 = did
    not fit; `deadline` as for `heuristic_offsets`."""
    if _core is None:
        from memplace.model.packing import heuristics
        return heuristics.place_around(_i64(order), _i64(sizes), _i64(lowers), _i64(uppers),
                                       _i64(alignments), np.int64(capacity), gap_rule,
                                       _i64(fixed))
    out = np.array(fixed, dtype=np.int64, copy=True)
    _core.place_around(_i64(order), _i64(sizes), _i64(lowers), _i64(uppers),
                       _i64(alignments), int(capacity), int(gap_rule), out, _stop(deadline))
    return out


def search(*args):
    """The canonical-packing search kernel (see `search.search` for its arguments)."""
    if _core is None:
        from memplace.model.packing.search import search as reference
        return reference(*args)
    return _core.search(*args)


def _stop(deadline: float | None) -> float:
    return -1.0 if deadline is None else max(0.0, float(deadline))


def _i64(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int64)
