"""ONNX import of what the zoo's unseen architectures brought (docs/zoo.md, "Unseen
architectures"): opset-23 fused attention and rotary embeddings counted by formula, and
an empty dimension (a decode step's empty key/value cache) accepted as the fixed size it is;
from the second round, recurrent layers (LSTM, GRU, RNN) counted by formula; from the third,
nodes computed from weights only (NF-ResNet's weight standardization, wav2vec2's weight norm)
folded at compile time; from the fourth, an invalid node named as ONNX's inference names it,
and control flow refused before shapes are resolved; from the seventh, Fourier transforms
(`DFT`) counted by formula; from the twelfth, random generators counted by formula; from
the thirteenth, shape arithmetic computed before onnxruntime's slow symbolic inference, and a
convolution's zero padding (or a padding by nothing) no op of its own; from the fourteenth, a
slice of everything in order no op."""
from __future__ import annotations

import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from memplace.instances import from_onnx
from memplace.instances.onnx import OnnxImportWarning
from memplace.instances.onnx.errors import OnnxImportError
from memplace.model import Instance

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def _model(nodes, inputs, outputs, initializers=(), opset=23):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def _import(model):
    with warnings.catch_warnings():
        warnings.simplefilter("error", OnnxImportWarning)  # a formula, never the default
        return from_onnx(model, "nnpi", name="m")


def test_fused_attention_counts_both_products_and_the_softmax_over_cache_and_new_keys():
    # Q [1,4,3,16] (4 heads, 3 tokens), K/V [1,2,5,16] (2 kv heads, 5 new keys), a cache of
    # 7 keys: every query scores 12 keys. QK: 2*192*12, softmax 5*(4*3)*12, PV: 2*192*12.
    q, k = [1, 4, 3, 16], [1, 2, 5, 16]
    node = helper.make_node("Attention", ["q", "k", "v", "", "pk", "pv"], ["y", "ok", "ov"],
                            name="attn")
    model = _model([node], [_vi("q", F, q), _vi("k", F, k), _vi("v", F, k),
                            _vi("pk", F, [1, 2, 7, 16]), _vi("pv", F, [1, 2, 7, 16])],
                   [_vi("y", F, None), _vi("ok", F, None), _vi("ov", F, None)])
    (op,) = _import(model)["workload"]["ops"]
    assert op["type"] == "attention"
    assert op["flops"] == 2 * 192 * 12 + 5 * 12 * 12 + 2 * 192 * 12


def test_fused_attention_on_3d_inputs_reads_the_heads_from_its_attribute():
    # Q [1,3,64] with q_num_heads=4 (head 16), K/V [1,5,32] with kv_num_heads=2
    node = helper.make_node("Attention", ["q", "k", "v"], ["y"], name="attn", q_num_heads=4,
                            kv_num_heads=2)
    model = _model([node], [_vi("q", F, [1, 3, 64]), _vi("k", F, [1, 5, 32]),
                            _vi("v", F, [1, 5, 32])], [_vi("y", F, None)])
    (op,) = _import(model)["workload"]["ops"]
    assert op["flops"] == 2 * 192 * 5 + 5 * 12 * 5 + 2 * 192 * 5


def _recurrent_model(op_type, gates, steps, batch, width, hidden, directions=1, layout=0):
    x = [steps, batch, width] if layout == 0 else [batch, steps, width]
    weights = [numpy_helper.from_array(np.zeros((directions, gates * hidden, n), np.float32), name)
               for name, n in (("W", width), ("R", hidden))]
    node = helper.make_node(op_type, ["x", "W", "R"], ["y"], name="rnn", hidden_size=hidden,
                            direction="bidirectional" if directions == 2 else "forward",
                            layout=layout)
    return _model([node], [_vi("x", F, x)], [_vi("y", F, None)], weights, opset=14)


