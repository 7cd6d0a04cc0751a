"""`memplace import MODEL.onnx ...`: an ONNX model as an instance file; `memplace import-perf`:
the import time of a large generated graph."""
from __future__ import annotations

import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import click

from memplace.instances.hardware import HARDWARE
from memplace.model.core.errors import MemplaceError
from memplace.model.core.files import write_atomically
from memplace.model.core.reading import read_json

MB = 1e6


def _onnx_module():
    try:
        import memplace.instances.onnx as onnx_import
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] in ("onnx", "onnxruntime", "sympy"):
            raise MemplaceError(f"importing ONNX models needs the optional extra: pip install "
                                f"'memplace[onnx]' ({exc.name} is missing)") from None
        raise
    return onnx_import


def _hardware(value: str) -> str | dict[str, Any]:
    """A preset name, or a JSON file holding the spec's hardware object (or an instance)."""
    path = Path(value)
    if not value.endswith(".json") and not path.is_file():
        return value
    data = read_json(path, "hardware file")  # missing, folder, not UTF-8, NaN, deep: one error
    if isinstance(data, dict) and isinstance(data.get("hardware"), dict):
        data = data["hardware"]
    if not isinstance(data, dict):
        raise MemplaceError(f"{path}: expected a hardware object")
    return data


def _dims(pairs: tuple[str, ...]) -> dict[str, int]:
    dims = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        try:
            dims[name.strip()] = int(value)
        except ValueError:
            raise MemplaceError(f"--dim {pair!r} is not NAME=INTEGER") from None
        if not sep or not name.strip():
            raise MemplaceError(f"--dim {pair!r} is not NAME=INTEGER")
    return dims


def summary(instance: dict[str, Any]) -> str:
    """One line: nodes, ops after fusion, tensors, weight MB, GFLOPs, import seconds."""
    w, roles = instance["workload"], instance["import"]
    weights = sum(t["size"] for t in w["tensors"] if t["kind"] == "weight")
    flops = sum(op["flops"] for op in w["ops"])
    return (f"{instance['name']}: {roles['nodes']} nodes -> {len(w['ops'])} ops, "
            f"{len(w['tensors'])} tensors, weights {weights / MB:.3f} MB ({weights} B), "
            f"{flops / 1e9:.4f} GFLOPs ({flops:.0f}), import {roles['seconds']:.2f} s")


@click.command("import")
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("--hardware", required=True,
              help=f"a preset ({', '.join(HARDWARE)}) or a JSON file holding a hardware object")
@click.option("--batch", type=int, help="bind the inputs' symbolic leading (batch) dimension")
@click.option("--dim", multiple=True, metavar="NAME=VALUE", help="bind a symbolic dimension (repeatable)")
@click.option("--dtype-bytes", type=int, help="bytes per element of floating-point tensors (1: int8)")
@click.option("--name", help="the instance's (and its workload's) name [default: MODEL's stem, "
                              "e.g. resnet50 for resnet50.onnx]")
@click.option("--sample-run", "sample_seed", type=click.IntRange(min=0), metavar="SEED",
              help="take the branch each If takes and the shapes that depend on data (a mixture "
                   "of experts' routing, a detector's boxes) from one run of the model in "
                   "onnxruntime on inputs drawn with SEED (reads the weights)")
@click.option("--sample-inputs", type=click.Path(dir_okay=False, exists=True),
              help="an .npz of input values by name for that run (implies --sample-run; "
                   "inputs it lacks are drawn)")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="the instance file to write")
def import_command(model: str, hardware: str, batch: int | None, dim: tuple[str, ...],
                   dtype_bytes: int | None, name: str | None, sample_seed: int | None,
                   sample_inputs: str | None, output: str) -> None:
    """Import MODEL (an ONNX file; external weights are read only by --sample-run) as an
    instance file.

    Shapes are resolved with ONNX's and onnxruntime's shape inference, nodes fused into
    a compiler's ops, FLOPs counted from shapes (see memplace.instances.onnx). A program
    whose memory depends on the values it reads (control flow, data-dependent shapes) is
    refused unless --sample-run imports the program of one run on sample inputs."""
    from memplace.instances import dumps
    onnx_import = _onnx_module()
    sample = None
    if sample_seed is not None or sample_inputs is not None:
        from memplace.instances.onnx.sample import SampleRun, read_inputs
        sample = SampleRun(sample_seed or 0)
        if sample_inputs is not None:
            sample.given, sample.source = read_inputs(sample_inputs), sample_inputs
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", onnx_import.OnnxImportWarning)
        instance = onnx_import.from_onnx(model, _hardware(hardware), batch=batch, dims=_dims(dim),
                                         dtype_bytes=dtype_bytes, name=name, sample=sample)
    for warning in caught:  # echoed as `warning:` lines
        click.echo(f"warning: {warning.message}", err=True)
    write_atomically(output, dumps(instance), "instance file")
    click.echo(summary(instance))
    click.echo(f"wrote {output} ({instance['name']})")


def chain_model(nodes: int, width: int = 64):
    """A graph of `nodes` nodes: blocks of MatMul (own weight), residual Add, Relu and a
    Transpose, with no shapes written but the input's (inference finds the rest)."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
    graph_nodes, initializers, x = [], [], "x"
    for b in range(max(1, nodes // 4)):
        w = f"w{b}"
        initializers.append(numpy_helper.from_array(np.zeros((width, width), np.float32), w))
        graph_nodes += [helper.make_node("MatMul", [x, w], [f"m{b}"], name=f"block{b}.matmul"),
                        helper.make_node("Add", [f"m{b}", x], [f"a{b}"], name=f"block{b}.add"),
                        helper.make_node("Relu", [f"a{b}"], [f"r{b}"], name=f"block{b}.relu"),
                        helper.make_node("Transpose", [f"r{b}"], [f"t{b}"], name=f"block{b}.t",
                                         perm=[1, 0])]
        x = f"t{b}"
    graph = helper.make_graph(
        graph_nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [width, width])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)], initializer=initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@click.command("import-perf")
@click.option("--nodes", type=int, default=100_000, show_default=True)
def import_perf_command(nodes: int) -> None:
    """Time the import of a generated NODES-node graph (written to a file, then imported)."""
    import onnx
    from memplace.instances.onnx import from_onnx
    if nodes < 4:
        raise MemplaceError(f"--nodes {nodes}: must be >= 4")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "chain.onnx"
        onnx.save(chain_model(nodes), str(path))
        wall, cpu = time.perf_counter(), time.process_time()
        instance = from_onnx(path, "nnpi")
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    click.echo(summary(instance))
    click.echo(f"import of {instance['import']['nodes']} nodes: {wall:.2f} s wall, {cpu:.2f} s CPU")
