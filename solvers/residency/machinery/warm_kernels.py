"""What compiling the residency search's own kernels runs (`memplace.solvers.warm` names
these functions in its parts): msa's allocator and sa's move loop, each on the three-op
instance from all-slowest homes, a start no other solver computes (msa's own start would
compile the static compiler's kernels, and sa's would run msa: other parts' kernels)."""
from __future__ import annotations

import numpy as np

from memplace.model.instance import Instance
from memplace.model.residency import ResidencySolution
from memplace.model.warmup import tiny_instance_dict


def slowest_start(inst: Instance) -> ResidencySolution:
    """Every tensor homed in the slowest level, no windows."""
    homes = np.full(inst.n_tensors, inst.n_levels - 1, np.int64)
    offsets = np.full(inst.n_tensors, -1, np.int64) if inst.has_addressed_levels else None
    return ResidencySolution(inst.name, homes, offsets)


def warm_allocator() -> None:
    """msa's compiled allocator (`allocation_kernel.py`)."""
    from memplace.solvers.residency.machinery.allocation import assign_windows
    inst = Instance.from_dict(tiny_instance_dict())
    start = slowest_start(inst)
    assign_windows(inst, start.placement, start.offsets)


def warm_move_loop() -> None:
    """The residency sa's compiled move loop (`move_loop.py`): a few moves."""
    from memplace.solvers.residency.machinery.move_loop import anneal
    inst = Instance.from_dict(tiny_instance_dict())
    anneal(inst, slowest_start(inst), np.random.default_rng(0), 8, 0.01, 0.001)
