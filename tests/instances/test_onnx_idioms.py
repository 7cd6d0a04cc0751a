"""ONNX import (issue 15): graphs built with onnx.helper for each idiom real exporters write,
FLOPs and bytes checked by hand; malformed models; the command line."""
from __future__ import annotations

import json
import warnings

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from memplace.cli import main
from memplace.instances import from_onnx
from memplace.instances.onnx import OnnxImportError, OnnxImportWarning
from memplace.model import Instance

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def _model(nodes, inputs, outputs, initializers=(), opset=18):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _save(model, tmp_path, name="m.onnx"):
    path = tmp_path / name
    onnx.save(model, str(path))
    return path


def _zeros(name, *shape):
    return numpy_helper.from_array(np.zeros(shape, np.float32), name)


def _const(name, values, dtype=np.int64):
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(np.array(values, dtype), name))


def _vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def _ops(inst):
    return [(op["name"], op["type"], op["flops"]) for op in inst["workload"]["ops"]]


def _tensors(inst):
    return {t["name"]: (t["kind"], t["size"], [tuple(a) for a in t["accesses"]])
            for t in inst["workload"]["tensors"]}


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


# --------------------------------------------------------------------------- idioms
@pytest.mark.parametrize("batch_dim, batch", [(2, None), ("batch_size", 2)], ids=["static", "dynamic"])
def test_shape_chain_into_reshape_and_expand_is_compile_time_work(tmp_path, batch_dim, batch):
    # x[2,3,4] -> Reshape to [Shape(x)[0], 12] -> MatMul W[12,5] -> t[2,5];
    # ReduceMean over the batch r[1,5], Expand to [Shape(x)[0], 5], Add(t, e).
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        _const("zero", 0), helper.make_node("Gather", ["s", "zero"], ["b"], name="batch_of"),
        _const("axes0", [0]), helper.make_node("Unsqueeze", ["b", "axes0"], ["b1"], name="unsq"),
        _const("twelve", [12]), helper.make_node("Concat", ["b1", "twelve"], ["shape12"], name="cat1",
                                                 axis=0),
        helper.make_node("Reshape", ["x", "shape12"], ["y"], name="reshape"),
        helper.make_node("MatMul", ["y", "W"], ["t"], name="matmul"),
        helper.make_node("ReduceMean", ["t", "axes0"], ["r"], name="mean", keepdims=1),
        _const("five", [5]), helper.make_node("Concat", ["b1", "five"], ["shape5"], name="cat2", axis=0),
        helper.make_node("Expand", ["r", "shape5"], ["e"], name="expand"),
        helper.make_node("Add", ["t", "e"], ["out"], name="add"),
    ]
    model = _model(nodes, [_vi("x", F, [batch_dim, 3, 4])], [_vi("out", F, None)], [_zeros("W", 12, 5)])
    inst = from_onnx(_save(model, tmp_path), "nnpi", batch=batch)
    assert _ops(inst) == [("matmul", "matmul", 2 * 2 * 5 * 12), ("mean", "pool", 10.0),
                          ("expand", "expand", 0.0), ("add", "add", 10.0)]
    assert _tensors(inst) == {
        "W": ("weight", 240, [(0, 240)]),
        "x": ("activation", 96, [(0, 96)]),          # the reshape is an alias: matmul reads x
        "t": ("activation", 40, [(0, 40), (1, 40), (3, 40)]),
        "r": ("activation", 20, [(1, 20), (2, 20)]),
        "e": ("activation", 40, [(2, 40), (3, 40)]),
        "out": ("activation", 40, [(3, 40)]),
    }


def _dynamic_batch_model():
    nodes = [helper.make_node("Cast", ["x"], ["xf"], name="same_type", to=F),  # an alias
             helper.make_node("MatMul", ["xf", "W"], ["m"], name="fc"),
             helper.make_node("Relu", ["m"], ["y"], name="relu")]
    return _model(nodes, [_vi("x", F, ["N", 8])], [_vi("y", F, ["N", 4])], [_zeros("W", 8, 4)])


