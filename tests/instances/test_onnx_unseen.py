"""ONNX import of what the zoo's unseen architectures brought (docs/zoo.md, "Unseen
architectures"): opset-23 fused attention and rotary embeddings counted by formula, and
an empty dimension (a decode step's empty key/value cache) accepted as the fixed size it is."""
from __future__ import annotations

import warnings

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from memplace.instances import from_onnx
from memplace.instances.onnx import OnnxImportWarning
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
    assert tensors == {"new": 64, "present": 64, "y": 64}  # the empty cache holds no bytes
    assert Instance.from_dict(inst).n_ops == 2
