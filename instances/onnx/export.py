"""`to_onnx`: a built-in workload written as an ONNX graph, to check the importer against
the generators (the round trip).

The generators keep no shapes, only sizes and FLOPs, so shapes are recovered op by
op from what a workload dict does hold: the batch and sequence length of its
params, element counts, weight sizes and FLOPs (a convolution's fan-in is
`(flops - residual) / (2 * out)`, its kernel follows from the fan-in and the input
channels, its stride and padding from the output size). CNNs are written NCHW,
transformers as [batch, tokens, features]. Every ONNX value and node is named
after the generator's tensor and op, so the import can be compared name by name.

Written as the generators mean them: a convolution is `Conv` (+ `Add` of the
shortcut: its folded batch norm and activation cost the generators nothing), a
fully connected layer `Flatten` + `Gemm` (+ its activation), an attention head
split `Reshape` + `Transpose`. Floating tensors are float32 (import with
`dtype_bytes` = the workload's width to compare sizes); token ids int32. A
weight that the generator keeps as one tensor of weight and bias (fully
connected layers, layer norms, biased convolutions) becomes two initializers.
Initializers are zero-filled external data in `OUT.onnx.data`, written as a
sparse file (no disk blocks), so even BERT's tables cost nothing to write.
"""
from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper

from memplace.instances.onnx.errors import OnnxImportError
from memplace.model.core.files import atomic_write

OPSET = 20  # Gelu
ACTIVATIONS = {0.0: [], 1.0: ["Relu"], 4.0: ["Sigmoid"], 5.0: ["Sigmoid", "Mul"]}


def _square(n: float) -> int | None:
    r = int(round(math.sqrt(n))) if n > 0 else 0
    return r if r * r == n else None


