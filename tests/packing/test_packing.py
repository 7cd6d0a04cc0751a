"""Offset assignment (issue 5): packers against exhaustive search, the checker, CSV and CLI."""
from __future__ import annotations

import csv
import itertools
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memplace.cli import main
from memplace.model.core.errors import MemplaceError
from memplace.model.packing import BENCHMARKS
from memplace.model.packing.minimalloc_csv import read_buffers
from memplace.model.packing.heuristics import FIRST_FIT, place_in_order
from memplace.model.packing.packers import PACKERS, Buffer, check_packing, minimize, pack, peak_live_size
from packing_oracles import drop_order_optimum, small_instances

BENCH = BENCHMARKS / "minimalloc"
EXAMPLE = BENCH / "examples" / "input.12.csv"
EXAMPLE_ROWS = [("b1", 0, 3, 4), ("b2", 3, 9, 4), ("b3", 0, 9, 4), ("b4", 9, 21, 4), ("b5", 0, 21, 4)]


# ---------------------------------------------------------------------------
# Oracles written independently of the package


def pairwise_ok(buffers, offsets, capacity) -> bool:
    """Every rule of docs/spec.md section 5, checked pair by pair."""
    for b, o in zip(buffers, offsets):
        if o < 0 or o % b.alignment or o + b.size > capacity:
            return False
    for (a, oa), (b, ob) in itertools.combinations(zip(buffers, offsets), 2):
        alive_together = a.lower < b.upper and b.lower < a.upper
        share_address = oa < ob + b.size and ob < oa + a.size
        if alive_together and share_address and a.size and b.size:
            return False
    return True


def feasible_by_all_offsets(buffers, capacity) -> bool:
    """Try every aligned offset of every buffer (backtracking on conflicts): no theory needed."""
    n = len(buffers)
    offsets = [0] * n

    def place(i: int) -> bool:
        if i == n:
            return True
        b = buffers[i]
        for o in range(0, capacity - b.size + 1, b.alignment):
            offsets[i] = o
            if all(not (buffers[j].lower < b.upper and b.lower < buffers[j].upper
                        and offsets[j] < o + b.size and o < offsets[j] + buffers[j].size)
                   for j in range(i)):
                if place(i + 1):
                    return True
        return False

    return place(0)


# ---------------------------------------------------------------------------
# Exact search against exhaustive search


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_instances(max_buffers=7), st.integers(1, 16))
def test_exact_agrees_with_exhaustive_search_on_feasibility(buffers, capacity):
    result = pack(buffers, capacity, method="exact-search")
    assert result.status in ("packed", "infeasible")
    assert (result.status == "packed") == (drop_order_optimum(buffers) <= capacity)
    if result.status == "packed":
        assert pairwise_ok(buffers, result.offsets, capacity)
        assert check_packing(buffers, result.offsets, capacity) == []


@settings(max_examples=100, deadline=None)
@given(small_instances(max_buffers=5, max_size=4, alignments=(1, 2, 3)), st.integers(1, 9))
def test_permutation_oracle_matches_trying_every_offset(buffers, capacity):
    """The permutation brute force (used above for 7 buffers) is itself exhaustive."""
    assert (drop_order_optimum(buffers) <= capacity) == feasible_by_all_offsets(buffers, capacity)


@settings(max_examples=80, deadline=None)
@given(small_instances(max_buffers=6, max_size=5, alignments=(1, 2, 4)), st.integers(1, 14))
def test_exact_with_alignment_agrees_with_every_offset_search(buffers, capacity):
    result = pack(buffers, capacity, method="exact")
    assert (result.status == "packed") == feasible_by_all_offsets(buffers, capacity)
    if result.status == "packed":
        assert all(o % b.alignment == 0 for b, o in zip(buffers, result.offsets))
        assert pairwise_ok(buffers, result.offsets, capacity)


# ---------------------------------------------------------------------------
# Every packer's answers are valid


@settings(max_examples=60, deadline=None)
@given(small_instances(max_buffers=12, max_size=9, alignments=(1, 2, 4)), st.integers(4, 40))
def test_every_method_returns_valid_packings(buffers, capacity):
    for method in PACKERS:
        result = pack(buffers, capacity, method=method)
        placed = result.offsets >= 0
        assert result.status in ("packed", "infeasible", "timeout", "failed")
        assert (result.status == "packed") == bool(placed.all())
        part = [b for b, p in zip(buffers, placed) if p]
        assert pairwise_ok(part, result.offsets[placed], capacity), method
        assert check_packing(part, result.offsets[placed], capacity) == [], method


