"""The compiled packing core (`_core.c`) against its Numba reference, bit for bit:
the same offsets from every heuristic and from first/best fit in any order, the same
status, offsets and node count from the search kernel."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memplace.model.packing import BENCHMARKS, compiled
from memplace.model.packing import exact
from memplace.model.packing import heuristics as reference
from memplace.model.packing import search as reference_search
from memplace.model.packing.minimalloc_csv import read_buffers


@st.composite
def arrays(draw, max_n=40):
    n = draw(st.integers(1, max_n))
    lowers = np.array(draw(st.lists(st.integers(0, 30), min_size=n, max_size=n)), np.int64)
    lengths = np.array(draw(st.lists(st.integers(1, 20), min_size=n, max_size=n)), np.int64)
    sizes = np.array(draw(st.lists(st.integers(0, 50), min_size=n, max_size=n)), np.int64)
    aligns = np.array(draw(st.lists(st.sampled_from([1, 1, 2, 4, 8]), min_size=n, max_size=n)),
                      np.int64)
    return sizes, lowers, lowers + lengths, aligns


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arrays(), st.integers(1, 400), st.randoms(use_true_random=False))
def test_compiled_heuristics_equal_the_numba_reference(case, capacity, rnd):
    sizes, lowers, uppers, aligns = case
    for which in compiled.HEURISTICS.values():
        got = compiled.heuristic_offsets(sizes, lowers, uppers, aligns, capacity, which)
        want = reference.heuristic_offsets(sizes, lowers, uppers, aligns, np.int64(capacity), which)
        assert got.tolist() == want.tolist(), which
    order = np.array(rnd.sample(range(sizes.size), sizes.size), np.int64)
    for rule in (compiled.FIRST_FIT, compiled.BEST_FIT):
        got = compiled.place_in_order(order, sizes, lowers, uppers, aligns, capacity, rule)
        want = reference.place_in_order(order, sizes, lowers, uppers, aligns, np.int64(capacity),
                                        rule)
        assert got.tolist() == want.tolist()


def both_searches(sizes, lowers, uppers, aligns, capacity, valley_first, node_limit):
    prep = exact._prepare(sizes, lowers, uppers, aligns)
    out = []
    for kernel in (compiled.search, reference_search.search):
        offsets = np.full(sizes.size, -1, np.int64)
        status, nodes = kernel(sizes, aligns, *prep, np.int64(capacity), valley_first,
                               np.int64(node_limit), -1.0, np.zeros(1, np.int64), offsets)
        out.append((int(status), int(nodes), offsets.tolist()))
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arrays(max_n=14), st.integers(0, 30), st.booleans())
def test_compiled_search_equals_the_numba_reference(case, slack, valley_first):
    sizes, lowers, uppers, aligns = case
    sizes = np.maximum(sizes, 1) // 4 + 1
    peak = max(int(sizes[(lowers <= t) & (t < uppers)].sum()) for t in range(int(uppers.max())))
    got, want = both_searches(sizes, lowers, uppers, aligns, peak + slack - 10, valley_first, 5000)
    assert got == want


def test_compiled_search_equals_the_reference_on_a_challenging_instance():
    buffers = read_buffers(BENCHMARKS / "minimalloc" / "challenging" / "C.1048576.csv").buffers
    sizes = np.array([b.size for b in buffers], np.int64)
    lowers = np.array([b.lower for b in buffers], np.int64)
    uppers = np.array([b.upper for b in buffers], np.int64)
    rank = exact._static_orders(sizes, lowers, uppers)[0]
    got, want = both_searches(sizes[rank], lowers[rank], uppers[rank], np.ones_like(sizes),
                              1048576, True, 20000)
    assert got == want
    assert got[1] > 100  # a real search, not a trivial one


def test_the_installed_package_has_its_compiled_core():
    # the fallback to Numba is for source trees only: an install always builds the core
    assert compiled._core is not None
    assert compiled.search is not reference_search.search


def test_without_its_core_packing_falls_back_to_the_numba_kernels_with_the_same_answers(
        monkeypatch):
    """A source tree or an install without a C compiler packs with the Numba reference
    (slower to start, same answers)."""
    from memplace.model.packing.packers import pack
    buffers = read_buffers(BENCHMARKS / "minimalloc" / "challenging" / "C.1048576.csv").buffers
    with_core = pack(buffers, 1048576)
    monkeypatch.setattr(compiled, "_core", None)
    fallback = pack(buffers, 1048576)
    assert with_core.status == fallback.status == "packed"
    assert with_core.offsets.tolist() == fallback.offsets.tolist()
    assert with_core.nodes == fallback.nodes > 100  # the search ran, not only a heuristic


def test_a_missing_core_is_named_in_a_warning():
    code = ("import sys, warnings\n"
            "sys.modules['memplace.model.packing._core'] = None  # as if never built\n"
            "with warnings.catch_warnings(record=True) as caught:\n"
            "    warnings.simplefilter('always')\n"
            "    from memplace.model.packing import compiled\n"
            "print(compiled._core, [str(w.message) for w in caught])\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("None [\"memplace's compiled packing core is not built")
    assert "C compiler" in run.stdout and "Numba" in run.stdout
