"""A `memplace-instance/1` file (docs/spec.md section 2) loaded, checked and turned into arrays.

Every rule of the spec is checked when an instance is built; a broken file raises
`InstanceError` naming the offending op, tensor or level and the rule broken.
"""
from __future__ import annotations

import functools
import hashlib
import json
import operator
from dataclasses import dataclass
from itertools import chain, repeat
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple

import networkx as nx
import numpy as np

from memplace.model.core.errors import InstanceError
from memplace.model.core.reading import MAX_BYTES, MAX_TOTAL, gc_paused, is_int, is_number, read_json, shown

FORMAT = "memplace-instance/1"
UNBOUNDED = np.iinfo(np.int64).max  # capacity of a level whose capacity is null


class _Missing:
    """Stands for a key that is absent (shown as such in error messages)."""

    def __repr__(self) -> str:
        return "nothing (the key is missing)"


_MISSING = _Missing()


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


# The arrays the Numba kernels read, as one typed record (`Instance.arrays`; `rank` is
# `rectify_rank`): kernels take this instead of a dozen loose arrays.
Arrays = NamedTuple("Arrays", [(name, np.ndarray) for name in (
    "compute", "op_ptr", "op_tensor", "access_time", "tensor_ptr", "tensor_access", "access_op",
    "size", "start", "end", "is_weight", "capacity", "addressed", "alignment", "rank")])


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
      rectify_rank[t]       position of t in docs/spec.md section 6's order (0 moves first)
    `arrays` holds them as one record (`Arrays`), which is what the kernels take.
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
        self.flops = _check_ops(self.ops)
        self._build_arrays()
        self._check_last_level_holds_everything()

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Instance":
        return cls(data)

    @classmethod
    def load(cls, source: "str | Path | Mapping[str, Any]") -> "Instance":
        """An instance from a file path or an already parsed dict."""
        return cls(dict(source)) if isinstance(source, Mapping) else cls.from_file(source)

    @classmethod
    def from_file(cls, path: str | Path) -> "Instance":
        path = Path(path)
        with gc_paused():
            data = read_json(path, "instance file", InstanceError)  # errors name the file
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

    def forget_derived(self) -> None:
        """Drop what `derived` kept, so that a benchmark timing one solver after another
        on one loaded instance gives each the instance as loaded."""
        self._derived.clear()

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
        if not 0 <= k < self.n_ops:  # named in errors about ops out of range
            return f"op {k} (no such op: ops are 0..{self.n_ops - 1})"
        return f"op {k} {self.ops[k]['name']!r}"

    def capacity_overflows(self, load: np.ndarray) -> list[tuple[int, int, str]]:
        """For each capacity-bound level whose `load[l, k]` exceeds its capacity somewhere:
        (level, first step over, a message naming both); the problems' validators share it."""
        out = []
        for l, level in enumerate(self.levels):
            if level.capacity is None:
                continue
            over = np.flatnonzero(load[l] > level.capacity)
            if over.size:
                k = int(over[0])
                out.append((l, k, f"level {l} {level.name!r} holds {int(load[l, k])} bytes at "
                                  f"{self.op_label(k)}, over its capacity {level.capacity} (and "
                                  f"{over.size - 1} more steps)"))
        return out

    # ------------------------------------------------------------------ arrays
    def _build_arrays(self) -> None:
        n = self.n_ops
        size, is_weight, tensor_of, step, nbytes, first = _check_tensors(self.tensors, n)
        start = np.minimum.reduceat(step, first[:-1])
        end = np.maximum.reduceat(step, first[:-1])
        start[is_weight == 1], end[is_weight == 1] = 0, n - 1
        traffic = np.add.reduceat(nbytes, first[:-1])
        # Op-side view: accesses in op order, inside an op by increasing tensor index
        # (the spec's summation order; at most one access per tensor and op).
        by_op = np.lexsort((tensor_of, step))
        op_tensor, op_bytes = tensor_of[by_op], nbytes[by_op]
        op_ptr = np.zeros(n + 1, np.int64)
        np.cumsum(np.bincount(step, minlength=n), out=op_ptr[1:])
        # Tensor-side view: for each tensor, the indices of its accesses in op order.
        order = np.argsort(op_tensor, kind="stable")
        tensor_ptr = first  # a tensor's accesses, counted in either order

        self.size, self.start, self.end = size, start, end
        self.traffic, self.is_weight = traffic, is_weight
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
        self.arrays = Arrays(self.compute, op_ptr, op_tensor, self.access_time, tensor_ptr,
                             self.tensor_access, self.access_op, size, start, end, is_weight,
                             self.capacity, self.addressed, self.alignment, self.rectify_rank)

    def _check_last_level_holds_everything(self) -> None:
        last = self.levels[-1]
        if last.capacity is not None and last.capacity < self.peak_live_bytes():
            raise InstanceError(
                f"level {self.n_levels - 1} {last.name!r}: capacity {last.capacity} is below "
                f"the peak live bytes {self.peak_live_bytes()} with every tensor placed there; "
                "the last level must hold every tensor at every step")
        if last.addressed:
            # The slowest placement must be valid (docs/spec.md section 4), offsets included.
            from memplace.model.packing.heuristics import FIRST_FIT, place_in_order
            order = np.argsort(-self.rectify_rank, kind="stable").astype(np.int64)
            offsets = place_in_order(order, self.size, self.start, self.end + 1,
                                     np.full(self.n_tensors, last.alignment, np.int64),
                                     np.int64(last.capacity), FIRST_FIT)
            if (offsets < 0).any():
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
# The per-op and per-tensor rules are checked a whole column at a time (the types of
# all values with one set, the ranges with NumPy); when a column fails, the first
# offending op or tensor is looked up and named, so a 100,000-op file loads in well
# under a second with every rule of the spec checked.
def _check_top(data: Any) -> None:
    if not isinstance(data, dict):
        raise InstanceError("instance must be a JSON object")
    if data.get("format") != FORMAT:
        raise InstanceError(f"format must be {FORMAT!r}, got {shown(data.get('format'))}")
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
    if not is_number(rate) or rate <= 0:
        raise InstanceError(f"hardware compute_rate must be a number > 0, got {shown(rate)}")


