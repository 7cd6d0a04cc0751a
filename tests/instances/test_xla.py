"""XLA import (issue 20) on real JAX compilations: ops in XLA's schedule, FLOPs and bytes
against XLA's cost_analysis, unrolled loops, in-place updates, XLA's heap as a packing."""
from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from click.testing import CliRunner
from jax import lax

from memplace.cli import main
from memplace.instances.xla import (XlaImportError, cost_comparison, from_hlo_text, import_xla,
                                    write_baseline)
from memplace.instances.xla.heap import compare_heap
from memplace.model import Instance

RNG = np.random.default_rng(0)


def _normal(*shape):
    return jnp.asarray(RNG.standard_normal(shape, dtype=np.float32))


def scanned_mlp(w_in, w_layers, x):
    h = jnp.tanh(x @ w_in)

    def layer(h, w):
        return jax.nn.relu(h @ w) + h, jnp.sum(h)
    h, sums = lax.scan(layer, h, w_layers)
    return h, sums


SCAN_ARGS = (_normal(32, 64), _normal(5, 64, 64), _normal(16, 32))


def small_cnn(kernels, x):
    for w in kernels:
        x = jax.nn.relu(lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                                 dimension_numbers=("NHWC", "HWIO", "NHWC")))
    x = lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    return jnp.mean(x, axis=(1, 2))


CNN_ARGS = ([_normal(3, 3, 4, 8), _normal(3, 3, 8, 8)], _normal(2, 12, 12, 4))


def decode(cache, w, x):
    """Writes one row of the cache per step (in place) and attends over it."""
    def step(carry, i):
        cache, x = carry
        cache = lax.dynamic_update_slice(cache, (x @ w)[None], (i, 0, 0))
        x = jnp.tanh(jnp.einsum("tbd,bd->bd", cache, x))
        return (cache, x), None
    (cache, x), _ = lax.scan(step, (cache, x), jnp.arange(4))
    return x


DECODE_ARGS = (jnp.zeros((8, 4, 32)), _normal(32, 32), _normal(4, 32))


@pytest.fixture(scope="module")
def scan_import():
    return import_xla(scanned_mlp, "nnpi", args=SCAN_ARGS, name="scan")


def _within(comparison, tolerance=0.05):
    for key, row in comparison.items():
        assert "xla" in row, key
        assert abs(row["memplace"] - row["xla"]) <= tolerance * max(row["xla"], 1.0), (key, row)


def test_scan_is_unrolled_by_its_trip_count_and_flops_match_cost_analysis(scan_import):
    inst, record = scan_import.instance, scan_import.instance["import"]
    assert [loop["trip_count"] for loop in record["loops"]] == [5]
    Instance.from_dict(inst)
    names = [op["name"] for op in inst["workload"]["ops"]]
    body = [n for n in names if n.startswith(record["loops"][0]["while"] + "[0]/")]
    assert body and all(any(n.startswith(f"{record['loops'][0]['while']}[{i}]/") for n in names)
                        for i in range(5))
    _within(cost_comparison(inst))
    # the unrolled instance does the body's matmul 5 times: 2*16*64*64 each, plus x @ w_in
    dots = sum(op["flops"] for op in inst["workload"]["ops"] if op["type"] == "dot")
    assert dots == 2 * 16 * 32 * 64 + 5 * 2 * 16 * 64 * 64


def test_parameters_are_weights_and_outputs_live_to_the_end(scan_import):
    inst = scan_import.instance
    tensors, n = inst["workload"]["tensors"], len(inst["workload"]["ops"])
    weights = [t for t in tensors if t["kind"] == "weight" and t["size"] > 4]
    assert sorted(t["size"] for t in weights) == sorted([32 * 64 * 4, 5 * 64 * 64 * 4, 16 * 32 * 4])
    last_readers = [t for t in tensors if t["kind"] == "activation" and t["accesses"][-1][0] == n - 1]
    assert {16 * 64 * 4, 5 * 4} <= {t["size"] for t in last_readers}


