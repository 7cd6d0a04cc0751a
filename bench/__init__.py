"""The benchmark harness and the command line."""
import memplace.model.core.numba_cache  # noqa: F401  first: Numba's cache folder before any kernel
