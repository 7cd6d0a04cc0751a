"""Every rule of docs/spec.md section 10 (and the homes' sections 3 and 5): a minimal solution
that breaks it is rejected with that rule named, and a neighbour that keeps it passes."""
from __future__ import annotations

import pytest

from memplace.model.residency import RULES, Window, validate
from residency_cases import DRAM, LLC, SRAM, small, solution


@pytest.fixture(scope="module")
def inst():
    return small()


@pytest.fixture(scope="module")
def addressed():
    return small(addressed=True)


def rules_of(inst, sol):
    return validate(inst, sol).rules()


def test_a_solution_without_windows_is_valid(inst):
    assert rules_of(inst, solution(inst)) == set()


def test_window_level_must_be_faster_than_home(inst):
    assert rules_of(inst, solution(inst, [Window(0, DRAM, 0, 2, 2)])) == {"window-level"}
    assert rules_of(inst, solution(inst, [Window(0, LLC, 0, 2, 2)], homes=[LLC, DRAM, DRAM, DRAM])) \
        == {"window-level"}
    assert rules_of(inst, solution(inst, [Window(0, LLC, 0, 2, 2)])) == set()


def test_window_steps_must_be_in_order(inst):
    report = validate(inst, solution(inst, [Window(0, SRAM, 2, 3, 2)]))
    assert report.rules() == {"window-order"}
    v = report.violations[0]
    assert (v.window, v.tensor, v.op) == (0, 0, 2)


def test_window_must_lie_inside_the_live_range(inst):
    # a is live 0..4; x (graph input) is live 1..3
    assert "window-live-range" in rules_of(inst, solution(inst, [Window(1, SRAM, 0, 0, 5)]))
    assert rules_of(inst, solution(inst, [Window(3, SRAM, 0, 1, 1)])) == {"window-live-range"}
    assert rules_of(inst, solution(inst, [Window(3, SRAM, 1, 3, 3)])) == set()


def test_start_equal_to_first_needs_the_producer(inst):
    # a's producer is op 0, so start == first == 1 is neither defining nor prefetch
    assert rules_of(inst, solution(inst, [Window(1, SRAM, 1, 1, 1)])) == {"window-kind"}
    # a weight has no producer: it cannot have a defining window
    assert rules_of(inst, solution(inst, [Window(0, SRAM, 2, 2, 2)])) == {"window-kind"}
    assert rules_of(inst, solution(inst, [Window(1, SRAM, 0, 0, 4)])) == set()


def test_only_defining_windows_may_be_evicted(inst):
    assert rules_of(inst, solution(inst, [Window(0, SRAM, 0, 2, 2, evict=(3, 4))])) == {"evict-defining"}


@pytest.mark.parametrize("evict", [(0, 3), (2, 2), (3, 2), (1, 5)])
def test_eviction_needs_producer_before_issue_before_due_within_the_range(inst, evict):
    report = validate(inst, solution(inst, [Window(1, SRAM, 0, 0, 1, evict=evict)]))
    assert report.rules() == {"evict-range"}


def test_eviction_due_at_the_last_live_step_is_valid(inst):
    assert rules_of(inst, solution(inst, [Window(1, SRAM, 0, 0, 1, evict=(1, 4))])) == set()


def test_a_tensor_has_at_most_one_defining_window(inst):
    sol = solution(inst, [Window(1, SRAM, 0, 0, 0), Window(1, LLC, 0, 0, 1)])
    report = validate(inst, sol)
    assert "one-defining" in report.rules()
    assert [v.window for v in report.violations if v.rule == "one-defining"] == [1]


def test_windows_of_a_tensor_occupy_disjoint_steps(inst):
    # occupancies 0..2 and 2..3 share step 2, even in different levels
    sol = solution(inst, [Window(0, SRAM, 0, 1, 2), Window(0, LLC, 2, 3, 3)])
    assert rules_of(inst, sol) == {"disjoint-occupancy"}
    sol = solution(inst, [Window(0, SRAM, 0, 1, 2), Window(0, LLC, 3, 4, 4)])
    assert rules_of(inst, sol) == set()


