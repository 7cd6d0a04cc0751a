"""`from_onnx`: an ONNX model file as a memplace instance (docs/spec.md section 2).

The pipeline: load without external data, a slim copy for shape work
(`shapes.slim_model`), bind symbolic dimensions, resolve every shape
(`shapes.resolve_shapes`), give each node its role and fuse ops (`graph.classify`),
then emit ops in the stored topological order with FLOPs from `flops.node_flops`
and tensors sized from dims and element types.

Tensors: an activation per value that crosses from one op to another (or is a
graph input read by an op, or a graph output); a weight per initializer or
stored `Constant` read by an op (counted once however many ops read it, so a tied
embedding is one tensor), per folded constant (e.g. a precomputed attention
mask) and per value computed from weights only (folded at compile time, `graph`)
that an op reads. Integer shape/index constants and scalars are immediates
of the program, no tensor. A `Gather` moves only the rows it gathers and a
`Slice` only what it keeps.
"""
from __future__ import annotations

import functools
import math
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import onnx
from onnx import TensorProto

from memplace.instances.onnx.errors import OnnxImportError
from memplace.instances.onnx.flops import conservative_flops, node_flops
from memplace.instances.onnx.graph import (INDEX_INPUTS, PARAMETER_INPUTS, Lowered, classify,
                                           node_label, refuse_control_flow)
from memplace.instances.onnx.sample import SampleRun, evaluate, sample_inputs, take_branches
from memplace.instances.onnx.shapes import (ShapedModel, bind_dimensions, element_bytes,
                                            load_model, resolve_shapes, slim_model)

FORMAT = "memplace-instance/1"
FLOATING = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.DOUBLE,
            *(getattr(TensorProto, n) for n in ("FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
                                                "FLOAT8E5M2FNUZ") if hasattr(TensorProto, n))}
ROW_READS = {"Gather", "GatherElements", "GatherND", "Slice"}
OP_TYPES = {"Conv": "conv", "ConvTranspose": "upsample", "Gemm": "fc", "MatMul": "matmul",
            "Einsum": "matmul", "MaxPool": "pool", "AveragePool": "pool", "GlobalAveragePool": "pool",
            "GlobalMaxPool": "pool", "ReduceMean": "pool", "LayerNormalization": "layernorm",
            "Softmax": "softmax", "Gelu": "gelu", "BatchNormalization": "batchnorm"}


class OnnxImportWarning(UserWarning):
    """An op type whose FLOPs this importer does not know: counted conservatively."""


def _op_type(node: onnx.NodeProto, shapes: list[tuple[int, ...]]) -> str:
    if node.op_type == "Conv":
        group = next((a.i for a in node.attribute if a.name == "group"), 1)
        if group > 1 and len(shapes[0]) > 1 and group == shapes[0][1]:
            return "depthwise_conv"
    return OP_TYPES.get(node.op_type, node.op_type.lower())