def test_dynamic_batch_dimension_is_bound_by_batch(tmp_path):
    inst = from_onnx(_save(_dynamic_batch_model(), tmp_path), "nnpi", batch=3)
    assert _ops(inst) == [("fc", "matmul", 2.0 * 3 * 4 * 8 + 3 * 4)]  # + ReLU per element
    assert _tensors(inst) == {"W": ("weight", 128, [(0, 128)]), "x": ("activation", 96, [(0, 96)]),
                              "y": ("activation", 48, [(0, 48)])}
    by_name = from_onnx(_save(_dynamic_batch_model(), tmp_path), "nnpi", dims={"N": 3})
    assert _ops(by_name) == _ops(inst)


def test_unbound_symbolic_dimension_is_refused_naming_the_input(tmp_path):
    with pytest.raises(OnnxImportError, match=r"graph input 'x': dimension 0 \(N\) is symbolic"):
        from_onnx(_save(_dynamic_batch_model(), tmp_path), "nnpi")


def _external_model(tmp_path, data_bytes):
    w = helper.make_tensor_value_info("W", F, [512, 512])
    tensor = onnx.TensorProto(name="W", data_type=F, dims=[512, 512])
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "weights.bin"), ("offset", "0"), ("length", str(512 * 512 * 4))):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    del w
    nodes = [helper.make_node("MatMul", ["x", "W"], ["y"], name="proj")]
    model = _model(nodes, [_vi("x", F, [1, 512])], [_vi("y", F, [1, 512])], [tensor])
    path = tmp_path / "ext.onnx"
    onnx.save(model, str(path))
    if data_bytes is not None:
        with open(tmp_path / "weights.bin", "wb") as handle:
            handle.truncate(data_bytes)  # sparse: as large as we like, nothing written
    return path


@pytest.mark.parametrize("data_bytes", [None, 8 << 30], ids=["data-file-absent", "data-file-8GiB"])
def test_external_data_is_never_read(tmp_path, data_bytes):
    inst = from_onnx(_external_model(tmp_path, data_bytes), "nnpi")
    assert _ops(inst) == [("proj", "matmul", 2.0 * 512 * 512)]
    assert _tensors(inst)["W"] == ("weight", 512 * 512 * 4, [(0, 512 * 512 * 4)])


def test_tied_embedding_is_one_weight_and_gather_reads_only_its_rows(tmp_path):
    nodes = [helper.make_node("Gather", ["E", "ids"], ["h"], name="embed"),
             helper.make_node("Transpose", ["E"], ["Et"], name="untie", perm=[1, 0]),
             helper.make_node("MatMul", ["h", "Et"], ["logits"], name="lm_head")]
    model = _model(nodes, [_vi("ids", I64, [1, 6])], [_vi("logits", F, [1, 6, 100])],
                   [_zeros("E", 100, 16)])
    inst = from_onnx(_save(model, tmp_path), "nnpi")
    assert _ops(inst) == [("embed", "gather", 0.0), ("lm_head", "matmul", 2.0 * 6 * 100 * 16)]
    assert _tensors(inst) == {
        "E": ("weight", 6400, [(0, 6 * 16 * 4), (1, 6400)]),  # 6 rows gathered, then all of it
        "ids": ("activation", 48, [(0, 48)]),
        "h": ("activation", 384, [(0, 384), (1, 384)]),
        "logits": ("activation", 2400, [(1, 2400)]),
    }