def test_eviction_extends_the_occupancy_to_due_minus_one(inst):
    # defining window of a: last 1, evicted (2, 4) -> occupies 0..3, so a prefetch from 3 overlaps
    sol = solution(inst, [Window(1, SRAM, 0, 0, 1, evict=(2, 4)), Window(1, LLC, 3, 4, 4)])
    assert rules_of(inst, sol) == {"disjoint-occupancy"}


def test_home_not_valid_without_an_eviction_of_the_defining_window(inst):
    # a is written into SRAM and never evicted: the home never holds it, op 4 reads the home
    report = validate(inst, solution(inst, [Window(1, SRAM, 0, 0, 1)]))
    assert report.rules() == {"home-not-valid"}
    v = report.violations[0]
    assert (v.tensor, v.op) == (1, 4)


def test_home_valid_only_from_the_eviction_due(inst):
    # evicted (1, 4) but the window ends at 0: op 1 reads the home before op 4
    report = validate(inst, solution(inst, [Window(1, SRAM, 0, 0, 0, evict=(1, 4))]))
    assert report.rules() == {"home-not-valid"}
    assert report.violations[0].op == 1


def test_zero_byte_access_from_an_invalid_home_is_invalid():
    data = small().data
    data["workload"]["tensors"][1]["accesses"][2] = [4, 0]
    from memplace.model import Instance
    inst = Instance.from_dict(data)
    assert rules_of(inst, solution(inst, [Window(1, SRAM, 0, 0, 1)])) == {"home-not-valid"}


def test_prefetch_needs_a_valid_home(inst):
    # defining window never evicted: a later prefetch of a has nothing to read
    sol = solution(inst, [Window(1, SRAM, 0, 0, 1), Window(1, LLC, 2, 4, 4)])
    report = validate(inst, sol)
    assert report.rules() == {"prefetch-not-valid"}
    assert report.violations[0].window == 1
    # evicted by op 2: a prefetch from op 2 reads the valid home
    sol = solution(inst, [Window(1, SRAM, 0, 0, 1, evict=(1, 2)), Window(1, LLC, 2, 4, 4)])
    assert rules_of(inst, sol) == set()
    sol = solution(inst, [Window(1, SRAM, 0, 0, 1, evict=(1, 3)), Window(1, LLC, 3, 4, 4)])
    assert rules_of(inst, sol) == set()


def test_capacity_counts_homes_and_windows(inst):
    # SRAM holds 320 B; homes a (200, live 0..4) and w (100) use 300; a window of x (40) at 1..3 overflows
    homes = [SRAM, SRAM, DRAM, DRAM]
    assert rules_of(inst, solution(inst, [], homes=homes)) == set()
    report = validate(inst, solution(inst, [Window(3, SRAM, 1, 3, 3)], homes=homes))
    assert report.rules() == {"capacity"}
    assert report.violations[0].op == 1 and "340 bytes" in report.violations[0].message
    # the window of b (50 B) at steps 4..5 fits: a is no longer live at 5, but is at 4
    assert rules_of(inst, solution(inst, [Window(2, SRAM, 4, 5, 5)], homes=homes)) == {"capacity"}
    assert rules_of(inst, solution(inst, [Window(2, SRAM, 2, 5, 5)], homes=[SRAM, LLC, DRAM, DRAM])) == set()


def test_capacity_counts_the_eviction_hold(inst):
    homes = [SRAM, DRAM, DRAM, DRAM]  # w (100) in SRAM at every step: 220 B free
    ok = solution(inst, [Window(1, SRAM, 0, 0, 1, evict=(1, 4)), Window(2, SRAM, 4, 5, 5)], homes=homes)
    assert rules_of(inst, ok) == set()  # a's window holds 0..3, b's window 4..5
    x = solution(inst, [Window(1, SRAM, 0, 0, 1, evict=(1, 4)), Window(3, SRAM, 1, 3, 3)], homes=homes)
    assert rules_of(inst, x) == {"capacity"}


