"""`memplace import --sample-run`: a program whose memory depends on the values it reads
(a mixture of experts' routing, a detector's boxes, a computed branch) imported as the
program of one run on sample inputs (`memplace.instances.onnx.sample`), where the import
without it refuses, naming the node and the option."""
from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper, numpy_helper

from memplace.cli import main
from memplace.instances import from_onnx
from memplace.instances.onnx.errors import OnnxImportError
from memplace.instances.onnx.sample import SampleRun, sample_inputs

F, I64 = TensorProto.FLOAT, TensorProto.INT64
N = 64  # rows of the routed input


def _vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def _routed():
    """x [64,16] -> the rows whose first feature is positive (NonZero, then Gather) through
    a 16x32 expert: the expert's input and output have as many rows as the run keeps."""
    nodes = [helper.make_node("Slice", ["x", "s0", "s1", "ax"], ["first"], name="first"),
             helper.make_node("Greater", ["first", "zero"], ["keep"], name="router"),
             helper.make_node("Squeeze", ["keep", "ax"], ["keep1"], name="squeeze"),
             helper.make_node("NonZero", ["keep1"], ["idx2"], name="nonzero"),
             helper.make_node("Squeeze", ["idx2", "zero_axis"], ["idx"], name="idx"),
             helper.make_node("Gather", ["x", "idx"], ["rows"], name="gather", axis=0),
             helper.make_node("MatMul", ["rows", "w"], ["y"], name="expert")]
    inits = [numpy_helper.from_array(np.array([0], np.int64), "s0"),
             numpy_helper.from_array(np.array([1], np.int64), "s1"),
             numpy_helper.from_array(np.array([1], np.int64), "ax"),
             numpy_helper.from_array(np.array([0], np.int64), "zero_axis"),
             numpy_helper.from_array(np.array(0, np.float32), "zero"),
             numpy_helper.from_array(np.ones((16, 32), np.float32), "w")]
    graph = helper.make_graph(nodes, "routed", [_vi("x", F, [N, 16])], [_vi("y", F, None)],
                              initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _branchy():
    """ids [8] (token ids of a 10-row table) -> embeddings e [8,4]; if their sum is positive
    a 4x64 projection, else a Relu: which one runs depends on the ids' rows."""
    w = numpy_helper.from_array(np.ones((4, 64), np.float32), "w")
    then = helper.make_graph([helper.make_node("MatMul", ["e", "w"], ["t"], name="wide")],
                             "then", [], [_vi("t", F, None)])
    other = helper.make_graph([helper.make_node("Relu", ["e"], ["r"], name="narrow")],
                              "else", [], [_vi("r", F, None)])
    table = np.linspace(-1, 1, 40, dtype=np.float32).reshape(10, 4)
    nodes = [helper.make_node("Gather", ["table", "ids"], ["e"], name="embed"),
             helper.make_node("ReduceSum", ["e"], ["s"], name="sum", keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["c"], name="test"),
             helper.make_node("If", ["c"], ["y"], name="branch", then_branch=then, else_branch=other),
             helper.make_node("Mul", ["y", "y"], ["z"], name="square")]
    graph = helper.make_graph(nodes, "branchy", [_vi("ids", I64, [8])], [_vi("z", F, None)],
                              initializer=[numpy_helper.from_array(table, "table"), w,
                                           numpy_helper.from_array(np.array(0, np.float32), "zero")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), table


def _kept_rows(seed):
    x = sample_inputs(_routed(), SampleRun(seed))["x"]
    return int((x[:, 0] > 0).sum())


def test_data_dependent_rows_are_refused_with_the_option_then_sized_by_the_run():
    with pytest.raises(OnnxImportError, match=r"'idx2'.*NonZero.*unknown.*--sample-run SEED"):
        from_onnx(_routed(), "nnpi", name="m")
    for seed in (0, 1):
        inst = from_onnx(_routed(), "nnpi", name="m", sample=SampleRun(seed))
        (expert,) = [o for o in inst["workload"]["ops"] if o["name"].startswith("expert")]
        kept = _kept_rows(seed)
        assert 0 < kept < N
        sizes = {t["name"]: t["size"] for t in inst["workload"]["tensors"]}
        assert expert["flops"] == 2 * kept * 16 * 32
        assert sizes["y"] == kept * 32 * 4
        assert inst["workload"]["params"] == {"sample_seed": seed}
        assert inst["import"]["sample_run"]["runs"] == 1
        assert inst["import"]["sample_run"]["shapes_from_run"] >= 3  # idx2, idx, rows, y
    assert _kept_rows(0) != _kept_rows(1)  # so the sizes above came from each seed's run


def test_an_if_is_refused_without_a_run_and_replaced_by_the_branch_the_run_takes():
    model, table = _branchy()
    with pytest.raises(OnnxImportError, match=r"'branch' \(If\).*--sample-run SEED"):
        from_onnx(model, "nnpi", name="m")
    taken = set()
    for seed in range(6):
        ids = sample_inputs(model, SampleRun(seed))["ids"]
        assert ids.min() >= 0 and ids.max() < 10  # drawn below the table's rows
        positive = table[ids].sum() > 0
        inst = from_onnx(model, "nnpi", name="m", sample=SampleRun(seed))
        names = [o["name"] for o in inst["workload"]["ops"]]
        assert any(n.startswith("wide") for n in names) == positive  # the projection's op
        sizes = {t["name"]: t["size"] for t in inst["workload"]["tensors"]}
        assert sizes["z"] == 8 * (64 if positive else 4) * 4  # the square of what ran
        assert ("w" in sizes) == positive  # the projection's weight is read only if it runs
        assert inst["import"]["sample_run"]["branches_taken"] == 1
        taken.add(bool(positive))
    assert taken == {True, False}  # both branches were checked


def test_given_sample_inputs_choose_the_branch(tmp_path):
    model, table = _branchy()
    path = tmp_path / "branchy.onnx"
    onnx.save(model, str(path))
    low = np.zeros(8, np.int64)  # row 0: all negative, so the Relu branch
    high = np.full(8, 9, np.int64)  # row 9: all positive, so the projection
    for ids, wide in ((low, False), (high, True)):
        npz = tmp_path / f"{wide}.npz"
        np.savez(npz, ids=ids)
        out = tmp_path / f"{wide}.json"
        result = CliRunner().invoke(main, ["import", str(path), "--hardware", "nnpi",
                                           "--sample-inputs", str(npz), "-o", str(out)])
        assert result.exit_code == 0, result.output
        inst = json.loads(out.read_text())
        assert any(o["name"].startswith("wide") for o in inst["workload"]["ops"]) == wide
        assert inst["workload"]["params"] == {"sample_seed": 0, "sample_inputs": f"{wide}.npz"}
    wrong = tmp_path / "wrong.npz"
    np.savez(wrong, tokens=low)
    before = (tmp_path / "True.json").read_text()
    result = CliRunner().invoke(main, ["import", str(path), "--hardware", "nnpi",
                                       "--sample-inputs", str(wrong), "-o", str(tmp_path / "True.json")])
    assert result.exit_code == 2 and "'tokens' is not an input of the model" in result.output
    assert (tmp_path / "True.json").read_text() == before  # nothing written is lost


def test_a_run_needs_the_weights_stored_beside_the_model(tmp_path):
    model = _routed()
    path = tmp_path / "routed.onnx"
    onnx.save(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
              location="routed.onnx.data", size_threshold=0)
    ok = CliRunner().invoke(main, ["import", str(path), "--hardware", "nnpi", "--sample-run", "0",
                                   "-o", str(tmp_path / "a.json")])
    assert ok.exit_code == 0, ok.output
    (tmp_path / "routed.onnx.data").unlink()
    gone = CliRunner().invoke(main, ["import", str(path), "--hardware", "nnpi", "--sample-run", "0",
                                     "-o", str(tmp_path / "b.json")])
    assert gone.exit_code == 2 and "needs the model's weights" in gone.output
    assert "Traceback" not in gone.output and not (tmp_path / "b.json").exists()


def test_a_model_without_such_values_imports_the_same_ops_and_tensors_with_a_run():
    from memplace.cli.onnx_import import chain_model
    plain = from_onnx(chain_model(12, width=8), "nnpi", name="m")
    run = SampleRun(3)
    sampled = from_onnx(chain_model(12, width=8), "nnpi", name="m", sample=run)
    assert sampled["workload"]["ops"] == plain["workload"]["ops"]
    assert sampled["workload"]["tensors"] == plain["workload"]["tensors"]
    assert run.runs == 0 and sampled["import"]["sample_run"]["shapes_from_run"] == 0


def test_a_condition_given_as_an_input_takes_its_branch_without_a_run():
    model, _ = _branchy()
    graph = model.graph
    test = next(n for n in graph.node if n.name == "test")
    graph.node.remove(test)  # the condition becomes an input of the model
    graph.input.append(_vi("c", TensorProto.BOOL, []))
    for flag, wide in ((True, True), (False, False)):
        run = SampleRun(0, given={"c": np.array(flag)}, source="c.npz")
        inst = from_onnx(model, "nnpi", name="m", sample=run)
        assert any(o["name"].startswith("wide") for o in inst["workload"]["ops"]) == wide
        assert run.branches == 1 and run.runs == 0
