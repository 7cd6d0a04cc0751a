"""Small random instances for property tests (spec-valid by construction)."""
from __future__ import annotations

import numpy as np


def random_instance_dict(seed: int, n_ops: int = 6, n_tensors: int = 8, n_levels: int = 3,
                         addressed: bool = False, tight: float = 0.5) -> dict:
    """A random instance: weights and activations over a short schedule, levels whose
    capacities hold about `tight` of the peak so rectify has work to do."""
    rng = np.random.default_rng(seed)
    tensors = []
    for t in range(n_tensors):
        kind = "weight" if rng.random() < 0.35 else "activation"
        size = int(rng.integers(1, 200))
        if kind == "weight":
            k = int(rng.integers(0, n_ops))
            steps = [k]
            producer = None
        else:
            first = int(rng.integers(0, n_ops))
            extra = rng.choice(np.arange(first + 1, n_ops + 1), size=min(int(rng.integers(0, 3)), n_ops - first - 0), replace=False) if first < n_ops - 1 else []
            steps = sorted({first, *[int(x) for x in extra if x < n_ops]})
            producer = first if rng.random() < 0.8 else None
        accesses = []
        for k in steps:
            b = int(size * rng.choice([0, 1, 1, 1, 2])) if rng.random() < 0.9 else int(rng.integers(0, size + 1))
            accesses.append([k, b])
        tensors.append({"name": f"t{t}", "kind": kind, "size": size, "producer": producer,
                        "accesses": accesses})
    # peak with everything in one level
    live = np.zeros(n_ops, np.int64)
    for tensor in tensors:
        steps = [k for k, _ in tensor["accesses"]]
        lo, hi = (0, n_ops - 1) if tensor["kind"] == "weight" else (min(steps), max(steps))
        live[lo:hi + 1] += tensor["size"]
    peak = int(live.max())
    levels = []
    bw = 1e9
    for l in range(n_levels):
        last = l == n_levels - 1
        cap = None if last else max(1, int(peak * tight * (l + 1) / n_levels * rng.uniform(0.5, 1.5)))
        level = {"name": f"L{l}", "capacity": cap, "bandwidth": bw}
        if addressed and l == 0 and not last:
            level["addressed"] = True
            level["alignment"] = int(rng.choice([1, 4, 8]))
        levels.append(level)
        bw /= float(rng.uniform(2, 12))
    ops = [{"name": f"op{k}", "type": "x", "flops": float(rng.choice([0.0, rng.uniform(0, 2000)]))}
           for k in range(n_ops)]
    return {"format": "memplace-instance/1", "name": f"random-{seed}",
            "workload": {"name": "random", "ops": ops, "tensors": tensors},
            "hardware": {"name": "random", "compute_rate": 1e9, "levels": levels}}