def _named(kind: str, index: int, item: Any) -> str:
    """Check that an op, level or tensor is an object with a string name; return its label."""
    if not isinstance(item, dict):
        raise InstanceError(f"{kind} {index}: must be an object")
    if not isinstance(item.get("name"), str):
        raise InstanceError(f"{kind} {index}: 'name' must be a string")
    return f"{kind} {index} {item['name']!r}"


def _check_named(kind: str, items: list[Any]) -> None:
    """Every item is an object with a string name (docs/spec.md section 2)."""
    for index, item in enumerate(items):
        _named(kind, index, item)


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _check_ops(ops: list[Any]) -> np.ndarray:
    """Check the ops; return their flops as float64."""
    try:
        names, raw = zip(*map(_OP_FIELDS, ops))
    except (KeyError, TypeError):  # a key missing or an op that is not an object
        names, raw = (), ()
    if set(map(type, names)) != {str}:
        _check_named("op", ops)
        raw = tuple(op.get("flops") for op in ops)
    flops = _column(raw, np.float64, frozenset({float, int}))
    if flops is None:
        k = next(k for k, f in enumerate(raw) if not is_number(f))
    else:
        bad = ~np.isfinite(flops) | (flops < 0)
        if not bad.any():
            return flops
        k = _first(bad)
    raise InstanceError(f"{_named('op', k, ops[k])}: flops must be a number >= 0, "
                        f"got {shown(raw[k])}")


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
        if not is_number(bw) or bw <= 0:
            raise InstanceError(f"{label}: bandwidth must be a number > 0, got {shown(bw)}")
        if "capacity" not in lv:
            raise InstanceError(f"{label}: 'capacity' is required (an integer > 0, or null)")
        cap = lv["capacity"]
        if cap is None:
            if l != len(raw) - 1:
                raise InstanceError(f"{label}: capacity null (unbounded) is allowed on the last level only")
        elif not is_int(cap) or not 0 < cap <= MAX_BYTES:
            raise InstanceError(f"{label}: capacity must be an integer in 1..2**53 bytes or null, "
                                f"got {shown(cap)}")
        addressed = lv.get("addressed", False)
        if not isinstance(addressed, bool):
            raise InstanceError(f"{label}: 'addressed' must be true or false, got {shown(addressed)}")
        if addressed and cap is None:
            raise InstanceError(f"{label}: an addressed level needs a finite capacity")
        alignment = lv.get("alignment", 1)
        if not is_int(alignment) or not 1 <= alignment <= MAX_BYTES:
            raise InstanceError(f"{label}: alignment must be an integer in 1..2**53, "
                                f"got {shown(alignment)}")
        copy_bw = lv.get("copy_bandwidth", bw)
        if not is_number(copy_bw) or copy_bw <= 0:
            raise InstanceError(f"{label}: copy_bandwidth must be a number > 0, got {shown(copy_bw)}")
        levels.append(Level(name, cap, float(bw), addressed, alignment, float(copy_bw)))
    return levels


