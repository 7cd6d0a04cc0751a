"""ONNX import (issue 15) on real exports (the packaged ResNet-50 from the dynamo exporter
and BERT-base from the TorchScript exporter) and the round trip of built-in workloads."""
from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from click.testing import CliRunner

from memplace.cli import main
import memplace.instances.onnx
from memplace.instances import from_onnx, workload


def _onnx_benchmarks_folder() -> Path:
    return Path(memplace.instances.onnx.__file__).resolve().parent / "benchmarks"


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """Unzipped real exports: name -> (path, float initializer bytes, Conv/MatMul/Gemm count)."""
    folder, out = _onnx_benchmarks_folder(), tmp_path_factory.mktemp("onnx")
    found = {}
    for name in ("resnet50.dynamo", "bert_base.ts"):
        path = out / f"{name}.onnx"
        with gzip.open(folder / f"{name}.onnx.gz", "rb") as src, open(path, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 24)
        model = onnx.load(str(path), load_external_data=False)
        floats = sum(int(np.prod(i.dims)) * 4 for i in model.graph.initializer
                     if i.data_type == onnx.TensorProto.FLOAT)
        products = sum(n.op_type in ("Conv", "MatMul", "Gemm") for n in model.graph.node)
        found[name] = (path, floats, products, {i.name for i in model.graph.initializer})
    return found


def _totals(inst):
    w = inst["workload"]
    return (sum(op["flops"] for op in w["ops"]),
            sum(t["size"] for t in w["tensors"] if t["kind"] == "weight"))


# --------------------------------------------------------------------------- ResNet-50
TORCH_RESNET50 = 8_178_368_512  # FlopCounterMode, instances/onnx/benchmarks/README.md
TORCH_BERT = 21_744_451_584


def test_real_resnet50_matches_torch_and_the_builtin_generator(real):
    path, float_bytes, products, _ = real["resnet50.dynamo"]
    inst = from_onnx(path, "nnpi")
    flops, weight_bytes = _totals(inst)
    assert weight_bytes == float_bytes == 102_015_648  # 0.998x of torch's parameter bytes
    ops = inst["workload"]["ops"]
    assert sum(op["type"] in ("conv", "fc") for op in ops) == products == 54
    # Above torch by exactly what torch does not count: each ReLU (one per conv output but
    # the projections'), the 16 residual adds, max pooling and the global average pool.
    builtin = workload("resnet50")
    convs = [(k, op) for k, op in enumerate(builtin["ops"]) if op["type"] == "conv"]
    out_elements = {t["producer"]: t["size"] for t in builtin["tensors"] if t["kind"] == "activation"
                    and t["producer"] is not None}
    relu = sum(out_elements[k] for k, op in convs if not op["name"].endswith("downsample"))
    adds = sum(out_elements[k] for k, op in convs if op["name"].endswith("conv3"))
    pools = sum(op["flops"] for op in builtin["ops"] if op["type"] == "pool")
    assert flops == TORCH_RESNET50 + relu + adds + pools
    assert (flops - TORCH_RESNET50) / TORCH_RESNET50 == pytest.approx(0.002083, abs=1e-6)
    # At int8 the import is the generator's ResNet-50, op for op and tensor for tensor.
    int8 = from_onnx(path, "nnpi", dtype_bytes=1)["workload"]
    assert len(int8["ops"]) == len(builtin["ops"]) == 56
    assert [op["type"] for op in int8["ops"]] == [op["type"] for op in builtin["ops"]]

    def live(w):
        return [(t["size"], t["accesses"][0][0], t["accesses"][-1][0]) for t in w["tensors"]
                if t["kind"] == "activation"]
    assert sorted(live(int8)) == sorted(live(builtin))


