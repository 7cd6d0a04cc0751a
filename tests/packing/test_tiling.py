"""The exact-cover search for perfect tilings against trying every offset."""
from __future__ import annotations

import itertools
import time

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memplace.model.packing import pairwise
from memplace.model.packing.buffers import Buffer
from memplace.model.packing.families import family_instance
from memplace.model.packing.generate import cut_instance
from memplace.model.packing.packers import check_packing, pack, peak_live_size
from memplace.model.packing.tiling import INFEASIBLE, NODE_LIMIT, PACKED, is_perfect, tile


def arrays(buffers):
    return tuple(np.array([getattr(b, f) for b in buffers], np.int64)
                 for f in ("size", "lower", "upper", "alignment"))


@st.composite
def perfect_instances(draw):
    """Random buffers, then one filler per section topping it up to the peak: perfect."""
    buffers = []
    for i in range(draw(st.integers(1, 5))):
        lower = draw(st.integers(0, 4))
        buffers.append(Buffer(f"b{i}", lower, draw(st.integers(lower + 1, 5)),
                              draw(st.integers(1, 3)), draw(st.sampled_from([1, 1, 2]))))
    horizon = range(min(b.lower for b in buffers), max(b.upper for b in buffers))
    load = {t: sum(b.size for b in buffers if b.lower <= t < b.upper) for t in horizon}
    peak = max(load.values())
    for t in horizon:
        if load[t] < peak:
            buffers.append(Buffer(f"f{t}", t, t + 1, peak - load[t]))
    return buffers, peak


def packs_by_brute_force(buffers, height):
    choices = [range(0, height - b.size + 1, b.alignment) for b in buffers]
    return any(check_packing(buffers, list(o), height) == [] for o in itertools.product(*choices))


def packs_by_pairwise_search(buffers, height):
    """The oracle: the pairwise canonical search (itself held against brute force in
    test_minimalloc_format), a different algorithm from the time-major one."""
    code, _, _ = pairwise.exact_offsets(buffers, pairwise.conflicts(buffers), height, None)
    return code == pairwise.PACKED


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(perfect_instances())
def test_tiling_verdict_matches_trying_every_offset(case):
    buffers, peak = case
    sizes, lowers, uppers, aligns = arrays(buffers)
    assert is_perfect(sizes, lowers, uppers)
    status, offsets, _ = tile(sizes, lowers, uppers, aligns, peak)
    assert status == (PACKED if packs_by_pairwise_search(buffers, peak) else INFEASIBLE)
    if status == PACKED:
        assert check_packing(buffers, offsets, peak) == []


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(perfect_instances(), st.integers(1, 1000))
def test_a_seeded_option_order_gives_the_same_verdict(case, seed):
    # restarts try options in random orders: the order must not change what is proven
    buffers, peak = case
    sizes, lowers, uppers, aligns = arrays(buffers)
    status, offsets, _ = tile(sizes, lowers, uppers, aligns, peak, seed=seed)
    assert status == (PACKED if packs_by_pairwise_search(buffers, peak) else INFEASIBLE)
    if status == PACKED:
        assert check_packing(buffers, offsets, peak) == []


def test_a_guillotine_cut_tiles_without_backtracking():
    # every valley edge of a guillotine cut has one option once its neighbours are placed:
    # one node per buffer (the time-major search needed over 150,000 nodes and timed out)
    got = cut_instance(150, 101, pinwheel=0.0)
    status, offsets, nodes = tile(*arrays(got.buffers), got.capacity, node_limit=10_000)
    assert status == PACKED and nodes == 150
    assert check_packing(got.buffers, offsets, got.capacity) == []


def test_a_pinwheel_cut_of_400_buffers_tiles():
    got = cut_instance(400, 3, pinwheel=0.25)
    status, offsets, _ = tile(*arrays(got.buffers), got.capacity, node_limit=20_000)
    assert status == PACKED and check_packing(got.buffers, offsets, got.capacity) == []


def test_exact_packs_the_held_out_pinwheel_cuts():
    # cutpw-400/500 timed out at 60 s in both memplace's searches and MiniMalloc
    for size, seed in ((400, 205), (500, 206)):
        got = cut_instance(size, seed, pinwheel=0.25)
        result = pack(got.buffers, got.capacity, method="exact-search", time_limit=60)
        assert result.status == "packed"
        assert check_packing(got.buffers, result.offsets, got.capacity) == []


def test_brute_force_and_pairwise_oracles_agree_on_a_small_infeasible_tiling():
    # a (size 2) and b (size 1) overlap over [1, 2), each topped up to 3 elsewhere: c over
    # [0, 1) and d over [2, 3) must sit where a and b leave room, which they do
    buffers = [Buffer("a", 0, 2, 2), Buffer("b", 1, 3, 1, 2), Buffer("c", 0, 1, 1),
               Buffer("d", 2, 3, 2)]
    sizes, lowers, uppers, aligns = arrays(buffers)
    assert is_perfect(sizes, lowers, uppers)
    want = packs_by_brute_force(buffers, 3)
    assert packs_by_pairwise_search(buffers, 3) == want
    assert tile(sizes, lowers, uppers, aligns, 3)[0] == (PACKED if want else INFEASIBLE)


def test_a_cut_rectangle_is_perfect_and_tiles_back():
    got = cut_instance(40, 3, pinwheel=0.3, grid=16, grain=4)
    sizes, lowers, uppers, aligns = arrays(got.buffers)
    assert is_perfect(sizes, lowers, uppers)
    status, offsets, _ = tile(sizes, lowers, uppers, aligns, got.capacity)
    assert status == PACKED and check_packing(got.buffers, offsets, got.capacity) == []


def test_an_imperfect_instance_is_not_taken_for_a_tiling():
    sizes, lowers, uppers, _ = arrays([Buffer("a", 0, 2, 2), Buffer("b", 1, 3, 1)])
    assert not is_perfect(sizes, lowers, uppers)


def test_the_node_limit_stops_the_tiling_search():
    got = cut_instance(300, 103, pinwheel=0.0)
    status, offsets, nodes = tile(*arrays(got.buffers), got.capacity, node_limit=50)
    assert status == NODE_LIMIT and nodes == 51 and (offsets == -1).all()


def test_exact_packs_the_tight_family_at_its_peak():
    got = family_instance("tight", 120, 702)
    result = pack(got.buffers, got.capacity, method="exact", time_limit=30)
    assert result.status == "packed"
    assert check_packing(got.buffers, result.offsets, got.capacity) == []
    assert result.height == peak_live_size(got.buffers)


def test_a_tiling_refuted_at_the_peak_still_packs_with_slack():
    # one section of 4 bytes, sizes 3 and 1 both aligned to 2: no packing at the peak (the
    # second buffer would start at 3 or end at 5), one at 5 bytes
    buffers = [Buffer("a", 3, 4, 3, 2), Buffer("b", 3, 4, 1, 2)]
    sizes, lowers, uppers, aligns = arrays(buffers)
    assert is_perfect(sizes, lowers, uppers)
    assert tile(sizes, lowers, uppers, aligns, 4)[0] == INFEASIBLE
    assert pack(buffers, 4, method="exact-search").status == "infeasible"
    got = pack(buffers, 6, method="exact-search")
    assert got.status == "packed" and got.height == 5
    assert check_packing(buffers, got.offsets, 6) == []