def test_check_packing_names_overlapping_buffers():
    buffers = [Buffer("x", 0, 4, 3), Buffer("y", 2, 6, 3), Buffer("z", 4, 8, 3)]
    assert check_packing(buffers, [0, 3, 0], 6) == []
    problems = check_packing(buffers, [0, 2, 0], 6)  # y now meets both x and z
    assert len(problems) == 2
    assert "'x'" in problems[0] and "'y'" in problems[0]
    assert "'y'" in problems[1] and "'z'" in problems[1]
    assert any("beyond capacity" in p for p in check_packing(buffers, [0, 3, 4], 6))
    assert any("alignment" in p for p in check_packing([Buffer("a", 0, 1, 1, 4)], [2], 8))


def test_alignment_is_respected_even_when_it_costs_height():
    buffers = [Buffer("a", 0, 2, 3, alignment=2), Buffer("b", 0, 2, 3, alignment=2)]
    assert peak_live_size(buffers) == 6
    assert pack(buffers, 6, method="exact").status == "infeasible"  # the upper one cannot start at 3
    result = pack(buffers, 7, method="exact")
    assert result.status == "packed" and sorted(result.offsets) == [0, 4]
    result, lower = minimize(buffers)
    assert result.height == 7 and lower == 7


def test_minimize_stops_at_the_bound_without_running_out_its_time():
    # F's peak live size is its optimum: the node-limited search at the bound proves it,
    # and nothing searches after (no anytime search, no exact search past the probe);
    # counted in nodes and steps, not seconds
    from memplace.model.packing.packers import BOUND_PROBE_NODES
    buffers = read_buffers(BENCH / "challenging" / "F.1048576.csv").buffers
    result, lower = minimize(buffers, time_limit=600)
    assert result.height == lower == peak_live_size(buffers) == 1048576
    assert 0 < result.nodes <= BOUND_PROBE_NODES
    assert not any("anytime" in note for note in result.notes)
    assert check_packing(buffers, result.offsets, lower) == []


def test_minimal_heights_are_multiples_of_the_sizes_and_alignments_gcd():
    from memplace.model.packing.exact import height_granule
    assert height_granule(np.array([1024, 3072]), np.array([1, 1])) == 1
    assert height_granule(np.array([1024, 3072]), np.array([512, 2048])) == 512
    assert height_granule(np.array([6, 6]), np.array([4, 4])) == 2
    # two buffers of 6 aligned to 4: the upper one starts at 8, so 14 (peak 12)
    buffers = [Buffer("a", 0, 2, 6, alignment=4), Buffer("b", 0, 2, 6, alignment=4)]
    result, lower = minimize(buffers)
    assert result.height == lower == 14


def test_lowest_height_tries_only_multiples_of_the_granule_and_stops_at_the_bound():
    from memplace.model.packing import exact
    tried = []

    def solve(height, seconds):  # a pretend search: packs at 8 and above, proves below
        tried.append(height)
        if height >= 8:
            return exact.PACKED, np.array([height]), 1
        return exact.INFEASIBLE, np.array([-1]), 1

    # one buffer of size 0, so a packing's height is its offset; the best so far is 20
    got, upper, proven, nodes = exact.lowest_height(solve, np.array([0]), np.array([20]), 1,
                                                    None, 1.0, None, granule=4)
    assert tried == [8, 4]  # bisection between 4 (the bound rounded up) and 16, then 4
    assert upper == proven == 8 and list(got) == [8] and nodes == 2


# ---------------------------------------------------------------------------
# The MiniMalloc example and benchmark


def test_example_packs_at_12_and_is_infeasible_at_11():
    buffers = read_buffers(EXAMPLE).buffers
    assert [(b.id, b.lower, b.upper, b.size) for b in buffers] == EXAMPLE_ROWS
    assert peak_live_size(buffers) == 12  # so 12 is optimal, 11 cannot pack
    result = pack(buffers, 12, method="exact-search")
    assert result.status == "packed" and result.height == 12
    assert pairwise_ok(buffers, result.offsets, 12)
    assert pack(buffers, 11, method="exact-search").status == "infeasible"


def test_a_challenging_benchmark_instance_packs_validly():
    path = BENCH / "challenging" / "F.1048576.csv"
    buffers = read_buffers(path).buffers
    result = pack(buffers, 1048576, method="exact", time_limit=60)
    assert result.status == "packed"
    assert check_packing(buffers, result.offsets, 1048576) == []
    assert pairwise_ok(buffers, result.offsets, 1048576)


def test_time_limit_gives_timeout_status():
    path = BENCH / "challenging" / "E.1048576.csv"
    result = pack(read_buffers(path).buffers, 1048576, method="exact-search", time_limit=0.05)
    assert result.status == "timeout" and (result.offsets == -1).all()


# ---------------------------------------------------------------------------
# Bad input and the array interface


