"""From ONNX nodes to a compiler's ops: what is compile-time, what aliases, what fuses.

Every live node (one whose outputs reach a graph output) gets one role:

* compile-time: shape arithmetic and constants (`Shape`, `Size`, `Constant`,
  `ConstantOfShape`, `Range`, and any node all of whose inputs are compile-time
  and none a weight: the `Gather`/`Concat`/`Unsqueeze`/`Slice`/`Cast`/`Where`
  chains on shape vectors and masks). No op; its value is a constant of the program.
* alias: `Reshape`, `Squeeze`, `Unsqueeze`, `Flatten`, `Identity`, `Dropout`
  (inference), a `Cast` to the type its input has, and `Transpose` or
  `DequantizeLinear` of a weight (its layout is a compile-time choice; an int8
  weight is read as int8): no data moves, so the output *is* the input (a
  compiler emits no kernel for them; the built-in BERT keeps reshapes as copies
  to match EGRL's node count, a documented difference of the round trip). So is
  a `Pad` by zero rows, and a `Pad` with zeros of the spatial axes that only
  convolutions read: a compiler adds it to their own padding (onnxruntime's pad
  fusion, the dynamo exporter's optimizer) and the padded tensor never exists;
  and a `Concat` of one tensor, alone or with empty ones (a prefill joining its
  new keys and values to an empty cache), and a `Slice` that keeps every element
  in order (a crop to the size the tensor already has).
* folded: a node all of whose inputs are weights or compile-time values, at least one a
  weight (a weight standardization or weight norm, a static gather of position rows, an
  attention-mask table scattered from stored constants), unless its output is a graph
  output, its shape is unknown, or it holds more elements than the weights it reads (a
  broadcast stays an op: folded, it would be a larger weight live through the program).
  An inference compiler folds such nodes once, at compile time (onnxruntime's constant
  folding does), so they are no op: each output is a stored weight of its inferred size
  (or a compile-time value, by the rule for stored constants below), and a weight that
  only folded nodes read is no tensor of the program.
* op: everything else. Ops are grouped at a compiler's granularity: an op absorbs
  the elementwise tail that follows it (batch norm, activations, bias and scale by
  constants, the erf form of GELU, swish's Sigmoid+Mul diamond, softmax's
  IsNaN/Where guard) while that tail has a single exposed output; a convolution
  also absorbs one residual `Add` of an activation of its output's size, as the
  built-in CNN generators fuse it. A group sits in the schedule where its last
  node is stored, so the stored topological order is kept.

Stored constants (initializers and `Constant` nodes) are *weights* unless they are
integer or boolean tensors or single elements, which are compile-time values (a
float initializer an op reads is still emitted as a weight, see `importer`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import onnx
from onnx import TensorProto

from memplace.instances.onnx.errors import OnnxImportError
from memplace.instances.onnx.flops import ELEMENTWISE
from memplace.instances.onnx.shapes import Initializer

COMPILE_TIME_SOURCES = {"Shape", "Size"}
ALIASES = {"Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity", "Dropout"}
NEVER_FOLDED = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                "Multinomial", "Bernoulli"}
CONTROL_FLOW = {"If", "Loop", "Scan", "SequenceMap"}
# Inputs that are shape or axis parameters, never data an op moves.
PARAMETER_INPUTS: dict[str, set[int]] = {
    "Reshape": {1}, "Expand": {1}, "Slice": {1, 2, 3, 4}, "Pad": {1, 2, 3}, "Tile": {1},
    "Resize": {1, 2, 3}, "Upsample": {1}, "Squeeze": {1}, "Unsqueeze": {1}, "TopK": {1},
    "Split": {1}, "ConstantOfShape": {0}, "Range": {0, 1, 2}, "OneHot": {1, 2}, "Clip": {1, 2},
    "CumSum": {1}, "Trilu": {1}, "Dropout": {1, 2}, "CenterCropPad": {1},
    "QuantizeLinear": {1, 2}, "DequantizeLinear": {1, 2},
    **dict.fromkeys(("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                     "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"), {1}),
}
# Index inputs: when compile-time, the op is a static gather and the indices are no tensor.
INDEX_INPUTS: dict[str, int] = {"Gather": 1, "GatherElements": 1, "GatherND": 1,
                                "ScatterElements": 1, "ScatterND": 1}
COMPILE_TIME_TYPES = {TensorProto.INT64, TensorProto.INT32, TensorProto.INT16, TensorProto.UINT16,
                      TensorProto.UINT32, TensorProto.UINT64, TensorProto.BOOL, TensorProto.STRING}
TAIL = set(ELEMENTWISE) - {"Cast", "CastLike"}
RESIDUAL_ANCHORS = {"Conv"}
MAX_TAIL = 8


@dataclass
class Group:
    """One op of the instance: ONNX nodes fused together, at the position of the last."""

    nodes: list[int]
    outputs: list[str]  # exposed values, base names
    residual: bool = False

    @property
    def anchor(self) -> int:
        return self.nodes[0]


@dataclass
class Lowered:
    """The roles of a graph's nodes and values (see the module docstring).

    Node fields are copied out of the protobuf once (`op_types`, `inputs`, `outputs`),
    since protobuf access dominates the time of large graphs.
    """

    nodes: list[onnx.NodeProto]
    op_types: list[str]
    inputs: list[list[str]]
    outputs: list[list[str]]           # base values, empty names dropped
    base: dict[str, str]               # value -> the value it aliases (itself if none)
    compile_time: set[str]             # base values known at compile time
    weights: set[str]                  # base values that are stored weights
    graph_inputs: list[str]
    graph_outputs: set[str]            # base values
    elements: Callable[[str], int | None]  # elements of a value, None if its shape is unknown
    data_inputs: list[list[tuple[int, str]]]  # per node: (input position, base value) of data
    groups: list[Group] = field(default_factory=list)


def node_label(node: onnx.NodeProto, index: int) -> str:
    name = node.name or (node.output[0] if node.output else f"#{index}")
    return f"{name!r} ({node.op_type})"


def _stored_constant(node: onnx.NodeProto) -> tuple[int, int]:
    """(element type, elements) of a Constant node's value."""
    for a in node.attribute:
        if a.name in ("value", "sparse_value"):
            t = a.t if a.name == "value" else a.sparse_tensor.values
            dims = a.t.dims if a.name == "value" else a.sparse_tensor.dims
            return t.data_type, math.prod(int(d) for d in dims)
        if a.name in ("value_float", "value_int", "value_floats", "value_ints"):
            n = len(a.floats) + len(a.ints) if a.name.endswith("s") else 1
            return (TensorProto.FLOAT if "float" in a.name else TensorProto.INT64), n
        if a.name in ("value_string", "value_strings"):
            return TensorProto.STRING, 1
    raise OnnxImportError(f"node {node_label(node, 0)} has no value attribute")


