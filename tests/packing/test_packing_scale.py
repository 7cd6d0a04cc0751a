"""Large traces: past EXACT_PAIRS overlapping pairs the exact search (whose memory grows
with them) gives way to randomised heuristic orders, which stay within the time limit."""
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


def test_past_the_pair_limit_minimize_tries_heuristic_orders_and_stays_valid(monkeypatch):
    monkeypatch.setattr(packers, "EXACT_PAIRS", 0)
    # one long buffer under many short ones of mixed sizes: orders matter
    rng = np.random.default_rng(3)
    buffers = [Buffer("long", 0, 100, 7)]
    for i in range(200):
        lo = int(rng.integers(0, 95))
        buffers.append(Buffer(f"b{i}", lo, lo + int(rng.integers(1, 6)), int(rng.integers(1, 9))))
    result, bound = minimize(buffers, time_limit=3)
    assert check_packing(buffers, result.offsets, result.height) == []
    assert any("randomised heuristic orders tried" in note for note in result.notes)
    assert result.height >= bound
