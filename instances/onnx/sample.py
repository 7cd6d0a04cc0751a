"""One run of the model on sample inputs: what shape inference cannot know.

Some programs' memory depends on the values they read: a mixture of experts gathers the
tokens its router sends to each expert (`NonZero`), a detector keeps the boxes that pass
its threshold, a branch (`If`) is taken on a computed condition. No shape inference can
size those; the program's memory is then that of one run, as a compiler's memory trace is
the trace of one execution. `memplace import --sample-run SEED` runs the model once in
onnxruntime (its CPU provider, one thread, graph optimizations off, so that every value
asked for is computed as the file says) on inputs drawn with SEED, or given
(`--sample-inputs FILE.npz`), and takes from that run

- the branch each `If` takes: the taken branch's nodes replace the `If` (its outputs are
  renamed to the `If`'s by `Identity`, an alias), level by level for nested ones;
- the shape of every value that the shape inference leaves unknown.

Everything else is resolved as without a run. Drawn inputs: floating point from a
standard normal, booleans true (masks keep everything), integers uniform below the
smallest table they index directly (a `Gather`'s data axis: token ids below the
vocabulary), zero where they index none. The weights must be readable (the file's
external data beside it): the run needs them, the import proper never reads them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from memplace.instances.onnx.errors import OnnxImportError

MAX_BRANCH_LEVELS = 64  # nested `If`s resolved level by level, one run per level


@dataclass
class SampleRun:
    """How the sample inputs are made, and what the run resolved (for the instance's
    provenance)."""
    seed: int
    given: dict[str, np.ndarray] = field(default_factory=dict)  # from --sample-inputs
    source: str | None = None  # where `given` came from
    base_dir: Path | None = None  # the model's folder, for its external data
    runs: int = 0
    branches: int = 0
    shapes: int = 0

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"seed": self.seed, "runs": self.runs,
                               "branches_taken": self.branches, "shapes_from_run": self.shapes}
        if self.source:
            out["inputs"] = self.source
        return out


def read_inputs(path: str | Path) -> dict[str, np.ndarray]:
    """The arrays of an `.npz` file by name, or one error naming the file."""
    try:
        with np.load(str(path), allow_pickle=False) as data:
            return {name: np.asarray(data[name]) for name in data.files}
    except Exception as exc:
        raise OnnxImportError(f"--sample-inputs {path}: not a readable .npz file "
                              f"({type(exc).__name__})") from None


def _gathered_rows(graph: onnx.GraphProto, name: str) -> int | None:
    """The smallest size of a table axis that `name` indexes directly (a `Gather`'s
    indices), from the initializers' dims (their data is not read)."""
    dims = {i.name: list(i.dims) for i in graph.initializer}
    sizes = []
    for node in graph.node:
        if node.op_type == "Gather" and len(node.input) > 1 and node.input[1] == name \
                and node.input[0] in dims:
            axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
            table = dims[node.input[0]]
            if table:
                sizes.append(int(table[axis % len(table)]))
    return min(sizes) if sizes else None


def sample_inputs(model: onnx.ModelProto, run: SampleRun) -> dict[str, np.ndarray]:
    """The value of every graph input: given, else drawn with the run's seed (module
    docstring). Each input's dimensions must be fixed (bound) by now."""
    graph = model.graph
    stored = {i.name for i in graph.initializer}
    inputs = [i for i in graph.input if i.name not in stored]
    names = {i.name for i in inputs}
    unknown = sorted(set(run.given) - names)
    if unknown:
        raise OnnxImportError(f"--sample-inputs {run.source}: {unknown[0]!r} is not an input "
                              f"of the model (its inputs: {', '.join(sorted(names))})")
    rng = np.random.default_rng(run.seed)
    feeds: dict[str, np.ndarray] = {}
    for value in inputs:
        t = value.type.tensor_type
        dtype = helper.tensor_dtype_to_np_dtype(t.elem_type)
        shape = tuple(int(d.dim_value) for d in t.shape.dim)
        if value.name in run.given:
            feeds[value.name] = run.given[value.name].astype(dtype, copy=False)
        elif np.issubdtype(dtype, np.floating):
            feeds[value.name] = rng.standard_normal(shape).astype(dtype)
        elif dtype == np.bool_:
            feeds[value.name] = np.ones(shape, dtype=bool)
        elif np.issubdtype(dtype, np.integer):
            rows = _gathered_rows(graph, value.name)
            feeds[value.name] = (rng.integers(0, rows, shape) if rows else np.zeros(shape)).astype(dtype)
        else:
            raise OnnxImportError(f"graph input {value.name!r}: no sample of its type "
                                  f"({onnx.TensorProto.DataType.Name(t.elem_type)}); give it "
                                  "with --sample-inputs")
    return feeds


