"""The alignment-residue rule of the exact search (search.py's docstring, "Alignment"):
it never proves a falsehood, and it settles what the search could not."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memplace.model.packing import exact
from memplace.model.packing.buffers import Buffer
from memplace.model.packing.families import tiny_instance
from memplace.model.packing.packers import check_packing, pack, peak_live_size

from packing_oracles import drop_order_optimum, small_instances


def arrays(buffers):
    return tuple(np.array([getattr(b, f) for b in buffers], np.int64)
                 for f in ("size", "lower", "upper", "alignment"))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_instances(max_buffers=6, max_size=9, alignments=(1, 2, 4, 8)), st.integers(0, 3))
def test_an_aligned_instance_at_its_peak_is_infeasible_only_when_exhaustion_says_so(
        buffers, slack):
    # capacities at and just above the peak live size, where sections have no room for
    # misaligned ends: the rule's ground
    capacity = peak_live_size(buffers) + slack
    result = pack(buffers, capacity, method="exact-search")
    assert (result.status == "packed") == (drop_order_optimum(buffers) <= capacity)
    if result.status == "packed":
        assert check_packing(buffers, result.offsets, capacity) == []


def test_residues_refute_a_section_before_any_placement():
    # a section of 8 bytes: two 4-aligned bytes sit at 0 and 4, so the 6-byte buffer has
    # no room; the gaps after them need 3 + 3 bytes modulo 4, the 6-byte buffer brings 2
    # (it lives on alone, so the instance is no perfect tiling for `tiling` to refute)
    buffers = [Buffer("a", 0, 1, 1, 4), Buffer("b", 0, 1, 1, 4), Buffer("c", 0, 2, 6)]
    status, _, nodes = exact.exact_offsets(*arrays(buffers), 8)
    assert status == exact.INFEASIBLE and nodes == 0
    assert drop_order_optimum(buffers) > 8
    got = pack(buffers, 9, method="exact-search")  # one byte more: 6 fits between them
    assert got.status == "packed" and check_packing(buffers, got.offsets, 9) == []


def test_the_held_out_tiny_instance_is_proven_infeasible_at_its_peak():
    # tiny-3000 timed out at 60 s in both searches and in MiniMalloc: at its one section
    # without slack, 134 buffers aligned to 64 need 1,424 bytes of residues modulo 64 in
    # the gaps above them, and the unaligned buffers there bring 1,232
    got = tiny_instance(3000, 603)
    status, _, nodes = exact.exact_offsets(*arrays(got.buffers), got.capacity, time_limit=60)
    assert status == exact.INFEASIBLE and nodes == 0


def test_a_small_tiny_instance_packs_at_its_peak():
    got = tiny_instance(300, 601)
    result = pack(got.buffers, got.capacity, method="exact-search", time_limit=60)
    assert result.status == "packed"
    assert check_packing(got.buffers, result.offsets, got.capacity) == []
