"""Weight streaming (`machinery/streaming.py`, multistart's `stream_share`): copies into the
fastest level in read order, each as early as the level's room and the channel's order
allow, and the climb over homes that finds where streaming beats a fixed slot."""
from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memplace.model.residency import ResidencySolution, simulate, validate
from memplace.solvers import load_kernels, solve
from memplace.solvers.residency.machinery import streaming
from memplace.solvers.residency.machinery.starts import milp_start
from test_residency_multistart import check, layers, small_random


@pytest.fixture(scope="module", autouse=True)
def kernels():
    load_kernels(["multistart"], "residency")


def test_each_copy_starts_as_early_as_the_fast_level_has_room_and_never_before_the_one_ahead():
    # layers(): six 100 B weights read at ops 0, 2, .., 10; SRAM holds three. w0 is read at
    # op 0 (no op before it to copy in); w1-w3 fit from op 0 on; w4 waits until w1's window
    # ends (op 2) and starts at op 3; w5 until w2's ends (op 4), and not before w4's start.
    inst = layers()
    homes = np.ones(inst.n_tensors, np.int64)
    found = streaming.windows(inst, homes, range(6))
    assert [(w.tensor, w.level, w.start, w.first, w.last) for w in found] == [
        (1, 0, 0, 2, 2), (2, 0, 0, 4, 4), (3, 0, 0, 6, 6), (4, 0, 3, 8, 8), (5, 0, 5, 10, 10)]
    sol = ResidencySolution(inst.name, homes, None, tuple(found))
    assert validate(inst, sol).valid
    # a weight homed in SRAM takes its room for the whole run: two copies in flight, not three
    homes[0] = 0
    found = streaming.windows(inst, homes, range(1, 6))
    assert [(w.tensor, w.start) for w in found] == [(1, 0), (2, 0), (3, 3), (4, 5), (5, 7)]
    # homes that overflow SRAM have no windows
    assert streaming.windows(inst, np.zeros(inst.n_tensors, np.int64), []) is None


def test_streaming_from_the_static_optimum_reaches_the_optimum_on_layers():
    # The static optimum (three weights in SRAM, three read from DRAM) is 9.3 µs; the optimum
    # is 6.6 µs (six 1 µs ops, six reads of 100 B at SRAM's 1 GB/s, every copy hidden behind
    # a 1 µs op). Streaming reaches it from the static optimum's homes: w0, read before any
    # op could copy it, homed in SRAM, the others copied in with two copies in flight.
    inst = layers()
    start = milp_start(inst, time.perf_counter() + 5.0)
    assert start.latency == pytest.approx(9.3e-6)
    found, tries = streaming.search(inst, start, np.random.default_rng(0), time.perf_counter() + 2)
    assert validate(inst, found).valid and tries > 0
    assert found.latency == pytest.approx(simulate(inst, found), rel=1e-12)
    assert found.latency == pytest.approx(6.6e-6)
    assert found.placement[0] == 0


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6), st.booleans())
def test_streaming_keeps_a_solution_valid_and_never_slower(seed, addressed):
    inst, rng = small_random(seed, addressed)
    start = solve(inst, "msa", time_limit=None, problem="residency").solution
    start.latency = simulate(inst, start)
    found, tries = streaming.search(inst, start, rng, time.perf_counter() + 0.3)
    assert validate(inst, found).valid
    assert found.latency == pytest.approx(simulate(inst, found), rel=1e-12)
    assert found.latency <= start.latency * (1 + 1e-12)
    if addressed:  # windows there need offsets: streaming leaves the start alone
        assert found is start and tries == 0


def test_multistart_streams_only_when_given_a_share():
    inst = layers()
    assert "stream_tries" not in check(inst, 1.0, static_moves=0).notes
    result = check(inst, 1.0, static_moves=0, stream_share=0.5)
    assert result.notes["stream_tries"] > 0
    assert result.latency == pytest.approx(6.6e-6)