def test_recurrent_layers_count_both_products_and_their_gates_per_step_and_direction():
    # per step, direction and batch row: 2 * G*hidden * (input + hidden), plus per hidden
    # unit LSTM 24, GRU 17, RNN 4 (docs in memplace.instances.onnx.flops.RECURRENT)
    for op_type, gates, per_unit in (("LSTM", 4, 24), ("GRU", 3, 17), ("RNN", 1, 4)):
        (op,) = _import(_recurrent_model(op_type, gates, 7, 2, 10, 6))["workload"]["ops"]
        assert op["type"] == op_type.lower()
        assert op["flops"] == 7 * 2 * (2 * gates * 6 * (10 + 6) + per_unit * 6), op_type
    # a bidirectional LSTM doubles it; layout 1 reads [batch, seq, input]
    (op,) = _import(_recurrent_model("LSTM", 4, 7, 2, 10, 6, directions=2))["workload"]["ops"]
    assert op["flops"] == 2 * 7 * 2 * (2 * 4 * 6 * 16 + 24 * 6)
    (op,) = _import(_recurrent_model("GRU", 3, 7, 2, 10, 6, layout=1))["workload"]["ops"]
    assert op["flops"] == 7 * 2 * (2 * 3 * 6 * 16 + 17 * 6)


def test_rotary_embedding_is_three_flops_per_element():
    node = helper.make_node("RotaryEmbedding", ["x", "cos", "sin", "pos"], ["y"], name="rope")
    cache = [numpy_helper.from_array(np.zeros((16, 4), np.float32), n) for n in ("cos", "sin")]
    model = _model([node], [_vi("x", F, [1, 2, 4, 8]), _vi("pos", I64, [1, 4])],
                   [_vi("y", F, None)], cache)
    (op,) = _import(model)["workload"]["ops"]
    assert op["flops"] == 3 * 64


def test_an_empty_input_dimension_is_a_fixed_size_not_a_symbol():
    # a decode step's first call: an empty key cache [1,2,0,8] concatenated with the new key
    nodes = [helper.make_node("Concat", ["past", "new"], ["present"], name="grow", axis=2),
             helper.make_node("Relu", ["present"], ["y"], name="act")]
    model = _model(nodes, [_vi("past", F, [1, 2, 0, 8]), _vi("new", F, [1, 2, 1, 8])],
                   [_vi("y", F, None), _vi("present", F, None)], opset=18)
    inst = _import(model)
    tensors = {t["name"]: t["size"] for t in inst["workload"]["tensors"]}
    # the empty cache holds no bytes, and joining it to the new key moves nothing: the
    # present key is the new one (test_a_concatenation_of_one_tensor_is_no_op)
    assert tensors == {"new": 64, "y": 64}
    assert Instance.from_dict(inst).n_ops == 1


# --------------------------------------------------------------------------- shape arithmetic
def _const(name, values):
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(np.array(values, np.int64), name))


def _no_symbolic_inference(monkeypatch):
    """onnxruntime's symbolic inference failing, as it does on the TorchScript exports of
    ViT-B/16 and TinyLlama (an AssertionError, a ValidationError)."""
    import memplace.instances.onnx.shapes as shapes

    def fail(model):
        raise AssertionError
    monkeypatch.setattr(shapes, "_symbolic_inference", fail)


def test_torchscript_expand_of_a_class_token_is_resolved_by_computing_its_shape(monkeypatch):
    # cls.expand(x.shape[0], -1, -1) as the TorchScript exporter writes it: the target
    # shape is Where(Equal(shape, -1), 1, shape), which ONNX's data propagation skips
    _no_symbolic_inference(monkeypatch)
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"), _const("zero", 0),
             helper.make_node("Gather", ["s", "zero"], ["b"], name="batch"), _const("ax", [0]),
             helper.make_node("Unsqueeze", ["b", "ax"], ["b1"], name="unsq"), _const("m1", [-1, -1]),
             helper.make_node("Concat", ["b1", "m1"], ["shape3"], name="cat", axis=0),
             _const("three", [3]),
             helper.make_node("ConstantOfShape", ["three"], ["ones"], name="ones",
                              value=numpy_helper.from_array(np.array([1], np.int64))),
             _const("neg", [-1]), helper.make_node("Mul", ["ones", "neg"], ["negs"], name="negs"),
             helper.make_node("Equal", ["shape3", "negs"], ["eq"], name="eq"),
             helper.make_node("Where", ["eq", "ones", "shape3"], ["target"], name="where"),
             helper.make_node("Expand", ["cls", "target"], ["e"], name="expand"),
             helper.make_node("Concat", ["e", "x"], ["y"], name="tokens", axis=1),
             helper.make_node("MatMul", ["y", "w"], ["z"], name="proj")]
    model = _model(nodes, [_vi("x", F, [2, 3, 4])], [_vi("z", F, None)],
                   [numpy_helper.from_array(np.zeros((1, 1, 4), np.float32), "cls"),
                    numpy_helper.from_array(np.zeros((4, 4), np.float32), "w")], opset=17)
    inst = _import(model)
    assert [(op["name"], op["flops"]) for op in inst["workload"]["ops"]] == [
        ("expand", 0.0), ("tokens", 0.0), ("proj", 2 * 2 * 4 * 4 * 4)]
    sizes = {t["name"]: t["size"] for t in inst["workload"]["tensors"]}
    assert sizes["e"] == 2 * 1 * 4 * 4 and sizes["y"] == 2 * 4 * 4 * 4  # [2,1,4], [2,4,4]
    assert any("shape arithmetic computed" in n for n in inst["import"]["shape_inference"])


