"""Names shared by the compiled packing core and its Numba reference: the compiler
heuristics, the gap rules and the search kernel's statuses. Imports nothing, so the
Numba kernels work in a source tree whose C core is not built yet."""

FIRST_FIT = 0
BEST_FIT = 1
HEURISTICS = {
    "best-fit-size": 0,       # XLA global decreasing-size best-fit (spatial)
    "best-fit-length": 1,     # XLA global decreasing-size best-fit (temporal)
    "greedy-size": 2,         # TFLite greedy by size with gap filling
    "greedy-conflicts": 3,    # TVM greedy by conflicts
}

# statuses of the search kernel
PACKED, INFEASIBLE, NODE_LIMIT, TIME_LIMIT, STOPPED = 0, 1, 2, 3, 4