def _column(values: list[Any] | tuple[Any, ...], dtype: type = np.int64,
            types: frozenset[type] = frozenset({int})) -> np.ndarray | None:
    """The values as `dtype` when every one is of one of `types` and fits; else None."""
    if set(map(type, values)) <= types:
        try:
            return np.fromiter(values, dtype, len(values))
        except OverflowError:  # an integer beyond the dtype's range
            return None
    return None


_OP_FIELDS = operator.itemgetter("name", "flops")
_TENSOR_KEYS = ("name", "kind", "size", "accesses", "producer")
_TENSOR_FIELDS = operator.itemgetter(*_TENSOR_KEYS)


def _check_tensors(tensors: list[Any], n_ops: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Check every tensor (docs/spec.md section 2); return size and is_weight per tensor, per
    access (tensors in order, each tensor's pairs as listed) its tensor, op and bytes,
    and where each tensor's accesses start (`first[t]:first[t + 1]`)."""
    T = len(tensors)
    if set(map(type, tensors)) != {dict}:
        _check_named("tensor", tensors)
    # One pass over the tensors for every field (a missing key is _MISSING).
    try:
        rows = list(map(_TENSOR_FIELDS, tensors))
    except KeyError:
        rows = [tuple(tensor.get(key, _MISSING) for key in _TENSOR_KEYS) for tensor in tensors]
    names, kinds, raw_sizes, accesses, raw_producers = zip(*rows)
    if set(map(type, names)) != {str}:
        _check_named("tensor", tensors)

    def fail(t: int, problem: str) -> InstanceError:
        return InstanceError(f"{_named('tensor', t, tensors[t])}: {problem}")

    if not (set(map(type, kinds)) == {str} and set(kinds) <= {"weight", "activation"}):
        t = next(t for t, kind in enumerate(kinds) if kind not in ("weight", "activation"))
        raise fail(t, f"kind must be 'weight' or 'activation', got {shown(kinds[t])}")
    is_weight = np.fromiter(map("weight".__eq__, kinds), np.bool_, T).astype(np.int8)

    size = _column(raw_sizes)
    bad = (None if size is None else (size <= 0) | (size > MAX_BYTES))
    if bad is None or bad.any():
        t = (next(t for t, v in enumerate(raw_sizes) if not (is_int(v) and 0 < v <= MAX_BYTES))
             if bad is None else _first(bad))
        raise fail(t, f"size must be an integer number of bytes in 1..2**53, got {shown(raw_sizes[t])}")
    if float(size.astype(np.float64).sum()) >= MAX_TOTAL:
        raise InstanceError(f"the tensors' sizes add up to {int(size.sum(dtype=object))} bytes, "
                            "over the limit of 2**62")

    lists = set(map(type, accesses)) == {list}
    counts = np.fromiter(map(len, accesses), np.int64, T) if lists else None
    if counts is None or not counts.all():
        t = next(t for t, a in enumerate(accesses) if not (isinstance(a, list) and a))
        raise fail(t, "accesses must be a non-empty list of [op_index, bytes] pairs")
    tensor_of = np.repeat(np.arange(T, dtype=np.int64), counts)
    pairs = list(chain.from_iterable(accesses))
    if not (set(map(type, pairs)) == {list} and set(map(len, pairs)) == {2}):
        j = next(j for j, p in enumerate(pairs) if not (isinstance(p, list) and len(p) == 2))
        raise fail(int(tensor_of[j]), f"access {shown(pairs[j])} is not an [op_index, bytes] pair")
    flat = list(chain.from_iterable(pairs))
    table = _column(flat)
    if table is None:  # some op index or byte count is not an integer that fits in 64 bits
        j = next(j for j, v in enumerate(flat)
                 if not (is_int(v) and -MAX_TOTAL < v < MAX_TOTAL))
        t, (k, b) = int(tensor_of[j // 2]), pairs[j // 2]
        if j % 2 == 0:
            raise fail(t, f"access op index {shown(k)} is not an op (0..{n_ops - 1})")
        raise fail(t, f"access bytes for op {k} must be an integer in 0..2**53, got {shown(b)}")
    step, nbytes = table[0::2].copy(), table[1::2].copy()
    bad = (step < 0) | (step >= n_ops)
    if bad.any():
        j = _first(bad)
        raise fail(int(tensor_of[j]), f"access op index {step[j]} is not an op (0..{n_ops - 1})")
    bad = (nbytes < 0) | (nbytes > MAX_BYTES)
    if bad.any():
        j = _first(bad)
        raise fail(int(tensor_of[j]),
                   f"access bytes for op {step[j]} must be an integer in 0..2**53, got {nbytes[j]}")
    first = np.zeros(T + 1, np.int64)
    np.cumsum(counts, out=first[1:])
    over = np.add.reduceat(nbytes.astype(np.float64), first[:-1]) >= MAX_TOTAL
    if over.any():
        raise fail(_first(over), "its accesses' bytes add up to over the limit of 2**62")
    by_tensor = np.lexsort((step, tensor_of))
    same = ((tensor_of[by_tensor][1:] == tensor_of[by_tensor][:-1])
            & (step[by_tensor][1:] == step[by_tensor][:-1]))
    if same.any():
        j = int(by_tensor[_first(same)])
        raise fail(int(tensor_of[j]), f"more than one access pair for op {step[j]}")

    if _MISSING in raw_producers:
        raise fail(raw_producers.index(_MISSING), "'producer' is required (an op index or null)")
    given = np.fromiter(map(operator.is_not, raw_producers, repeat(None)), np.bool_, T)
    producer = _column([p for p in raw_producers if p is not None])
    if producer is not None:
        bad = (producer < 0) | (producer >= n_ops)
    if producer is None or bad.any():
        t = next(t for t, p in enumerate(raw_producers)
                 if p is not None and not (is_int(p) and 0 <= p < n_ops))
        raise fail(t, f"producer {shown(raw_producers[t])} is not an op index "
                      f"(0..{n_ops - 1}) or null")
    first_step = np.minimum.reduceat(step, first[:-1])
    wrong = np.flatnonzero(given)[producer != first_step[given]]
    if wrong.size:
        t = int(wrong[0])
        p, steps = raw_producers[t], step[first[t]:first[t + 1]].tolist()
        if p not in steps:
            raise fail(t, f"producer op {p} is not among its accesses")
        raise fail(t, f"producer op {p} must be the smallest op index among its accesses, "
                      f"but op {min(steps)} reads it first (consumer before producer)")
    return size, is_weight, tensor_of, step, nbytes, first


def _rectify_rank(traffic: np.ndarray, size: np.ndarray) -> np.ndarray:
    """docs/spec.md section 6's order: smallest traffic/size first (exact cross products),
    ties to the larger size, then to the larger tensor index. Returns rank per tensor.

    Sorted by the float ratio (then by the reduced fraction, larger size, larger index);
    a float ratio is within a few ulps of the exact one, so only runs of neighbours
    whose ratios are within 1e-12 of each other but not the same fraction can be out of
    the exact order, and those few runs are sorted again with exact cross products."""
    T = len(size)
    index = np.arange(T, dtype=np.int64)
    ratio = traffic.astype(np.float64) / size.astype(np.float64)
    g = np.gcd(traffic, size)
    num, den = traffic // g, size // g
    order = np.lexsort((-index, -size, den, num, ratio))
    r, nu, de = ratio[order], num[order], den[order]
    near = r[1:] - r[:-1] <= 1e-12 * r[1:]
    exact_tie = (r[1:] == r[:-1]) & (nu[1:] == nu[:-1]) & (de[1:] == de[:-1])
    suspect = np.flatnonzero(near & ~exact_tie)
    if suspect.size:
        run_id = np.concatenate(([0], np.cumsum(~near)))  # runs of near neighbours
        tr, sz = traffic.tolist(), size.tolist()

        def compare(a: int, b: int) -> int:
            lhs, rhs = tr[a] * sz[b], tr[b] * sz[a]  # Python ints: exact
            if lhs != rhs:
                return -1 if lhs < rhs else 1
            if sz[a] != sz[b]:
                return -1 if sz[a] > sz[b] else 1
            return -1 if a > b else 1

        bounds = np.flatnonzero(np.concatenate(([True], ~near, [True])))  # run starts, then T
        for run in np.unique(run_id[suspect]).tolist():
            lo, hi = int(bounds[run]), int(bounds[run + 1])
            order[lo:hi] = sorted(order[lo:hi].tolist(), key=functools.cmp_to_key(compare))
    rank = np.empty(T, np.int64)
    rank[order] = index
    return rank