def _is_weight(elem_type: int, elements: int) -> bool:
    return elem_type not in COMPILE_TIME_TYPES and elements > 1


def _foldable(outs: list[str], every: list[str], weights: set[str],
              elements: Callable[[str], int | None], output_names: set[str]) -> bool:
    """Whether a node computed from weights folds: its outputs are no graph outputs, have
    known shapes, and hold no more elements than the weights it reads (a broadcast or an
    expanding gather of a small table stays an op, or folding would store the expansion as
    a weight live through the whole program)."""
    sizes = [elements(o) for o in outs if o]
    read = [elements(v) for v in dict.fromkeys(every) if v in weights]
    if any(o in output_names for o in outs if o) or None in sizes or None in read:
        return False
    return sum(n or 0 for n in sizes) <= sum(n or 0 for n in read)


def _zero_padding(node: onnx.NodeProto, value: Callable[[str], np.ndarray | None]
                  ) -> list[tuple[int, int]] | None:
    """A constant `Pad` by zeros: its (begin, end) for each axis it names (every axis unless
    `axes` is given, non-negative axes only), or None for another mode or fill value, or
    when its pads are not known at compile time."""
    attrs = {a.name: a for a in node.attribute}
    if attrs.get("mode") is not None and attrs["mode"].s not in (b"", b"constant"):
        return None
    ins = list(node.input) + [""] * 3
    if "pads" in attrs:  # opset < 11: pads and value are attributes
        pads, fill, axes = list(attrs["pads"].ints), attrs["value"].f if "value" in attrs else 0.0, None
    else:
        pads = value(ins[1]) if ins[1] else None
        fill = value(ins[2]) if ins[2] else np.zeros(())
        axes = value(ins[3]) if ins[3] else None
        if pads is None or fill is None or (ins[3] and axes is None):
            return None
    pads = [int(p) for p in np.asarray(pads).ravel()]
    named = list(range(len(pads) // 2)) if axes is None else [int(a) for a in np.asarray(axes).ravel()]
    if np.any(np.asarray(fill) != 0) or len(pads) != 2 * len(named) or min(named, default=0) < 0:
        return None
    padding = [(0, 0)] * (max(named, default=-1) + 1)
    for j, axis in enumerate(named):
        padding[axis] = (pads[j], pads[j + len(named)])
    return padding


def _pad_moves_nothing(node: onnx.NodeProto, readers: list[tuple[onnx.NodeProto, int]],
                       is_output: bool, value: Callable[[str], np.ndarray | None]) -> bool:
    """Whether a `Pad` is no op: it pads by nothing, or by zeros on the spatial axes (2 on)
    and only convolutions read it, as their data, so each adds the padding to its own."""
    padding = _zero_padding(node, value)
    if padding is None:
        return False
    if all(p == (0, 0) for p in padding):
        return True
    spatial = all(b >= 0 and e >= 0 for b, e in padding) and all(p == (0, 0) for p in padding[:2])
    return spatial and not is_output and bool(readers) and all(
        r.op_type == "Conv" and position == 0
        and all(a.name != "auto_pad" or a.s in (b"", b"NOTSET") for a in r.attribute)
        for r, position in readers)


def _slice_takes_all(node: onnx.NodeProto, source: str, output: str,
                     elements: Callable[[str], int | None],
                     value: Callable[[str], np.ndarray | None]) -> bool:
    """Whether a `Slice` keeps every element of its input in order: as many elements out as
    in (a slice never grows an axis, so every axis is whole) and every step positive (a
    step of -1 over a whole axis reverses it). Its steps, where given, must be known."""
    size = elements(source)
    if not size or elements(output) != size:
        return False
    if len(node.input) < 5 or not node.input[4]:
        return True
    steps = value(node.input[4])
    return steps is not None and bool(np.all(np.asarray(steps) > 0))


def _filled_input(data: list[str], elements: Callable[[str], int | None]) -> str | None:
    """The one input of a concatenation that has one, or whose other inputs are empty."""
    sizes = [elements(v) for v in data]
    filled = [v for v, n in zip(data, sizes) if n != 0]
    return filled[0] if len(filled) == 1 and None not in sizes else None


def refuse_control_flow(graph: onnx.GraphProto) -> None:
    """Refuse the first node holding a subgraph (`If`, `Loop`, `Scan`, ...), by name. The
    importer asks before resolving shapes, which can take minutes on a large TorchScript
    export (MViT-v2-S's: 213 s) that would be refused anyway."""
    for i, node in enumerate(graph.node):
        if node.op_type in CONTROL_FLOW or any(
                a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute):
            hint = ("import one run of it with --sample-run SEED (the branches it takes)"
                    if node.op_type == "If" else "export the model with its loops unrolled")
            raise OnnxImportError(f"node {node_label(node, i)}: control flow (subgraphs) is "
                                  f"not supported; {hint}")


def _live_nodes(graph: onnx.GraphProto, inputs: list[list[str]],
                outputs: list[list[str]]) -> list[int]:
    """Indices of the nodes whose outputs reach a graph output, in stored order; checks that
    the stored order is topological (`refuse_control_flow` has refused subgraphs before)."""
    nodes = graph.node
    defined = {i.name for i in graph.input} | {i.name for i in graph.initializer}
    producer: dict[str, int] = {}
    for i, (ins, outs) in enumerate(zip(inputs, outputs)):
        for v in ins:
            if v and v not in defined and v not in producer:
                later = any(v in o for o in outputs[i + 1:])
                why = "before the node that produces it (the graph is not in topological order)" \
                    if later else "which no node, graph input or initializer defines"
                raise OnnxImportError(f"node {node_label(nodes[i], i)} reads {v!r} {why}")
        for v in outs:
            if v:
                if v in producer or v in defined:
                    raise OnnxImportError(f"node {node_label(nodes[i], i)} writes {v!r}, which "
                                          "is already defined")
                producer[v] = i
    live = [False] * len(nodes)
    stack = [producer[o.name] for o in graph.output if o.name in producer]
    while stack:
        i = stack.pop()
        if live[i]:
            continue
        live[i] = True
        stack.extend(producer[v] for v in inputs[i] if v in producer and not live[producer[v]])
    return [i for i in range(len(nodes)) if live[i]]


def classify(model: onnx.ModelProto, initializers: dict[str, Initializer],
             elements: Callable[[str], int | None],
             elem_type: Callable[[str], int | None] = lambda value: None,
             value: Callable[[str], np.ndarray | None] = lambda name: None) -> Lowered:
    """Roles of every live node and value, and the nodes grouped into ops. `value` gives
    a compile-time value by name (a `Pad`'s pads), None where it is not known."""
    graph = model.graph
    all_ops = [n.op_type for n in graph.node]
    all_ins = [list(n.input) for n in graph.node]
    all_outs = [list(n.output) for n in graph.node]
    live = _live_nodes(graph, all_ins, all_outs)
    nodes = [graph.node[i] for i in live]
    op_types = [all_ops[i] for i in live]
    node_inputs = [all_ins[i] for i in live]
    node_outputs = [all_outs[i] for i in live]
    base: dict[str, str] = {}
    compile_time: set[str] = set()
    weights: set[str] = set()
    for info in initializers.values():
        (weights if _is_weight(info.elem_type, info.elements) else compile_time).add(info.name)
    inputs = [i.name for i in graph.input if i.name not in initializers]
    output_names = {o.name for o in graph.output}
    readers: dict[str, list[tuple[onnx.NodeProto, int]]] = {}
    for node, ins in zip(nodes, node_inputs):
        for position, v in enumerate(ins):
            if v:
                readers.setdefault(v, []).append((node, position))
    roles: list[str] = []
    data_inputs: list[list[tuple[int, str]]] = []
    for i, (op, ins, outs) in enumerate(zip(op_types, node_inputs, node_outputs)):
        # inputs are produced before their readers, so their bases are final here
        skip = PARAMETER_INPUTS.get(op, ())
        data_inputs.append([(k, base.get(v, v)) for k, v in enumerate(ins) if v and k not in skip])
        data = [v for _, v in data_inputs[-1]]
        every = [base.get(v, v) for v in ins if v]
        if op == "Constant":
            stored_type, n = _stored_constant(nodes[i])
            (weights if _is_weight(stored_type, n) else compile_time).add(outs[0])
            roles.append("compile")
        elif op in COMPILE_TIME_SOURCES:
            compile_time.update(o for o in outs if o)
            roles.append("compile")
        elif op == "Concat" and (source := _filled_input(data, elements)) is not None \
                and source not in compile_time and source not in weights:
            # one tensor "joined" (a prefill's keys and values with an empty cache, which
            # the TorchScript exporter drops, leaving one input): nothing moves
            base[outs[0]] = source
            roles.append("alias")
        elif data and ((op in ALIASES and (op != "Dropout" or len(outs) < 2 or not outs[1]))
                       # a cast to the type it already has (tf2onnx writes them)
                       or (op in ("Cast", "CastLike") and elem_type(data[0]) is not None
                           and elem_type(data[0]) == elem_type(outs[0]))
                       # a weight's layout is chosen at compile time; a quantized weight is
                       # read as stored
                       or (op in ("Transpose", "DequantizeLinear") and data[0] in weights)
                       # of a tensor the program computes:
                       or (data[0] not in compile_time and data[0] not in weights and (
                           # padding a convolution's input: the convolution pads (see above)
                           (op == "Pad" and _pad_moves_nothing(nodes[i], readers.get(outs[0], []),
                                                               outs[0] in output_names, value))
                           # a slice of everything (GhostNet's `out[:, :oup]` where the
                           # concatenation has oup channels; the dynamo exporter drops it)
                           or (op == "Slice" and _slice_takes_all(nodes[i], data[0], outs[0],
                                                                  elements, value))))):
            base[outs[0]] = data[0]
            roles.append("alias")
        elif op not in NEVER_FOLDED and every and all(v in compile_time for v in every):
            compile_time.update(o for o in outs if o)
            roles.append("compile")
        elif op not in NEVER_FOLDED and every \
                and all(v in weights or v in compile_time for v in every) \
                and _foldable(outs, every, weights, elements, output_names):
            # computed from weights only (not all compile-time, the branch above, so one is
            # a weight: a weight standardization or norm, a static gather of position rows,
            # an attention mask table): folded at compile time, as an inference compiler's
            # constant folding does; its outputs are stored weights
            for o in outs:
                if o:
                    stored = _is_weight(elem_type(o) or TensorProto.FLOAT, elements(o) or 0)
                    (weights if stored else compile_time).add(o)
            roles.append("fold")
        else:
            roles.append("op")
    graph_outputs = {base.get(o.name, o.name) for o in graph.output}
    outputs = [[base.get(o, o) for o in outs if o] for outs in node_outputs]
    lowered = Lowered(nodes, op_types, node_inputs, outputs, base, compile_time, weights, inputs,
                      graph_outputs, elements, data_inputs)
    lowered.groups = fuse(lowered, roles)
    return lowered


def fuse(lowered: Lowered, roles: list[str]) -> list[Group]:
    """Group the op nodes (see the module docstring); groups in schedule order."""
    op_types, outputs = lowered.op_types, lowered.outputs
    constants = lowered.compile_time | lowered.weights
    graph_outputs = lowered.graph_outputs
    consumers: dict[str, list[int]] = {}
    for i, role in enumerate(roles):
        if role == "op":
            for _, v in lowered.data_inputs[i]:
                uses = consumers.setdefault(v, [])
                if not uses or uses[-1] != i:
                    uses.append(i)
    absorbed = [False] * len(roles)
    groups: list[Group] = []
    producer = {v: i for i, role in enumerate(roles) if role == "op" for v in outputs[i]}
    current_members: set[int] = set()

    def exposed(members: list[int], member_set: set[int]) -> list[str]:
        return [v for m in members for v in outputs[m]
                if v in graph_outputs or any(c not in member_set for c in consumers.get(v, ()))]

    def eligible(c: int, inside: set[str], group: Group) -> str | None:
        """'tail', 'residual' or None: can node c join a group whose values are `inside`?"""
        if roles[c] != "op" or absorbed[c] or op_types[c] not in TAIL or len(outputs[c]) != 1:
            return None
        outside = [v for _, v in lowered.data_inputs[c] if v not in inside and v not in constants]
        if not outside:
            return "tail"
        if (len(outside) == 1 and op_types[c] == "Add" and not group.residual
                and op_types[group.anchor] in RESIDUAL_ANCHORS
                and lowered.elements(outside[0]) == lowered.elements(outputs[c][0])
                and main_path(group.anchor, outside[0])):
            return "residual"
        return None

    def conv_of(value: str, depth: int = 4) -> int | None:
        """The Conv node whose output reaches `value` through tail ops only, if any."""
        node = producer.get(value)
        while node is not None and depth > 0:
            if op_types[node] in RESIDUAL_ANCHORS:
                return node
            if op_types[node] not in TAIL or not lowered.data_inputs[node]:
                return None
            node, depth = producer.get(lowered.data_inputs[node][0][1]), depth - 1
        return None

    def main_path(anchor: int, other_value: str) -> bool:
        """Whether a residual add of `other_value` belongs to this convolution rather than to
        the convolution producing `other_value` (a projection shortcut): the main path's conv
        has an input of its own, the projection shares the block's input; on a tie, the conv
        stored later takes it."""
        other = conv_of(other_value)
        if other is None or absorbed[other] and other not in current_members:
            return True

        def private(conv: int) -> bool:
            return len(consumers.get(lowered.data_inputs[conv][0][1], ())) == 1
        mine, theirs = private(anchor), private(other)
        return mine if mine != theirs else anchor > other

    def extend(group: Group, members: list[int], member_set: set[int]) -> tuple[list[int], bool]:
        """The smallest set of tail nodes after the group's output that closes on one exposed
        output, and whether it holds a residual add; ([], False) if there is none."""
        start = group.outputs[0]
        if start in graph_outputs:
            return [], False
        inside = {v for m in members for v in outputs[m]}
        tail: list[int] = []
        tail_set: set[int] = set()
        residual = False
        open_values = [start]
        for _ in range(MAX_TAIL):
            candidates = sorted({c for v in open_values for c in consumers.get(v, ())})
            candidates = [c for c in candidates if c not in member_set and c not in tail_set]
            progress = False
            for c in candidates:
                kind = eligible(c, inside, group)
                if kind == "residual":
                    if residual:
                        continue
                    residual = True
                if kind:
                    tail.append(c)
                    tail_set.add(c)
                    inside.update(outputs[c])
                    progress = True
            if not progress:
                return [], False
            open_values = exposed(members + tail, member_set | tail_set)
            if len(open_values) == 1 and open_values[0] in outputs[max(tail)]:
                return tail, residual
            if any(v in graph_outputs for v in open_values):
                return [], False
        return [], False

    for i, role in enumerate(roles):
        if role != "op" or absorbed[i]:
            continue
        absorbed[i] = True
        members, member_set = [i], {i}
        current_members = member_set
        group = Group(members, exposed(members, member_set))
        while len(group.outputs) == 1:
            tail, residual = extend(group, members, member_set)
            if not tail:
                break
            for c in tail:
                absorbed[c] = True
            members.extend(sorted(tail))
            member_set.update(tail)
            group.residual = group.residual or residual
            group.outputs = exposed(members, member_set)
        groups.append(group)
    groups.sort(key=lambda g: max(g.nodes))  # a group sits where its last node is stored
    return groups