def _window_padding_model():
    """x[1,5,6] padded on its last axis up to a multiple of 4, then a Relu: the pads
    [0,0,0, 0,0,(4 - 6 % 4) % 4] computed from Shape by Mod and Sub, as the TorchScript
    exporter writes Swin's window padding (and, alike, PNASNet's convolutions' padding)."""
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"), _const("two", 2),
             helper.make_node("Gather", ["s", "two"], ["w"], name="width"), _const("four", 4),
             helper.make_node("Mod", ["w", "four"], ["r"], name="rem"),
             helper.make_node("Sub", ["four", "r"], ["p0"], name="sub"),
             helper.make_node("Mod", ["p0", "four"], ["p"], name="pad_w"), _const("ax", [0]),
             helper.make_node("Unsqueeze", ["p", "ax"], ["p1"], name="unsq"),
             _const("zeros5", [0, 0, 0, 0, 0]),
             helper.make_node("Concat", ["zeros5", "p1"], ["pads"], name="pads", axis=0),
             helper.make_node("Pad", ["x", "pads"], ["y"], name="pad"),
             helper.make_node("Relu", ["y"], ["z"], name="act")]
    return _model(nodes, [_vi("x", F, [1, 5, 6])], [_vi("z", F, None)], opset=17)


def test_torchscript_padding_to_a_window_multiple_is_resolved_by_computing_it(monkeypatch):
    _no_symbolic_inference(monkeypatch)
    inst = _import(_window_padding_model())
    sizes = {t["name"]: t["size"] for t in inst["workload"]["tensors"]}
    assert sizes == {"x": 4 * 30, "z": 4 * 40}  # [1,5,8] after the pad (Relu fused into it)


def test_shape_arithmetic_is_computed_before_the_slow_symbolic_inference(monkeypatch):
    # PNASNet's TorchScript export computes every convolution's padding from Shape: ONNX's
    # inference leaves the padded shapes unknown, computing the arithmetic resolves them,
    # and onnxruntime's symbolic algebra (12 s on its 3,287 nodes) is not needed
    import memplace.instances.onnx.shapes as shapes
    calls = []
    monkeypatch.setattr(shapes, "_symbolic_inference", lambda model: calls.append(model) or model)
    inst = _import(_window_padding_model())
    assert {t["name"]: t["size"] for t in inst["workload"]["tensors"]} == {"x": 4 * 30,
                                                                          "z": 4 * 40}
    assert calls == []
    assert any("shape arithmetic computed" in n for n in inst["import"]["shape_inference"])


def _weight_norm_model(rows=64, cols=32):
    """y = x @ (g * v / ||v||): wav2vec2's weight norm, as the dynamo exporter writes it."""
    v = numpy_helper.from_array(np.ones((cols, rows), np.float32), "v")
    g = numpy_helper.from_array(np.ones((1, rows), np.float32), "g")
    nodes = [helper.make_node("ReduceL2", ["v"], ["norm"], name="norm", keepdims=1),
             helper.make_node("Div", ["v", "norm"], ["unit"], name="unit"),
             helper.make_node("Mul", ["unit", "g"], ["w"], name="scaled"),
             helper.make_node("MatMul", ["x", "w"], ["y"], name="product")]
    return _model(nodes, [_vi("x", F, [8, cols])], [_vi("y", F, None)], [v, g])


def test_a_weight_computed_from_weights_only_is_folded_into_one_stored_weight():
    # The norm, the division and the scaling read weights only: an inference compiler folds
    # them, so the program is the product alone, reading one weight of v's size
    # (before, three ops read v and g at every inference and wrote the weight as an
    # activation)
    w = _import(_weight_norm_model())["workload"]
    assert [op["name"] for op in w["ops"]] == ["product"]
    weights = [t for t in w["tensors"] if t["kind"] == "weight"]
    assert [(t["name"], t["size"], t["accesses"]) for t in weights] == [("w", 32 * 64 * 4,
                                                                          [[0, 32 * 64 * 4]])]


