"""Hardware presets: memory hierarchies in the spec's `hardware` form, fastest level first.

Each preset carries a `source` naming where its figures come from; figures that
the sources do not publish directly are derived and say so. Capacities are
bytes, bandwidths bytes per second, compute rates operations per second at the
int8 peak (dense), matching the int8 default element width of the workloads.
"""
from __future__ import annotations

import copy
from typing import Any

KiB, MiB = 1024, 1024 * 1024

NNPI: dict[str, Any] = {
    "name": "nnpi",
    "compute_rate": 9.2e13,
    "levels": [
        {"name": "SRAM", "capacity": 4 * MiB, "bandwidth": 6.8e12},
        {"name": "LLC", "capacity": 24 * MiB, "bandwidth": 6.8e11},
        {"name": "DRAM", "capacity": None, "bandwidth": 6.8e10},
    ],
    "source": (
        "Intel NNP-I 1000 (Spring Hill) figures as used by EGRL (Khadka et al., Optimizing "
        "Memory Placement using Evolutionary Graph Reinforcement Learning, ICLR 2021): 4 MB "
        "SRAM at 6.8 TB/s, 24 MB LLC at 680 GB/s, DRAM at 68 GB/s, 92 TOPS int8; memplace "
        "spec section 8"),
}

# TPUv4i runs at 1050 MHz; the on-chip bandwidths are not published and are derived
# from per-cycle widths, so the hierarchy keeps VMEM > CMEM > HBM.
_TPU_CLOCK = 1.05e9
TPU: dict[str, Any] = {
    "name": "tpu",
    "compute_rate": 1.38e14,
    "levels": [
        {"name": "VMEM", "capacity": 16 * MiB, "bandwidth": 4096 * _TPU_CLOCK},
        {"name": "CMEM", "capacity": 128 * MiB, "bandwidth": 2048 * _TPU_CLOCK},
        {"name": "HBM", "capacity": None, "bandwidth": 6.14e11},
    ],
    "source": (
        "Google TPUv4i (Jouppi et al., Ten Lessons From Three Generations Shaped Google's "
        "TPUv4i, ISCA 2021): 138 TOPS int8 at 1050 MHz, 16 MiB vector memory (VMEM), "
        "128 MiB common memory (CMEM), 8 GiB HBM2 at 614 GB/s. VMEM and CMEM bandwidths "
        "are not published: derived as 4096 and 2048 bytes per cycle at 1050 MHz "
        "(4.3 TB/s, 2.15 TB/s)"),
}

ETHOS_U65: dict[str, Any] = {
    "name": "edge-npu",
    "compute_rate": 2 * 512 * 1e9,
    "levels": [
        {"name": "SRAM", "capacity": 1 * MiB, "bandwidth": 1.6e10, "addressed": True,
         "alignment": 64},
        {"name": "DRAM", "capacity": None, "bandwidth": 3.75e9},
    ],
    "source": (
        "Arm Ethos-U65-512 microNPU (Arm product announcement, Oct 2020: 512 8-bit MACs per "
        "cycle at 1 GHz, 1.02 TOPS) with an on-chip SRAM of 1 MiB (one ISRAM bank of Arm's "
        "Corstone-300 reference design), addressed by the compiler with 64-byte tensor "
        "alignment (a cache-line/AXI-burst granularity; Vela's own default is 16), SRAM 16 GB/s and DRAM "
        "3.75 GB/s (Vela vela.ini system config Ethos_U65_High_End)"),
}

# A100: 108 SMs at 1410 MHz boost; shared memory moves 128 bytes per clock per SM and the
# L2 5120 bytes per clock (whitepaper: 2.3x V100's L2 read bandwidth).
_A100_CLOCK = 1.41e9
A100: dict[str, Any] = {
    "name": "gpu",
    "compute_rate": 6.24e14,
    "levels": [
        {"name": "SMEM", "capacity": 108 * 164 * KiB, "bandwidth": 108 * 128 * _A100_CLOCK},
        {"name": "L2", "capacity": 40 * MiB, "bandwidth": 5120 * _A100_CLOCK},
        {"name": "HBM", "capacity": None, "bandwidth": 1.555e12},
    ],
    "source": (
        "NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020): 108 SMs at 1410 MHz, "
        "up to 164 KB shared memory per SM (128 B/clock/SM, 19.5 TB/s aggregate), 40 MB L2 "
        "(5120 B/clock, 7.2 TB/s), 40 GB HBM2 at 1555 GB/s, 624 TOPS int8 dense"),
}

# Coral Edge TPU: a TPU-like accelerator whose fast memory is the size one model gets on a
# real core (the ~8 MB parameter cache; co-compiled models share it). Weights that do not
# fit are streamed from host memory over the module's PCIe Gen2 x1 link by DMA, so that
# link's rate is the documented copy rate of the slow level.
EDGE_TPU: dict[str, Any] = {
    "name": "edge-tpu",
    "compute_rate": 4e12,
    "levels": [
        {"name": "SRAM", "capacity": 8 * MiB, "bandwidth": 6.4e10},
        {"name": "HOST", "capacity": None, "bandwidth": 5e8, "copy_bandwidth": 5e8},
    ],
    "source": (
        "Google Coral Edge TPU: 4 TOPS int8 (coral.ai/docs/edgetpu/faq); an on-chip cache of "
        "about 8 MB for one model's parameter data, parameters that do not fit fetched from "
        "external memory on every inference (coral.ai/docs/edgetpu/compiler, 'parameter data "
        "caching'; coral.ai/docs/edgetpu/pipeline: 'the Edge TPU cache (~8 MB)'); host link "
        "PCIe Gen2 x1, 500 MB/s (Coral M.2 / Mini PCIe Accelerator datasheets), which is also "
        "the DMA copy rate. The SRAM bandwidth is not published: 64 GB/s is an assumption "
        "(128x the host link), chosen so that on-chip reads are never the bottleneck"),
}

HARDWARE: dict[str, dict[str, Any]] = {hw["name"]: hw for hw in (NNPI, TPU, ETHOS_U65, A100,
                                                                  EDGE_TPU)}
# The presets of the static benchmark set (every workload on each; see catalog.COMMITTED).
STATIC_PRESETS = ("nnpi", "tpu", "edge-npu", "gpu")


def hardware_preset(name: str) -> dict[str, Any]:
    """A fresh copy of the preset named `name` (KeyError if there is none)."""
    return copy.deepcopy(HARDWARE[name])
