"""The instances an environment samples its episodes from, and the sizes it pads to.

Gymnasium spaces have fixed shapes, while instances differ in their numbers of
ops, tensors and levels. An environment therefore pads every array to the
largest instance of its set (`Limits`); an instance given later through
`reset(options={"instance": ...})` must fit those limits.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from memplace.instances import builtin_names, builtin_path, load
from memplace.instances.library import instance_set, is_spec
from memplace.model import Instance
from memplace.model.core.errors import InstanceError

# The committed instances but the synthetic scaling studies (synth-1000 and synth-10000
# have thousands of ops: padding every observation to them would dwarf the rest).
SCALING_STUDIES = ("synth-1000", "synth-10000")


def default_instances() -> list[str]:
    """Names of the committed instances an environment samples from by default."""
    return [n for n in builtin_names() if n.split("@")[0] not in SCALING_STUDIES]


@dataclass(frozen=True)
class Limits:
    """Padded sizes of an environment's arrays."""

    ops: int
    tensors: int
    accesses: int
    edges: int
    levels: int

    @staticmethod
    def of(instance: Instance) -> "Limits":
        return Limits(instance.n_ops, instance.n_tensors, int(instance.op_tensor.size),
                      n_edges(instance), instance.n_levels)

    def union(self, other: "Limits") -> "Limits":
        return Limits(*(max(a, b) for a, b in zip(self.__dict__.values(), other.__dict__.values())))

    def check(self, instance: Instance) -> None:
        """Raise InstanceError naming the instance and the size it exceeds."""
        need = Limits.of(instance)
        for field, have in self.__dict__.items():
            if getattr(need, field) > have:
                raise InstanceError(
                    f"instance {instance.name!r} has {getattr(need, field)} {field}, more than "
                    f"the {have} this environment pads to (give the environment an instance set "
                    "that includes it)")


def n_edges(instance: Instance) -> int:
    """Edges of the data-flow DAG: one per activation read (producer -> consumer)."""
    return sum(len(t["accesses"]) - 1 for t in instance.tensors if t["producer"] is not None)


_CACHE: dict[str, Instance] = {}


def load_instance(name_or_path: str | Path) -> Instance:
    """A built-in instance by name or an instance file, loaded once per process."""
    key = str(builtin_path(str(name_or_path)).resolve())
    if key not in _CACHE:
        _CACHE[key] = load(key)
    return _CACHE[key]


class InstanceSet:
    """Named instances to sample from, loaded on construction (bad names fail early)."""

    def __init__(self, instances: str | Iterable[str | Path] | None = None):
        """`instances`: names or files, or a library split such as "memplace-lib/1:train"
        ("memplace-lib:train": the newest version)."""
        if isinstance(instances, str):
            instances = instance_set(instances) if is_spec(instances) else [instances]
        names = default_instances() if instances is None else [str(x) for x in instances]
        if not names:
            raise InstanceError("an environment needs at least one instance")
        self.instances: list[Instance] = [load_instance(n) for n in names]
        self.limits = functools.reduce(Limits.union, map(Limits.of, self.instances))

    def pick(self, rng, requested: str | Path | None) -> Instance:
        """`requested` (a name of the set, a built-in name or a file), else one drawn
        uniformly with `rng`."""
        if requested is None:
            return self.instances[int(rng.integers(len(self.instances)))]
        for inst in self.instances:
            if inst.name == str(requested):
                return inst
        inst = load_instance(requested)
        self.limits.check(inst)
        return inst
