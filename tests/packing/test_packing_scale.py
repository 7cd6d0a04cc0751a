"""Large traces: past EXACT_PAIRS overlapping pairs the exact search (whose memory grows
with them) gives way to the anytime search (`anytime`), which stays within the time limit;
the placement kernel's union tree, window re-packing and the generated compiler traces."""
from __future__ import annotations

import time

import numpy as np

from memplace.model.packing import BENCHMARKS, packers
from memplace.model.packing.buffers import Buffer
from memplace.model.packing.exact import _overlaps
from memplace.model.packing.minimalloc_csv import read_buffers
from memplace.model.packing.packers import check_packing, minimize, pack

EXAMPLE = BENCHMARKS / "minimalloc" / "examples" / "input.12.csv"


def test_overlapping_pairs_are_counted_without_listing_them():
    buffers = read_buffers(EXAMPLE).buffers
    lowers = np.array([b.lower for b in buffers])
    uppers = np.array([b.upper for b in buffers])
    adj_ptr, adj = _overlaps(lowers, uppers)
    brute = sum(1 for a in buffers for b in buffers
                if a is not b and a.lower < b.upper and b.lower < a.upper)
    assert packers._overlapping_pairs(lowers, uppers) == brute == adj.size == adj_ptr[-1]


def test_past_the_pair_limit_packing_uses_heuristic_orders(monkeypatch):
    monkeypatch.setattr(packers, "EXACT_PAIRS", 0)
    buffers = read_buffers(EXAMPLE).buffers
    got = pack(buffers, 12, method="exact-search", time_limit=5)
    assert got.status == "packed" and check_packing(buffers, got.offsets, 12) == []
    start = time.perf_counter()
    assert pack(buffers, 11, method="exact-search", time_limit=0.5).status == "timeout"
    assert time.perf_counter() - start < 1.5  # the limit honoured (no proof attempted)


def test_past_the_pair_limit_minimize_searches_anytime_and_stays_valid(monkeypatch):
    monkeypatch.setattr(packers, "EXACT_PAIRS", 0)
    # one long buffer under many short ones of mixed sizes: orders matter
    rng = np.random.default_rng(3)
    buffers = [Buffer("long", 0, 100, 7)]
    for i in range(200):
        lo = int(rng.integers(0, 95))
        buffers.append(Buffer(f"b{i}", lo, lo + int(rng.integers(1, 6)), int(rng.integers(1, 9))))
    result, bound = minimize(buffers, time_limit=3)
    assert check_packing(buffers, result.offsets, result.height) == []
    assert any("window re-packings kept" in note for note in result.notes)
    # no exact search ran (not even at the bound); it says so unless the bound was reached
    assert result.nodes == 0
    assert result.height == bound or any("exact search skipped" in n for n in result.notes)
    assert result.height >= bound


def _random_trace(n, seed, horizon=400):
    rng = np.random.default_rng(seed)
    lowers = rng.integers(0, horizon, n).astype(np.int64)
    # mostly short lifespans, some long ones (gradients, saved activations), a few whole
    lengths = np.where(rng.random(n) < 0.8, rng.integers(1, 6, n), rng.integers(6, horizon, n))
    uppers = np.minimum(lowers + lengths, horizon + 1).astype(np.int64)
    sizes = rng.choice([0, 1, 3, 64, 100, 512, 4096], n).astype(np.int64)
    aligns = rng.choice([1, 1, 8, 64], n).astype(np.int64)
    return sizes, lowers, uppers, aligns


def test_union_tree_places_large_traces_as_the_reference_does():
    """The C kernel's union tree (work independent of how many placed buffers overlap a
    query) against the Numba kernel's sorted scan of them, on traces with long lifespans,
    zero sizes and alignments, both gap rules."""
    from memplace.model.packing import compiled, heuristics
    sizes, lowers, uppers, aligns = _random_trace(1500, 7)
    order = np.random.default_rng(8).permutation(sizes.size).astype(np.int64)
    for rule in (compiled.FIRST_FIT, compiled.BEST_FIT):
        for capacity in (10**9, 40_000):
            got = compiled.place_in_order(order, sizes, lowers, uppers, aligns, capacity, rule)
            want = heuristics.place_in_order(order, sizes, lowers, uppers, aligns,
                                             np.int64(capacity), rule)
            assert got.tolist() == want.tolist()