class _Writer:
    def __init__(self, workload: dict[str, Any]):
        self.w = workload
        params = workload.get("params", {})
        self.batch = int(params.get("batch", 1))
        self.width = int(params.get("width", 1))
        self.tensors = workload["tensors"]
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.shapes: dict[str, tuple[int, ...]] = {}  # ONNX value -> shape
        self.value_of: dict[int, str] = {}            # generator tensor -> ONNX value
        self.reads: dict[int, list[tuple[int, int]]] = {}
        self.outs: dict[int, list[int]] = {}  # op -> the generator tensors it writes
        for t, tensor in enumerate(self.tensors):
            self.outs.setdefault(tensor["producer"], []).append(t)
            for k, nbytes in tensor["accesses"]:
                if tensor["producer"] != k:
                    self.reads.setdefault(k, []).append((t, nbytes))
        self.heads = self._heads()

    # ------------------------------------------------------------ helpers
    def elements(self, t: int, element_bytes: int | None = None) -> int:
        return self.tensors[t]["size"] // (element_bytes or self.width)

    def node(self, op: str, inputs: list[str], output: str, name: str,
             shape: tuple[int, ...], **attrs: Any) -> str:
        self.nodes.append(helper.make_node(op, inputs, [output], name=name, **attrs))
        self.shapes[output] = shape
        return output

    def weight(self, name: str, shape: tuple[int, ...], dtype: int = TensorProto.FLOAT) -> str:
        if name in self.shapes:  # shared by several ops (a tied table, GPT-2's causal mask)
            return name
        tensor = onnx.TensorProto(name=name, data_type=dtype, dims=list(shape))
        self.initializers.append(tensor)  # values attached by save_onnx, as external zeros
        self.shapes[name] = shape
        return name

    def constant(self, name: str, values: list[int] | float) -> str:
        if isinstance(values, float):
            tensor = helper.make_tensor(name, TensorProto.FLOAT, [], [values])
        else:
            tensor = helper.make_tensor(name, TensorProto.INT64, [len(values)], values)
        self.nodes.append(helper.make_node("Constant", [], [name], name=name, value=tensor))
        return name

    def activation(self, t: int) -> str:
        if t in self.value_of:
            return self.value_of[t]
        tensor = self.tensors[t]
        if tensor["producer"] is not None or tensor["kind"] != "activation":
            raise OnnxImportError(f"tensor {tensor['name']!r} is read before it is written")
        name = tensor["name"]  # a graph input
        if name == "image":
            per_image = self.elements(t) // self.batch
            for c in (3, 1):
                side = _square(per_image / c)
                if side:
                    shape, dtype = (self.batch, c, side, side), TensorProto.FLOAT
                    break
            else:
                raise OnnxImportError(f"input {name!r}: not a square image of 1 or 3 channels")
        else:  # token ids and masks: int32 [batch, tokens]
            shape, dtype = (self.batch, self.elements(t, 4) // self.batch), TensorProto.INT32
        self.inputs.append(helper.make_tensor_value_info(name, dtype, shape))
        self.shapes[name] = shape
        self.value_of[t] = name
        return name

    def _heads(self) -> tuple[int, int, int] | None:
        """(tokens, heads, head width) from the first attention: scores out = B*H*S*S with
        2*d flops each, context out = B*S*H*d."""
        ops = self.w["ops"]
        for k, op in enumerate(ops):
            if op["name"].endswith(".scores"):
                out = self.elements(self.outs[k][0])
                d = int(round(op["flops"] / (2 * out)))
                ctx = next(j for j in range(k + 1, len(ops)) if ops[j]["name"].endswith(".context"))
                s = d * out // self.elements(self.outs[ctx][0])
                return s, out // (self.batch * s * s), d
        return None

    # ------------------------------------------------------------ ops
    def write(self) -> onnx.ModelProto:
        for k, op in enumerate(self.w["ops"]):
            outs = self.outs.get(k, [])
            reads = self.reads.get(k, [])
            acts = [(t, b) for t, b in reads if self.tensors[t]["kind"] == "activation"]
            weights = [(t, b) for t, b in reads if self.tensors[t]["kind"] == "weight"]
            handler = getattr(self, f"_{op['type']}", None)
            if handler is None:
                raise OnnxImportError(f"op {op['name']!r}: type {op['type']!r} cannot be written "
                                      "as ONNX")
            try:
                handler(op, acts, weights, outs)
            except OnnxImportError:
                raise
            except (ArithmeticError, LookupError, ValueError, TypeError, StopIteration):
                raise OnnxImportError(
                    f"op {op['name']!r} ({op['type']}) of {self.w['name']!r}: its shapes cannot be "
                    "recovered (the catalog's CNNs and transformers can be written, synthetic "
                    "DAGs cannot)") from None
        outputs_read = {t for reads in self.reads.values() for t, _ in reads}
        produced = [t for t, tensor in enumerate(self.tensors) if tensor["producer"] is not None]
        finals = [t for t in produced if t not in outputs_read]
        graph_outputs = [helper.make_tensor_value_info(self.value_of[t], TensorProto.FLOAT,
                                                       self.shapes[self.value_of[t]]) for t in finals]
        graph = helper.make_graph(self.nodes, self.w["name"], self.inputs, graph_outputs,
                                  initializer=self.initializers)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                 producer_name="memplace.instances.onnx.to_onnx")

    def _emit(self, outs: list[int], value: str) -> None:
        self.value_of[outs[0]] = value

    def _result(self, op, outs: list[int], onnx_op: str, inputs: list[str], shape: tuple[int, ...],
                **attrs: Any) -> None:
        """The node `op` is written as when one node does it: named after the op, its output
        after the generator's output tensor."""
        self._emit(outs, self.node(onnx_op, inputs, self.tensors[outs[0]]["name"], op["name"], shape,
                                   **attrs))

    # CNN -----------------------------------------------------------------
    def _window(self, h_in: int, k: int, h_out: int) -> tuple[int, int]:
        for pad, stride in ((k // 2, 1), (k // 2, 2), (0, 1), (0, 2), (0, k)):
            if (h_in + 2 * pad - k) // stride + 1 == h_out:
                return pad, stride
        raise OnnxImportError(f"no padding and stride turn {h_in} into {h_out} with kernel {k}")

    def _conv(self, op, acts, weights, outs, depthwise: bool = False):
        out_bytes = self.tensors[outs[0]]["size"]
        # the shortcut of a fused residual add has the output's size, the input does not
        acts = sorted(acts, key=lambda a: self.tensors[a[0]]["size"] == out_bytes)
        x = self.activation(acts[0][0])
        n, cin, h, _ = self.shapes[x]
        out = self.elements(outs[0])
        residual = len(acts) > 1
        fan_in = int(round((op["flops"] - (out if residual else 0)) / (2 * out)))
        w_elements = self.elements(weights[0][0])
        groups = cin if depthwise else 1
        k = _square(fan_in * groups / cin)
        for bias in (False, True):
            per_out = fan_in + (1 if bias else 0)
            cout = w_elements // per_out
            side = _square(out / (n * cout)) if cout and w_elements % per_out == 0 else None
            if side:
                break
        else:
            raise OnnxImportError(f"op {op['name']!r}: no convolution has these sizes")
        if k is None:
            raise OnnxImportError(f"op {op['name']!r}: fan-in {fan_in} is not a square kernel")
        pad, stride = self._window(h, k, side)
        inputs = [x, self.weight(f"{op['name']}.weight", (cout, cin // groups, k, k))]
        if bias:
            inputs.append(self.weight(f"{op['name']}.bias", (cout,)))
        shape = (n, cout, side, side)
        name = f"{op['name']}.conv" if residual else self.tensors[outs[0]]["name"]
        y = self.node("Conv", inputs, name, op["name"], shape, kernel_shape=[k, k],
                      strides=[stride, stride], pads=[pad] * 4, group=groups)
        if residual:
            y = self.node("Add", [y, self.activation(acts[1][0])], self.tensors[outs[0]]["name"],
                          f"{op['name']}.residual", shape)
        self._emit(outs, y)

    _depthwise_conv = functools.partialmethod(_conv, depthwise=True)

    def _pool(self, op, acts, weights, outs):
        x = self.activation(acts[0][0])
        n, c, h, w = self.shapes[x]
        out = self.elements(outs[0])
        if out == n * c and op["flops"] == n * c * h * w:
            self._result(op, outs, "GlobalAveragePool", [x], (n, c, 1, 1))
        else:
            k = _square(op["flops"] / out)
            side = _square(out / (n * c))
            pad, stride = self._window(h, k, side)
            self._result(op, outs, "MaxPool", [x], (n, c, side, side), kernel_shape=[k, k],
                         strides=[stride, stride], pads=[pad] * 4)

    def _fc(self, op, acts, weights, outs):
        x = self.activation(acts[0][0])
        n = self.batch
        fan_in = math.prod(self.shapes[x]) // n
        units = self.elements(outs[0]) // n
        flat = self.node("Flatten", [x], f"{op['name']}.flatten", f"{op['name']}.flatten",
                         (n, fan_in), axis=1)
        extra = (op["flops"] - 2.0 * n * units * fan_in) / (n * units)
        if extra not in ACTIVATIONS:
            raise OnnxImportError(f"op {op['name']!r}: no activation costs {extra} flops")
        activation = ACTIVATIONS[extra]
        name = self.tensors[outs[0]]["name"]
        gemm_out = f"{op['name']}.gemm" if activation else name
        y = self.node("Gemm", [flat, self.weight(f"{op['name']}.weight", (units, fan_in)),
                               self.weight(f"{op['name']}.bias", (units,))], gemm_out, op["name"],
                      (n, units), transB=1)
        if activation == ["Relu"] or activation == ["Sigmoid"]:
            y = self.node(activation[0], [y], name, f"{op['name']}.act", (n, units))
        elif activation:
            s = self.node("Sigmoid", [y], f"{op['name']}.sigmoid", f"{op['name']}.sigmoid", (n, units))
            y = self.node("Mul", [y, s], name, f"{op['name']}.swish", (n, units))
        self._emit(outs, y)

    # elementwise and transformer ops ---------------------------------------
    def _mul(self, op, acts, weights, outs):
        name = self.tensors[outs[0]]["name"]
        x = self.activation(acts[0][0])
        if len(acts) == 2:  # squeeze-excite channel scale
            s = self.activation(acts[1][0])
            n, c = self.shapes[x][:2]
            s4 = self.node("Reshape", [s, self.constant(f"{op['name']}.shape", [n, c, 1, 1])],
                           f"{op['name']}.s4", f"{op['name']}.reshape", (n, c, 1, 1))
            self._result(op, outs, "Mul", [x, s4], self.shapes[x])
        elif self.shapes[x] and len(self.shapes[x]) == 2 and self.tensors[acts[0][0]]["producer"] is None:
            # the extended attention mask: (1 - mask) * -10000 on int32 ids, as floats
            f = self.node("Cast", [x], f"{op['name']}.float", op["name"], self.shapes[x],
                          to=TensorProto.FLOAT)
            self._emit(outs, self.node("Mul", [f, self.constant(f"{op['name']}.factor", -10000.0)], name,
                                       f"{op['name']}.scale", self.shapes[x]))
        else:  # attention scale by a constant
            self._result(op, outs, "Mul", [x, self.constant(f"{op['name']}.factor", 0.125)], self.shapes[x])

    def _add(self, op, acts, weights, outs):
        inputs = sorted((self.activation(t) for t, _ in acts),
                        key=lambda v: (-math.prod(self.shapes[v]), -len(self.shapes[v])))
        shape = self.shapes[inputs[0]]
        cols = shape[-1]
        for t, _ in weights:  # a bias, or a position embedding table
            rows = self.elements(t) // cols
            inputs.append(self.weight(self.tensors[t]["name"], (cols,) if rows == 1 else (rows, cols)))
        if len(inputs) == 2 and len(self.shapes[inputs[1]]) == 2 and len(shape) == 4:
            b = self.shapes[inputs[1]][0]  # the attention mask [B, S] onto scores [B, H, S, S]
            inputs[1] = self.node("Reshape", [inputs[1], self.constant(
                f"{op['name']}.shape", [b, 1, 1, -1])], f"{op['name']}.mask4",
                f"{op['name']}.reshape", (b, 1, 1, self.shapes[inputs[1]][1]))
        self._result(op, outs, "Add", inputs, shape)

    def _gather(self, op, acts, weights, outs):
        table_t = weights[0][0]
        if acts:
            ids = self.activation(acts[0][0])
            rows_shape = self.shapes[ids]
        else:  # positions 0..S-1
            s = self.heads[0]
            rows_shape = (s,)
            ids = self.constant(f"{op['name']}.positions", list(range(s)))
        d = self.elements(outs[0]) // math.prod(rows_shape)
        table = self.weight(self.tensors[table_t]["name"], (self.elements(table_t) // d, d))
        self._result(op, outs, "Gather", [table, ids], rows_shape + (d,))

    def _layernorm(self, op, acts, weights, outs):
        x = self.activation(acts[0][0])
        d = self.shapes[x][-1]
        self._result(op, outs, "LayerNormalization", [x, self.weight(f"{op['name']}.weight", (d,)),
                                                       self.weight(f"{op['name']}.bias", (d,))],
                     self.shapes[x], axis=-1)

    def _matmul(self, op, acts, weights, outs):
        name = self.tensors[outs[0]]["name"]
        if len(acts) == 2:  # activation x activation (attention): q @ k^T, probs @ v
            first, second = sorted(acts, key=lambda read: (
                ".k.transpose" in self.tensors[read[0]]["name"] or ".v.transpose" in
                self.tensors[read[0]]["name"]))
            a, b = self.activation(first[0]), self.activation(second[0])
            shape = self.shapes[a][:-1] + self.shapes[b][-1:]
            self._result(op, outs, "MatMul", [a, b], shape)
            return
        a = self.activation(acts[0][0])
        k = self.shapes[a][-1]
        wt = weights[0][0]
        n = self.elements(outs[0]) // (math.prod(self.shapes[a]) // k)
        shape = self.shapes[a][:-1] + (n,)
        if self.tensors[wt]["name"] != f"{op['name']}.weight":  # a tied table [n, k]
            table = self.weight(self.tensors[wt]["name"], (n, k))
            tt = self.node("Transpose", [table], f"{op['name']}.table_t", f"{op['name']}.table_t",
                           (k, n), perm=[1, 0])
            self._result(op, outs, "MatMul", [a, tt], shape)
        elif self.elements(wt) == k * n:
            w = self.weight(f"{op['name']}.weight", (k, n))
            self._result(op, outs, "MatMul", [a, w], shape)
        else:  # bias folded into the GEMM: Gemm on rows
            rows = math.prod(self.shapes[a]) // k
            a2 = self.node("Reshape", [a, self.constant(f"{op['name']}.rows", [rows, k])],
                           f"{op['name']}.in2d", f"{op['name']}.in2d", (rows, k))
            g = self.node("Gemm", [a2, self.weight(f"{op['name']}.weight", (k, n)),
                                   self.weight(f"{op['name']}.bias", (n,))], f"{op['name']}.gemm",
                          op["name"], (rows, n))
            self._emit(outs, self.node("Reshape", [g, self.constant(f"{op['name']}.back", list(shape))],
                                       name, f"{op['name']}.out3d", shape))

    def _reshape(self, op, acts, weights, outs):
        x = self.activation(acts[0][0])
        shape = self.shapes[x]
        if len(shape) == 4 and self.tensors[acts[0][0]]["name"].endswith(".out") and \
                self.w["ops"][self.tensors[acts[0][0]]["producer"]]["type"] == "conv":
            # patches: [B, D, h, w] -> [B, D, h*w] -> [B, h*w, D]
            n, c, hh, ww = shape
            flat = self.node("Reshape", [x, self.constant(f"{op['name']}.shape", [n, c, hh * ww])],
                             f"{op['name']}.flat", f"{op['name']}.reshape", (n, c, hh * ww))
            self._result(op, outs, "Transpose", [flat], (n, hh * ww, c), perm=[0, 2, 1])
            return
        s, h, d = self.heads
        target = shape[:2] + (h, d) if len(shape) == 3 else shape[:2] + (h * d,)
        self._result(op, outs, "Reshape", [x, self.constant(f"{op['name']}.shape", list(target))],
                     target)

    def _transpose(self, op, acts, weights, outs):
        x = self.activation(acts[0][0])
        keys = self.tensors[outs[0]]["name"].endswith(".k.transpose.out")  # [B, H, d, S]
        perm = [0, 2, 3, 1] if keys else [0, 2, 1, 3]
        shape = tuple(self.shapes[x][p] for p in perm)
        self._result(op, outs, "Transpose", [x], shape, perm=perm)

    def _unary(self, op, acts, weights, outs, onnx_op: str, **attrs):
        x = self.activation(acts[0][0])
        self._result(op, outs, onnx_op, [x], self.shapes[x], **attrs)

    _softmax = functools.partialmethod(_unary, onnx_op="Softmax", axis=-1)
    _gelu = functools.partialmethod(_unary, onnx_op="Gelu")
    _tanh = functools.partialmethod(_unary, onnx_op="Tanh")

    def _slice(self, op, acts, weights, outs):
        x = self.activation(acts[0][0])
        b, s, d = self.shapes[x]
        starts, ends = ([0], [1]) if op["name"] != "last_token" else ([s - 1], [s])
        self._result(op, outs, "Slice", [x, self.constant(f"{op['name']}.starts", starts),
                                         self.constant(f"{op['name']}.ends", ends),
                                         self.constant(f"{op['name']}.axes", [1])], (b, 1, d))

    def _split(self, op, acts, weights, outs):
        x = self.activation(acts[0][0])
        shape = self.shapes[x]
        part = shape[-1] // len(outs)
        names = [self.tensors[t]["name"] for t in outs]
        self.nodes.append(helper.make_node(
            "Split", [x, self.constant(f"{op['name']}.sizes", [part] * len(outs))], names,
            name=op["name"], axis=-1))
        for t, name in zip(outs, names):
            self.shapes[name] = shape[:-1] + (part,)
            self.value_of[t] = name

    def _where(self, op, acts, weights, outs):
        x = self.activation(acts[0][0])
        mask_t = weights[0][0]
        s = _square(self.tensors[mask_t]["size"])
        mask = self.weight(self.tensors[mask_t]["name"], (s, s), TensorProto.BOOL)
        self._result(op, outs, "Where", [mask, x, self.constant(f"{op['name']}.fill", -1e9)],
                     self.shapes[x])

    def _concat(self, op, acts, weights, outs):
        if weights:  # ViT's class token before the patches
            x = self.activation(acts[0][0])
            n, p, d = self.shapes[x]
            if n != 1:
                raise OnnxImportError(f"op {op['name']!r}: the class token is written for batch 1 only")
            cls = self.weight(self.tensors[weights[0][0]]["name"], (1, 1, d))
            self._result(op, outs, "Concat", [cls, x], (n, p + 1, d), axis=1)
            return
        (skip_t, crop_bytes), (x_t, _) = acts
        skip, x = self.activation(skip_t), self.activation(x_t)
        n, c, h, _ = self.shapes[skip]
        _, cx, hx, _ = self.shapes[x]
        off = (h - hx) // 2
        cropped = self.node("Slice", [skip, self.constant(f"{op['name']}.starts", [off, off]),
                                      self.constant(f"{op['name']}.ends", [off + hx, off + hx]),
                                      self.constant(f"{op['name']}.axes", [2, 3])],
                            f"{op['name']}.crop", f"{op['name']}.crop", (n, c, hx, hx))
        self._result(op, outs, "Concat", [cropped, x], (n, c + cx, hx, hx), axis=1)

    def _upsample(self, op, acts, weights, outs):
        x = self.activation(acts[0][0])
        n, cin, h, w = self.shapes[x]
        cout = self.elements(outs[0]) // (n * 4 * h * w)
        self._result(op, outs, "ConvTranspose", [x, self.weight(f"{op['name']}.weight", (cin, cout, 2, 2)),
                                                  self.weight(f"{op['name']}.bias", (cout,))],
                     (n, cout, 2 * h, 2 * w), kernel_shape=[2, 2], strides=[2, 2])


def to_onnx(workload: dict[str, Any]) -> tuple[onnx.ModelProto, int]:
    """The ONNX graph of a built-in `workload` dict and the bytes of its (zero) weights.

    Raises `OnnxImportError` naming the first op whose type or sizes cannot be written."""
    model = _Writer(workload).write()
    return model, sum(_nbytes(t) for t in model.graph.initializer)


def _nbytes(tensor: TensorProto) -> int:
    """Bytes of an initializer's values: its elements times its data type's size (a BOOL
    mask takes one byte per element; onnxruntime refuses external data of another length)."""
    itemsize = helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
    return int(np.prod(tensor.dims, dtype=np.int64)) * itemsize


def save_onnx(workload: dict[str, Any], path: str | Path) -> Path:
    """Write `workload` as `path` (ONNX) with its zero weights as external data in
    `path.data`, a sparse file; returns the data file's path."""
    path = Path(path)
    model, _ = to_onnx(workload)
    data = path.with_name(path.name + ".data")
    offset = 0
    for tensor in model.graph.initializer:
        length = _nbytes(tensor)
        tensor.data_location = TensorProto.EXTERNAL
        for key, value in (("location", data.name), ("offset", str(offset)), ("length", str(length))):
            tensor.external_data.add(key=key, value=value)
        offset += length
    with atomic_write(data, "external data", binary=True) as handle:
        handle.truncate(offset)  # zeros, without writing a block
    onnx.save(model, str(path))
    return data