def evaluate(model: onnx.ModelProto, names: list[str], feeds: dict[str, np.ndarray],
             run: SampleRun) -> dict[str, np.ndarray]:
    """The values `names` take in one run of `model` (its weights read from its folder)."""
    import onnxruntime as ort
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    if run.base_dir is not None:
        try:
            onnx.external_data_helper.load_external_data_for_model(copy, str(run.base_dir))
        except Exception as exc:  # a missing or short data file: OSError, onnx's ValidationError
            raise OnnxImportError(f"--sample-run needs the model's weights: {exc}") from None
    elif any(i.data_location == onnx.TensorProto.EXTERNAL for i in copy.graph.initializer):
        raise OnnxImportError("--sample-run needs the model's weights, and they are stored "
                              "outside this model (give its file)")
    outputs = {o.name for o in copy.graph.output}
    copy.graph.output.extend(helper.make_empty_tensor_value_info(n) for n in names
                             if n not in outputs)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    options.log_severity_level = 4  # its errors come back as one OnnxImportError
    try:
        session = ort.InferenceSession(copy.SerializeToString(), options,
                                       providers=["CPUExecutionProvider"])
        values = session.run(names, feeds)
    except Exception as exc:  # onnxruntime's own errors: one line, naming what it named
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise OnnxImportError(f"--sample-run: onnxruntime could not run the model: {detail}") from None
    run.runs += 1
    return dict(zip(names, values))


def _copy(node: onnx.NodeProto) -> onnx.NodeProto:
    copy = onnx.NodeProto()
    copy.CopyFrom(node)
    return copy


def _defined(graph: onnx.GraphProto, skip: int | None = None) -> set[str]:
    """Every value name `graph` and its subgraphs define, but those inside node `skip`'s."""
    names = {i.name for i in graph.input} | {i.name for i in graph.initializer}
    for k, node in enumerate(graph.node):
        names.update(o for o in node.output if o)
        if k == skip:
            continue
        for a in node.attribute:
            for sub in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)):
                names |= _defined(sub)
    return names


def take_branches(model: onnx.ModelProto, feeds: dict[str, np.ndarray], run: SampleRun) -> None:
    """Replace every `If` by the branch it takes in the sample run, in place."""
    graph = model.graph
    for _ in range(MAX_BRANCH_LEVELS):
        ifs = [n for n in graph.node if n.op_type == "If"]
        if not ifs:
            return
        stored = {i.name: i for i in graph.initializer}
        asked = sorted({n.input[0] for n in ifs} - set(stored) - set(feeds))
        values = evaluate(model, asked, feeds, run) if asked else {}
        for name in {n.input[0] for n in ifs}:  # a condition stored or given as an input
            if name in feeds:
                values[name] = feeds[name]
            elif name in stored:
                values[name] = numpy_helper.to_array(stored[name])
        nodes: list[onnx.NodeProto] = []  # copies: the graph's own nodes are cleared below
        for k, node in enumerate(graph.node):
            if node.op_type != "If":
                nodes.append(_copy(node))
                continue
            taken = "then_branch" if bool(np.asarray(values[node.input[0]]).reshape(-1)[0]) \
                else "else_branch"
            branch = next(a.g for a in node.attribute if a.name == taken)
            clash = _defined(branch) & _defined(graph, skip=k)  # SSA: none in valid ONNX
            if clash:
                raise OnnxImportError(f"node {node.name or node.op_type!r} (If): its "
                                      f"{taken} defines {sorted(clash)[0]!r}, which the graph "
                                      "defines too")
            nodes.extend(_copy(n) for n in branch.node)
            graph.initializer.extend(branch.initializer)
            graph.value_info.extend(branch.value_info)
            for inner, outer in zip(branch.output, node.output):
                if outer:
                    nodes.append(helper.make_node("Identity", [inner.name], [outer],
                                                  name=f"{node.name or 'If'}/{taken}/{outer}"))
            run.branches += 1
        del graph.node[:]
        graph.node.extend(nodes)
    raise OnnxImportError(f"--sample-run: `If` nodes nested more than {MAX_BRANCH_LEVELS} deep")
