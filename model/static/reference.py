"""The cost model in plain Python, written to read like docs/spec.md.

This is the oracle the Numba kernels (`kernels.py`) are tested against. It reads
the instance's JSON dict, not the arrays, so the two share no code but the spec.
"""
from __future__ import annotations

from fractions import Fraction
from typing import Any, Sequence


def _levels(data: dict[str, Any]) -> list[dict[str, Any]]:
    return data["hardware"]["levels"]


def live_range(data: dict[str, Any], t: int) -> tuple[int, int]:
    """docs/spec.md section 3: weights live at every step; activations from first to last access."""
    n = len(data["workload"]["ops"])
    tensor = data["workload"]["tensors"][t]
    if tensor["kind"] == "weight":
        return 0, n - 1
    steps = [k for k, _ in tensor["accesses"]]
    return min(steps), max(steps)


def load(data: dict[str, Any], placement: Sequence[int]) -> list[list[int]]:
    """load[l][k]: sum of sizes of tensors placed in level l and live at step k."""
    n = len(data["workload"]["ops"])
    out = [[0] * n for _ in _levels(data)]
    for t, tensor in enumerate(data["workload"]["tensors"]):
        first, last = live_range(data, t)
        for k in range(first, last + 1):
            out[placement[t]][k] += tensor["size"]
    return out


def latency(data: dict[str, Any], placement: Sequence[int]) -> float:
    """docs/spec.md section 4: sum over ops of max(compute, memory), memory summed in tensor order."""
    ops = data["workload"]["ops"]
    rate = data["hardware"]["compute_rate"]
    bandwidth = [level["bandwidth"] for level in _levels(data)]
    accesses_of_op: list[list[tuple[int, int]]] = [[] for _ in ops]
    for t, tensor in enumerate(data["workload"]["tensors"]):
        for k, b in tensor["accesses"]:
            accesses_of_op[k].append((t, b))
    total = 0.0
    for k, op in enumerate(ops):
        compute = float(op["flops"]) / rate
        memory = 0.0
        for t, b in sorted(accesses_of_op[k]):
            memory += b / bandwidth[placement[t]]
        total += max(compute, memory)
    return total


def is_capacity_valid(data: dict[str, Any], placement: Sequence[int]) -> bool:
    levels = _levels(data)
    for l, row in enumerate(load(data, placement)):
        cap = levels[l]["capacity"]
        if cap is not None and max(row) > cap:
            return False
    return True


def rectify(data: dict[str, Any], placement: Sequence[int]) -> list[int]:
    """docs/spec.md section 6, literally: per capacitated level, per step, evict the tensor with
    the smallest traffic/size (ties: larger size, then larger index) until it fits."""
    tensors = data["workload"]["tensors"]
    levels = _levels(data)
    n = len(data["workload"]["ops"])
    place = list(placement)
    ranges = [live_range(data, t) for t in range(len(tensors))]

    def key(t: int) -> tuple[Fraction, int, int]:
        traffic = sum(b for _, b in tensors[t]["accesses"])
        return Fraction(traffic, tensors[t]["size"]), -tensors[t]["size"], -t

    for l in range(len(levels) - 1):
        cap = levels[l]["capacity"]
        for k in range(n):
            while True:
                live = [t for t in range(len(tensors))
                        if place[t] == l and ranges[t][0] <= k <= ranges[t][1]]
                if sum(tensors[t]["size"] for t in live) <= cap:
                    break
                place[min(live, key=key)] = l + 1
    return place