def test_convolution_and_pooling_flops_match_cost_analysis_exactly():
    got = import_xla(small_cnn, "nnpi", args=CNN_ARGS)
    comparison = cost_comparison(got.instance)
    assert comparison["flops"]["memplace"] == comparison["flops"]["xla"]
    _within(comparison)
    assert any(op["type"] == "convolution" for op in got.instance["workload"]["ops"])


def test_a_cache_updated_in_place_is_one_tensor_across_decode_steps():
    got = import_xla(decode, "nnpi", args=DECODE_ARGS)
    tensors = got.instance["workload"]["tensors"]
    caches = [t for t in tensors if t["size"] == 8 * 4 * 32 * 4 and t["kind"] == "activation"]
    # XLA copies the (read-only) parameter once, then every step updates that copy in place
    assert len(caches) == 1
    writers = [k for k, b in caches[0]["accesses"] if b == 4 * 32 * 4 * 2 or b == 4 * 32 * 4]
    assert len(writers) >= 4
    _within(cost_comparison(got.instance))


def test_xla_offsets_validate_as_a_packing_and_memplace_packs_no_higher(scan_import, tmp_path):
    heap = scan_import.heap
    assert heap.heap_size == scan_import.instance["import"]["memory_analysis"]["temp_size_in_bytes"]
    assert heap.problems() == []
    assert heap.merged  # the loop state shares its buffer with the body's parameter and root
    csv = tmp_path / "scan.csv"
    write_baseline(heap, csv, "test")
    got = compare_heap(csv, time_limit=2)
    assert got.xla_valid == [] and got.check == []
    assert got.lower_bound <= got.height <= got.xla_height


def test_saved_hlo_text_imports_without_jax_and_matches_the_compiled_import(scan_import, tmp_path,
                                                                            monkeypatch):
    text = jax.jit(scanned_mlp).lower(*SCAN_ARGS).compile().as_text()
    path = tmp_path / "scan.txt"
    path.write_text(text)
    monkeypatch.setitem(sys.modules, "jax", None)  # importing jax now fails
    out = tmp_path / "scan.json"
    result = CliRunner().invoke(main, ["import-xla", str(path), "--hardware", "nnpi", "-o",
                                       str(out), "--name", "scan"])
    assert result.exit_code == 0, result.output
    loaded = Instance.from_file(out)
    assert loaded.n_ops == len(scan_import.instance["workload"]["ops"])
    assert loaded.n_tensors == len(scan_import.instance["workload"]["tensors"])


def test_a_saved_module_proto_imports_as_its_text_does(scan_import, tmp_path):
    compiled = jax.jit(scanned_mlp).lower(*SCAN_ARGS).compile()
    module = compiled.runtime_executable().hlo_modules()[0]
    path = tmp_path / "scan.pb"
    path.write_bytes(module.as_serialized_hlo_module_proto())
    got = import_xla(path, "nnpi", name="scan")
    assert got.instance["workload"] == scan_import.instance["workload"]


def test_a_dump_written_as_proto_imports_with_xla_heap_beside_it(tmp_path, capfd):
    dump = tmp_path / "dump"
    options = {"xla_dump_to": str(dump), "xla_dump_hlo_as_proto": True,
               "xla_dump_hlo_as_text": True}
    jax.jit(scanned_mlp).lower(*SCAN_ARGS).compile(compiler_options=options)
    [proto] = dump.glob("*after_optimizations.hlo.pb")  # an HloProto: the module is field 1
    [text] = dump.glob("*after_optimizations.txt")
    from_proto, from_text = import_xla(proto, "nnpi", name="s"), import_xla(text, "nnpi", name="s")
    assert from_proto.instance["workload"] == from_text.instance["workload"]
    assert from_proto.heap is not None and from_proto.heap == from_text.heap
    assert "protocol buffer" not in capfd.readouterr().err  # no XLA log line from a wrong guess


def test_a_proto_xla_cannot_read_is_exit_2_naming_the_file(tmp_path):
    bad = tmp_path / "bad.hlo.pb"
    bad.write_bytes(b"\x08\x96\x01garbage\xff\xfe")
    result = CliRunner().invoke(main, ["import-xla", str(bad), "--hardware", "nnpi", "-o", "x.json"])
    assert result.exit_code == 2 and "bad.hlo.pb" in result.output
    assert "Traceback" not in result.output