def test_residual_block_fuses_conv_batchnorm_relu_and_the_add(tmp_path):
    bn = ["scale", "shift", "mean", "var"]
    nodes = [helper.make_node("Conv", ["x", "W1"], ["c1"], name="conv1", pads=[1, 1, 1, 1],
                              kernel_shape=[3, 3]),
             helper.make_node("BatchNormalization", ["c1"] + bn, ["b1"], name="bn1"),
             helper.make_node("Relu", ["b1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "W2"], ["c2"], name="conv2", pads=[1, 1, 1, 1],
                              kernel_shape=[3, 3]),
             helper.make_node("Add", ["c2", "x"], ["a"], name="residual"),
             helper.make_node("Relu", ["a"], ["out"], name="relu2")]
    inits = [_zeros("W1", 8, 8, 3, 3), _zeros("W2", 8, 8, 3, 3)] + [_zeros(n, 8) for n in bn]
    model = _model(nodes, [_vi("x", F, [1, 8, 10, 10])], [_vi("out", F, None)], inits)
    inst = from_onnx(_save(model, tmp_path), "nnpi")
    macs = 800 * 72  # 8x10x10 outputs, 8*3*3 each
    assert _ops(inst) == [("conv1", "conv", 2.0 * macs + 2 * 800 + 800),   # + BN (2) + ReLU (1)
                          ("conv2", "conv", 2.0 * macs + 800 + 800)]       # + add + ReLU
    tensors = _tensors(inst)
    assert tensors["x"] == ("activation", 3200, [(0, 3200), (1, 3200)])
    assert tensors["r1"] == ("activation", 3200, [(0, 3200), (1, 3200)])
    assert tensors["out"] == ("activation", 3200, [(1, 3200)])
    assert {n: tensors[n][1] for n in ["W1", "W2"] + bn} == {"W1": 2304, "W2": 2304, **dict.fromkeys(bn, 32)}
    assert len(tensors) == 9


def test_depthwise_separable_block(tmp_path):
    nodes = [helper.make_node("Conv", ["x", "Wd"], ["d"], name="dw", group=16, pads=[1, 1, 1, 1],
                              kernel_shape=[3, 3]),
             helper.make_node("Clip", ["d", "lo", "hi"], ["d6"], name="relu6"),
             helper.make_node("Conv", ["d6", "Wp", "bp"], ["p"], name="pw", kernel_shape=[1, 1])]
    inits = [_zeros("Wd", 16, 1, 3, 3), _zeros("Wp", 32, 16, 1, 1), _zeros("bp", 32),
             numpy_helper.from_array(np.array(0, np.float32), "lo"),
             numpy_helper.from_array(np.array(6, np.float32), "hi")]
    model = _model(nodes, [_vi("x", F, [1, 16, 8, 8])], [_vi("p", F, None)], inits)
    inst = from_onnx(_save(model, tmp_path), "nnpi", dtype_bytes=1)
    assert _ops(inst) == [("dw", "depthwise_conv", 2.0 * 1024 * 9 + 1024),
                          ("pw", "conv", 2.0 * 2048 * 16)]
    assert _tensors(inst) == {
        "Wd": ("weight", 144, [(0, 144)]), "x": ("activation", 1024, [(0, 1024)]),
        "d6": ("activation", 1024, [(0, 1024), (1, 1024)]),
        "Wp": ("weight", 512, [(1, 512)]), "bp": ("weight", 32, [(1, 32)]),
        "p": ("activation", 2048, [(1, 2048)]),
    }


def test_attention_layer(tmp_path):
    S, D, H, d = 4, 8, 2, 4
    nodes = [_const("heads", [1, S, H, d]), _const("flat", [1, S, D]), _const("sqrt_d", 2.0, np.float32)]
    inits = []
    for p in "qkv":
        nodes += [helper.make_node("MatMul", ["x", f"W{p}"], [f"{p}m"], name=f"{p}.matmul"),
                  helper.make_node("Add", [f"{p}m", f"b{p}"], [f"{p}b"], name=f"{p}.bias"),
                  helper.make_node("Reshape", [f"{p}b", "heads"], [f"{p}r"], name=f"{p}.reshape"),
                  helper.make_node("Transpose", [f"{p}r"], [f"{p}h"], name=f"{p}.transpose",
                                   perm=[0, 2, 3, 1] if p == "k" else [0, 2, 1, 3])]
        inits += [_zeros(f"W{p}", D, D), _zeros(f"b{p}", D)]
    nodes += [helper.make_node("MatMul", ["qh", "kh"], ["scores"], name="scores"),
              helper.make_node("Div", ["scores", "sqrt_d"], ["scaled"], name="scale"),
              helper.make_node("Softmax", ["scaled"], ["probs"], name="softmax", axis=-1),
              helper.make_node("MatMul", ["probs", "vh"], ["ctx"], name="context"),
              helper.make_node("Transpose", ["ctx"], ["ctxt"], name="context.transpose", perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["ctxt", "flat"], ["ctxf"], name="context.reshape"),
              helper.make_node("MatMul", ["ctxf", "Wo"], ["om"], name="out.matmul"),
              helper.make_node("Add", ["om", "bo"], ["out"], name="out.bias")]
    inits += [_zeros("Wo", D, D), _zeros("bo", D)]
    model = _model(nodes, [_vi("x", F, [1, S, D])], [_vi("out", F, None)], inits)
    inst = from_onnx(_save(model, tmp_path), "nnpi")
    linear = 2.0 * S * D * D + S * D           # matmul + bias add
    scores = H * S * S
    assert _ops(inst) == [
        ("q.matmul", "matmul", linear), ("q.transpose", "transpose", 0.0),
        ("k.matmul", "matmul", linear), ("k.transpose", "transpose", 0.0),
        ("v.matmul", "matmul", linear), ("v.transpose", "transpose", 0.0),
        ("scores", "matmul", 2.0 * scores * d + scores), ("softmax", "softmax", 5.0 * scores),
        ("context", "matmul", 2.0 * scores * d), ("context.transpose", "transpose", 0.0),
        ("out.matmul", "matmul", linear)]
    tensors = _tensors(inst)
    weights = {n: t[1] for n, t in tensors.items() if t[0] == "weight"}
    assert weights == {**{f"W{p}": 256 for p in "qkvo"}, **{f"b{p}": 32 for p in "qkvo"}}
    assert tensors["x"][2] == [(0, 128), (2, 128), (4, 128)]
    assert tensors["ctxt"] == ("activation", 128, [(9, 128), (10, 128)])  # the reshape aliases it


# --------------------------------------------------------------------------- oracle
@settings(max_examples=25, deadline=None)
@given(batch=st.integers(1, 4), widths=st.lists(st.integers(1, 33), min_size=2, max_size=6),
       bias=st.lists(st.booleans(), min_size=5, max_size=5),
       relu=st.lists(st.booleans(), min_size=5, max_size=5), dtype_bytes=st.sampled_from([None, 1, 2]))
def test_mlp_chain_matches_the_flop_and_byte_formulas(tmp_path_factory, batch, widths, bias, relu,
                                                      dtype_bytes):
    nodes, inits, x = [], [], "x"
    flops, weight_elements = [], 0
    for i, (k, n) in enumerate(zip(widths, widths[1:])):
        nodes.append(helper.make_node("MatMul", [x, f"W{i}"], [f"m{i}"], name=f"layer{i}"))
        inits.append(_zeros(f"W{i}", k, n))
        x, f = f"m{i}", 2.0 * batch * k * n
        weight_elements += k * n
        if bias[i]:
            nodes.append(helper.make_node("Add", [x, f"b{i}"], [f"a{i}"], name=f"bias{i}"))
            inits.append(_zeros(f"b{i}", n))
            x, f = f"a{i}", f + batch * n
            weight_elements += n
        if relu[i]:
            nodes.append(helper.make_node("Relu", [x], [f"r{i}"], name=f"relu{i}"))
            x, f = f"r{i}", f + batch * n
        flops.append(f)
    model = _model(nodes, [_vi("x", F, ["B", widths[0]])], [_vi(x, F, None)], inits)
    path = _save(model, tmp_path_factory.mktemp("mlp"))
    inst = from_onnx(path, "gpu", batch=batch, dtype_bytes=dtype_bytes)
    width = dtype_bytes or 4
    assert [op["flops"] for op in inst["workload"]["ops"]] == flops
    tensors = inst["workload"]["tensors"]
    assert sum(t["size"] for t in tensors if t["kind"] == "weight") == weight_elements * width
    activations = [t for t in tensors if t["kind"] == "activation"]
    assert [t["size"] for t in activations] == [batch * w * width for w in widths]
    assert all(t["accesses"][-1][0] - t["accesses"][0][0] <= 1 for t in activations)


# --------------------------------------------------------------------------- malformed
def _cli_import(path, *extra):
    out = path.with_suffix(".json")
    return _run("import", path, "--hardware", "nnpi", "-o", out, *extra), out


def _assert_refused(result, *fragments):
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in result.output, result.output


def test_not_an_onnx_file_exits_2(tmp_path):
    path = tmp_path / "junk.onnx"
    path.write_bytes(b"\x08\x07 this is not a protobuf \xff\xff\xff")
    result, out = _cli_import(path)
    _assert_refused(result, "not a readable ONNX model")
    assert not out.exists()


def test_node_reading_an_undefined_value_is_named(tmp_path):
    nodes = [helper.make_node("Relu", ["nowhere"], ["y"], name="lost_relu")]
    model = _model(nodes, [_vi("x", F, [2])], [_vi("y", F, [2])])
    result, _ = _cli_import(_save(model, tmp_path))
    _assert_refused(result, "'lost_relu' (Relu)", "'nowhere'", "no node, graph input or initializer")


def test_nodes_out_of_topological_order_are_named(tmp_path):
    nodes = [helper.make_node("Relu", ["a"], ["y"], name="second"),
             helper.make_node("Relu", ["x"], ["a"], name="first")]
    model = _model(nodes, [_vi("x", F, [2])], [_vi("y", F, [2])])
    result, _ = _cli_import(_save(model, tmp_path))
    _assert_refused(result, "'second' (Relu)", "not in topological order")


def test_control_flow_is_refused_naming_the_node(tmp_path):
    branch = helper.make_graph([helper.make_node("Identity", ["x"], ["z"])], "b", [],
                               [_vi("z", F, [2])])
    nodes = [_const("cond", True, np.bool_),
             helper.make_node("If", ["cond"], ["y"], name="branchy", then_branch=branch,
                              else_branch=branch)]
    model = _model(nodes, [_vi("x", F, [2])], [_vi("y", F, [2])])
    result, _ = _cli_import(_save(model, tmp_path))
    _assert_refused(result, "'branchy' (If)", "control flow")


def test_unknown_shape_is_refused_naming_tensor_and_node(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # onnxruntime's inference, when incomplete, leaves a file in cwd
    nodes = [helper.make_node("Mystery", ["x"], ["m"], name="mystery_op", domain="example.custom"),
             helper.make_node("Relu", ["m"], ["y"], name="after")]
    model = helper.make_model(
        helper.make_graph(nodes, "g", [_vi("x", F, [2, 3])], [_vi("y", F, None)]),
        opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("example.custom", 1)])
    result, _ = _cli_import(_save(model, tmp_path))
    _assert_refused(result, "'m'", "'mystery_op' (Mystery)", "unknown after shape inference")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]  # nothing else written


