"""A `memplace-instance/1` file (spec section 2) loaded, checked and turned into arrays.

Every rule of the spec is checked when an instance is built; a broken file raises
`InstanceError` naming the offending op, tensor or level and the rule broken.
"""
from __future__ import annotations

import functools
import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import networkx as nx
import numpy as np

from memplace.model.core.errors import InstanceError

FORMAT = "memplace-instance/1"
UNBOUNDED = np.iinfo(np.int64).max  # capacity of a level whose capacity is null


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


@dataclass(frozen=True)
class Level:
    """One memory level: fastest first; `capacity` None means unbounded.

    `copy_bandwidth` is the rate of asynchronous copies on the level's channel (spec
    section 9); None (the default) means the level's `bandwidth`.
    """

    name: str
    capacity: int | None
    bandwidth: float
    addressed: bool = False
    alignment: int = 1
    copy_bandwidth: float | None = None

    def __post_init__(self) -> None:
        if self.copy_bandwidth is None:
            object.__setattr__(self, "copy_bandwidth", self.bandwidth)


class Instance:
    """A checked instance with the array form the cost kernels read.

    Arrays (all NumPy, read-only by convention):
      compute[k]            flops_k / compute_rate, seconds
      op_ptr, op_tensor,    accesses of op k are op_ptr[k]:op_ptr[k+1], sorted by
      op_bytes              tensor index (the spec's summation order)
      access_time[a, l]     op_bytes[a] / bandwidth[l], seconds
      tensor_ptr, tensor_access
                            accesses of tensor t (indices into the op-side arrays)
      size, start, end      bytes and inclusive live range of each tensor
      traffic               sum of bytes over a tensor's accesses
      is_weight             1 for weights (live at every step)
      capacity[l]           bytes, UNBOUNDED for a null capacity
      bandwidth, addressed, alignment, copy_bandwidth   per level
      rectify_rank[t]       position of t in spec section 6's order (0 moves first)
    """

    def __init__(self, data: dict[str, Any]):
        self.data = data
        self._peak: int | None = None
        self._derived: dict[str, Any] = {}
        _check_top(data)
        workload, hardware = data["workload"], data["hardware"]
        self.name: str = data["name"]
        self.workload_name: str = workload["name"]
        self.hardware_name: str = hardware["name"]
        self.ops: list[dict[str, Any]] = workload["ops"]
        self.tensors: list[dict[str, Any]] = workload["tensors"]
        self.compute_rate: float = float(hardware["compute_rate"])
        self.levels: list[Level] = _check_levels(hardware)
        _check_ops(self.ops)
        self._build_arrays()
        self._check_last_level_holds_everything()

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Instance":
        return cls(data)

    @classmethod
    def from_file(cls, path: str | Path) -> "Instance":
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise InstanceError(f"cannot read instance file {path}: {exc.strerror}") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InstanceError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
        try:
            return cls(data)
        except InstanceError as exc:
            raise InstanceError(f"{path}: {exc}") from None

    def to_dict(self) -> dict[str, Any]:
        return self.data

    def derived(self, key: str, build: Callable[["Instance"], Any]) -> Any:
        """`build(self)`, computed once and kept with the instance under `key`: tables and
        relaxations other modules derive from an instance live here, not as attributes
        attached from outside."""
        if key not in self._derived:
            self._derived[key] = build(self)
        return self._derived[key]

    def fingerprint(self) -> str:
        """sha256 of the canonical instance file (`dumps`, UTF-8): the bytes of the
        committed file for a built-in instance, whatever the file's layout for others."""
        return hashlib.sha256(dumps(self.data).encode("utf-8")).hexdigest()

    # ------------------------------------------------------------------ sizes
    @property
    def n_ops(self) -> int:
        return len(self.ops)

    @property
    def n_tensors(self) -> int:
        return len(self.tensors)

    @property
    def n_levels(self) -> int:
        return len(self.levels)

    @property
    def level_names(self) -> list[str]:
        return [level.name for level in self.levels]

    @property
    def has_addressed_levels(self) -> bool:
        return bool(self.addressed.any())

    def level_index(self, name: str) -> int:
        try:
            return self.level_names.index(name)
        except ValueError:
            raise InstanceError(f"unknown level {name!r}; levels are {self.level_names}") from None

    def tensor_label(self, t: int) -> str:
        return f"tensor {t} {self.tensors[t]['name']!r}"

    def op_label(self, k: int) -> str:
        return f"op {k} {self.ops[k]['name']!r}"

    # ------------------------------------------------------------------ arrays
    def _build_arrays(self) -> None:
        n, T = self.n_ops, self.n_tensors
        size = np.empty(T, np.int64)
        start = np.empty(T, np.int64)
        end = np.empty(T, np.int64)
        traffic = np.empty(T, np.int64)
        is_weight = np.empty(T, np.int8)
        per_op: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        for t, tensor in enumerate(self.tensors):
            steps, total = _check_tensor(t, tensor, n)
            size[t] = tensor["size"]
            is_weight[t] = tensor["kind"] == "weight"
            first, last = min(steps), max(steps)
            start[t], end[t] = (0, n - 1) if is_weight[t] else (first, last)
            traffic[t] = total
            for k, b in tensor["accesses"]:
                per_op[k].append((t, b))
        op_ptr = np.zeros(n + 1, np.int64)
        for k, accesses in enumerate(per_op):
            op_ptr[k + 1] = op_ptr[k] + len(accesses)
        op_tensor = np.empty(op_ptr[-1], np.int64)
        op_bytes = np.empty(op_ptr[-1], np.int64)
        a = 0
        for accesses in per_op:  # already in increasing tensor index
            for t, b in accesses:
                op_tensor[a], op_bytes[a] = t, b
                a += 1
        # Tensor-side view: for each tensor, the indices of its accesses in op order.
        order = np.argsort(op_tensor, kind="stable")
        counts = np.bincount(op_tensor, minlength=T)
        tensor_ptr = np.zeros(T + 1, np.int64)
        np.cumsum(counts, out=tensor_ptr[1:])

        self.size, self.start, self.end = size, start, end
        self.traffic, self.is_weight = traffic, is_weight
        self.flops = np.array([float(op["flops"]) for op in self.ops], np.float64)
        self.compute = self.flops / self.compute_rate
        self.op_ptr, self.op_tensor, self.op_bytes = op_ptr, op_tensor, op_bytes
        self.tensor_ptr, self.tensor_access = tensor_ptr, order.astype(np.int64)
        self.access_op = np.repeat(np.arange(n, dtype=np.int64), np.diff(op_ptr))
        self.bandwidth = np.array([lv.bandwidth for lv in self.levels], np.float64)
        self.capacity = np.array(
            [UNBOUNDED if lv.capacity is None else lv.capacity for lv in self.levels], np.int64)
        self.copy_bandwidth = np.array([lv.copy_bandwidth for lv in self.levels], np.float64)
        self.addressed = np.array([lv.addressed for lv in self.levels], np.bool_)
        self.alignment = np.array([lv.alignment for lv in self.levels], np.int64)
        self.access_time = np.ascontiguousarray(
            op_bytes.astype(np.float64)[:, None] / self.bandwidth[None, :])
        self.rectify_rank = _rectify_rank(traffic, size)

    def _check_last_level_holds_everything(self) -> None:
        last = self.levels[-1]
        if last.capacity is not None and last.capacity < self.peak_live_bytes():
            raise InstanceError(
                f"level {self.n_levels - 1} {last.name!r}: capacity {last.capacity} is below "
                f"the peak live bytes {self.peak_live_bytes()} with every tensor placed there; "
                "the last level must hold every tensor at every step")
        if last.addressed:
            # The slowest placement must be valid (spec section 4), offsets included.
            from memplace.model.static.kernels import first_fit_offsets_kernel
            order = np.argsort(-self.rectify_rank, kind="stable").astype(np.int64)
            offsets = np.full(self.n_tensors, -1, np.int64)
            placed = first_fit_offsets_kernel(order, self.size, self.start, self.end,
                                              last.alignment, last.capacity, offsets)
            if placed < self.n_tensors:
                t = int(np.flatnonzero(offsets < 0)[0])
                raise InstanceError(
                    f"level {self.n_levels - 1} {last.name!r}: addressed last level cannot give "
                    f"{self.tensor_label(t)} an offset with every tensor placed there; the "
                    "slowest placement must be valid")

    def peak_live_bytes(self) -> int:
        """Peak over steps of the total size of live tensors (everything counted)."""
        if self._peak is None:
            diff = np.zeros(self.n_ops + 1, np.int64)
            np.add.at(diff, self.start, self.size)
            np.add.at(diff, self.end + 1, -self.size)
            self._peak = int(np.cumsum(diff[:-1]).max())
        return self._peak

    def compute_floor(self) -> float:
        """Latency if every op were compute-bound: a lower bound for any placement."""
        return float(sum(self.compute.tolist()))

    def slowest_placement(self) -> np.ndarray:
        return np.full(self.n_tensors, self.n_levels - 1, np.int64)

    # ------------------------------------------------------------------ graph
    def graph(self) -> nx.DiGraph:
        """The data-flow DAG: an edge producer -> consumer for every activation read."""
        g = nx.DiGraph()
        for k, op in enumerate(self.ops):
            g.add_node(k, name=op["name"], type=op.get("type"), flops=self.flops[k])
        for t, tensor in enumerate(self.tensors):
            p = tensor["producer"]
            if p is None:
                continue
            for k, _ in tensor["accesses"]:
                if k != p:
                    if k < p:  # unreachable after _check_tensor; kept as the DAG's own guarantee
                        raise InstanceError(
                            f"{self.tensor_label(t)}: consumer op {k} comes before producer op {p}")
                    g.add_edge(p, k, tensor=t)
        return g

    def __repr__(self) -> str:
        return (f"Instance({self.name!r}, ops={self.n_ops}, tensors={self.n_tensors}, "
                f"levels={self.level_names})")


