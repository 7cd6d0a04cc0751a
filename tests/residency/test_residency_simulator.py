"""docs/spec.md section 11 on hand-computed cases: each asserts the exact figures a rule implies.

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


def _instance(flops, tensors, dram_copy=1e8):
    """SRAM 1 GB/s, LLC 0.4 GB/s, DRAM 0.1 GB/s (copies at `dram_copy`); compute at 1 GFLOP/s."""
    from memplace.model import Instance
    return Instance.from_dict({
        "format": "memplace-instance/1", "name": "case",
        "workload": {"name": "case", "ops": [{"name": f"op{k}", "flops": float(f)} for k, f in enumerate(flops)],
                     "tensors": [{"name": f"t{j}", **t} for j, t in enumerate(tensors)]},
        "hardware": {"name": "case", "compute_rate": 1e9, "levels": [
            {"name": "SRAM", "capacity": 10000, "bandwidth": 1e9},
            {"name": "LLC", "capacity": 10000, "bandwidth": 4e8},
            {"name": "DRAM", "capacity": None, "bandwidth": 1e8, "copy_bandwidth": dram_copy}]}})


def _weight(k, size=100):
    return {"kind": "weight", "size": size, "producer": None, "accesses": [[k, 0]]}


def _both(inst, homes, windows):
    """The reference's timeline, checked against the kernel's."""
    from memplace.model.residency import details
    sol = solution(inst, windows, homes=homes)
    tl = timeline(inst, sol)
    fast = details(inst, sol)
    assert fast.latency == approx(tl.latency) and fast.wait.tolist() == [approx(w) for w in tl.wait]
    return tl


def test_copies_issued_together_queue_by_due_op_first():
    # p (tensor 0) due at op 2, q (tensor 1) due at op 1, both issued before op 0: q goes first
    inst = _instance([500, 0, 0], [_weight(2), _weight(1)])
    tl = _both(inst, [DRAM, DRAM], [Window(0, SRAM, 0, 2, 2), Window(1, SRAM, 0, 1, 1)])
    # op 0 gives 0.5 us: q has 50 B left, op 1 waits 0.5 us; then p needs 1 us, op 2 waits it
    assert tl.wait == [0, approx(0.5 * US), approx(1 * US)]


def test_copies_due_together_queue_by_tensor_index():
    # both due at op 1; tensor 0 first: op 0's 1 us completes it exactly, tensor 1 waits
    inst = _instance([1000, 0], [_weight(1), _weight(1)])
    tl = _both(inst, [DRAM, DRAM], [Window(1, SRAM, 0, 1, 1), Window(0, SRAM, 0, 1, 1)])
    done = {c.tensor: c.done_op for c in tl.copies}
    assert done == {0: 0, 1: 1}
    assert tl.wait == [0, approx(1 * US)]


def test_every_channel_moves_copies_during_a_wait():
    # a (DRAM, 100 B, 1 us) due at op 1; b (LLC, 200 B at 0.4 GB/s, 0.5 us) due at op 2;
    # ops take no time, so only the wait before op 1 moves b, and it is done by op 2
    inst = _instance([0, 0, 0], [_weight(1), _weight(2, size=200)])
    tl = _both(inst, [DRAM, LLC], [Window(0, SRAM, 0, 1, 1), Window(1, SRAM, 0, 2, 2)])
    assert tl.wait == [0, approx(1 * US), 0]
    assert tl.latency == approx(1 * US)


def test_a_channel_busy_with_accesses_moves_no_copy():
    # op 0 reads 100 B from DRAM for its whole 1 us: the prefetch of w gets no idle time
    inst = _instance([1000, 0], [{"kind": "weight", "size": 100, "producer": None, "accesses": [[0, 100]]},
                                 _weight(1)])
    tl = _both(inst, [DRAM, DRAM], [Window(1, SRAM, 0, 1, 1)])
    assert tl.wait == [0, approx(1 * US)]


def test_a_prefetch_issued_at_an_eviction_due_joins_after_the_wait():
    # a (200 B, home DRAM) written into SRAM by op 0, evicted (1, 2); prefetched into LLC from
    # op 2 for op 3. Eviction: 1 us idle in op 1 (100 B left), op 2 waits 1 us for it alone;
    # then the prefetch moves 100 B in op 2 and op 3 waits 1 us for the rest.
    act = {"kind": "activation", "size": 200, "producer": 0, "accesses": [[0, 200], [1, 200], [3, 200]]}
    inst = _instance([1000, 1000, 1000, 0], [act])
    tl = _both(inst, [DRAM], [Window(0, SRAM, 0, 0, 1, evict=(1, 2)), Window(0, LLC, 2, 3, 3)])
    assert tl.wait == [0, 0, approx(1 * US), approx(1 * US)]
    # op 3 reads 200 B from LLC: 0.5 us
    assert tl.latency == approx((1 + 1 + 1 + 1 + 1 + 0.5) * US)


def test_the_access_bandwidth_is_the_serving_levels():
    # w read by op 0 (no compute) from an LLC window: 100 B / 0.4 GB/s, not DRAM's 1 us;
    # its window is defining-free (a weight): a prefetch must precede op 0, so use op 1
    inst = _instance([1000, 0], [_weight(1), {"kind": "weight", "size": 100, "producer": None,
                                              "accesses": [[1, 100]]}])
    tl = _both(inst, [DRAM, DRAM], [Window(1, LLC, 0, 1, 1)])
    assert tl.elapsed == [approx(1 * US), approx(0.25 * US)]