def test_place_around_keeps_the_fixed_buffers_and_places_the_rest_validly():
    from memplace.model.packing import compiled, heuristics
    sizes, lowers, uppers, aligns = _random_trace(600, 11)
    order = np.arange(sizes.size, dtype=np.int64)
    packed = compiled.place_in_order(order, sizes, lowers, uppers, aligns, 10**9, 0)
    height = int((packed + sizes).max())
    rng = np.random.default_rng(12)
    fixed = np.where(rng.random(sizes.size) < 0.6, packed, -1)
    shuffled = rng.permutation(sizes.size).astype(np.int64)
    buffers = [Buffer(str(i), int(lowers[i]), int(uppers[i]), int(sizes[i]), int(aligns[i]))
               for i in range(sizes.size)]
    for rule in (compiled.FIRST_FIT, compiled.BEST_FIT):
        got = compiled.place_around(shuffled, sizes, lowers, uppers, aligns, height, rule, fixed)
        want = heuristics.place_around(shuffled, sizes, lowers, uppers, aligns,
                                       np.int64(height), rule, fixed)
        assert got.tolist() == want.tolist()
        kept = fixed >= 0
        assert (got[kept] == fixed[kept]).all()
        placed = got >= 0
        assert placed.sum() > kept.sum()
        sub = [b for b, p in zip(buffers, placed) if p]
        assert check_packing(sub, got[placed], height) == []
    # a fixed buffer above the capacity does not let a gap under it go past the capacity
    one = compiled.place_around(np.array([1], np.int64), np.array([4, 4], np.int64),
                                np.array([0, 0], np.int64), np.array([1, 1], np.int64),
                                np.array([1, 1], np.int64), 6, compiled.BEST_FIT,
                                np.array([8, -1], np.int64))
    assert one.tolist() == [8, 0]


def test_window_repacking_never_rises_and_stays_valid():
    from memplace.model.packing import anytime
    from memplace.model.packing.compiled import heuristic_offsets
    sizes, lowers, uppers, aligns = _random_trace(800, 21)
    sizes = np.maximum(sizes, 1)
    start = heuristic_offsets(sizes, lowers, uppers, aligns, 10**9, 1)
    buffers = [Buffer(str(i), int(lowers[i]), int(uppers[i]), int(sizes[i]), int(aligns[i]))
               for i in range(sizes.size)]
    before = int((start + sizes).max())
    got, stats = anytime.improve(sizes, lowers, uppers, aligns, start.copy(), 0,
                                 time.perf_counter() + 1.0)
    after = int((got + sizes).max())
    assert after <= before and stats["steps"] > 0
    assert check_packing(buffers, got, after) == []
    assert all(h < before for h, _ in stats["drops"])


def test_compiler_trace_is_seeded_and_shaped_like_the_traces():
    from memplace.model.packing.generate import compiler_trace, generate
    a, b = compiler_trace(3000, 5), generate("trace", 3000, 5)
    assert [x for x in a.buffers] == [x for x in b.buffers] and len(a.buffers) == 3000
    assert compiler_trace(3000, 6).buffers != a.buffers
    lengths = np.array([x.upper - x.lower for x in a.buffers])
    sizes = np.array([x.size for x in a.buffers])
    assert np.median(lengths) <= 5 and (lengths > 1000).sum() > 30  # short, with a long tail
    assert len(set(sizes.tolist())) <= 24 + 5  # a palette (and the tiny sizes)
    assert a.capacity == packers.peak_live_size(a.buffers)


def test_the_core_stops_placing_at_its_deadline():
    """The time limit is honoured inside one heuristic: past its deadline the core leaves
    the buffers not yet placed at -1 (a packing that does not pack)."""
    from memplace.model.packing import compiled
    sizes, lowers, uppers, aligns = _random_trace(2000, 31)
    order = np.arange(sizes.size, dtype=np.int64)
    assert (compiled.place_in_order(order, sizes, lowers, uppers, aligns, 10**9, 0) >= 0).all()
    past = time.perf_counter() - 1.0
    assert (compiled.place_in_order(order, sizes, lowers, uppers, aligns, 10**9, 0,
                                    past) < 0).all()
    assert (compiled.heuristic_offsets(sizes, lowers, uppers, aligns, 10**9, 1, past) < 0).all()
    fixed = np.full(sizes.size, -1, np.int64)
    fixed[0] = 0
    got = compiled.place_around(order, sizes, lowers, uppers, aligns, 10**9, 1, fixed, past)
    assert got[0] == 0 and (got[1:] < 0).all()
