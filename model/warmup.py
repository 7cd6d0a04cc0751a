"""Compile every cost kernel once (results cached on disk by Numba)."""
from __future__ import annotations

import time


def tiny_instance_dict() -> dict:
    """A three-op, two-level instance with an addressed level: enough to touch every kernel."""
    return {
        "format": "memplace-instance/1",
        "name": "tiny@warmup",
        "workload": {
            "name": "tiny",
            "ops": [{"name": f"op{k}", "type": "matmul", "flops": 1000.0} for k in range(3)],
            "tensors": [
                {"name": "w", "kind": "weight", "size": 64, "producer": None, "accesses": [[0, 64]]},
                {"name": "a", "kind": "activation", "size": 32, "producer": 0, "accesses": [[0, 32], [1, 32]]},
                {"name": "b", "kind": "activation", "size": 32, "producer": 1, "accesses": [[1, 32], [2, 32]]},
            ],
        },
        "hardware": {
            "name": "warmup",
            "compute_rate": 1e9,
            "levels": [
                {"name": "SRAM", "capacity": 96, "bandwidth": 1e9, "addressed": True, "alignment": 16},
                {"name": "DRAM", "capacity": None, "bandwidth": 1e8},
            ],
        },
    }


def warmup() -> float:
    """Compile (or load from the disk cache) every kernel; return the seconds it took."""
    began = time.perf_counter()
    warm_static()
    warm_residency()
    return time.perf_counter() - began


def warm_static() -> None:
    """The static cost model's kernels and rectify's (which packs offsets)."""
    import numpy as np

    from memplace.model.instance import Instance
    from memplace.model.static import cost, rectification

    inst = Instance.from_dict(tiny_instance_dict())
    place = np.zeros(inst.n_tensors, np.int64)
    cost.latency(inst, place)
    cost.latency_batch(inst, np.zeros((2, inst.n_tensors), np.int64))
    cost.move_delta(inst, place, 0, 1)
    cost.capacity_ok(inst, place)
    rectification.rectify(inst, place)


def warm_residency() -> None:
    """The residency simulator's kernels: a full run, a batch, and a one-window change
    tried, kept, tried again (an eviction) and undone, on `residency_case`'s solutions."""
    from memplace.model.residency import Simulation, simulate_batch

    inst, place, window, evicted = residency_case()
    simulate_batch(inst, place, [[], [window]])
    sim = Simulation(inst, place, [])
    sim.try_change(0, window)
    sim.accept()
    sim.try_change(1, evicted)
    sim.reject()


def residency_case():
    """The tiny instance with "a" read again by the last op, every tensor homed in DRAM,
    a defining window of "b" and an evicted one of "a": each window set the
    warmup simulates is a valid solution (section 10; a test checks). The kernels index
    their arrays by a window's ops unchecked: the warmup's eviction was once due at op 3
    of these three ops, an invalid window whose try wrote past the end of an array
    (`due_count[3]`), a heap corruption in every process that warmed up."""
    import numpy as np

    from memplace.model.instance import Instance
    from memplace.model.residency import Window

    data = tiny_instance_dict()
    data["workload"]["tensors"][1]["accesses"].append([2, 32])
    inst = Instance.from_dict(data)
    place = np.ones(inst.n_tensors, np.int64)
    window = Window(tensor=2, level=0, start=1, first=1, last=2, offset=0)
    # producer 0 < issue 1 < due 2 <= the last op of "a"; held over ops 0-1, beside b's
    evicted = Window(tensor=1, level=0, start=0, first=0, last=1, offset=32, evict=(1, 2))
    return inst, place, window, evicted
