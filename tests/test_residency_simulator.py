"""Spec section 11 on hand-computed cases: each asserts the exact figures a rule implies.

The small instance (tests/residency_cases.py): ops of 1 us compute, SRAM 1 GB/s,
LLC 0.4 GB/s, DRAM 0.1 GB/s; copy bandwidth = bandwidth unless a test sets it.
"""
from __future__ import annotations

import pytest

from memplace.model import latency
from memplace.model.residency import Window, simulate, timeline
from residency_cases import DRAM, LLC, SRAM, small, solution

US = 1e-6


def approx(x):
    return pytest.approx(x, rel=1e-12, abs=0)


def test_no_windows_is_the_static_latency_exactly():
    inst = small()
    for homes in ([DRAM] * 4, [SRAM, LLC, DRAM, SRAM], [LLC, SRAM, SRAM, LLC]):
        sol = solution(inst, [], homes=homes)
        assert simulate(inst, sol) == latency(inst, sol.placement)


def test_static_figure_of_the_small_instance():
    # DRAM everywhere: op times 2, 2.9, 1, 1, 2, 1 us
    inst = small()
    tl = timeline(inst, solution(inst))
    assert tl.elapsed == [approx(x * US) for x in (2, 2.9, 1, 1, 2, 1)]
    assert tl.latency == approx(9.9 * US)


def _fast_op2(**keys):
    inst = small(**keys)
    data = inst.data
    data["workload"]["ops"][2]["flops"] = 0.0
    from memplace.model import Instance
    return Instance.from_dict(data)


def test_an_early_prefetch_hides_the_copy():
    # homes of a, b, x in SRAM; w in DRAM, read by op 2 (no compute): 1 us from DRAM, 0.25 us from LLC
    inst = _fast_op2()
    homes = [DRAM, SRAM, SRAM, SRAM]
    assert simulate(inst, solution(inst, [], homes=homes)) == approx(6 * US)
    # the 100 B copy takes 1 us on DRAM's channel; op 0 leaves it 1 us idle
    sol = solution(inst, [Window(0, LLC, 0, 2, 2)], homes=homes)
    tl = timeline(inst, sol)
    assert tl.latency == approx(5.25 * US)
    assert tl.wait == [0.0] * 6
    assert tl.copies[0].done_op == 0


def test_a_late_prefetch_makes_its_first_op_wait():
    # copy bandwidth 50 MB/s: the copy takes 2 us, op 1 gives it 1 us, op 2 waits 1 us
    inst = _fast_op2(L2={"copy_bandwidth": 5e7})
    homes = [DRAM, SRAM, SRAM, SRAM]
    tl = timeline(inst, solution(inst, [Window(0, LLC, 1, 2, 2)], homes=homes))
    assert tl.wait == [0, 0, approx(1 * US), 0, 0, 0]
    assert tl.latency == approx(6.25 * US)
    assert simulate(inst, solution(inst, [Window(0, LLC, 0, 2, 2)], homes=homes)) == approx(5.25 * US)


def test_both_queues_busy_share_the_channel_equally():
    # a written into SRAM by op 0 and evicted (1, 4); w prefetched from 1 for op 2; both on DRAM
    inst = small()
    homes = [DRAM, DRAM, LLC, LLC]
    sol = solution(inst, [Window(1, SRAM, 0, 0, 1, evict=(1, 4)), Window(0, SRAM, 1, 2, 2)], homes=homes)
    tl = timeline(inst, sol)
    # op 1: 1 us idle at 50 MB/s each -> w 50 B left, a 150 B left; op 2 waits 1 us (w done,
    # a at 100 B); op 2's 1 us at the full 100 MB/s completes a; op 4 reads a from DRAM (2 us)
    assert tl.wait == [0, 0, approx(1 * US), 0, 0, 0]
    assert tl.elapsed == [approx(x * US) for x in (1, 1, 1, 1, 2, 1)]
    assert tl.latency == approx(8 * US)
    done = {(c.tensor, c.evict): c.done_op for c in tl.copies}
    assert done == {(0, False): 2, (1, True): 2}