def test_unknown_op_type_with_known_shapes_warns_and_counts_one_flop_per_element(tmp_path):
    nodes = [helper.make_node("Mystery", ["x"], ["m"], name="mystery_op", domain="example.custom"),
             helper.make_node("Relu", ["m"], ["y"], name="after")]
    graph = helper.make_graph(nodes, "g", [_vi("x", F, [2, 3])], [_vi("y", F, None)],
                              value_info=[_vi("m", F, [4, 5])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18),
                                                    helper.make_opsetid("example.custom", 1)])
    path = _save(model, tmp_path)
    with pytest.warns(OnnxImportWarning, match="Mystery .*'mystery_op'.*1 per output element"):
        inst = from_onnx(path, "nnpi")
    assert _ops(inst) == [("mystery_op", "mystery", 20.0 + 20.0)]  # default 20 + fused ReLU 20
    result, out = _cli_import(path)
    assert result.exit_code == 0 and "warning: 1 node(s) of type Mystery" in result.output


def test_unbound_dimension_and_unknown_dim_name_exit_2(tmp_path):
    path = _save(_dynamic_batch_model(), tmp_path)
    _assert_refused(_cli_import(path)[0], "graph input 'x'", "--dim N=VALUE")
    _assert_refused(_cli_import(path, "--dim", "seq=4")[0], "--dim seq", "inputs have: N")
    _assert_refused(_cli_import(path, "--dim", "N=zero")[0], "not NAME=INTEGER")
    _assert_refused(_cli_import(path, "--batch", "0")[0], "--batch 0")