# ---------------------------------------------------------------------- the file
def dumps(instance: dict[str, Any]) -> str:
    """Compact, diff-friendly JSON: one line per op and per tensor, keys in the dict's
    order, floats written by repr (they round-trip)."""
    def compact(value: Any) -> str:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)

    def obj(d: dict[str, Any], listed: tuple[str, ...]) -> str:
        parts = []
        for key, value in d.items():
            if key in listed:
                items = ",\n".join(compact(item) for item in value)
                parts.append(f"{compact(key)}:[\n{items}\n]")
            elif key == "workload":
                parts.append(f"{compact(key)}:{obj(value, ('ops', 'tensors'))}")
            else:
                parts.append(f"{compact(key)}:{compact(value)}")
        return "{" + ",\n".join(parts) + "}"

    return obj(instance, ()) + "\n"


# ---------------------------------------------------------------------- checks
def _check_top(data: Any) -> None:
    if not isinstance(data, dict):
        raise InstanceError("instance must be a JSON object")
    if data.get("format") != FORMAT:
        raise InstanceError(f"format must be {FORMAT!r}, got {data.get('format')!r}")
    if not isinstance(data.get("name"), str):
        raise InstanceError("instance 'name' must be a string")
    for key in ("workload", "hardware"):
        if not isinstance(data.get(key), dict):
            raise InstanceError(f"instance needs a '{key}' object")
    workload = data["workload"]
    if not isinstance(workload.get("name"), str):
        raise InstanceError("workload 'name' must be a string")
    for key in ("ops", "tensors"):
        if not isinstance(workload.get(key), list) or not workload[key]:
            raise InstanceError(f"workload '{key}' must be a non-empty list")
    hardware = data["hardware"]
    if not isinstance(hardware.get("name"), str):
        raise InstanceError("hardware 'name' must be a string")
    rate = hardware.get("compute_rate")
    if not _is_number(rate) or rate <= 0:
        raise InstanceError(f"hardware compute_rate must be a number > 0, got {rate!r}")


