"""The compiled packing core (`_core.c`), as the packing library calls it.

`memplace pack` must start like a binary, so its kernels are C built at install
time by the package's build backend (setup.py), not Numba compiled at run time:
importing this module loads no JIT. The Numba kernels (`heuristics`,
`offset_index`, `search`) stay beside it as the reference the tests hold it
against, and as the kernels other parts of memplace (rectify, the residency
solvers) call from their own Numba code.
"""
from __future__ import annotations

import numpy as np

try:
    from memplace.model.packing import _core
except ImportError as exc:  # a source tree used without `pip install`
    raise ImportError("memplace's compiled packing core is not built: install memplace with "
                      "pip (pip install . or pip install -e .), which needs a C compiler "
                      f"({exc})") from None

# statuses of the search kernel
PACKED, INFEASIBLE, NODE_LIMIT, TIME_LIMIT, STOPPED = 0, 1, 2, 3, 4

FIRST_FIT = 0
BEST_FIT = 1
HEURISTICS = {
    "best-fit-size": 0,       # XLA global decreasing-size best-fit (spatial)
    "best-fit-length": 1,     # XLA global decreasing-size best-fit (temporal)
    "greedy-size": 2,         # TFLite greedy by size with gap filling
    "greedy-conflicts": 3,    # TVM greedy by conflicts
}

search = _core.search


def heuristic_offsets(sizes: np.ndarray, lowers: np.ndarray, uppers: np.ndarray,
                      alignments: np.ndarray, capacity: int, which: int) -> np.ndarray:
    """Offsets by heuristic number `which` (see `heuristics.heuristic_offsets`); -1 = did
    not fit."""
    out = np.full(sizes.size, -1, np.int64)
    _core.heuristic_offsets(_i64(sizes), _i64(lowers), _i64(uppers), _i64(alignments),
                            int(capacity), int(which), out)
    return out


def place_in_order(order: np.ndarray, sizes: np.ndarray, lowers: np.ndarray,
                   uppers: np.ndarray, alignments: np.ndarray, capacity: int,
                   gap_rule: int) -> np.ndarray:
    """Offsets for buffers placed in `order` by `gap_rule` (see `heuristics.place_in_order`)."""
    out = np.full(sizes.size, -1, np.int64)
    _core.place_in_order(_i64(order), _i64(sizes), _i64(lowers), _i64(uppers),
                         _i64(alignments), int(capacity), int(gap_rule), out)
    return out


def _i64(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int64)