class _Emitter:
    """Turns the lowered graph into the spec's ops and tensors."""

    def __init__(self, shaped: ShapedModel, lowered: Lowered, dtype_bytes: int | None):
        self.shaped, self.lowered, self.dtype_bytes = shaped, lowered, dtype_bytes
        self._sizes: dict[str, int] = {}
        self.ops: list[dict[str, Any]] = []
        self.tensors: dict[str, dict[str, Any]] = {}
        self.unknown_ops: dict[str, list[str]] = {}

    # ------------------------------------------------------------ values
    def shape(self, value: str) -> tuple[int, ...]:
        found = self.shaped.types.get(value)
        if found is None:
            node = next((n for n in self.lowered.nodes if value in n.output), None)
            where = f"output of node {node_label(node, 0)}" if node is not None else "a graph input"
            notes = f"; {'; '.join(self.shaped.notes)}" if self.shaped.notes else ""
            rejected = self.shaped.schema_error(node) if node is not None else None
            if rejected:  # ONNX refuses the node itself: say so first, it is the cause
                raise OnnxImportError(f"node {node_label(node, 0)} is not valid ONNX, so the "
                                      f"shape of {value!r} is unknown: {rejected}")
            hint = ("" if self.shaped.sampled is not None else
                    "; if it depends on the values the model reads, --sample-run SEED takes it "
                    "from one run on sample inputs")
            raise OnnxImportError(f"the shape of {value!r} ({where}) is unknown after shape "
                                  f"inference{notes}{hint}")
        return found[1]

    def width(self, value: str) -> int:
        elem_type = self.shaped.types[value][0] if value in self.shaped.types else 0
        if self.dtype_bytes is not None and elem_type in FLOATING:
            return self.dtype_bytes
        return element_bytes(elem_type)

    def size(self, value: str) -> int:
        size = self._sizes.get(value)
        if size is None:
            size = self._sizes[value] = math.prod(self.shape(value)) * self.width(value)
        return size

    def _access(self, value: str, kind: str, producer: int | None, k: int, nbytes: int) -> None:
        size = self.size(value)
        if size <= 0:
            return
        tensor = self.tensors.get(value)
        if tensor is None:
            tensor = self.tensors[value] = {"name": value, "kind": kind, "size": size,
                                            "producer": producer, "accesses": {}}
        tensor["accesses"][k] = max(tensor["accesses"].get(k, 0), int(nbytes))

    # ------------------------------------------------------------ ops
    def emit(self) -> None:
        lowered = self.lowered
        produced: set[str] = set()
        names: set[str] = set()
        for k, group in enumerate(lowered.groups):
            inside = {v for m in group.nodes for v in lowered.outputs[m]}
            anchor = lowered.nodes[group.anchor]
            flops = 0.0
            for m in group.nodes:
                node = lowered.nodes[m]
                ins, outs = self._shapes(m)
                f = node_flops(node, ins, outs)
                if f is None:
                    self.unknown_ops.setdefault(node.op_type, []).append(node_label(node, m))
                    f = conservative_flops(outs)
                flops += f
                for position, value in lowered.data_inputs[m]:
                    if value not in inside:
                        self._read(k, node, position, value, produced)
            name = anchor.name or anchor.output[0]
            unique, suffix = name, 1
            while unique in names:
                suffix += 1
                unique = f"{name}#{suffix}"
            names.add(unique)
            # the op's kind is its first node's, past a leading type conversion
            typed = next((m for m in group.nodes if lowered.op_types[m] not in ("Cast", "CastLike")),
                         group.anchor)
            typed_ins = self._shapes(typed)[0] if lowered.op_types[typed] == "Conv" else []
            # every fused node's own name is kept (unknown keys are provenance, spec section 2)
            fused = [lowered.nodes[m].name or lowered.nodes[m].output[0] for m in group.nodes]
            self.ops.append({"name": unique, "type": _op_type(lowered.nodes[typed], typed_ins),
                             "flops": flops, "nodes": fused})
            for value in group.outputs:
                self._access(value, "activation", k, k, self.size(value))
                produced.add(value)

    def _shapes(self, m: int) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]]]:
        """Input and output shapes of node m. Data inputs and the first output must be known;
        shape/axis parameters and the other outputs (often unused: a MaxPool's indices, a
        LayerNormalization's mean) may stay unknown, as ()."""
        lowered, types = self.lowered, self.shaped.types
        skip = PARAMETER_INPUTS.get(lowered.op_types[m], ())
        ins = [() if not v or (k in skip and v not in types) else self.shape(v)
               for k, v in enumerate(lowered.inputs[m])]
        outs = [self.shape(o) if i == 0 or o in types else ()
                for i, o in enumerate(lowered.outputs[m])]
        return ins, outs

    def _read(self, k: int, node: onnx.NodeProto, position: int, value: str,
              produced: set[str]) -> None:
        lowered = self.lowered
        if value in lowered.weights:
            kind = "weight"
        elif value in lowered.compile_time:
            if INDEX_INPUTS.get(node.op_type) == position:
                return  # static indices: the gather is a static slice
            stored = self.shaped.initializers.get(value)
            if math.prod(self.shape(value)) <= 1 and (stored is None or stored.elem_type not in FLOATING):
                return  # a scalar from a Constant node or folding: an immediate of the program
            kind = "weight"  # a float initializer, or a folded constant (e.g. an attention mask)
        elif value in produced or value in lowered.graph_inputs:
            kind = "activation"
        else:
            raise OnnxImportError(f"node {node_label(node, 0)} reads {value!r}, which no earlier "
                                  "op produces")
        nbytes = self.size(value)
        if node.op_type in ROW_READS and position == 0:
            out = next(o for o in node.output if o)
            nbytes = self.size(out) // self.width(out) * self.width(value)
        self._access(value, kind, None, k, nbytes)

    def tensor_list(self) -> list[dict[str, Any]]:
        # ops are emitted in schedule order, so accesses are already sorted by op
        return [{**tensor, "accesses": [[k, b] for k, b in tensor["accesses"].items()]}
                for tensor in self.tensors.values()]


def _hardware(hardware: str | dict[str, Any]) -> dict[str, Any]:
    from memplace.instances.catalog import resolve_hardware  # (the generators load only here)
    return resolve_hardware(hardware)


def _compile_time_values(model: onnx.ModelProto, shaped: ShapedModel) -> Callable[[str], Any]:
    """A compile-time value (a numpy array) by name, or None: stored small constants,
    `Constant` nodes and the shape arithmetic on them, all from one pass of
    `folding.small_values` over the graph, run when a value is first asked for."""
    from memplace.instances.onnx.folding import small_values

    @functools.cache
    def computed() -> dict[str, Any]:
        return small_values(model, dict(shaped.types))[0]
    return lambda name: computed().get(name)


