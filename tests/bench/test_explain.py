"""`memplace explain`: a solution of either problem told tensor by tensor, by the names
the instance gives its tensors and ops; its CSV and its timeline plot."""
from __future__ import annotations

import csv
import io
import json

import numpy as np
from click.testing import CliRunner

from memplace.cli import main
from memplace.model.explain import csv_text, explain, text_table
from memplace.model.residency import Window, simulate, validate
from memplace.solvers import solve
from residency_cases import DRAM, SRAM, small, small_dict, solution


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _residency_files(tmp_path):
    """w (weight) prefetched into SRAM at op0 for op2; a written into SRAM by op0, serving
    op0..op1, evicted home at op2 and done by op4; the rest homed in DRAM."""
    inst = small()
    windows = [Window(0, SRAM, 0, 2, 2), Window(1, SRAM, 0, 0, 1, evict=(2, 4))]
    sol = solution(inst, windows)
    assert validate(inst, sol).valid
    sol.latency = simulate(inst, sol)
    inst_path, sol_path = tmp_path / "small.json", tmp_path / "sol.json"
    inst_path.write_text(json.dumps(small_dict()))
    sol.write(sol_path, inst)
    return inst, inst_path, sol_path, sol


def test_windows_are_told_by_op_names_with_the_bytes_they_copy(tmp_path):
    inst, _, sol_path, sol = _residency_files(tmp_path)
    e = explain(inst, sol_path)
    assert (e.problem, e.valid, e.latency) == ("residency", True, sol.latency)
    rows = {r.name: r for r in e.rows}
    assert [w.describe(e.ops, e.levels) for w in rows["w"].windows] == \
        ["SRAM: prefetch at op0, serves op2"]
    assert [w.describe(e.ops, e.levels) for w in rows["a"].windows] == \
        ["SRAM: written by op0, serves op0..op1, evict at op2 (done by op4)"]
    assert (rows["w"].bytes_copied, rows["a"].bytes_copied, rows["b"].bytes_copied) == (100, 200, 0)
    assert (rows["a"].bytes_accessed, rows["a"].home.first, rows["a"].home.last) == (600, 0, 4)
    table = text_table(e)
    assert "valid, latency" in table and f"{sol.latency * 1e6:.3f} µs" in table
    assert "1 windows" not in table and "2 windows" in table and "copied 300" in table


def test_csv_has_one_row_per_home_and_window(tmp_path):
    inst, _, sol_path, _ = _residency_files(tmp_path)
    rows = list(csv.DictReader(io.StringIO(csv_text(explain(inst, sol_path)))))
    assert [(r["tensor"], r["role"]) for r in rows] == [
        ("w", "home"), ("w", "prefetch"), ("a", "home"), ("a", "defining"), ("b", "home"), ("x", "home")]
    prefetch, defining = rows[1], rows[3]
    assert (prefetch["level"], prefetch["copy_at"], prefetch["first_op"], prefetch["bytes_copied"]) == \
        ("SRAM", "op0", "op2", "100")
    assert (defining["evict_at"], defining["evict_due"], defining["bytes_copied"]) == ("op2", "op4", "200")
    assert rows[2]["level"] == "DRAM" and rows[2]["bytes_accessed"] == "600" and rows[2]["bytes_copied"] == ""


def test_a_static_solution_shows_offsets_on_an_addressed_level(tmp_path):
    inst = small(addressed=True)
    result = solve(inst, "compiler", time_limit=None)
    path = tmp_path / "static.json"
    result.to_solution().write(path, inst)
    e = explain(inst, path)
    assert e.problem == "static" and e.addressed and all(not r.windows for r in e.rows)
    in_sram = [r for r in e.rows if r.home.level == SRAM]
    assert in_sram and [r.home.offset for r in in_sram] == [int(result.offsets[r.index]) for r in in_sram]
    assert all(r.home.offset is None for r in e.rows if r.home.level == DRAM)
    header = text_table(e).splitlines()[3]
    assert header.split()[:5] == ["tensor", "kind", "bytes", "level", "offset"]


def test_explain_command_prints_the_table_or_csv_and_draws_the_timeline(tmp_path):
    _, inst_path, sol_path, _ = _residency_files(tmp_path)
    table = _run("explain", inst_path, sol_path, "--plot", tmp_path / "t.png")
    assert table.exit_code == 0, table.output
    assert "SRAM: prefetch at op0, serves op2" in table.output and "wrote" in table.output
    assert (tmp_path / "t.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    as_csv = _run("explain", inst_path, sol_path, "--csv")
    assert as_csv.output.splitlines()[0].startswith("tensor,kind,bytes,role,level")
    missing = _run("explain", inst_path, tmp_path / "none.json")
    assert missing.exit_code == 2 and "none.json" in missing.output


def test_an_imported_model_is_explained_by_its_onnx_names(tmp_path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    nodes = [helper.make_node("MatMul", ["input", "fc.weight"], ["fc_out"], name="my_fc"),
             helper.make_node("Relu", ["fc_out"], ["act"], name="my_relu"),
             helper.make_node("MatMul", ["act", "head.weight"], ["logits"], name="my_head")]
    graph = helper.make_graph(
        nodes, "tiny", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [4, 2])],
        [numpy_helper.from_array(np.zeros((8, 8), np.float32), "fc.weight"),
         numpy_helper.from_array(np.zeros((8, 2), np.float32), "head.weight")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "tiny.onnx")
    inst_path, sol_path = tmp_path / "tiny.json", tmp_path / "sol.json"
    assert _run("import", tmp_path / "tiny.onnx", "--hardware", "nnpi", "-o", inst_path).exit_code == 0
    assert _run("solve", inst_path, "--solver", "compiler", "-o", sol_path).exit_code == 0
    out = _run("explain", inst_path, sol_path).output
    names = [line.split()[0] for line in out.splitlines()[5:]]
    assert names == ["input", "fc.weight", "act", "head.weight", "logits"]
    assert "my_fc" in out and "my_head" in out  # ops by their node names
    ops = json.loads(inst_path.read_text())["workload"]["ops"]
    assert [op["nodes"] for op in ops] == [["my_fc", "my_relu"], ["my_head"]]  # fused names kept
