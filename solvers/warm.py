"""Compile every solver's Numba code once, by solving a tiny instance with each."""
from __future__ import annotations

from memplace.model import Instance
from memplace.model.warmup import tiny_instance_dict, warmup


def warm_solvers(names: list[str] | None = None) -> list[str]:
    """Run each solver (all registered ones by default) on a three-op instance, stopping
    at its first incumbent, so its kernels are compiled and cached on disk."""
    from memplace.solvers.base import registry, solve
    warmup()
    inst = Instance.from_dict(tiny_instance_dict())
    done = []
    for name in names or list(registry()):
        solve(inst, name, time_limit=120.0, seed=0, callback=lambda *_: True)
        done.append(name)
    return done
