"""Shape arithmetic evaluated on numbers, for the shapes neither inference library resolves.

The TorchScript exporter computes many shapes at run time: `Shape -> Gather -> Concat ->
Equal -> Where -> Expand` (a `tensor.expand(n, -1, -1)`), `Shape -> Slice -> Sub ->
ConstantOfShape -> Concat -> Pad` (a window's padding). ONNX's data propagation follows
only a few of those ops and onnxruntime's symbolic inference gives up on some graphs
(ViT-B/16's, Swin-T's, TinyLlama's), so the `Expand` or `Pad` after them stays unknown.
Once every graph input's shape is bound, though, each of those values is a number: this
module computes them node by node (ONNX's reference implementation, the model's own
opsets), starting from the `Shape` of every value whose shape is known, inferring each
data node's output shape from its inputs' as it goes (ONNX's inference on the node alone,
the values computed so far given), and writes them into a copy of the model as
initializers, where ONNX's inference then resolves the rest.

Only small values are computed (at most `SMALL_VALUE` elements: shape vectors, axes,
scalars, masks of a few tokens), only from small stored constants and known shapes, and
only by nodes of the default domain without subgraphs or randomness: weights are never
read, and a node that fails to evaluate is left as it was.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import onnx
from onnx import helper, numpy_helper

SMALL_VALUE = 1024
NOT_FOLDED = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
              "Multinomial", "Bernoulli", "If", "Loop", "Scan"}


def _shape_of(node: onnx.NodeProto, dims: tuple[int, ...]) -> np.ndarray:
    start, end = 0, len(dims)
    for a in node.attribute:
        if a.name == "start":
            start = a.i
        elif a.name == "end":
            end = a.i
    return np.array(dims[slice(start, end)], dtype=np.int64)


def _evaluate(node: onnx.NodeProto, inputs: list[np.ndarray | None],
              opsets: list[onnx.OperatorSetIdProto]) -> list[np.ndarray] | None:
    """The outputs of one node on these inputs (None where an optional input is absent),
    or None when ONNX's reference implementation cannot run it."""
    from onnx.reference import ReferenceEvaluator
    names = [f"in{i}" if value is not None else "" for i, value in enumerate(inputs)]
    outs = [f"out{i}" if o else "" for i, o in enumerate(node.output)]
    copy = helper.make_node(node.op_type, names, outs, domain=node.domain)
    copy.attribute.extend(node.attribute)
    graph = helper.make_graph(
        [copy], "fold",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
         for n, v in zip(names, inputs) if v is not None],
        [helper.make_tensor_value_info(o, 0, None) for o in outs if o])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = helper.make_model(graph, opset_imports=opsets)
            results = ReferenceEvaluator(model).run(None, {n: v for n, v in zip(names, inputs)
                                                            if v is not None})
    except Exception:  # noqa: BLE001 - any op the reference cannot run stays unfolded
        return None
    return [np.asarray(r) for r in results]


def _infer_node(node: onnx.NodeProto, values: dict[str, np.ndarray],
                types: dict[str, tuple[int, tuple[int, ...]]],
                opsets: list[onnx.OperatorSetIdProto]) -> None:
    """Add the output types of a data node whose inputs' types are known, by ONNX's inference
    on the node alone, its computed inputs given as values (a Reshape's target shape): so
    that a `Shape` of its output further on can be computed in the same pass."""
    if all(not o or o in types for o in node.output):
        return
    if any(v and v not in values and v not in types for v in node.input):
        return
    constants = [numpy_helper.from_array(values[v], v) for v in dict.fromkeys(node.input)
                 if v and v in values]
    given = {c.name for c in constants}
    inputs = [helper.make_tensor_value_info(v, types[v][0], types[v][1])
              for v in dict.fromkeys(node.input) if v and v not in given]
    graph = helper.make_graph([node], "node", inputs, [], initializer=constants)
    try:
        inferred = onnx.shape_inference.infer_shapes(
            helper.make_model(graph, opset_imports=opsets), check_type=False, strict_mode=False,
            data_prop=True)
    except Exception:  # noqa: BLE001 - what cannot be inferred here stays unknown
        return
    for value in inferred.graph.value_info:
        t = value.type.tensor_type
        if (value.name in node.output and value.name not in types and t.elem_type
                and t.HasField("shape")
                and all(d.WhichOneof("value") == "dim_value" for d in t.shape.dim)):
            types[value.name] = (t.elem_type, tuple(d.dim_value for d in t.shape.dim))


def small_values(model: onnx.ModelProto, types: dict[str, tuple[int, tuple[int, ...]]]
                 ) -> tuple[dict[str, np.ndarray], set[str], list[onnx.NodeProto]]:
    """Every small value of `model` computable from known shapes and small constants: the
    values by name, the names of those stored as initializers, and the nodes computed. On
    the way, the output types of data nodes whose input types are known are added to
    `types` (`_infer_node`), so one pass follows shapes through the whole graph."""
    graph = model.graph
    values: dict[str, np.ndarray] = {i.name: numpy_helper.to_array(i) for i in graph.initializer
                                     if math.prod(i.dims) <= SMALL_VALUE}
    stored = set(values)
    opsets = [o for o in model.opset_import]
    folded: list[onnx.NodeProto] = []
    for node in graph.node:
        if node.domain not in ("", "ai.onnx") or node.op_type in NOT_FOLDED or any(
                a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
                for a in node.attribute):
            continue
        if node.op_type == "Shape":
            if node.input[0] not in types:
                continue
            outputs = [_shape_of(node, types[node.input[0]][1])]
        elif node.op_type == "Size":
            if node.input[0] not in types:
                continue
            outputs = [np.array(math.prod(types[node.input[0]][1]), dtype=np.int64)]
        elif all(not v or v in values for v in node.input):
            outputs = _evaluate(node, [values[v] if v else None for v in node.input], opsets)
            if outputs is None:
                continue
        else:
            _infer_node(node, values, types, opsets)
            continue
        if any(o.size > SMALL_VALUE for o in outputs):
            continue
        for name, value in zip(node.output, outputs):
            if name:
                values[name] = value
        folded.append(node)
    return values, stored, folded


def fold_shape_values(model: onnx.ModelProto,
                      types: dict[str, tuple[int, tuple[int, ...]]]) -> tuple[onnx.ModelProto, int]:
    """A copy of `model` whose nodes computing small values from known shapes and small
    constants are replaced by those values (initializers), and how many values that is;
    `types` gains what `small_values` infers on the way."""
    values, stored, folded = small_values(model, types)
    if not folded:
        return model, 0
    graph = model.graph
    gone = {id(n) for n in folded}
    new_values = [numpy_helper.from_array(v, n) for n, v in values.items() if n not in stored]
    slim = onnx.ModelProto()
    slim.CopyFrom(model)
    del slim.graph.node[:]
    slim.graph.node.extend(n for n in graph.node if id(n) not in gone)
    slim.graph.initializer.extend(new_values)
    defined = {v.name for v in new_values}
    keep = [v for v in slim.graph.value_info if v.name not in defined]
    del slim.graph.value_info[:]
    slim.graph.value_info.extend(keep)
    return slim, len(new_values)