def test_unknown_hardware_preset_exits_2(tmp_path):
    result, _ = _cli_import(_save(_dynamic_batch_model(), tmp_path), "--batch", "2")
    assert result.exit_code == 0
    out = tmp_path / "x.json"
    result = _run("import", tmp_path / "m.onnx", "--hardware", "npu-typo", "--batch", "2", "-o", out)
    _assert_refused(result, "unknown hardware preset 'npu-typo'")
    nameless = tmp_path / "nameless.json"
    nameless.write_text('{"compute_rate": 1e12, "levels": [{"name": "m", "capacity": null, '
                        '"bandwidth": 1e9}]}')
    result = _run("import", tmp_path / "m.onnx", "--hardware", nameless, "--batch", "2", "-o", out)
    _assert_refused(result, "name")
    assert not out.exists()


# --------------------------------------------------------------------------- command line
def test_import_command_writes_an_instance_that_loads(tmp_path):
    path = _save(_dynamic_batch_model(), tmp_path)
    hardware = tmp_path / "hw.json"
    hardware.write_text(json.dumps({"name": "toy", "compute_rate": 1e12, "levels": [
        {"name": "fast", "capacity": 256, "bandwidth": 1e12},
        {"name": "slow", "capacity": None, "bandwidth": 1e10}]}))
    out = tmp_path / "mlp.json"
    result = _run("import", path, "--hardware", hardware, "--batch", "2", "--name", "mlp",
                  "--dtype-bytes", "1", "-o", out)
    assert result.exit_code == 0, result.output
    assert "mlp: 3 nodes -> 1 ops, 3 tensors" in result.output
    inst = Instance.from_file(out)
    assert inst.name == "mlp" and inst.hardware_name == "toy" and inst.n_ops == 1
    assert sorted(inst.size.tolist()) == [8, 16, 32]


