"""Static shapes of every value of an ONNX model, without reading its weights.

Exporters leave shapes to be computed: the TorchScript exporter builds them at run
time from `Shape` nodes, the dynamo exporter writes most of them. No single
library resolves both, so two are combined:

1. `onnx.shape_inference.infer_shapes(..., data_prop=True)`: fast, follows the
   operator schemas, propagates small constant shape vectors;
2. `onnxruntime.tools.symbolic_shape_infer`: symbolic algebra over shape
   arithmetic, which resolves the TorchScript exporter's `Shape -> Gather ->
   Concat -> Reshape` chains that the first leaves unknown.

Where the first leaves shapes unknown, the shape arithmetic that the known shapes
determine is computed on numbers (`folding`) and ONNX's inference runs again on the
model holding those values, for a few rounds while that resolves more. The second runs
only when shapes are still unknown after that (its algebra is slow on graphs with many
computed paddings), followed by the same folding; a fully known shape from any step counts. A library that raises is recorded and skipped, never
turned into a traceback: what stays unknown is refused later, by name.

Weights are never read: the model is loaded with `load_external_data=False`
and inference runs on a *slim* copy whose large initializers are graph inputs
(their type and dims are all that inference needs).
"""
from __future__ import annotations

import functools
import logging
import math
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import onnx
import onnx.inliner
from onnx import TensorProto, helper

from memplace.instances.onnx.errors import OnnxImportError

# Initializers up to this many elements keep their values in the slim model:
# shape vectors, axes, scalars, which data propagation needs.
SMALL_INITIALIZER = 1024
FOLD_ROUNDS = 8  # rounds of computing shape arithmetic, then inferring again


@dataclass(frozen=True)
class Initializer:
    """What the importer keeps of an initializer: name, element type and dims."""

    name: str
    elem_type: int
    dims: tuple[int, ...]

    @property
    def elements(self) -> int:
        return math.prod(self.dims)


@dataclass
class ShapedModel:
    """A slim model's initializers and the static type of each value.

    `types[name]` is `(elem_type, dims)` with every dim an int, for each value whose
    shape is fully known; `notes` says which library failed and why.
    """

    initializers: dict[str, Initializer]
    types: dict[str, tuple[int, tuple[int, ...]]]
    notes: list[str] = field(default_factory=list)
    opsets: list[onnx.OperatorSetIdProto] = field(default_factory=list)
    sampled: int | None = None  # shapes taken from a sample run (None: no run was allowed)

    def schema_error(self, node: onnx.NodeProto) -> str | None:
        """ONNX's own complaint about `node` given its inputs' known types (e.g. an
        attribute out of range, which leaves the node's outputs unknown without a word when
        inference is not strict), or None when it has none."""
        inputs = [helper.make_tensor_value_info(v, *self.types[v]) for v in dict.fromkeys(node.input)
                  if v and v in self.types]
        if len(inputs) < len([v for v in node.input if v]):
            return None  # an input is unknown too: the cause lies upstream
        graph = helper.make_graph([node], "node", inputs, [helper.make_value_info(o, onnx.TypeProto())
                                                             for o in node.output if o])
        try:
            onnx.shape_inference.infer_shapes(helper.make_model(graph, opset_imports=self.opsets),
                                              strict_mode=True)
        except Exception as exc:  # the complaint is what is wanted
            text = " ".join(str(exc).split())
            return text.split("Inference error(s): ")[-1][:300] or type(exc).__name__
        return None


def element_bytes(elem_type: int) -> int:
    """Bytes of one element of an ONNX tensor element type."""
    try:
        return int(np.dtype(helper.tensor_dtype_to_np_dtype(elem_type)).itemsize)
    except (KeyError, TypeError, ValueError):
        raise OnnxImportError(f"unsupported ONNX element type {elem_type}") from None


def load_model(path: str | Path) -> onnx.ModelProto:
    """The model at `path`, its external data (if any) left unread."""
    path = Path(path)
    if not path.is_file():
        raise OnnxImportError(f"no ONNX model at {path}")
    try:
        return onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # protobuf's DecodeError and friends
        raise OnnxImportError(f"{path}: not a readable ONNX model ({type(exc).__name__}: "
                              f"{str(exc).splitlines()[0] if str(exc) else 'no detail'})") from None