def _named(kind: str, index: int, item: Any) -> str:
    """Check that an op, level or tensor is an object with a string name; return its label."""
    if not isinstance(item, dict):
        raise InstanceError(f"{kind} {index}: must be an object")
    if not isinstance(item.get("name"), str):
        raise InstanceError(f"{kind} {index}: 'name' must be a string")
    return f"{kind} {index} {item['name']!r}"


def _check_ops(ops: list[Any]) -> None:
    for k, op in enumerate(ops):
        label = _named("op", k, op)
        flops = op.get("flops")
        if not _is_number(flops) or flops < 0:
            raise InstanceError(f"{label}: flops must be a number >= 0, got {flops!r}")


def _check_levels(hardware: dict[str, Any]) -> list[Level]:
    raw = hardware.get("levels")
    if not isinstance(raw, list) or not raw:
        raise InstanceError("hardware 'levels' must be a non-empty list")
    levels: list[Level] = []
    seen: set[str] = set()
    for l, lv in enumerate(raw):
        label = _named("level", l, lv)
        name = lv["name"]
        if name in seen:
            raise InstanceError(f"{label}: level names must be unique")
        seen.add(name)
        bw = lv.get("bandwidth")
        if not _is_number(bw) or bw <= 0:
            raise InstanceError(f"{label}: bandwidth must be a number > 0, got {bw!r}")
        if "capacity" not in lv:
            raise InstanceError(f"{label}: 'capacity' is required (an integer > 0, or null)")
        cap = lv["capacity"]
        if cap is None:
            if l != len(raw) - 1:
                raise InstanceError(f"{label}: capacity null (unbounded) is allowed on the last level only")
        elif not _is_int(cap) or cap <= 0:
            raise InstanceError(f"{label}: capacity must be an integer > 0 or null, got {cap!r}")
        addressed = lv.get("addressed", False)
        if not isinstance(addressed, bool):
            raise InstanceError(f"{label}: 'addressed' must be true or false, got {addressed!r}")
        if addressed and cap is None:
            raise InstanceError(f"{label}: an addressed level needs a finite capacity")
        alignment = lv.get("alignment", 1)
        if not _is_int(alignment) or alignment < 1:
            raise InstanceError(f"{label}: alignment must be an integer >= 1, got {alignment!r}")
        copy_bw = lv.get("copy_bandwidth", bw)
        if not _is_number(copy_bw) or copy_bw <= 0:
            raise InstanceError(f"{label}: copy_bandwidth must be a number > 0, got {copy_bw!r}")
        levels.append(Level(name, cap, float(bw), addressed, alignment, float(copy_bw)))
    return levels


