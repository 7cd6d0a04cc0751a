"""Imported once by the harness's multiprocessing forkserver (`isolation.forkserver_context`):
every run is then forked from an interpreter that has imported memplace and its solvers
and loaded the model's compiled kernels from the Numba disk cache.

Only the model's kernels are loaded here: they start no threads, so forking after
them is safe. Solver kernels (and any library that may start threads, such as
HiGHS) are loaded in each run's own process, before its clock starts.
"""
from memplace.model import warmup
from memplace.solvers import registry

registry()
warmup()
