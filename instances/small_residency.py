"""Small residency instances (20-40 ops) where the exact model can prove optima.

Seeded synthetic layered DAGs (`synth-N`, instances/synthetic.py) and two small CNNs
(`unet`, 31 ops; `vgg16`, 21 ops) on the NNP-I and the edge NPU presets, with every
level but the last cut to a share of the peak live bytes, so that fast memory
is scarce and homes, windows and copies all matter. They are built on demand,
deterministically (same code, same instance), so no file needs committing.
"""
from __future__ import annotations

from typing import Any

from memplace.model import Instance

# (workload, hardware, workload parameters, share of the peak live bytes per fast level)
SMALL_RESIDENCY: tuple[tuple[str, str, dict[str, Any], tuple[float, ...]], ...] = (
    ("synth-20", "nnpi", {"seed": 1}, (0.15, 0.4)),
    ("synth-30", "nnpi", {"seed": 2}, (0.15, 0.4)),
    ("synth-40", "nnpi", {"seed": 3}, (0.15, 0.4)),
    ("synth-20", "edge-npu", {"seed": 4}, (0.25,)),
    ("synth-30", "edge-npu", {"seed": 5}, (0.25,)),
    ("synth-40", "edge-npu", {"seed": 6}, (0.25,)),
    ("unet", "nnpi", {}, (0.02, 0.1)),
    ("vgg16", "nnpi", {}, (0.01, 0.05)),
    ("unet", "edge-npu", {}, (0.005,)),
)

ROUND = 4096  # capacities are whole pages


def small_instance_dict(workload_name: str, hardware_name: str, params: dict[str, Any],
                        shares: tuple[float, ...]) -> dict[str, Any]:
    """The instance dict: the catalog instance with each fast level's capacity cut to
    its `shares` of the peak live bytes (never above the preset's), whole pages."""
    from memplace.instances.catalog import build_instance
    data = build_instance(workload_name, hardware_name, **params)
    peak = Instance.from_dict(data).peak_live_bytes()
    levels = data["hardware"]["levels"]
    for level, share in zip(levels[:-1], shares):
        cap = -(-int(peak * share) // ROUND) * ROUND
        level["capacity"] = min(level["capacity"], cap)
    text = "+".join(f"{s:g}" for s in shares)
    args = ",".join([f"{k}={v}" for k, v in sorted(params.items())] + [f"fast={text}"])
    data["name"] = f"{workload_name}[{args}]@{hardware_name}"
    data["notes"] = (data.get("notes", "") + f"; fast levels cut to {text} of the peak live "
                     "bytes (memplace.instances.small_residency)")
    return data


def small_residency_instances() -> list[Instance]:
    """Every small residency instance, in the table's order."""
    return [Instance.from_dict(small_instance_dict(*spec)) for spec in SMALL_RESIDENCY]