def test_a_broadcast_of_a_small_weight_stays_an_op():
    # Expanding a 1-row table to 128 rows would store the expansion as a weight live
    # through the program: the Expand stays an op (read 1 row, write 128)
    table = numpy_helper.from_array(np.ones((1, 16), np.float32), "table")
    shape = numpy_helper.from_array(np.array([128, 16], np.int64), "shape")
    nodes = [helper.make_node("Expand", ["table", "shape"], ["rows"], name="expand"),
             helper.make_node("Add", ["x", "rows"], ["y"], name="add")]
    w = _import(_model(nodes, [_vi("x", F, [128, 16])], [_vi("y", F, None)], [table, shape]))
    assert [op["name"] for op in w["workload"]["ops"]] == ["expand", "add"]


# --------------------------------------------------------------------------- fourth round
def test_a_node_onnx_rejects_is_named_with_onnxs_reason():
    # Mamba2's TorchScript export writes permute(0, -2, -1, 1) as a Transpose with negative
    # axes, which ONNX (and onnxruntime) reject; non-strict inference only leaves its shape
    # unknown, and the import used to say no more than that
    nodes = [helper.make_node("Transpose", ["x"], ["t"], name="negative_perm", perm=[0, -2, -1, 1]),
             helper.make_node("Relu", ["t"], ["y"], name="after")]
    model = _model(nodes, [_vi("x", F, [1, 8, 2, 32])], [_vi("y", F, None)], opset=17)
    with pytest.raises(OnnxImportError) as refused:
        from_onnx(model, "nnpi", name="m")
    message = str(refused.value)
    assert "'negative_perm' (Transpose) is not valid ONNX" in message
    assert "Invalid attribute perm {0, -2, -1, 1}" in message


def test_control_flow_is_refused_before_shapes_are_resolved(monkeypatch):
    # MViT-v2-S's TorchScript export (a Loop per pooled attention) took 213 s of shape
    # inference before its first Loop was refused; now it is refused first
    import memplace.instances.onnx.importer as importer

    def resolve(*args):
        raise AssertionError("shapes resolved before the Loop was refused")
    monkeypatch.setattr(importer, "resolve_shapes", resolve)
    body = helper.make_graph([helper.make_node("Identity", ["c"], ["c_out"])], "body",
                             [_vi("i", I64, []), _vi("c", TensorProto.BOOL, [])],
                             [_vi("c_out", TensorProto.BOOL, [])])
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="first"),
             helper.make_node("Loop", ["", "cond"], [], name="pool_k/Loop", body=body),
             helper.make_node("Relu", ["r"], ["y"], name="last")]
    model = _model(nodes, [_vi("x", F, [4]), _vi("cond", TensorProto.BOOL, [])],
                   [_vi("y", F, None)], opset=17)
    with pytest.raises(OnnxImportError, match=r"'pool_k/Loop' \(Loop\): control flow"):
        from_onnx(model, "nnpi", name="m")


def test_col2im_adds_every_block_element_into_the_image():
    # VOLO's outlook attention folds 3x3 blocks back into a 6x6 image (torch.nn.Fold): each
    # of the 2*9*36 block elements is added into the image, where 0 (data movement) was
    shape = numpy_helper.from_array(np.array([6, 6], np.int64), "image_shape")
    block = numpy_helper.from_array(np.array([3, 3], np.int64), "block_shape")
    node = helper.make_node("Col2Im", ["cols", "image_shape", "block_shape"], ["y"], name="fold",
                            pads=[1, 1, 1, 1])
    model = _model([node], [_vi("cols", F, [1, 2 * 9, 36])], [_vi("y", F, None)], [shape, block],
                   opset=18)
    (op,) = _import(model)["workload"]["ops"]
    assert op["flops"] == 2 * 9 * 36