def slim_model(model: onnx.ModelProto) -> tuple[onnx.ModelProto, dict[str, Initializer]]:
    """A copy of `model` whose initializers above SMALL_INITIALIZER elements (or stored
    outside the file) are graph inputs of the same type and dims; local functions inlined."""
    graph = model.graph
    initializers: dict[str, Initializer] = {}
    kept, as_inputs = [], []
    declared = {i.name for i in graph.input}
    for init in graph.initializer:
        info = Initializer(init.name, init.data_type, tuple(int(d) for d in init.dims))
        initializers[init.name] = info
        if info.elements <= SMALL_INITIALIZER and init.data_location != TensorProto.EXTERNAL:
            kept.append(init)
        elif init.name not in declared:
            as_inputs.append(helper.make_tensor_value_info(init.name, init.data_type, info.dims))
    slim_graph = helper.make_graph(
        list(graph.node), graph.name or "main", list(graph.input) + as_inputs, list(graph.output),
        initializer=kept, value_info=list(graph.value_info))
    slim = helper.make_model(slim_graph, opset_imports=list(model.opset_import),
                             ir_version=max(model.ir_version, 4))
    slim.functions.extend(model.functions)
    if slim.functions:
        try:
            slim = onnx.inliner.inline_local_functions(slim)
        except Exception as exc:
            raise OnnxImportError(f"cannot inline the model's local functions: {exc}") from None
    return slim, initializers


def bind_dimensions(model: onnx.ModelProto, batch: int | None, dims: dict[str, int],
                    initializers: dict[str, Initializer] | None = None) -> None:
    """Replace the symbolic dimensions of the graph's inputs by values, in place.

    `batch` binds the leading dimension of every input whose leading dimension is
    symbolic (and every other dimension of the same name); `dims` binds names.
    Raises when an input keeps a symbolic dimension, naming it, or when `batch`
    asks to change a batch dimension fixed in the model.
    """
    graph = model.graph
    initializer_names = {i.name for i in graph.initializer} | set(initializers or ())
    inputs = [i for i in graph.input if i.name not in initializer_names]
    bound = dict(dims)
    for value, size in bound.items():
        if size < 1:
            raise OnnxImportError(f"--dim {value}={size}: a dimension must be >= 1")
    if batch is not None:
        if batch < 1:
            raise OnnxImportError(f"--batch {batch}: the batch size must be >= 1")
        leading = [i.type.tensor_type.shape.dim[0] for i in inputs
                   if i.type.HasField("tensor_type") and len(i.type.tensor_type.shape.dim) > 0]
        symbolic = [d for d in leading if not d.HasField("dim_value")]
        if not symbolic:
            fixed = {int(d.dim_value) for d in leading}
            if fixed and fixed != {batch}:
                raise OnnxImportError(
                    f"--batch {batch}: the model's batch dimension is fixed "
                    f"({', '.join(str(v) for v in sorted(fixed))}); re-export it with a dynamic batch axis")
        for d in symbolic:
            if d.dim_param:
                bound.setdefault(d.dim_param, batch)
            else:
                d.dim_value = batch
    used: set[str] = set()
    for value in list(graph.input) + list(graph.output) + list(graph.value_info):
        if not value.type.HasField("tensor_type"):
            continue
        for d in value.type.tensor_type.shape.dim:
            if d.HasField("dim_param") and d.dim_param in bound:
                used.add(d.dim_param)
                d.dim_value = bound[d.dim_param]
    unused = sorted(set(dims) - used)
    if unused:
        names = sorted({d.dim_param for i in inputs for d in i.type.tensor_type.shape.dim
                        if d.HasField("dim_param")})
        raise OnnxImportError(f"--dim {unused[0]}: the model has no symbolic dimension of that name"
                              f" (its inputs have: {', '.join(names) or 'none'})")
    for value in inputs:
        if not value.type.HasField("tensor_type"):
            raise OnnxImportError(f"graph input {value.name!r} is not a tensor (sequences and maps "
                                  "are not supported)")
        shape = value.type.tensor_type.shape
        for axis, d in enumerate(shape.dim):
            if not d.HasField("dim_value") or d.dim_value < 0:
                name = d.dim_param or "unnamed"
                hint = (f"--dim {d.dim_param}=VALUE" if d.dim_param else "--batch N") \
                    if axis == 0 or d.dim_param else "re-export with a named dimension"
                raise OnnxImportError(f"graph input {value.name!r}: dimension {axis} ({name}) is "
                                      f"symbolic; bind it with {hint}")


def _static_types(model: onnx.ModelProto) -> dict[str, tuple[int, tuple[int, ...]]]:
    types: dict[str, tuple[int, tuple[int, ...]]] = {}
    graph = model.graph
    for value in list(graph.input) + list(graph.output) + list(graph.value_info):
        t = value.type
        if not t.HasField("tensor_type") or not t.tensor_type.HasField("shape"):
            continue
        dims = t.tensor_type.shape.dim
        if t.tensor_type.elem_type and all(d.WhichOneof("value") == "dim_value" for d in dims):
            types[value.name] = (t.tensor_type.elem_type, tuple(d.dim_value for d in dims))
    return types


