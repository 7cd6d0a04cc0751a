"""Compile every solver's Numba code once, by solving a tiny instance with each."""
from __future__ import annotations

from memplace.model import Instance
from memplace.model.warmup import tiny_instance_dict, warmup


def warm_solvers(names: list[str] | None = None) -> list[str]:
    """Run each solver (all registered ones by default) on a three-op instance, stopping
    at its first incumbent, so its kernels are compiled and cached on disk."""
    from memplace.solvers import registry, solve
    warmup()
    inst = Instance.from_dict(tiny_instance_dict())
    done = []
    for name in names or list(registry()):
        solve(inst, name, time_limit=120.0, seed=0, callback=lambda *_: True)
        done.append(name)
    _warm_packers()
    return done


def _warm_packers() -> None:
    """Compile the offset packers: every method on a five-buffer example."""
    from memplace.model.packing.packers import PACKERS, Buffer, pack
    buffers = [Buffer(str(i), lo, hi, size) for i, (lo, hi, size) in
               enumerate([(0, 3, 4), (3, 9, 4), (0, 9, 4), (9, 21, 4), (0, 21, 4)])]
    for method in PACKERS:
        pack(buffers, 12, method=method, time_limit=30.0)