def test_a_fourier_transform_counts_five_n_log_n_per_complex_signal():
    # FNet mixes tokens with a 2-D DFT (round 7, docs/zoo.md): along hidden (axis 2), then
    # tokens (axis 1); a real input's transform counts half (FFTW's convention). It was
    # unknown: one flop per output element, with a warning.
    along_hidden = helper.make_node("DFT", ["x"], ["h"], name="dft_h", axis=2, onesided=0)
    along_tokens = helper.make_node("DFT", ["h"], ["y"], name="dft_t", axis=1, onesided=0)
    real = helper.make_node("DFT", ["r"], ["z"], name="dft_r", axis=1, onesided=0)
    model = _model([along_hidden, along_tokens, real],
                   [_vi("x", F, [1, 8, 16, 2]), _vi("r", F, [1, 8, 16, 1])],
                   [_vi("y", F, None), _vi("z", F, None)], opset=18)
    flops = {op["name"]: op["flops"] for op in _import(model)["workload"]["ops"]}
    assert flops == {"dft_h": 5 * 4 * (8 * 16), "dft_t": 5 * 3 * (8 * 16),
                     "dft_r": 2.5 * 3 * (8 * 16)}


def test_random_generators_count_one_flop_per_value_drawn_and_bernoulli_two():
    # ViT-MAE's masking noise (RandomUniformLike), Reformer's hashing rotations
    # (RandomNormalLike): round 12, docs/zoo.md. They were unknown: 1 per output element,
    # with a warning; the count is the same, now by formula, and Bernoulli counts its compare
    uniform = helper.make_node("RandomUniformLike", ["x"], ["u"], name="noise")
    normal = helper.make_node("RandomNormal", [], ["n"], name="rotations", shape=[4, 3])
    coin = helper.make_node("Bernoulli", ["p"], ["b"], name="coin")
    model = _model([uniform, normal, coin], [_vi("x", F, [2, 5]), _vi("p", F, [2, 5])],
                   [_vi("u", F, None), _vi("b", F, None), _vi("n", F, None)], opset=18)
    flops = {op["name"]: op["flops"] for op in _import(model)["workload"]["ops"]}
    assert flops == {"noise": 10, "rotations": 12, "coin": 20}


# --------------------------------------------------------------------------- padding
def _padded(reader="Conv", pads=(0, 0, 1, 1, 0, 0, 1, 1), fill=None, computed=False):
    """x[1,4,6,6] -> Pad(pads, fill) -> reader -> y. With `computed`, the pads are a Cast of
    a Constant, a value no initializer or Constant node holds (as the TorchScript
    exporter computes timm's 'same' padding from Shape)."""
    nodes, inits = [], []
    if computed:
        nodes += [helper.make_node("Constant", [], ["p32"], name="p32", value=numpy_helper.from_array(
                      np.array(pads, np.int32), "p32")),
                  helper.make_node("Cast", ["p32"], ["pads"], name="cast", to=I64)]
    else:
        inits.append(numpy_helper.from_array(np.array(pads, np.int64), "pads"))
    pad_inputs = ["x", "pads"]
    if fill is not None:
        nodes.append(helper.make_node("Constant", [], ["fill"], name="fill",
                                      value=numpy_helper.from_array(np.array(fill, np.float32), "fill")))
        pad_inputs.append("fill")
    nodes.append(helper.make_node("Pad", pad_inputs, ["xp"], name="pad"))
    if reader == "Conv":
        inits.append(numpy_helper.from_array(np.zeros((8, 4, 3, 3), np.float32), "w"))
        nodes.append(helper.make_node("Conv", ["xp", "w"], ["y"], name="conv"))
    elif reader == "MaxPool":
        nodes.append(helper.make_node("MaxPool", ["xp"], ["y"], name="pool", kernel_shape=[3, 3]))
    else:
        nodes.append(helper.make_node("Add", ["xp", "xp"], ["y"], name="add"))
    return _model(nodes, [_vi("x", F, [1, 4, 6, 6])], [_vi("y", F, None)], inits, opset=18)


@pytest.mark.parametrize("computed", [False, True])
def test_a_zero_padding_a_convolution_reads_is_its_own_padding(computed):
    # PNASNet's TorchScript export pads 24 convolutions' inputs with explicit Pads; a
    # compiler (and the dynamo exporter's optimizer) adds them to the convolutions'
    # padding: the padded tensor never exists, the convolution reads x
    w = _import(_padded(fill=0.0, computed=computed))["workload"]
    assert [(op["name"], op["flops"]) for op in w["ops"]] == [("conv", 2 * 8 * 6 * 6 * 4 * 9)]
    assert {t["name"]: t["size"] for t in w["tensors"]} == {"x": 4 * 144, "w": 4 * 288,
                                                            "y": 4 * 288}