def test_a_missing_extra_is_one_line_saying_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "jax", None)
    result = CliRunner().invoke(main, ["import-xla", "json:dumps", "--hardware", "nnpi", "-o",
                                       "x.json"])
    assert result.exit_code == 2
    assert "pip install 'memplace[xla]'" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("program, args, named", [
    (lambda x: lax.while_loop(lambda c: jnp.sum(c) < 100.0, lambda c: c * 2.0, x),
     (jnp.ones(4),), "while"),
    (lambda p, x: lax.cond(p > 0, jnp.sin, jnp.cos, x), (1.0, jnp.ones(4)), "conditional"),
])
def test_unmodelable_instructions_are_refused_by_name(program, args, named):
    text = jax.jit(program).lower(*args).compile().as_text()
    with pytest.raises(XlaImportError, match=named):
        from_hlo_text(text, "nnpi")


def test_malformed_input_is_exit_2_naming_the_file_or_instruction(tmp_path):
    runner = CliRunner()
    garbage = tmp_path / "garbage.txt"
    garbage.write_text("not hlo at all")
    result = runner.invoke(main, ["import-xla", str(garbage), "--hardware", "nnpi", "-o", "x.json"])
    assert result.exit_code == 2 and "garbage.txt" in result.output
    text = jax.jit(scanned_mlp).lower(*SCAN_ARGS).compile().as_text()
    broken = tmp_path / "broken.txt"
    broken.write_text(text.replace("dot(", "dot(%nowhere, ", 1))
    result = runner.invoke(main, ["import-xla", str(broken), "--hardware", "nnpi", "-o", "x.json"])
    assert result.exit_code == 2 and "nowhere" in result.output and "Traceback" not in result.output
    result = runner.invoke(main, ["import-xla", "json:nothing_here", "--hardware", "nnpi", "-o",
                                  "x.json"])
    assert result.exit_code == 2 and "nothing_here" in result.output


@pytest.mark.parametrize("program, args", [
    (lambda x: jnp.sort(x, axis=-1), (_normal(8, 64),)),
    (lambda x, i: x.at[i].add(1.0), (_normal(32, 8), jnp.array([1, 3, 5]))),
    (lambda x, i: x[i] * 2.0, (_normal(32, 8), jnp.array([1, 3, 5]))),
    (lambda x: jnp.fft.fft(x).real, (_normal(16),)),
    (lambda x: lax.while_loop(lambda c: c[0] < 6, lambda c: (c[0] + 1, c[1] * 2.0), (0, x))[1],
     (_normal(4),)),
    (lambda x: lax.map(lambda v: jnp.exp(v).sum(), x), (_normal(6, 32),)),
], ids=["sort", "scatter", "gather", "fft", "small-loop", "lax-map"])
def test_sort_scatter_gather_fft_and_small_loops_count_as_xla_does(program, args):
    got = import_xla(program, "nnpi", args=args)
    _within(cost_comparison(got.instance), tolerance=0.01)
    assert got.heap.problems() == []


def test_a_program_without_temp_buffers_has_an_empty_heap(tmp_path):
    got = import_xla(lambda x: x[::-1] * 2.0, "nnpi", args=(_normal(8),))
    assert got.heap.buffers == [] and got.heap.heap_size == 0
    write_baseline(got.heap, tmp_path / "empty.csv", "test")
    compared = compare_heap(tmp_path / "empty.csv", time_limit=1)
    assert compared.height == compared.xla_height == 0 and compared.check == []


def test_a_module_path_compiles_on_its_example_args_and_writes_the_heap(tmp_path):
    out, heap = tmp_path / "forward.json", tmp_path / "forward.csv"
    result = CliRunner().invoke(main, ["import-xla", "xla_example_program:forward", "--hardware",
                                       "edge-npu", "-o", str(out), "--heap", str(heap)])
    assert result.exit_code == 0, result.output
    inst = Instance.from_file(out)
    assert inst.hardware_name == "edge-npu" and inst.workload_name == "forward"
    _within(cost_comparison(inst.data))
    assert (tmp_path / "forward.xla.csv").is_file() and (tmp_path / "forward.xla.json").is_file()
    assert "validate" in result.output
