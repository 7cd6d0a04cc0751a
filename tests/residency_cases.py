"""Small hand-checkable instances for the residency tests."""
from __future__ import annotations

import copy

import numpy as np

from memplace.model import Instance
from memplace.model.residency import ResidencySolution, Window

SRAM, LLC, DRAM = 0, 1, 2


def small_dict(addressed: bool = False) -> dict:
    """Six ops of 1 us compute each; three levels, SRAM 1 GB/s, LLC 0.4 GB/s, DRAM 0.1 GB/s.

    tensor 0 `w`  weight, 100 B, read by op 2
    tensor 1 `a`  activation, 200 B, written by op 0, read by ops 1 and 4
    tensor 2 `b`  activation, 50 B, written by op 1, read by op 5
    tensor 3 `x`  graph input, 40 B, no producer, read by ops 1 and 3
    """
    sram = {"name": "SRAM", "capacity": 320, "bandwidth": 1e9}
    if addressed:
        sram.update(addressed=True, alignment=8)
    return {
        "format": "memplace-instance/1", "name": "small@test",
        "workload": {"name": "small",
                     "ops": [{"name": f"op{k}", "type": "x", "flops": 1000.0} for k in range(6)],
                     "tensors": [
                         {"name": "w", "kind": "weight", "size": 100, "producer": None,
                          "accesses": [[2, 100]]},
                         {"name": "a", "kind": "activation", "size": 200, "producer": 0,
                          "accesses": [[0, 200], [1, 200], [4, 200]]},
                         {"name": "b", "kind": "activation", "size": 50, "producer": 1,
                          "accesses": [[1, 50], [5, 50]]},
                         {"name": "x", "kind": "activation", "size": 40, "producer": None,
                          "accesses": [[1, 40], [3, 40]]},
                     ]},
        "hardware": {"name": "small", "compute_rate": 1e9,
                     "levels": [sram,
                                {"name": "LLC", "capacity": 10000, "bandwidth": 4e8},
                                {"name": "DRAM", "capacity": None, "bandwidth": 1e8}]},
    }


def small(addressed: bool = False, **level_keys) -> Instance:
    data = small_dict(addressed)
    for l, keys in level_keys.items():
        data["hardware"]["levels"][int(l[1:])].update(keys)
    return Instance.from_dict(copy.deepcopy(data))


def solution(inst: Instance, windows=(), homes=None, offsets=None) -> ResidencySolution:
    place = np.full(inst.n_tensors, DRAM, np.int64) if homes is None else np.array(homes, np.int64)
    offs = None if offsets is None else np.array(offsets, np.int64)
    return ResidencySolution(inst.name, place, offs, tuple(windows))


__all__ = ["SRAM", "LLC", "DRAM", "small", "small_dict", "solution", "Window"]