def test_offsets_are_required_with_an_addressed_level(addressed):
    sol = solution(addressed, [], homes=[SRAM, DRAM, DRAM, DRAM])
    assert rules_of(addressed, sol) == {"offsets-missing"}


def test_window_in_an_addressed_level_needs_an_offset(addressed):
    sol = solution(addressed, [Window(0, SRAM, 0, 2, 2)], offsets=[-1] * 4)
    assert rules_of(addressed, sol) == {"offset-missing"}
    sol = solution(addressed, [Window(0, SRAM, 0, 2, 2, offset=16)], offsets=[-1] * 4)
    assert rules_of(addressed, sol) == set()


def test_offset_off_an_addressed_level_is_invalid(inst, addressed):
    assert rules_of(inst, solution(inst, [Window(0, LLC, 0, 2, 2, offset=0)])) == {"offset-not-addressed"}
    from memplace.model.residency import ResidencySolution
    sol = solution(addressed, [], offsets=[-1] * 4)
    sol.latency = 1.0
    data = sol.to_dict(addressed)
    data["offsets"][2] = 0  # home of b is DRAM
    sol = ResidencySolution.from_dict(data, addressed)
    assert rules_of(addressed, sol) == {"offset-not-addressed"}


def test_window_offset_alignment_and_bounds(addressed):
    assert rules_of(addressed, solution(addressed, [Window(0, SRAM, 0, 2, 2, offset=4)],
                                        offsets=[-1] * 4)) == {"offset-alignment"}
    assert rules_of(addressed, solution(addressed, [Window(0, SRAM, 0, 2, 2, offset=224)],
                                        offsets=[-1] * 4)) == {"offset-bounds"}
    assert rules_of(addressed, solution(addressed, [Window(0, SRAM, 0, 2, 2, offset=216)],
                                        offsets=[-1] * 4)) == set()


def test_window_addresses_must_not_overlap_homes_or_windows_sharing_a_step(addressed):
    homes = [DRAM, SRAM, DRAM, DRAM]  # a's home in SRAM at [0, 200), live 0..4
    clash = solution(addressed, [Window(0, SRAM, 0, 2, 2, offset=192)], homes=homes, offsets=[-1, 0, -1, -1])
    report = validate(addressed, clash)
    assert report.rules() == {"offset-overlap"}
    assert "home of tensor 1" in report.violations[0].message
    fine = solution(addressed, [Window(0, SRAM, 0, 2, 2, offset=200)], homes=homes, offsets=[-1, 0, -1, -1])
    assert rules_of(addressed, fine) == set()
    # windows of w (0..2) and b (3..5) share no step: the same address is fine; x's (1..3) is not
    two = [Window(0, SRAM, 0, 2, 2, offset=0), Window(2, SRAM, 3, 5, 5, offset=0)]
    assert rules_of(addressed, solution(addressed, two, offsets=[-1] * 4)) == set()
    three = two + [Window(3, SRAM, 1, 3, 3, offset=40)]
    report = validate(addressed, solution(addressed, three, offsets=[-1] * 4))
    assert report.rules() == {"offset-overlap"}
    assert len(report.violations) == 2  # x's window meets both


def test_every_rule_has_a_test():
    import inspect
    import sys
    source = inspect.getsource(sys.modules[__name__])
    untested = [rule for rule in RULES if f'"{rule}"' not in source]
    assert untested == []


def test_violations_are_all_collected(inst):
    sol = solution(inst, [Window(0, DRAM, 0, 2, 2), Window(1, SRAM, 1, 1, 1),
                          Window(2, SRAM, 1, 5, 5, evict=(2, 3))])
    assert [v.window for v in validate(inst, sol).violations] == [0, 1, 2]


def test_claimed_latency_is_checked(inst):
    sol = solution(inst, [Window(0, SRAM, 0, 2, 2)])
    report = validate(inst, sol)
    assert report.valid and not report.ok  # the claim is NaN
    sol.latency = report.latency
    assert validate(inst, sol).ok
    sol.latency = report.latency * (1 + 1e-8)
    assert not validate(inst, sol).ok