def from_onnx(model: str | Path | onnx.ModelProto, hardware: str | dict[str, Any], *,
              batch: int | None = None, dims: dict[str, int] | None = None,
              dtype_bytes: int | None = None, name: str | None = None,
              sample: SampleRun | None = None) -> dict[str, Any]:
    """A `memplace-instance/1` dict of an ONNX model on `hardware` (a preset name or a
    hardware dict).

    Parameters
    ----------
    model : path of an `.onnx` file (external data is read only by a `sample` run) or a
        loaded ModelProto.
    hardware : a preset's name (any of `memplace.instances.HARDWARE`) or the spec's
        hardware object.
    batch : binds the symbolic leading dimension of the inputs.
    dims : binds symbolic dimensions by name, e.g. ``{"sequence": 128}``.
    dtype_bytes : bytes per element of every floating-point tensor (1 models an int8
        deployment); integer and boolean tensors keep their ONNX width.
    name : the instance's name, which its workload takes too (default: the file's stem,
        `resnet50` for `resnet50.onnx`; a ModelProto's graph name). Built-in instances are
        named `workload@hardware`, so the default never takes a built-in's name.
    sample : take the branch every `If` takes and the shapes that depend on data from one
        run of the model on sample inputs (`memplace.instances.onnx.sample`); without it,
        control flow and data-dependent shapes are refused.

    Raises `OnnxImportError` (a `MemplaceError`) naming the node or tensor at fault;
    warns `OnnxImportWarning` for op types whose FLOPs are counted by the default.
    """
    began = time.perf_counter()
    if dtype_bytes is not None and dtype_bytes < 1:
        raise OnnxImportError(f"--dtype-bytes {dtype_bytes}: must be >= 1")
    hw = _hardware(hardware)
    if isinstance(model, onnx.ModelProto):
        proto, stem = model, model.graph.name or "model"
    else:
        proto, stem = load_model(model), Path(model).name.split(".")[0]
        if sample is not None:
            sample.base_dir = Path(model).resolve().parent
    total_nodes = len(proto.graph.node)
    sampled = None
    if sample is None:
        refuse_control_flow(proto.graph)
        slim, initializers = slim_model(proto)
        bind_dimensions(slim, batch, dict(dims or {}), initializers)
    else:  # the run needs bound inputs, and its branches change the graph: on a copy
        if proto is model:
            proto = onnx.ModelProto()
            proto.CopyFrom(model)
        bind_dimensions(proto, batch, dict(dims or {}))
        feeds = sample_inputs(proto, sample)
        take_branches(proto, feeds, sample)
        refuse_control_flow(proto.graph)  # loops stay refused

        def sampled(names: list[str], run: onnx.ModelProto = proto) -> dict[str, Any]:
            return evaluate(run, names, feeds, sample)
        slim, initializers = slim_model(proto)
    del proto
    shaped = resolve_shapes(slim, initializers, sampled)
    if sample is not None:
        sample.shapes = shaped.sampled

    def elements(value: str) -> int | None:
        found = shaped.types.get(value)
        return None if found is None else math.prod(found[1])

    def elem_type(value: str) -> int | None:
        found = shaped.types.get(value)
        return None if found is None else found[0]

    lowered = classify(slim, initializers, elements, elem_type, _compile_time_values(slim, shaped))
    if not lowered.groups:
        raise OnnxImportError("the model has no op that moves data (every node is shape "
                              "arithmetic or an alias)")
    emitter = _Emitter(shaped, lowered, dtype_bytes)
    emitter.emit()
    for op_type, labels in emitter.unknown_ops.items():
        warnings.warn(OnnxImportWarning(
            f"{len(labels)} node(s) of type {op_type} (first: {labels[0]}): FLOPs unknown, "
            "counted as 1 per output element"), stacklevel=2)
    workload_name = name or stem
    params: dict[str, Any] = {} if batch is None else {"batch": batch}
    params.update(dims or {})
    if dtype_bytes is not None:
        params["dtype_bytes"] = dtype_bytes
    if sample is not None:
        params["sample_seed"] = sample.seed
        if sample.source:
            params["sample_inputs"] = Path(sample.source).name
    workload = {"name": workload_name,
                "source": f"imported from ONNX ({total_nodes} nodes) by memplace.instances.from_onnx",
                "params": params, "ops": emitter.ops, "tensors": emitter.tensor_list()}
    roles = {"nodes": total_nodes, "live_nodes": len(lowered.nodes),
             "ops": len(lowered.groups),
             "fused_nodes": sum(len(g.nodes) for g in lowered.groups),
             "shape_inference": shaped.notes}
    if sample is not None:
        roles["sample_run"] = sample.record()
    instance = {"format": FORMAT, "name": workload_name,
                "source": "memplace import (ONNX)", "import": roles,
                "notes": ("ops fused at a compiler's granularity; flops count 2 per "
                          "multiply-accumulate; see memplace.instances.onnx"),
                "workload": workload, "hardware": hw}
    from memplace.model import Instance
    Instance.from_dict(instance)  # the same checks as loading a file
    roles["seconds"] = round(time.perf_counter() - began, 3)
    return instance
