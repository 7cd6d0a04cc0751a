"""What memplace-lib/1 holds, and building it from scratch (`memplace lib build 1`).

Real programs first: the two real ONNX exports shipped with the package (ResNet-50 by the
dynamo exporter, BERT-base by TorchScript) imported on the NNP-I and the edge TPU, the
committed XLA programs (JAX, scheduled HLO), and the zoo's exports when they are in the
repository (`instances/data/zoo/`); then five generated workloads of the residency
benchmark set (where fast memory is small against what ops need, so placement matters).
Packing: MiniMalloc's challenging suite and example, idealloc's compiler traces, and the
XLA programs' heaps (XLA's own temp buffers). Every instance that is not a built-in
catalog instance is copied into the library, so it needs nothing outside itself.
"""
from __future__ import annotations

import gzip
import re
import shutil
import tempfile
from pathlib import Path
from typing import Callable

from memplace.bench.library import improve, store
from memplace.instances.library import Library

ONNX_EXPORTS = ("resnet50.dynamo", "bert_base.ts")
ONNX_PRESETS = ("nnpi", "edge-tpu")
# Generated workloads of the residency benchmark set where fast memory is small (a few, to
# keep the first version's solving within a shared machine's budget).
GENERATED = ("resnet50@edge-tpu", "resnet50[batch=8]@nnpi", "gpt2@edge-tpu", "vit-b16@edge-tpu",
             "bert-base@edge-tpu")
MAX_OPS = 1000  # larger programs (the XLA decoder's 9,735 ops) wait for a later version
MAX_PACKING_BUFFERS = 5000  # idealloc's Pangu trace (18,692 buffers) waits for a later version


def onnx_instances(folder: Path) -> list[Path]:
    """The shipped ONNX exports imported on each preset, as instance files in `folder`."""
    from memplace.instances import DATA_DIR, dumps, from_onnx
    bench = DATA_DIR.parent / "onnx" / "benchmarks"
    paths = []
    for name in ONNX_EXPORTS:
        model = folder / f"{name}.onnx"
        with gzip.open(bench / f"{name}.onnx.gz", "rb") as src, open(model, "wb") as dst:
            shutil.copyfileobj(src, dst)
        for preset in ONNX_PRESETS:
            data = from_onnx(model, preset)
            data["name"] = f"onnx-{name.replace('.', '-').replace('_', '-')}@{preset}"
            path = folder / f"{data['name']}.json"
            path.write_text(dumps(data), encoding="utf-8")
            paths.append(path)
    return paths


def program_sources() -> list[tuple[str, str]]:
    """(source, workload) of every program instance of version 1, real programs first."""
    from memplace.instances import catalog
    out: list[tuple[str, str]] = []
    for name in catalog.xla_names():
        out.append((str(catalog.builtin_path(name)), name.split("@")[0]))
    zoo = catalog.DATA_DIR / "zoo"
    for path in sorted(zoo.glob("*@*.json")):
        out.append((str(path), "zoo-" + path.stem.split("@")[0]))
    for name in GENERATED:
        out.append((name, name.split("@")[0].split("[")[0]))
    from memplace.instances import load
    return [(s, w) for s, w in out if load(s).n_ops <= MAX_OPS]


def packing_sources() -> list[tuple[Path, str, int | None]]:
    """(CSV, name, capacity or None) of every packing instance of version 1."""
    from memplace.instances.catalog import XLA_DIR
    from memplace.model.packing import BENCHMARKS
    from memplace.model.packing.minimalloc_csv import read_buffers
    out: list[tuple[Path, str, int | None]] = []
    for path in sorted((BENCHMARKS / "minimalloc" / "challenging").glob("*.csv")):
        out.append((path, f"minimalloc-{path.stem.split('.')[0]}", int(path.stem.split(".")[1])))
    out.append((BENCHMARKS / "minimalloc" / "examples" / "input.12.csv", "minimalloc-example", 12))
    for path in sorted((BENCHMARKS / "idealloc").glob("*.csv")):
        out.append((path, f"idealloc-{path.stem}", None))
    for path in sorted(XLA_DIR.glob("*.heap.csv")):
        out.append((path, f"{path.name.split('.')[0]}-heap", None))
    return [(p, n, c) for p, n, c in out if len(read_buffers(p).buffers) <= MAX_PACKING_BUFFERS]


def build(lib: Library, echo: Callable[[str], None] = print) -> None:
    """Add every instance of version 1 with its default and cheap bounds (no search yet:
    `improve` does that)."""
    have = {e.name for e in lib.entries}
    with tempfile.TemporaryDirectory() as tmp:
        sources = [(str(p), re.sub(r"@.*", "", p.stem)) for p in onnx_instances(Path(tmp))]
        for source, workload in sources + program_sources():
            from memplace.instances import load
            name = load(source).name
            if name in have:
                continue
            for e in improve.add_instance(lib, source, workload=workload):
                echo(f"added {e.id} ({e.split}, {e.ops} ops): default {e.default['objective']:.6g}, "
                     f"bound {e.bound or 0:.6g}")
            have.add(name)
    for path, name, capacity in packing_sources():
        if name in have:
            continue
        e = improve.add_packing(lib, path, name, name, capacity)
        echo(f"added {e.id} ({e.split}, {e.ops} buffers): default {e.default['objective']:.0f}, "
             f"bound {e.bound or 0:.0f}")
        have.add(name)
    store.save(lib)