def test_real_resnet50_solves_from_the_imported_file(real, tmp_path):
    out = tmp_path / "resnet50.json"
    runner = CliRunner()
    result = runner.invoke(main, ["import", str(real["resnet50.dynamo"][0]), "--hardware", "nnpi",
                                  "--dtype-bytes", "1", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "122 nodes -> 56 ops" in result.output
    solved = runner.invoke(main, ["solve", str(out), "--solver", "compiler", "-o",
                                  str(tmp_path / "sol.json")])
    assert solved.exit_code == 0, solved.output
    assert "speedup vs slowest" in solved.output
    assert runner.invoke(main, ["validate", str(out), str(tmp_path / "sol.json")]).exit_code == 0


# --------------------------------------------------------------------------- BERT-base
def test_real_bert_base_needs_symbolic_shapes_and_matches_the_analytic_count(real):
    path, float_bytes, products, initializers = real["bert_base.ts"]
    inst = from_onnx(path, "nnpi")
    w = inst["workload"]
    flops, _ = _totals(inst)
    weights = [t for t in w["tensors"] if t["kind"] == "weight"]
    # Identity-shared (deduplicated) initializers count once; what is not an initializer is
    # the attention mask the exporter computes from constants, folded once per layer, and
    # the 128 rows of the position table a static gather reads, folded at compile time (so
    # the 512-row table itself is read by no op)
    position_table = 512 * 768 * 4
    assert float_bytes == 435_099_648
    assert sum(t["size"] for t in weights if t["name"] in initializers) == \
        float_bytes - position_table
    folded = [t for t in weights if t["name"] not in initializers]
    assert sorted(t["size"] for t in folded) == sorted([128 * 128 * 4] * 12 + [128 * 768 * 4])
    assert sum(op["type"] == "matmul" for op in w["ops"]) == products == 96
    L, S, D, F, H, d = 12, 128, 768, 3072, 12, 64
    linear = L * 2 * S * (4 * D * D + 2 * D * F)
    attention = L * 2 * (2 * H * S * S * d)  # QK^T and PV: torch's count has neither
    pooler = 2 * D * D                       # in torch's count, dead code in the export
    assert TORCH_BERT == linear + pooler
    per_layer = (5 * S * D + S * F          # bias adds
                 + 2 * S * D                # q and k scaled by d^-1/4 each
                 + H * S * S                # mask add
                 + 7 * H * S * S            # softmax (5) and its IsNaN/Where guard
                 + 2 * S * D                # residual adds
                 + 2 * 8 * S * D            # layer norms
                 + 8 * S * F)               # GELU as Div, Erf, Add, Mul, Mul
    embeddings = 2 * S * D + 8 * S * D
    assert flops == linear + attention + L * per_layer + embeddings
    assert flops >= TORCH_BERT
    assert (flops - linear - attention) / flops == pytest.approx(0.00409, abs=1e-5)


# --------------------------------------------------------------------------- round trip
def _export(name, tmp_path, **params):
    path = tmp_path / f"{name}.onnx"
    options = [f"--{k.replace('_', '-')}={v}" for k, v in params.items()]
    result = CliRunner().invoke(main, ["instances", "export", "--onnx", str(path), name, *options])
    assert result.exit_code == 0, result.output
    return path


def _compare(gen, imp, tails=(), aliases=(), unstored=0):
    """The import against its generator, where ops whose names end in `tails` are fused into
    the op before them and ops ending in `aliases` are aliases or folded at compile time
    (their reads move to the op after them); everything else must be equal, but for
    `unstored` bytes of weights the generator stores and the import does not."""
    gen_ops = gen["ops"]
    dropped_tail = [op["name"].endswith(tuple(tails)) for op in gen_ops]
    dropped_alias = [op["name"].endswith(tuple(aliases)) for op in gen_ops]
    kept = [k for k, op in enumerate(gen_ops) if not (dropped_tail[k] or dropped_alias[k])]
    assert [op["name"] for op in imp["ops"]] == [gen_ops[k]["name"] for k in kept]
    assert [op["type"] for op in imp["ops"]] == [gen_ops[k]["type"] for k in kept]
    index = {}
    for k in range(len(gen_ops)):
        if dropped_tail[k]:
            index[k] = index[k - 1]
        elif not dropped_alias[k]:
            index[k] = kept.index(k)
    for k in reversed(range(len(gen_ops))):
        if dropped_alias[k]:
            index[k] = index[k + 1]
    flops = [0.0] * len(kept)
    for k, op in enumerate(gen_ops):
        flops[index[k]] += op["flops"]
    assert [op["flops"] for op in imp["ops"]] == flops
    gen_tensors = {t["name"]: t for t in gen["tensors"]}
    for t in imp["tensors"]:
        if t["kind"] == "activation":
            g = gen_tensors[t["name"]]
            assert t["size"] == g["size"]
            assert (t["accesses"][0][0], t["accesses"][-1][0]) == \
                (index[g["accesses"][0][0]], index[g["accesses"][-1][0]]), t["name"]
    moved = [0] * len(kept)
    for t in gen["tensors"]:
        if t["kind"] == "weight":
            for k, b in t["accesses"]:
                moved[index[k]] += b
    imported = [0] * len(kept)
    for t in imp["tensors"]:
        if t["kind"] == "weight":
            for k, b in t["accesses"]:
                imported[k] += b
    assert imported == moved
    assert sum(t["size"] for t in imp["tensors"] if t["kind"] == "weight") == \
        sum(t["size"] for t in gen["tensors"] if t["kind"] == "weight") - unstored


@pytest.mark.parametrize("name, params", [("resnet50", {}), ("mobilenetv2", {}),
                                          ("resnet50", {"batch": 2, "width": 2}),
                                          ("mobilenetv2", {"batch": 3, "width": 4})])
def test_cnn_round_trip_gives_the_generator_back(name, params, tmp_path):
    gen = workload(name, **params)
    imp = from_onnx(_export(name, tmp_path, **params), "nnpi",
                    dtype_bytes=params.get("width", 1))["workload"]
    _compare(gen, imp)
    # the one difference: the classifier's weight and bias are two initializers
    assert len(imp["tensors"]) == len(gen["tensors"]) + 1
    assert {t["name"] for t in imp["tensors"]} - {t["name"] for t in gen["tensors"]} == \
        {f"{gen['ops'][-1]['name']}.bias"}


@pytest.mark.parametrize("params", [{}, {"batch": 2, "width": 2, "seq_len": 64}])
def test_bert_round_trip_differs_only_by_fusion_and_aliasing(params, tmp_path):
    gen = workload("bert-base", **params)
    imp = from_onnx(_export("bert-base", tmp_path, **params), "nnpi",
                    dtype_bytes=params.get("width", 1))["workload"]
    # Bias adds, the score scaling, GELU and the pooler's tanh fuse into the product before
    # them; reshapes are aliases. The built-in keeps them as ops (EGRL's node count). The
    # position rows' gather (static indices) folds at compile time into a weight of the
    # rows it reads, so the table's other rows are not stored and adding the rows becomes
    # a tail of the add before it.
    table = next(t for t in gen["tensors"] if t["name"] == "embeddings.position.table")
    rows = table["accesses"][0][1]
    _compare(gen, imp,
             tails=(".bias_add", ".scale", ".gelu", "pooler.tanh", "embeddings.add_position"),
             aliases=(".reshape", "embeddings.position"), unstored=table["size"] - rows)
    # 73 bias adds (72 in the layers, 1 in the pooler), 12 scalings, 12 GELUs, the tanh, 48
    # reshapes, the position rows and their add
    assert len(gen["ops"]) - len(imp["ops"]) == 73 + 12 + 12 + 1 + 48 + 2 == 148


def test_exported_gpt2_opens_in_onnxruntime(tmp_path):
    """The external data of every initializer has the length its data type gives: GPT-2's BOOL
    causal mask takes one byte per element (at four, onnxruntime refused the file)."""
    import onnxruntime as ort

    path = _export("gpt2", tmp_path, seq_len=16)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["input_ids"]
    mask = next(t for t in onnx.load(str(path), load_external_data=False).graph.initializer
                if t.name == "causal_mask")
    assert dict((e.key, e.value) for e in mask.external_data)["length"] == str(16 * 16)