def test_import_perf_prints_its_time():
    result = _run("import-perf", "--nodes", "400")
    assert result.exit_code == 0, result.output
    assert "import of 400 nodes:" in result.output and "s wall" in result.output
    assert "400 nodes -> 300 ops" in result.output  # each block: MatMul + (Add, ReLU) fused, Transpose


def test_quantized_weights_are_read_as_stored_and_qdq_pairs_fuse(tmp_path):
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["xq"], name="quant"),
             helper.make_node("DequantizeLinear", ["xq", "s", "zp"], ["xd"], name="dequant"),
             helper.make_node("DequantizeLinear", ["Wq", "sw", "zp"], ["W"], name="dequant_w"),
             helper.make_node("MatMul", ["xd", "W"], ["y"], name="fc")]
    inits = [numpy_helper.from_array(np.zeros((8, 4), np.int8), "Wq"),
             numpy_helper.from_array(np.array(0.1, np.float32), "s"),
             numpy_helper.from_array(np.array(0.1, np.float32), "sw"),
             numpy_helper.from_array(np.array(0, np.int8), "zp")]
    model = _model(nodes, [_vi("x", F, [1, 8])], [_vi("y", F, None)], inits)
    inst = from_onnx(_save(model, tmp_path), "nnpi")
    assert _ops(inst) == [("quant", "quantizelinear", 8.0 + 8.0), ("fc", "matmul", 2.0 * 4 * 8)]
    assert _tensors(inst) == {"x": ("activation", 32, [(0, 32)]),
                              "xd": ("activation", 32, [(0, 32), (1, 32)]),
                              "Wq": ("weight", 32, [(1, 32)]),   # int8: one byte per element
                              "y": ("activation", 16, [(1, 16)])}


