"""A small builder for workload graphs: ops in schedule order, the tensors they touch.

Generators describe a network layer by layer; the builder keeps the bookkeeping
that the instance format (docs/spec.md section 2) asks for: tensor indices, producers,
one access pair per op and tensor, accesses in op order with the producer first.

Flop conventions (shared by every generator):
  * matrix products and convolutions: 2 flops per multiply-accumulate;
  * elementwise ops: `ELEMENTWISE_FLOPS[type]` flops per output element, a
    small constant standing for the arithmetic of one element (1 for an add or
    a scale; 5 for softmax: max, subtract, exp, sum, divide; 8 for layernorm and
    GELU); data-movement ops (reshape, transpose, gather, slice, concat, split)
    have 0 flops.
"""
from __future__ import annotations

from typing import Any, Sequence

ELEMENTWISE_FLOPS: dict[str, float] = {
    "add": 1.0,
    "mul": 1.0,
    "where": 1.0,
    "relu": 1.0,
    "sigmoid": 4.0,
    "swish": 5.0,
    "tanh": 4.0,
    "softmax": 5.0,
    "gelu": 8.0,
    "layernorm": 8.0,
    "reshape": 0.0,
    "transpose": 0.0,
    "gather": 0.0,
    "slice": 0.0,
    "concat": 0.0,
    "split": 0.0,
}

Read = int | tuple[int, int]  # a tensor index, or (tensor index, bytes moved) for a partial read


class GraphBuilder:
    """Collects ops and tensors of one workload and emits the spec's `workload` dict.

    Sizes are given in elements and turned into bytes with `width` (bytes per
    element) unless an explicit element width is passed, as for integer token ids.
    """

    def __init__(self, name: str, width: int = 1, source: str = "",
                 params: dict[str, Any] | None = None):
        if width < 1:
            raise ValueError(f"element width must be >= 1 byte, got {width}")
        self.name = name
        self.width = width
        self.source = source
        self.params = dict(params or {})
        self.ops: list[dict[str, Any]] = []
        self.tensors: list[dict[str, Any]] = []
        self._accesses: list[dict[int, int]] = []  # per tensor: op -> bytes, in op order

    # ------------------------------------------------------------------ tensors
    def _tensor(self, name: str, kind: str, size: int, producer: int | None) -> int:
        if size <= 0:
            raise ValueError(f"tensor {name!r}: size must be > 0 bytes, got {size}")
        self.tensors.append({"name": name, "kind": kind, "size": int(size), "producer": producer})
        self._accesses.append({})
        return len(self.tensors) - 1

    def input(self, name: str, elements: int, element_bytes: int | None = None) -> int:
        """A graph input: an activation with no producer, read by later ops."""
        return self._tensor(name, "activation", elements * (element_bytes or self.width), None)

    def weight(self, name: str, elements: int, element_bytes: int | None = None) -> int:
        """A weight or constant: resident, no producer."""
        return self._tensor(name, "weight", elements * (element_bytes or self.width), None)

    def size(self, t: int) -> int:
        return self.tensors[t]["size"]

    # ------------------------------------------------------------------ ops
    def op(self, name: str, type: str, flops: float, reads: Sequence[Read],
           out: int | Sequence[int] | None, weights: dict[str, int] | None = None,
           out_names: Sequence[str] | None = None) -> Any:
        """Append an op at the end of the schedule.

        reads: tensors the op reads (whole, or `(t, bytes)` for part of one).
        out: elements of the op's output activation (`name.out`), or a list of
            element counts for several outputs (named by `out_names`).
        weights: weight tensors created for this op, `{suffix: elements}`, each
            named `name.suffix` and read whole by this op.
        Returns the output tensor index, or a list of them for several outputs.
        """
        k = len(self.ops)
        self.ops.append({"name": name, "type": type, "flops": float(flops)})
        for suffix, elements in (weights or {}).items():
            w = self.weight(f"{name}.{suffix}", elements)
            self._access(w, k, self.size(w))
        for read in reads:
            t, b = (read, self.size(read)) if isinstance(read, int) else read
            self._access(t, k, b)
        if out is None:
            return None
        if isinstance(out, int):
            t = self._tensor(f"{name}.out", "activation", out * self.width, k)
            self._access(t, k, self.size(t))
            return t
        names = list(out_names or [f"out{i}" for i in range(len(out))])
        outs = []
        for suffix, elements in zip(names, out, strict=True):
            t = self._tensor(f"{name}.{suffix}", "activation", elements * self.width, k)
            self._access(t, k, self.size(t))
            outs.append(t)
        return outs

    def elementwise(self, name: str, type: str, reads: Sequence[Read], out: int,
                    weights: dict[str, int] | None = None) -> int:
        """An op whose flops are `ELEMENTWISE_FLOPS[type]` per output element."""
        return self.op(name, type, ELEMENTWISE_FLOPS[type] * out, reads, out, weights)

    def _access(self, t: int, k: int, nbytes: int) -> None:
        if t >= len(self.tensors):
            raise ValueError(f"op {k} {self.ops[k]['name']!r} reads unknown tensor {t}")
        producer = self.tensors[t]["producer"]
        if producer is not None and producer > k:
            raise ValueError(f"op {k} reads tensor {self.tensors[t]['name']!r} before it is produced")
        accesses = self._accesses[t]
        accesses[k] = accesses.get(k, 0) + int(nbytes)

    # ------------------------------------------------------------------ output
    def to_dict(self) -> dict[str, Any]:
        """The spec's `workload` object, with provenance in `source` and `params`."""
        tensors = []
        for tensor, accesses in zip(self.tensors, self._accesses):
            if not accesses:
                raise ValueError(f"tensor {tensor['name']!r} is never accessed")
            tensors.append({**tensor, "accesses": [[k, b] for k, b in sorted(accesses.items())]})
        return {"name": self.name, "source": self.source, "params": self.params,
                "ops": self.ops, "tensors": tensors}
