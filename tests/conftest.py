"""Tests follow the source folders (core, static, packing, bench, instances, cli; docs for the README and the site); the shared
helpers (`randominst.py`, `bench_solvers.py`) stay here, importable from every folder
because pytest puts this conftest's folder on sys.path."""

import os

import pytest
from hypothesis import settings

# Property tests draw the same examples on every run (derandomized), so CI's verdict on a
# commit does not depend on a lucky or unlucky draw (seed 6275 of the tiny instances once
# turned it red with no change). To explore new draws locally:
# `HYPOTHESIS_PROFILE=explore python -m pytest ...`.
settings.register_profile("repeatable", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

# A command a test runs in a subprocess prints the Python traceback of every thread if it
# dies of a native crash: the intermittent `munmap_chunk(): invalid pointer` abort of a
# process that compiled the Numba kernels (docs/residency-scale.md) then shows where it was.
os.environ.setdefault("PYTHONFAULTHANDLER", "1")

# A run of at least this many tests on a cold Numba cache (a fresh clone, or any edit of the
# source: the cache folder is keyed by the source's digest) compiles every kernel first.
WHOLE_RUN_TESTS = 300


@pytest.fixture(scope="session", autouse=True)
def compiled_kernels(request):
    """Compile every part of the Numba kernels before a large run, on two cores
    (`warm_parts(jobs=2)`, `memplace warmup --jobs 2`): the first test that needs them
    would otherwise compile them in this one process (the bench tests' `memplace bench`
    compiles every part, 230 s of a fresh clone's 880-s suite). A spawned worker that
    dies leaves its parts to this process (`warm_parts` compiles them here), so a crash
    costs time, never a test. A few tests (a quick loop) compile only what they use."""
    if len(request.session.items) >= WHOLE_RUN_TESTS:
        from memplace.solvers.warm import missing_parts, warm_parts
        missing = missing_parts()
        if missing:
            warm_parts(missing, jobs=2)
    yield