@pytest.mark.parametrize("args, words", [
    (("neg", 0, 2, -1), "'neg'"),
    (("empty", 3, 3, 1), "'empty'"),
    (("align", 0, 2, 1, 0), "'align'"),
])
def test_bad_buffers_raise_naming_the_buffer(args, words):
    with pytest.raises(MemplaceError, match=words):
        Buffer(*args)


def test_bad_capacity_and_duplicate_ids_raise():
    with pytest.raises(MemplaceError, match="capacity"):
        pack([Buffer("a", 0, 1, 1)], 0)
    with pytest.raises(MemplaceError, match="'a'"):
        pack([Buffer("a", 0, 1, 1), Buffer("a", 1, 2, 1)], 4)


def test_first_fit_arrays_follow_the_priority_order_and_mark_misfits():
    sizes = np.array([4, 4, 4], np.int64)
    lowers = np.zeros(3, np.int64)
    uppers = np.ones(3, np.int64)
    aligns = np.ones(3, np.int64)
    got = place_in_order(np.array([2, 0, 1]), sizes, lowers, uppers, aligns, np.int64(8), FIRST_FIT)
    assert list(got) == [4, -1, 0]
    assert list(PACKERS["best-fit-size"](sizes, lowers, uppers, aligns, 12, None)[1]) == [0, 4, 8]


# ---------------------------------------------------------------------------
# Command line


def run(args):
    return CliRunner().invoke(main, args, catch_exceptions=False)


def test_cli_round_trip_keeps_rows_and_adds_offsets(tmp_path):
    out = tmp_path / "solution.csv"
    result = run(["pack", str(EXAMPLE), "--capacity", "12", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "packed" in result.output and "height 12" in result.output
    with out.open() as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["id"], int(r["lower"]), int(r["upper"]), int(r["size"])) for r in rows] == EXAMPLE_ROWS
    buffers = read_buffers(out).buffers  # our own output reads back as input
    offsets = [int(r["offset"]) for r in rows]
    assert pairwise_ok(buffers, offsets, 12)


def test_cli_infeasible_exits_1(tmp_path):
    result = run(["pack", str(EXAMPLE), "--capacity", "11", "-o", str(tmp_path / "x.csv")])
    assert result.exit_code == 1
    assert "infeasible" in result.output
    assert not (tmp_path / "x.csv").exists()


def test_cli_malformed_row_exits_2_and_keeps_existing_output(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("id,lower,upper,size\na,0,3,4\nb,5,2,4\n")
    out = tmp_path / "out.csv"
    out.write_text("precious\n")
    result = CliRunner().invoke(main, ["pack", str(bad), "--capacity", "8", "-o", str(out)])
    assert result.exit_code == 2
    assert "line 3" in result.output and "'b'" in result.output
    assert out.read_text() == "precious\n"
    bad.write_text("id,lower,upper,size\na,0,3,four\n")
    result = CliRunner().invoke(main, ["pack", str(bad), "--capacity", "8"])
    assert result.exit_code == 2 and "line 2" in result.output and "size" in result.output


def test_cli_minimize_reports_height_and_bound():
    result = run(["pack", str(EXAMPLE), "--minimize"])
    assert result.exit_code == 0
    assert "height 12" in result.output and "lower bound 12" in result.output


def test_cli_alignment_column_is_read(tmp_path):
    src = tmp_path / "aligned.csv"
    src.write_text("id,lower,upper,size,alignment\na,0,2,3,2\nb,0,2,3,2\n")
    out = tmp_path / "aligned.out.csv"
    assert run(["pack", str(src), "--capacity", "6"]).exit_code == 1
    assert run(["pack", str(src), "--capacity", "7", "-o", str(out)]).exit_code == 0
    rows = list(csv.DictReader(out.open()))
    assert sorted(r["offset"] for r in rows) == ["0", "4"] and rows[1]["alignment"] == "2"


def test_two_search_threads_return_a_valid_packing():
    path = BENCH / "challenging" / "C.1048576.csv"
    buffers = read_buffers(path).buffers
    result = pack(buffers, 1048576, method="exact-search", time_limit=60, workers=2)
    assert result.status == "packed"
    assert pairwise_ok(buffers, result.offsets, 1048576)


def test_cli_heuristic_that_cannot_fit_exits_4():
    result = run(["pack", str(EXAMPLE), "--capacity", "11", "--method", "first-fit"])
    assert result.exit_code == 4 and "proves nothing" in result.output


def test_empty_buffers_get_an_offset_too():
    buffers = [Buffer("a", 0, 1, 3, 2), Buffer("b", 0, 1, 5), Buffer("empty", 0, 1, 0)]
    for method in ("exact", "exact-search"):
        result = pack(buffers, 8, method=method)
        assert result.status == "packed" and (result.offsets >= 0).all()
        assert pairwise_ok(buffers, result.offsets, 8)