def _symbolic_inference(model: onnx.ModelProto) -> onnx.ModelProto:
    """onnxruntime's symbolic inference, keeping what it found when it stops incomplete.

    Its public `infer_shapes` raises on an incomplete result and then writes
    `sym_shape_infer_temp.onnx` into the working directory; the same steps are run
    here without that, and with the public call (in a scratch directory) as the
    fallback should the steps change in a later onnxruntime."""
    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference
    log = logging.getLogger("onnxruntime.tools.symbolic_shape_infer")
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        inference = SymbolicShapeInference(2**31 - 1, True, False, 0)
        steps = ("_preprocess", "_infer_impl", "_update_output_from_vi")
        if all(hasattr(inference, step) for step in steps):
            inference._preprocess(model)
            while inference.run_:
                inference._infer_impl()
            inference._update_output_from_vi()
            return inference.out_mp_
        cwd = os.getcwd()
        with tempfile.TemporaryDirectory() as scratch:
            os.chdir(scratch)
            try:
                result = SymbolicShapeInference.infer_shapes(model, auto_merge=True)
            finally:
                os.chdir(cwd)
        if result is None:
            raise RuntimeError("the model's opset is not supported")
        return result
    finally:
        log.setLevel(level)


def resolve_shapes(model: onnx.ModelProto, initializers: dict[str, Initializer],
                   sampled: Callable[[list[str]], dict[str, Any]] | None = None) -> ShapedModel:
    """Every value's static type, from the model itself, ONNX's inference and, where that
    leaves shapes unknown, onnxruntime's symbolic inference (see the module docstring);
    then, given `sampled` (the values of named outputs in one run of the model), the
    shapes still unknown from that run."""
    types = _static_types(model)
    for info in initializers.values():
        types[info.name] = (info.elem_type, info.dims)
    notes: list[str] = []
    wanted = [o for n in model.graph.node for o in n.output if o]
    onnx_inference = functools.partial(onnx.shape_inference.infer_shapes, check_type=False,
                                       strict_mode=False, data_prop=True)
    for name, infer in (("onnx.shape_inference", onnx_inference),
                        ("onnxruntime symbolic_shape_infer", _symbolic_inference)):
        if all(o in types for o in wanted):
            break
        try:
            inferred = infer(model)
        except Exception as exc:  # any library failure is a fallback, never a traceback
            detail = str(exc).splitlines()[0] if str(exc) else ""
            notes.append(f"{name} failed: {type(exc).__name__} {detail}".strip())
        else:
            before = len(types)
            for value, found in _static_types(inferred).items():
                types.setdefault(value, found)
            if types and len(types) > before:
                notes.append(f"{name} resolved {len(types) - before} shapes")
        # computing the shape arithmetic is cheap and usually resolves the rest, where the
        # symbolic algebra grows with every computed padding (PNASNet's TorchScript export:
        # 12 s of it for 3,287 nodes)
        _fold_and_infer(model, types, wanted, onnx_inference, notes)
    count = None
    if sampled is not None:
        missing = list(dict.fromkeys(o for o in wanted if o not in types))
        count = 0
        for value, array in (sampled(missing) if missing else {}).items():
            if isinstance(array, np.ndarray):  # a sequence has no one shape
                types[value] = (helper.np_dtype_to_tensor_dtype(array.dtype),
                                tuple(int(d) for d in array.shape))
                count += 1
        if missing:
            notes.append(f"the sample run resolved {count} shapes")
    return ShapedModel(initializers, types, notes, list(model.opset_import), count)


def _fold_and_infer(model: onnx.ModelProto, types: dict[str, tuple[int, tuple[int, ...]]],
                    wanted: list[str], infer, notes: list[str]) -> None:
    """While shapes stay unknown: compute the shape arithmetic the known shapes determine
    (`folding`), then run ONNX's inference again on the model with those values stored."""
    from memplace.instances.onnx.folding import fold_shape_values
    current = model
    for _ in range(FOLD_ROUNDS):
        if all(o in types for o in wanted):
            return
        folded, count = fold_shape_values(current, types)
        if not count:
            return
        before = len(types)
        for init in folded.graph.initializer:
            types.setdefault(init.name, (init.data_type, tuple(int(d) for d in init.dims)))
        try:
            inferred = infer(folded)
        except Exception as exc:  # as above: recorded, never a traceback
            notes.append(f"onnx.shape_inference after folding failed: {type(exc).__name__}")
            return
        for value, found in _static_types(inferred).items():
            types.setdefault(value, found)
        notes.append(f"shape arithmetic computed ({count} values) resolved "
                     f"{len(types) - before} shapes")
        if len(types) == before:
            return
        current = folded