def _check_tensor(t: int, tensor: Any, n_ops: int) -> tuple[list[int], int]:
    """Check one tensor; return its access steps and total traffic."""
    label = _named("tensor", t, tensor)
    if tensor.get("kind") not in ("weight", "activation"):
        raise InstanceError(f"{label}: kind must be 'weight' or 'activation', got {tensor.get('kind')!r}")
    size = tensor.get("size")
    if not _is_int(size) or size <= 0:
        raise InstanceError(f"{label}: size must be an integer number of bytes > 0, got {size!r}")
    accesses = tensor.get("accesses")
    if not isinstance(accesses, list) or not accesses:
        raise InstanceError(f"{label}: accesses must be a non-empty list of [op_index, bytes] pairs")
    steps: list[int] = []
    total = 0
    for pair in accesses:
        if not (isinstance(pair, list) and len(pair) == 2):
            raise InstanceError(f"{label}: access {pair!r} is not an [op_index, bytes] pair")
        k, b = pair
        if not _is_int(k) or not 0 <= k < n_ops:
            raise InstanceError(f"{label}: access op index {k!r} is not an op (0..{n_ops - 1})")
        if not _is_int(b) or b < 0:
            raise InstanceError(f"{label}: access bytes for op {k} must be an integer >= 0, got {b!r}")
        steps.append(k)
        total += b
    if len(set(steps)) != len(steps):
        dup = next(k for k in steps if steps.count(k) > 1)
        raise InstanceError(f"{label}: more than one access pair for op {dup}")
    if "producer" not in tensor:
        raise InstanceError(f"{label}: 'producer' is required (an op index or null)")
    producer = tensor["producer"]
    if producer is not None:
        if not _is_int(producer) or not 0 <= producer < n_ops:
            raise InstanceError(f"{label}: producer {producer!r} is not an op index (0..{n_ops - 1}) or null")
        if producer not in steps:
            raise InstanceError(f"{label}: producer op {producer} is not among its accesses")
        if producer != min(steps):
            raise InstanceError(
                f"{label}: producer op {producer} must be the smallest op index among its "
                f"accesses, but op {min(steps)} reads it first (consumer before producer)")
    return steps, total


def _rectify_rank(traffic: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Spec section 6's order: smallest traffic/size first (exact cross products),
    ties to the larger size, then to the larger tensor index. Returns rank per tensor."""
    tr = traffic.tolist()
    sz = size.tolist()

    def compare(a: int, b: int) -> int:
        lhs, rhs = tr[a] * sz[b], tr[b] * sz[a]  # Python ints: exact
        if lhs != rhs:
            return -1 if lhs < rhs else 1
        if sz[a] != sz[b]:
            return -1 if sz[a] > sz[b] else 1
        return -1 if a > b else 1

    order = sorted(range(len(tr)), key=functools.cmp_to_key(compare))
    rank = np.empty(len(tr), np.int64)
    rank[np.array(order, np.int64)] = np.arange(len(tr), dtype=np.int64)
    return rank
