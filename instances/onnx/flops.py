"""FLOPs of one ONNX node from its static shapes, in the built-in generators' conventions.

2 flops per multiply-accumulate for products and convolutions (a bias folded into
the accumulator is free, as in `memplace.instances.cnn`); elementwise ops cost a
small constant per output element (`ELEMENTWISE`), the same constants as
`memplace.instances.graph.ELEMENTWISE_FLOPS` where both name an op (softmax 5,
layer norm 8, GELU 8, its erf decomposition Div+Erf+Add+Mul+Mul = 1+4+1+1+1 = 8,
swish Sigmoid+Mul = 4+1 = 5); pooling one flop per window element and output
element (global pooling and reductions: one per input element); data movement
(transpose, gather, slice, concat, pad, ...) 0; `Col2Im` one addition per block element;
`DFT` 5 N log2 N per complex transform of length N (FFTW's count), half for a real one.
Random generators (`RandomUniformLike`, ... : ViT-MAE's masking noise, Reformer's hashing
rotations, Informer's sampled keys) one per value drawn, `Bernoulli` two (a draw and a
compare); torch's FLOP counter counts none, the work being integer arithmetic.
Recurrent layers (`RNN`, `GRU`, `LSTM`) count their two products per step, gate and
direction and their default activations and gate arithmetic per hidden unit (`RECURRENT`).
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import onnx
from onnx import helper

Shape = tuple[int, ...]

ELEMENTWISE: dict[str, float] = {
    **dict.fromkeys(("Add", "Sub", "Mul", "Div", "Neg", "Abs", "Relu", "LeakyRelu", "PRelu", "Clip",
                     "Max", "Min", "Mean", "Sum", "Where", "Equal", "Greater", "Less", "GreaterOrEqual",
                     "LessOrEqual", "And", "Or", "Xor", "Not", "Sign", "Floor", "Ceil", "Round", "Mod",
                     "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot", "IsNaN", "IsInf",
                     "ThresholdedRelu", "Reciprocal", "Sqrt", "Pow", "Shrink"), 1.0),
    **dict.fromkeys(("Sigmoid", "Tanh", "Exp", "Log", "Erf", "Sin", "Cos", "Tan", "Asin", "Acos",
                     "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Softplus", "Elu", "Selu",
                     "Celu"), 4.0),
    "HardSigmoid": 2.0, "Softsign": 2.0, "HardSwish": 3.0, "Swish": 5.0, "Mish": 6.0, "Gelu": 8.0,
    "FastGelu": 8.0, "BiasGelu": 9.0, "QuickGelu": 5.0,  # onnxruntime contrib ops
    "QuantizeLinear": 1.0, "DequantizeLinear": 1.0,
    "BatchNormalization": 2.0,  # scale and shift per element (not folded: the file keeps it)
    **dict.fromkeys(("Cast", "CastLike"), 0.0),
    **dict.fromkeys(("RandomUniform", "RandomNormal", "RandomUniformLike", "RandomNormalLike"), 1.0),
    "Bernoulli": 2.0,
}
NORMALIZATION: dict[str, float] = dict.fromkeys(
    ("LayerNormalization", "InstanceNormalization", "GroupNormalization", "LpNormalization",
     "MeanVarianceNormalization", "RMSNormalization", "SimplifiedLayerNormalization",
     "SkipLayerNormalization", "LRN"), 8.0)
SOFTMAX = ("Softmax", "LogSoftmax", "Hardmax")
REDUCTIONS = ("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
              "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin",
              "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool", "CumSum")
WINDOW_POOLS = ("MaxPool", "AveragePool", "LpPool")
DATA_MOVEMENT = ("Transpose", "Concat", "Slice", "Split", "Gather", "GatherElements", "GatherND",
                 "Pad", "Tile", "Expand", "ScatterND", "ScatterElements", "Scatter", "DepthToSpace",
                 "SpaceToDepth", "Resize", "Upsample", "Compress", "ReverseSequence", "Trilu",
                 "OneHot", "NonZero", "Unique", "CenterCropPad", "SplitToSequence",
                 "MaxRoiPool", "RoiAlign", "GridSample", "TopK", "EyeLike")


def _prod(shape: Sequence[int]) -> int:
    return math.prod(int(d) for d in shape)


def _attr(node: onnx.NodeProto, name: str, default):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _conv(node, ins, outs) -> float:
    # W: [cout, cin/group, k...]; each output element is a dot product of cin/group*prod(k).
    return 2.0 * _prod(outs[0]) * _prod(ins[1][1:])


def _conv_transpose(node, ins, outs) -> float:
    # W: [cin, cout/group, k...]; each input element scatters into cout/group*prod(k) outputs.
    return 2.0 * _prod(ins[0]) * _prod(ins[1][1:])


def _matmul(node, ins, outs) -> float:
    a = ins[0]
    return 2.0 * _prod(outs[0]) * (a[-1] if a else 1)


def _gemm(node, ins, outs) -> float:
    a = ins[0]
    k = a[0] if _attr(node, "transA", 0) else a[-1]
    return 2.0 * _prod(outs[0]) * k


def _einsum(node, ins, outs) -> float:
    equation = _attr(node, "equation", b"")
    equation = equation.decode() if isinstance(equation, bytes) else equation
    operands = equation.replace(" ", "").split("->")[0].split(",")
    sizes: dict[str, int] = {}
    batch = 1
    for term, shape in zip(operands, ins):
        letters = term.replace("...", "")
        explicit = shape[len(shape) - len(letters):] if "..." in term else shape
        for letter, size in zip(letters, explicit):
            sizes[letter] = max(sizes.get(letter, 1), int(size))
        if "..." in term:
            batch = max(batch, _prod(shape[:len(shape) - len(letters)]))
    product = batch * _prod(sizes.values())
    return (2.0 if len(ins) > 1 else 1.0) * product


def _attention(node, ins, outs) -> float:
    """ONNX's fused `Attention` (opset 23; what the dynamo exporter writes for
    scaled_dot_product_attention at opset >= 23): Q.K^T, softmax, then .V, over every key
    of K and of the cache `past_key` (input 4) it extends. Q and K are 4-D [batch, heads,
    tokens, head size] or 3-D [batch, tokens, heads x head size] (`q_num_heads`)."""
    q, k = ins[0], ins[1]
    past = ins[4] if len(ins) > 4 else ()
    keys = (k[-2] if len(k) == 4 else k[1]) + (past[-2] if len(past) == 4 else 0)
    head = q[-1] if len(q) == 4 else q[-1] // max(1, int(_attr(node, "q_num_heads", 1)))
    scores = _prod(q) // max(1, head) * keys
    return 2.0 * _prod(q) * keys + 5.0 * scores + 2.0 * _prod(outs[0]) * keys


def _dft(node, ins, outs) -> float:
    """A fast Fourier transform along `axis` of every 1-D signal of the input [..., 1 or 2]
    (real or complex), in FFTW's convention: 5 N log2 N flops for a complex transform of
    length N, half that for a real one. The axis is the attribute (opsets 17-19); opset
    20's axis input is not read here and its default (-2) is taken: the axis moves only the
    log factor (the signal count times N is every element either way)."""
    x = ins[0]
    axis = int(_attr(node, "axis", -2))
    n = max(2, int(x[axis if axis >= 0 else len(x) + axis]))
    per_element = (5.0 if x[-1] == 2 else 2.5) * math.log2(n)
    return per_element * _prod(x[:-1])


# ONNX's recurrent ops (4, 3 and 1 gates: W's rows are gates x hidden): per hidden unit and
# step, the flops of their default activations (Sigmoid and Tanh 4 each, as ELEMENTWISE)
# plus the gate arithmetic: LSTM: sigmoid i, f, o, tanh g and tanh(c) = 20, c = f*c + i*g
# and h = o*tanh(c) = 4; GRU: sigmoid z, r, tanh h~ = 12, r*(Rh), (1 - z)*h~ + z*h = 5;
# RNN: tanh = 4.
RECURRENT: dict[str, float] = {"LSTM": 24.0, "GRU": 17.0, "RNN": 4.0}


def _recurrent(node, ins, outs) -> float:
    """X [seq, batch, input] (`layout` 1: [batch, seq, input]), W [directions, G*hidden,
    input], R [directions, G*hidden, hidden]: every step of every direction multiplies the
    input by W and the previous hidden state by R (biases folded into the accumulators are
    free, as for Conv), then applies the gates (`RECURRENT`)."""
    x, w, r = ins[0], ins[1], ins[2]
    steps, batch = (x[1], x[0]) if _attr(node, "layout", 0) else (x[0], x[1])
    directions, gated, width = w
    hidden = r[-1]
    per_unit = RECURRENT[node.op_type]
    return float(steps * batch * directions * (2 * gated * (width + hidden) + per_unit * hidden))


def _window_pool(node, ins, outs) -> float:
    return float(_prod(outs[0]) * _prod(_attr(node, "kernel_shape", [1])))


FORMULAS: dict[str, Callable[[onnx.NodeProto, list[Shape], list[Shape]], float]] = {
    "Conv": _conv, "ConvInteger": _conv, "QLinearConv": lambda n, i, o: _conv(n, [i[0], i[3]], o),
    "ConvTranspose": _conv_transpose, "Attention": _attention, "DFT": _dft,
    **dict.fromkeys(RECURRENT, _recurrent),
    # x * cos + rotate(x) * sin per element of the rotated part (opset 23)
    "RotaryEmbedding": lambda n, i, o: 3.0 * _prod(o[0]),
    # fold (torch.nn.Fold, VOLO's outlook attention): every block element of the input
    # [N, C x block, L] is added into the image where the blocks overlap
    "Col2Im": lambda n, i, o: float(_prod(i[0])), "MatMul": _matmul, "MatMulInteger": _matmul,
    "QLinearMatMul": lambda n, i, o: _matmul(n, [i[0]], o), "Gemm": _gemm, "Einsum": _einsum,
    **dict.fromkeys(WINDOW_POOLS, _window_pool),
    **{op: (lambda n, i, o: float(_prod(i[0]))) for op in REDUCTIONS},
    **{op: (lambda n, i, o, f=f: f * _prod(o[0])) for op, f in {**ELEMENTWISE, **NORMALIZATION}.items()},
    **{op: (lambda n, i, o: 5.0 * _prod(o[0])) for op in SOFTMAX},
    **{op: (lambda n, i, o: 0.0) for op in DATA_MOVEMENT},
}


def node_flops(node: onnx.NodeProto, inputs: list[Shape], outputs: list[Shape]) -> float | None:
    """FLOPs of `node` with these input and output shapes; None for an op type not known here."""
    formula = FORMULAS.get(node.op_type)
    return None if formula is None else float(formula(node, inputs, outputs))


def conservative_flops(outputs: list[Shape]) -> float:
    """The documented default for an op type this module does not know: one flop per output
    element (it reads its inputs and writes its outputs like any op)."""
    return float(sum(_prod(s) for s in outputs))