def test_unwritable_output_exits_2_and_export_refuses_synthetic_workloads(tmp_path):
    path = _save(_dynamic_batch_model(), tmp_path)
    result = _run("import", path, "--hardware", "nnpi", "--batch", "1", "-o",
                  tmp_path / "missing" / "out.json")
    _assert_refused(result, "cannot write")
    _assert_refused(_run("instances", "export", "--onnx", tmp_path / "s.onnx", "synth-100"),
                    "op 'op0' (conv) of 'synth-100'", "synthetic DAGs cannot")
    _assert_refused(_run("instances", "export", "resnet50"), "exactly one of -o")


def test_conv_transpose_einsum_and_a_large_constant_are_counted_by_hand(tmp_path):
    bias = numpy_helper.from_array(np.zeros(5, np.float32), "bias")
    nodes = [helper.make_node("ConvTranspose", ["x", "Wt"], ["up"], name="upconv", strides=[2, 2],
                              kernel_shape=[2, 2]),                       # [1,2,6,6]
             helper.make_node("Reshape", ["up", "as3d"], ["u3"], name="to3d"),  # [2,3,12]
             helper.make_node("Einsum", ["u3", "E"], ["e"], name="einsum", equation="bij,jk->bik"),
             helper.make_node("Constant", [], ["bias"], name="bias_const", value=bias),
             helper.make_node("Add", ["e", "bias"], ["out"], name="add_bias")]
    inits = [_zeros("Wt", 4, 2, 2, 2), _zeros("E", 12, 5),
             numpy_helper.from_array(np.array([2, 3, 12], np.int64), "as3d")]
    model = _model(nodes, [_vi("x", F, [1, 4, 3, 3])], [_vi("out", F, None)], inits)
    inst = from_onnx(_save(model, tmp_path), "nnpi")
    assert _ops(inst) == [("upconv", "upsample", 2.0 * 36 * (2 * 2 * 2)),  # 36 inputs x 8 outputs
                          ("einsum", "matmul", 2.0 * 2 * 3 * 12 * 5 + 30)]  # + the bias add
    tensors = _tensors(inst)
    assert tensors["bias"] == ("weight", 20, [(1, 20)])  # a Constant of 5 floats is a weight
    assert tensors["up"] == ("activation", 288, [(0, 288), (1, 288)])
    assert "as3d" not in tensors  # an int64 shape vector is no tensor


def test_the_instance_is_named_after_the_file_stem_never_a_builtin(tmp_path):
    from memplace.instances import builtin_names
    path = _save(_dynamic_batch_model(), tmp_path, name="resnet50.onnx")
    result = _run("import", path, "--hardware", "nnpi", "--batch", "1", "-o", tmp_path / "out.json")
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "out.json").read_text())
    assert data["name"] == data["workload"]["name"] == "resnet50"
    assert data["name"] not in builtin_names() and "resnet50@nnpi" in builtin_names()
    assert "wrote" in result.output and "(resnet50)" in result.output
    named = from_onnx(path, "gpu", batch=1, name="my-net")
    assert named["name"] == named["workload"]["name"] == "my-net"


def test_import_help_lists_every_hardware_preset():
    from memplace.instances import HARDWARE
    result = _run("import", "--help")
    assert len(HARDWARE) == 5 and all(preset in result.output for preset in HARDWARE)
