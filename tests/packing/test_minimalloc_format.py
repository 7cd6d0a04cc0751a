"""MiniMalloc's CSV read whole: every column with MiniMalloc's meaning, on small cases.

Each expected answer is derived by hand in the comment beside it. The verdicts and
packings were also checked against MiniMalloc itself (github.com/google/minimalloc
at 9f5cf81, built here with Debian's libabsl; its `Validate` re-checked every
memplace packing): see docs/packing.md. Where MiniMalloc's solver disagrees with
its own validator (its section inference claims "no solution" on some instances
with gaps), the validator's meaning is the one implemented and tested here.
"""
from __future__ import annotations

import csv
import itertools

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memplace.cli import main
from memplace.model.core.errors import MemplaceError
from memplace.model.packing.buffers import Buffer, Gap, effective_size
from memplace.model.packing.minimalloc_csv import read_buffers
from memplace.model.packing.packers import check_packing, minimize, pack, peak_live_size


def csv_file(tmp_path, text, name="in.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def run(args):
    return CliRunner().invoke(main, args)


# ---------------------------------------------------------------------------
# Columns and aliases


def test_aliases_read_as_the_canonical_columns_and_end_is_inclusive(tmp_path):
    canonical = read_buffers(csv_file(tmp_path, "id,lower,upper,size\na,0,3,4\nb,3,9,4\n", "c.csv"))
    for header in ("buffer,start,end,size", "buffer_id,begin,end,size"):
        # end is inclusive: [0, 3) is written 0,2
        other = read_buffers(csv_file(tmp_path, f"{header}\na,0,2,4\nb,3,8,4\n", "o.csv"))
        assert other.buffers == canonical.buffers
    assert read_buffers(csv_file(tmp_path, "id,start,upper,size\na,0,3,4\n", "s.csv")
                        ).buffers[0] == Buffer("a", 0, 3, 4)


def test_inclusive_end_makes_touching_lifespans_overlap(tmp_path):
    # [0, 2) and [2, 4) share no time: both fit at offset 0 under capacity 4
    half_open = csv_file(tmp_path, "id,lower,upper,size\na,0,2,4\nb,2,4,4\n", "h.csv")
    assert run(["pack", str(half_open), "--capacity", "4"]).exit_code == 0
    # 0..2 and 2..4 inclusive share time 2: 8 bytes at once, so capacity 4 is infeasible
    inclusive = csv_file(tmp_path, "id,start,end,size\na,0,2,4\nb,2,4,4\n", "i.csv")
    result = run(["pack", str(inclusive), "--capacity", "4"])
    assert result.exit_code == 1 and "infeasible" in result.output


@pytest.mark.parametrize("header,words", [
    ("id,lower,upper,size,colour", ["'colour'", "not one of MiniMalloc's"]),
    ("id,buffer,lower,upper,size", ["'id'", "'buffer'", "both give the id"]),
    ("id,lower,end,upper,size", ["'end'", "'upper'"]),
    ("id,lower,size", ["lacks", "upper"]),
])
def test_unknown_or_doubled_columns_are_refused_by_name(tmp_path, header, words):
    fields = len(header.split(","))
    path = csv_file(tmp_path, header + "\n" + ",".join(["1"] * fields) + "\n")
    result = run(["pack", str(path), "--capacity", "8"])
    assert result.exit_code == 2, result.output
    assert all(w in result.output for w in words), result.output
    assert "Traceback" not in result.output


def test_solution_keeps_the_columns_spellings_and_order_of_the_input(tmp_path):
    src = csv_file(tmp_path, "buffer,offset,start,end,size,hint,gaps\n"
                             "a,,0,4,4,-1,1-2\nb,0,1,2,4,-1,\nc,,0,9,2,6,\n")
    out = tmp_path / "out.csv"
    result = run(["pack", str(src), "--capacity", "8", "-o", str(out)])
    assert result.exit_code == 0, result.output
    lines = out.read_text().splitlines()
    assert lines[0] == "buffer,offset,start,end,size,hint,gaps"
    rows = list(csv.DictReader(out.open()))
    # a is inactive over 1..2 (inclusive: [1, 3)), b is pinned at 0 inside that gap,
    # c is hinted to 6 and sits there; a takes 0 outside b's time
    assert [(r["buffer"], r["offset"], r["start"], r["end"], r["hint"], r["gaps"]) for r in rows] == [
        ("a", "0", "0", "4", "-1", "1-2"), ("b", "0", "1", "2", "-1", ""), ("c", "6", "0", "9", "6", "")]
    # the solution reads back as input, now with every offset pinned, and still packs
    again = read_buffers(out)
    assert [b.offset for b in again.buffers] == [0, 0, 6]
    assert check_packing(again.buffers, [0, 0, 6], 8) == []


# ---------------------------------------------------------------------------
# Gaps


def test_a_buffer_fits_in_another_buffers_gap(tmp_path):
    # a holds 4 bytes over [0, 10) except [3, 6); b needs 4 bytes over [3, 6): both at 0
    text = "id,lower,upper,size,gaps\na,0,10,4,3-6\nb,3,6,4,\n"
    result = pack(read_buffers(csv_file(tmp_path, text)).buffers, 4)
    assert result.status == "packed" and list(result.offsets) == [0, 0]
    # the same without the gap: 8 bytes at once, proven infeasible at 4
    plain = read_buffers(csv_file(tmp_path, "id,lower,upper,size\na,0,10,4\nb,3,6,4\n", "p.csv"))
    assert pack(plain.buffers, 4).status == "infeasible"


def test_gap_ends_are_inclusive_under_an_end_column(tmp_path):
    # end 9 is [0, 10); gap 3-5 is [3, 6): b over 3..5 (= [3, 6)) fits in it
    fits = "id,start,end,size,gaps\na,0,9,4,3-5\nb,3,5,4,\n"
    assert pack(read_buffers(csv_file(tmp_path, fits)).buffers, 4).status == "packed"
    # b over 3..6 (= [3, 7)) outlasts the gap by one step: infeasible at 4
    late = "id,start,end,size,gaps\na,0,9,4,3-5\nb,3,6,4,\n"
    assert pack(read_buffers(csv_file(tmp_path, late, "l.csv")).buffers, 4).status == "infeasible"


def test_a_window_keeps_part_of_the_bytes_and_the_rest_is_free(tmp_path):
    # over [3, 6) a keeps only its byte [0, 1): b (3 bytes) fits above it at offset 1
    text = "id,lower,upper,size,gaps\na,0,10,4,3-6@0:1\nb,3,6,3,\n"
    buffers = read_buffers(csv_file(tmp_path, text)).buffers
    result = pack(buffers, 4)
    assert result.status == "packed" and list(result.offsets) == [0, 1]
    assert peak_live_size(buffers) == 4  # 1 + 3 over [3, 6), 4 elsewhere
    # b of 4 bytes: 1 + 4 = 5 bytes held over [3, 6), so 4 is infeasible and 5 packs
    bigger = read_buffers(csv_file(tmp_path, text.replace("b,3,6,3", "b,3,6,4"), "b.csv")).buffers
    assert pack(bigger, 4).status == "infeasible"
    assert pack(bigger, 5).status == "packed"
    assert minimize(bigger)[0].height == 5


def test_a_window_at_the_top_lets_a_buffer_share_the_bottom(tmp_path):
    # over [3, 6) a keeps its byte [3, 4): b (3 bytes) sits at the same offset, below it;
    # effective_size(b, a) = 3 - 3 = 0, so "b wholly below a" holds with both at 0
    text = "id,lower,upper,size,gaps\na,0,10,4,3-6@3:4\nb,3,6,3,\n"
    buffers = read_buffers(csv_file(tmp_path, text)).buffers
    assert effective_size(buffers[1], buffers[0]) == 0
    result = pack(buffers, 4, method="exact-search")
    assert result.status == "packed" and list(result.offsets) == [0, 0]
    assert check_packing(buffers, [0, 0], 4) == []


def test_the_validator_needs_one_buffer_below_the_other_throughout(tmp_path):
    # MiniMalloc's meaning: a pair is fine when one lies wholly below the other at every
    # common time. a holds [0, 1) over [0, 2) and [3, 4) over [2, 4); b (2 bytes) at
    # offset 1 is disjoint from a at every time but lies above a, then below: rejected
    a = Buffer("a", 0, 4, 4, gaps=(Gap(0, 2, (0, 1)), Gap(2, 4, (3, 4))))
    b = Buffer("b", 0, 4, 2)
    assert any("overlap" in p for p in check_packing([a, b], [0, 1], 4))
    assert check_packing([a, b], [0, 4], 6) == []


def test_a_buffer_below_another_can_sit_at_a_higher_offset():
    # b1 holds only [2, 4) over [0, 1) and all 4 bytes over [1, 2). Packing at 6: b0 at 0,
    # b1 at 2 (holding [4, 6) then [2, 6)), b2 and b3 (alive over [0, 1)) at 2 and 3, in
    # the hole under b1's window; effective_size(b3, b1) = 1 - 2 < 0, so b3 counts as
    # below b1 although its offset is higher: a search that only lets offsets grow along
    # its sequence misses this packing
    b1 = Buffer("b1", 0, 2, 4, gaps=(Gap(0, 1, (2, 4)),))
    buffers = [Buffer("b0", 0, 2, 2), b1, Buffer("b2", 0, 1, 1), Buffer("b3", 0, 1, 1)]
    assert check_packing(buffers, [0, 2, 2, 3], 6) == []
    result = pack(buffers, 6, method="exact-search")
    assert result.status == "packed" and check_packing(buffers, result.offsets, 6) == []
    assert pack(buffers, 5, method="exact-search").status == "infeasible"  # peak is 6


@pytest.mark.parametrize("gaps,words", [
    ("5-3", "is empty"), ("0-12", "not inside"), ("2-5 4-6", "overlaps"),
    ("2-5@0:9", "window"), ("2-5@2:2", "window"), ("2-x", "is not lo-hi"),
])
def test_malformed_gaps_are_refused_naming_the_buffer(tmp_path, gaps, words):
    path = csv_file(tmp_path, f"id,lower,upper,size,gaps\nbuf,0,10,4,{gaps}\n")
    result = run(["pack", str(path), "--capacity", "8"])
    assert result.exit_code == 2 and "'buf'" in result.output and words in result.output, \
        result.output


# ---------------------------------------------------------------------------
# Pinned offsets and hints


def test_a_pinned_buffer_stays_where_it_is_pinned(tmp_path):
    # a would go to 0 by any heuristic; pinned at 4 it stays there and b takes 0
    text = "id,lower,upper,size,offset\na,0,4,4,4\nb,0,4,4,\n"
    buffers = read_buffers(csv_file(tmp_path, text)).buffers
    for method in ("exact", "exact-search", "first-fit", "greedy-size", "best-fit-size"):
        result = pack(buffers, 8, method=method)
        assert result.status == "packed" and list(result.offsets) == [4, 0], method


def test_clashing_pins_are_proven_infeasible(tmp_path):
    # a [0, 4) and b [2, 6) overlap over [0, 4)
    path = csv_file(tmp_path, "id,lower,upper,size,offset\na,0,4,4,0\nb,0,4,4,2\n")
    result = run(["pack", str(path), "--capacity", "100"])
    assert result.exit_code == 1 and "infeasible" in result.output
    # a pin that ends above the capacity
    path = csv_file(tmp_path, "id,lower,upper,size,offset\na,0,4,4,6\n", "c.csv")
    assert run(["pack", str(path), "--capacity", "8"]).exit_code == 1


def test_pins_in_each_others_gaps_pack(tmp_path):
    text = "id,lower,upper,size,gaps,offset\na,0,10,4,3-6,0\nb,3,6,4,,0\n"
    assert pack(read_buffers(csv_file(tmp_path, text)).buffers, 4).status == "packed"


def test_a_pin_forces_the_others_around_it(tmp_path):
    # c pinned at 2 in the middle of a capacity of 6: a and b (2 bytes each, all alive
    # together) must take 0 and 4; at capacity 5 nothing fits above c (2 + 2 + 2 > 5 - 2)
    text = "id,lower,upper,size,offset\na,0,4,2,\nb,0,4,2,\nc,0,4,2,2\n"
    buffers = read_buffers(csv_file(tmp_path, text)).buffers
    result = pack(buffers, 6, method="exact-search")
    assert result.status == "packed" and sorted(result.offsets[:2]) == [0, 4]
    assert pack(buffers, 5).status == "infeasible"
    assert minimize(buffers)[0].height == 6


def test_a_misaligned_pin_is_refused(tmp_path):
    path = csv_file(tmp_path, "id,lower,upper,size,alignment,offset\np,0,4,4,4,2\n")
    result = run(["pack", str(path), "--capacity", "8"])
    assert result.exit_code == 2 and "'p'" in result.output and "alignment" in result.output


def test_hints_are_followed_when_they_pack_and_said_when_not(tmp_path):
    ok = csv_file(tmp_path, "id,lower,upper,size,hint\na,0,2,2,4\nb,0,2,2,-1\n")
    result = run(["pack", str(ok), "--capacity", "6", "-o", str(tmp_path / "o.csv")])
    assert result.exit_code == 0 and "hints: all 1 followed" in result.output
    assert [r["offset"] for r in csv.DictReader((tmp_path / "o.csv").open())] == ["4", "0"]
    clash = csv_file(tmp_path, "id,lower,upper,size,hint\na,0,2,2,0\nb,0,2,2,0\n", "c.csv")
    result = run(["pack", str(clash), "--capacity", "4"])
    assert result.exit_code == 0 and "hints: not followed" in result.output


# ---------------------------------------------------------------------------
# Every packing valid, every verdict right: brute force over small gapped instances


@st.composite
def gapped_instances(draw):
    buffers = []
    for i in range(draw(st.integers(1, 4))):
        lower = draw(st.integers(0, 5))
        upper = draw(st.integers(lower + 1, 7))
        size = draw(st.integers(1, 4))
        gaps, t = [], lower
        while t < upper - 1 and draw(st.booleans()):
            g0 = draw(st.integers(t, upper - 1))
            g1 = draw(st.integers(g0 + 1, upper))
            window = None
            if size > 1 and draw(st.booleans()):
                wl = draw(st.integers(0, size - 1))
                window = (wl, draw(st.integers(wl + 1, size)))
            gaps.append(Gap(g0, g1, window))
            t = g1
        alignment = draw(st.sampled_from([1, 2]))
        offset = draw(st.one_of(st.none(), st.integers(0, 2)))  # pins are aligned
        buffers.append(Buffer(f"b{i}", lower, upper, size, alignment, tuple(gaps),
                              None if offset is None else offset * alignment))
    return buffers, draw(st.integers(1, 10))


def packs_by_brute_force(buffers, capacity):
    choices = [[b.offset] if b.offset is not None else range(0, capacity - b.size + 1, b.alignment)
               for b in buffers]
    return any(check_packing(buffers, list(o), capacity) == [] for o in itertools.product(*choices))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gapped_instances())
def test_exact_verdict_on_gaps_and_pins_matches_trying_every_offset(case):
    buffers, capacity = case
    result = pack(buffers, capacity, method="exact-search")
    assert result.status == ("packed" if packs_by_brute_force(buffers, capacity) else "infeasible")
    if result.status == "packed":
        assert check_packing(buffers, result.offsets, capacity) == []
    for method in ("greedy-size", "best-fit-length", "first-fit", "exact"):
        got = pack(buffers, capacity, method=method)
        if got.status == "packed":
            assert check_packing(buffers, got.offsets, capacity) == [], method


def test_gapped_buffer_model_refuses_what_minimalloc_leaves_undefined():
    with pytest.raises(MemplaceError, match="'x'.*not inside"):
        Buffer("x", 2, 5, 1, gaps=(Gap(1, 3),))
    with pytest.raises(MemplaceError, match="'x'.*negative"):
        Buffer("x", 2, 5, 1, offset=-1)
