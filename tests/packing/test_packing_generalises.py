"""Issue 8.4: generated packing instances, and the exact search off its tuning set.

The oracles here are written without the package: a pairwise overlap check
and exhaustive searches (every drop order, and for minimize every height).
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memplace.cli import main
from memplace.model.core.errors import MemplaceError
from memplace.model.packing import exact
from memplace.model.packing.generate import (HELDOUT, activation_instance, cut_instance,
                                             generate)
from memplace.model.packing.minimalloc_csv import read_buffers
from memplace.model.packing.packers import Buffer, minimize, pack, peak_live_size
from packing_oracles import drop_order_optimum, small_instances


def overlaps(buffers, offsets, capacity) -> list[tuple[str, str]]:
    """Pairs alive together that share an address, plus (id, 'capacity') for spills."""
    bad = [(b.id, "capacity") for b, o in zip(buffers, offsets)
           if o < 0 or o % b.alignment or o + b.size > capacity]
    for (a, oa), (b, ob) in itertools.combinations(zip(buffers, offsets), 2):
        if (a.lower < b.upper and b.lower < a.upper and oa < ob + b.size and ob < oa + a.size
                and a.size and b.size):
            bad.append((a.id, b.id))
    return bad


# ---------------------------------------------------------------------------
# The generator


def test_generation_is_a_function_of_its_seed():
    one, again, other = generate("cutpw", 60, 7), generate("cutpw", 60, 7), generate("cutpw", 60, 8)
    assert one.buffers == again.buffers
    assert (one.certificate == again.certificate).all()
    assert one.buffers != other.buffers
    assert activation_instance(50, 3).buffers == activation_instance(50, 3).buffers


@pytest.mark.parametrize("pinwheel", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_cut_instances_tile_the_rectangle_so_the_optimum_is_the_capacity(pinwheel, seed):
    got = cut_instance(80, seed, pinwheel=pinwheel, grid=64, grain=16)
    assert len(got.buffers) == 80
    assert got.capacity == 64 * 16
    # no slack anywhere: the area is the full rectangle and the peak equals the capacity
    assert sum(b.size * (b.upper - b.lower) for b in got.buffers) == got.capacity * 64 * 16
    assert peak_live_size(got.buffers) == got.capacity
    assert overlaps(got.buffers, got.certificate, got.capacity) == []


def test_pinwheel_cuts_make_instances_no_guillotine_cut_separates():
    """With every cut a pinwheel, the first five pieces admit no straight cut: some buffer
    crosses every interior time cut and every interior address cut of the certificate."""
    got = cut_instance(5, 4, pinwheel=1.0, grid=16, grain=1)
    bufs, offs = got.buffers, got.certificate
    for t in range(1, 16):
        assert any(b.lower < t < b.upper for b in bufs), t
    for y in range(1, 16):
        assert any(o < y < o + b.size for b, o in zip(bufs, offs)), y


def test_activation_instances_sit_at_their_peak_with_mostly_short_lifetimes():
    got = activation_instance(300, 5)
    assert got.capacity == peak_live_size(got.buffers)
    lengths = np.array([b.upper - b.lower for b in got.buffers])
    assert np.median(lengths) <= 3 and lengths.max() > 30
    sizes = np.array([b.size for b in got.buffers])
    assert (sizes % 256 == 0).all() and len(set(sizes)) > 10


def test_generator_rejects_impossible_requests():
    with pytest.raises(MemplaceError, match="buffers"):
        cut_instance(0, 1)
    with pytest.raises(MemplaceError, match="pinwheel"):
        cut_instance(10, 1, pinwheel=2.0)
    with pytest.raises(MemplaceError, match="kind"):
        generate("squares", 10, 1)


def test_heldout_set_is_fixed():
    assert len(HELDOUT) == 12 and len(set(HELDOUT)) == 12
    assert {kind for kind, _, _ in HELDOUT} == {"cut", "cutpw", "act"}


# ---------------------------------------------------------------------------
# The search on generated instances


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(8, 40), st.integers(0, 10**6), st.sampled_from([0.0, 0.3]))
def test_search_packs_cut_instances_at_exactly_their_capacity(buffers, seed, pinwheel):
    got = cut_instance(buffers, seed, pinwheel=pinwheel, grid=32, grain=4)
    result = pack(got.buffers, got.capacity, method="exact-search", time_limit=30)
    assert result.status == "packed"
    assert result.height == got.capacity
    assert overlaps(got.buffers, result.offsets, got.capacity) == []


def test_search_packs_a_held_out_size_cut_instance():
    got = generate("cutpw", 150, 201)
    result = pack(got.buffers, got.capacity, method="exact-search", time_limit=60)
    assert result.status == "packed"
    assert overlaps(got.buffers, result.offsets, got.capacity) == []


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_instances(max_buffers=7, alignments=(1, 1, 2)), st.integers(1, 16))
def test_restarts_on_random_rankings_agree_with_exhaustive_search(buffers, capacity):
    """A node limit of 1 aborts every run, so the answer comes from many restarts over the
    random rankings with the failure memo: it must still be exact and valid."""
    sizes = np.array([b.size for b in buffers], np.int64)
    lowers = np.array([b.lower for b in buffers], np.int64)
    uppers = np.array([b.upper for b in buffers], np.int64)
    aligns = np.array([b.alignment for b in buffers], np.int64)
    status, offsets, _ = exact.exact_offsets(sizes, lowers, uppers, aligns, capacity,
                                             node_limit=1)
    feasible = drop_order_optimum(buffers) <= capacity
    assert status == (exact.PACKED if feasible else exact.INFEASIBLE)
    if status == exact.PACKED:
        assert overlaps(buffers, list(offsets), capacity) == []
    else:
        assert (offsets == -1).all()


@st.composite
def crowded_instances(draw):
    """Small instances whose lifespans share few time points, so at the optimum height
    runs of sections without slack on one floor are common (what the tiling test prunes)."""
    n = draw(st.integers(2, 7))
    out = []
    for i in range(n):
        lower = draw(st.integers(0, 3))
        upper = draw(st.integers(lower + 1, 5))
        out.append(Buffer(f"t{i}", lower, upper, draw(st.integers(1, 4)),
                          draw(st.sampled_from((1, 1, 2)))))
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(crowded_instances(), st.sampled_from([-1, 0, 0, 1]))
def test_search_at_and_just_under_the_optimum_agrees_with_exhaustive_search(buffers, delta):
    """At the optimum height sections are tight; one unit under it none packs. The tiling
    prune must never cut the only packing, nor the search claim one that is not there."""
    optimum = drop_order_optimum(buffers)
    capacity = optimum + delta
    sizes = np.array([b.size for b in buffers], np.int64)
    lowers = np.array([b.lower for b in buffers], np.int64)
    uppers = np.array([b.upper for b in buffers], np.int64)
    aligns = np.array([b.alignment for b in buffers], np.int64)
    status, offsets, _ = exact.exact_offsets(sizes, lowers, uppers, aligns, capacity)
    assert status == (exact.PACKED if delta >= 0 else exact.INFEASIBLE)
    if status == exact.PACKED:
        assert overlaps(buffers, list(offsets), capacity) == []


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_instances(max_buffers=6, alignments=(1, 2)))
def test_minimize_equals_the_exhaustive_optimum(buffers):
    result, lower = minimize(buffers)
    optimum = drop_order_optimum(buffers)
    assert result.status == "packed" and result.height == optimum and lower == optimum
    assert overlaps(buffers, list(result.offsets), optimum) == []


def test_minimize_proves_a_cut_instance_optimal():
    got = cut_instance(30, 11, pinwheel=0.3, grid=32, grain=8)
    result, lower = minimize(got.buffers, time_limit=60)
    assert result.height == lower == got.capacity
    assert overlaps(got.buffers, list(result.offsets), got.capacity) == []


# ---------------------------------------------------------------------------
# Command line


def test_cli_generates_an_instance_that_packs_at_its_capacity(tmp_path):
    out, cert = tmp_path / "cut.csv", tmp_path / "cert.csv"
    result = CliRunner().invoke(main, ["pack-generate", "cutpw", "40", "9", "-o", str(out),
                                       "--certificate", str(cert)])
    assert result.exit_code == 0, result.output
    capacity = 1048576
    assert f"capacity {capacity}" in result.output
    buffers = read_buffers(out).buffers
    assert buffers == generate("cutpw", 40, 9).buffers
    rows = read_buffers(cert)
    assert overlaps(rows.buffers, [int(r["offset"]) for r in rows.rows], capacity) == []
    packed = CliRunner().invoke(main, ["pack", str(out), "--capacity", str(capacity),
                                       "--method", "exact-search"])
    assert packed.exit_code == 0 and f"height {capacity}" in packed.output


def test_cli_certificate_of_an_activation_instance_is_refused(tmp_path):
    result = CliRunner().invoke(main, ["pack-generate", "act", "20", "1", "-o",
                                       str(tmp_path / "a.csv"), "--certificate",
                                       str(tmp_path / "c.csv")])
    assert result.exit_code == 2 and "certificate" in result.output