@pytest.mark.parametrize("reader, pads, fill", [
    ("MaxPool", (0, 0, 1, 1, 0, 0, 1, 1), None),   # a pool's padding is not by zeros
    ("Conv", (0, 0, 1, 1, 0, 0, 1, 1), 1.0),       # padding by ones
    ("Conv", (0, 1, 0, 0, 0, 1, 0, 0), None),      # padding channels
    ("Conv", (0, 0, 2, 2, 0, 0, -1, -1), None),    # a crop and a pad
    ("Add", (0, 0, 1, 1, 0, 0, 1, 1), None)])      # not a convolution
def test_any_other_padding_stays_an_op(reader, pads, fill):
    w = _import(_padded(reader, pads, fill))["workload"]
    assert w["ops"][0]["nodes"][0] == "pad"  # an op of its own (an Add fuses into it)


def test_a_padding_by_nothing_is_no_op():
    # Swin's windows: pad the feature map up to a multiple of the window, 0 rows when it is
    # one already; nothing moves, whoever reads it
    w = _import(_padded("Add", (0, 0, 0, 0, 0, 0, 0, 0)))["workload"]
    assert [op["name"] for op in w["ops"]] == ["add"]
    assert {t["name"]: t["size"] for t in w["tensors"]} == {"x": 4 * 144, "y": 4 * 144}


def test_an_opset_10_padding_of_attributes_is_read_the_same():
    nodes = [helper.make_node("Pad", ["x"], ["xp"], name="pad", pads=[0, 0, 1, 1, 0, 0, 1, 1]),
             helper.make_node("Conv", ["xp", "w"], ["y"], name="conv")]
    w = _import(_model(nodes, [_vi("x", F, [1, 4, 6, 6])], [_vi("y", F, None)],
                       [numpy_helper.from_array(np.zeros((8, 4, 3, 3), np.float32), "w")],
                       opset=10))["workload"]
    assert [op["name"] for op in w["ops"]] == ["conv"]


@pytest.mark.parametrize("past", [None, 0, 3])
def test_a_concatenation_of_one_tensor_is_no_op(past):
    # a prefill's new keys joined to the empty cache: the TorchScript exporter writes a
    # Concat of the keys alone (past None) or with the empty past (0 rows); with 3 rows
    # of past it is a decode step's concatenation, an op
    inputs = [_vi("x", F, [1, 2, 4, 8])]
    names = ["k"]
    if past is not None:
        inputs.append(_vi("past", F, [1, 2, past, 8]))
        names = ["past", "k"]
    nodes = [helper.make_node("Relu", ["x"], ["k"], name="keys"),
             helper.make_node("Concat", names, ["present"], name="cat", axis=2),
             helper.make_node("Relu", ["present"], ["y"], name="use")]
    w = _import(_model(nodes, inputs, [_vi("present", F, None), _vi("y", F, None)]))["workload"]
    ops = [op["name"] for op in w["ops"]]
    assert ops == (["keys", "use"] if past in (None, 0) else ["keys", "cat", "use"])


@pytest.mark.parametrize("ends, steps, moves", [
    (4, None, False),     # GhostNet's out[:, :oup] where the concatenation has oup channels
    (4, 1, False),
    (3, None, True),      # a crop: an op
    (4, -1, True),        # the whole axis reversed: every element, not in order
    (2 ** 62, 2, True)])  # every other channel
def test_a_slice_of_everything_in_order_is_no_op(ends, steps, moves):
    starts = -1 if steps == -1 else 0
    ends = -(2 ** 62) if steps == -1 else ends
    inputs, values = ["x", "starts", "ends", "axes"], [starts, ends, 1]
    if steps is not None:
        inputs.append("steps")
        values.append(steps)
    nodes = [helper.make_node("Relu", ["a"], ["x"], name="make"),
             _const("starts", [starts]), _const("ends", [ends]), _const("axes", [1]),
             *([_const("steps", [steps])] if steps is not None else []),
             helper.make_node("Slice", inputs, ["s"], name="slice"),
             helper.make_node("Add", ["s", "s"], ["y"], name="use")]
    w = _import(_model(nodes, [_vi("a", F, [1, 4, 3, 3])], [_vi("y", F, None)]))["workload"]
    assert any("slice" in op["nodes"] for op in w["ops"]) is moves
    if not moves:  # the add reads x itself
        assert "s" not in {t["name"] for t in w["tensors"]}
