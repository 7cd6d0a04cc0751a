"""What each memplace-lib version holds, and building it from scratch (`memplace lib build N`).

Version 1 (frozen):

Real programs first: the two real ONNX exports shipped with the package (ResNet-50 by the
dynamo exporter, BERT-base by TorchScript) imported on the NNP-I and the edge TPU, the
committed XLA programs (JAX, scheduled HLO), and the zoo's exports when they are in the
repository (`instances/data/zoo/`); then five generated workloads of the residency
benchmark set (where fast memory is small against what ops need, so placement matters).
Packing: MiniMalloc's challenging suite and example, idealloc's compiler traces, and the
XLA programs' heaps (XLA's own temp buffers). Every instance that is not a built-in
catalog instance is copied into the library, so it needs nothing outside itself.

Version 2 (`build_2`): everything of version 1 (the same instances, their best known
solutions and bounds carried over as candidates with their provenance, then re-checked),
plus every committed zoo export (`instances/data/zoo/`) and XLA program of at most
`MAX_OPS` ops; packing adds idealloc's whole Pangu trace and the generated families of
`memplace.model.packing.generate.HELDOUT` (cut instances come with the packing their cuts
certify, at the peak live size: optimal by construction).

Version 3 (`build_3`): version 2's entries as frozen (instances, best known solutions,
bounds and certificates, each with the provenance it was found with), improved further by
`memplace lib improve`; nothing is added or left out.

Version 4 (`build_4`): version 3's entries as frozen, the same way, improved further.

Version 5 (`build_5`): version 4's entries as frozen, the same way, improved further.

Version 6 (`build_6`): version 5's entries as frozen, the same way, improved further.

Version 7 (`build_7`): version 6's entries as frozen, the same way, improved further.

Version 8 (`build_8`): version 7's entries as frozen, the same way, improved further.

Version 9 (`build_9`): version 8's entries as frozen, the same way, improved further.

Version 10 (`build_10`): version 9's entries as frozen, the same way, improved further.
"""
from __future__ import annotations

import gzip
import re
import shutil
import tempfile
from pathlib import Path
from typing import Callable

from memplace.bench.library import improve, store
from memplace.bench.library.tables import added_text, figure, unit
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


def packing_sources(max_buffers: int = MAX_PACKING_BUFFERS) -> list[tuple[Path, str, int | None]]:
    """(CSV, name, capacity or None) of every packing file of at most `max_buffers`
    buffers (version 1's cut by default): MiniMalloc's, idealloc's traces, XLA's heaps."""
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
    return [(p, n, c) for p, n, c in out if len(read_buffers(p).buffers) <= max_buffers]


def _add_programs(lib: Library, sources: list[tuple[str, str]], echo: Callable[[str], None]) -> None:
    from memplace.instances import load
    have = {e.name for e in lib.entries} | {d["instance"] for d in lib.dropped}
    for source, workload in sources:
        name = load(source).name
        if name in have:
            continue
        for e in improve.add_instance(lib, source, workload=workload):
            echo(added_text(e))
        have.add(name)


def _add_packings(lib: Library, sources: list[tuple[Path, str, int | None]],
                  echo: Callable[[str], None]) -> None:
    have = {e.name for e in lib.entries}
    for path, name, capacity in sources:
        if name in have:
            continue
        e = improve.add_packing(lib, path, name, name, capacity)
        echo(f"added {e.id} ({e.split}, {e.ops} buffers): default {e.default['objective']:.0f}, "
             f"bound {e.bound or 0:.0f}")
        have.add(name)


def build(lib: Library, echo: Callable[[str], None] = print) -> None:
    """Add every instance of version 1 with its default and cheap bounds (no search yet:
    `improve` does that)."""
    with tempfile.TemporaryDirectory() as tmp:
        sources = [(str(p), re.sub(r"@.*", "", p.stem)) for p in onnx_instances(Path(tmp))]
        _add_programs(lib, sources + program_sources(), echo)
    _add_packings(lib, packing_sources(), echo)
    store.save(lib)


# ------------------------------------------------------------------ version 2
MAX_PACKING_BUFFERS_2 = 20_000  # idealloc's Pangu trace (18,692 buffers) is in version 2


def workload_of(name: str) -> str:
    """The program an instance is of, for the split: its architecture's name whatever the
    source (zoo export, shipped ONNX export and its exporter, generator), preset, batch or
    phase, so that `zoo/gpt2-prefill@nnpi`, `zoo/gpt2-decode@nnpi` and `gpt2@edge-tpu`, or
    `vit-b16@edge-tpu` and `zoo/vit-b-16@nnpi`, land on the same side."""
    name = re.sub(r"^(zoo/|onnx-)", "", name)
    name = re.sub(r"(\[.*\])?@.*$", "", name)
    name = re.sub(r"-(dynamo|ts|prefill|decode)$", "", name)
    return re.sub(r"[-_.]", "", name)


def program_sources_2() -> list[tuple[str, str]]:
    """(source, workload) of every program instance of version 2 but the shipped ONNX
    exports (imported in a temporary folder by `onnx_instances`): the XLA programs and
    the zoo's exports of at most MAX_OPS ops, then version 1's generated workloads."""
    from memplace.instances import catalog, load
    from memplace.instances.zoo.index import zoo_names
    names = catalog.xla_names() + zoo_names() + list(GENERATED)
    return [(n, workload_of(n)) for n in names if load(n).n_ops <= MAX_OPS]


def packing_sources_2() -> list[tuple[Path, str, int | None]]:
    """(CSV, name, capacity or None) of version 2's packing files (generated families
    apart: `add_generated` writes them)."""
    return packing_sources(MAX_PACKING_BUFFERS_2)


def add_generated(lib: Library, echo: Callable[[str], None] = print) -> None:
    """The generated packing families (`generate.HELDOUT`): each instance's CSV is copied
    into the library; a cut instance's certificate packing (height = capacity = peak live
    size) is recorded as its best known, found by the generator with its seed."""
    from memplace.model.packing import generate
    have = {e.name for e in lib.entries}
    with tempfile.TemporaryDirectory() as tmp:
        for kind, size, seed in generate.HELDOUT:
            made = generate.generate(kind, size, seed)
            name = f"gen-{made.name}"
            if name in have:
                continue
            path = Path(tmp) / f"{name}.csv"
            generate.write_csv(path, made.buffers)
            capacity = made.capacity if made.certificate is not None else None
            e = improve.add_packing(lib, path, name, name, capacity)
            if made.certificate is not None:
                solved = Path(tmp) / f"{name}.solution.csv"
                generate.write_csv(solved, made.buffers, made.certificate)
                height = max(int(o) + b.size for o, b in zip(made.certificate, made.buffers))
                prov = store.provenance("generator", {"kind": kind, "buffers": size}, seed)
                store.record_solution(lib, e, float(height),
                                      lambda target: shutil.copyfile(solved, target), prov, ".csv")
            store.save(lib)
            echo(f"added {e.id} ({e.split}, {e.ops} buffers): default {e.default['objective']:.0f}, "
                 f"best {e.best['objective']:.0f}, bound {e.bound or 0:.0f}")
            have.add(name)


def inherit(lib: Library, older: Library, echo: Callable[[str], None] = print) -> int:
    """Offer an older version's best known solutions and bounds to the same entries here
    (same id), each with the provenance it was found with. Nothing is taken on trust: a
    solution is kept only if it validates on this version's instance (which may differ
    from the older copy, e.g. in names an importer now keeps) and beats what is here,
    with the objective recomputed here; a checkable bound only with the value its
    certificate proves on this instance; a bound that cannot be re-checked only if the
    instance is the same (sha256). Returns how many were taken."""
    from memplace.bench.library.check import (load_entry_instance, read_certificate,
                                              recompute_bound, solution_objective)
    taken = 0
    mine = {e.id: e for e in lib.entries}
    for old in older.entries:
        e = mine.get(old.id)
        if e is None:
            continue
        instance = load_entry_instance(lib, e)
        if old.best.get("file"):
            objective, errors = solution_objective(e, instance, older.path(old.best["file"]))
            prov = dict(old.best["provenance"] or {}, library=older.name)
            if not errors and objective is not None and store.record_solution(
                    lib, e, objective, lambda target: shutil.copyfile(older.path(old.best["file"]),
                                                                      target),
                    prov, Path(old.best["file"]).suffix):
                taken += 1
                echo(f"{e.id}: best {figure(e, objective)} {unit(e)} from {older.name} ({prov.get('solver')})")
        for b in old.bounds:
            certificate = read_certificate(older, b["certificate"]) if b.get("certificate") else None
            value = recompute_bound(older, e, instance, b)
            if value is None:  # not re-checkable: the same instance only
                if e.sha256 != old.sha256:
                    continue
                value = b["value"]
            value = min(value, b["value"])
            prov = dict(b.get("provenance") or {}, library=older.name)
            if store.record_bound(lib, e, value, b["kind"], prov, certificate, b.get("label", "")):
                taken += 1
                echo(f"{e.id}: {b['kind']} bound {figure(e, value)} {unit(e)} from {older.name}")
    store.save(lib)
    return taken


def build_2(lib: Library, echo: Callable[[str], None] = print) -> None:
    """Add every instance of version 2 with its default and cheap bounds, and take version
    1's best known solutions and bounds where they still check (`improve` then searches)."""
    from memplace.instances.library import read_library
    with tempfile.TemporaryDirectory() as tmp:
        sources = [(str(p), workload_of(p.stem)) for p in onnx_instances(Path(tmp))]
        _add_programs(lib, sources + program_sources_2(), echo)
    _add_packings(lib, packing_sources_2(), echo)
    add_generated(lib, echo)
    inherit(lib, read_library(1), echo)
    store.save(lib)


# ------------------------------------------------------------------ version 3
def carry_over(lib: Library, older: Library, echo: Callable[[str], None] = print) -> int:
    """Copy an older version's entries that `lib` does not have yet, with their instance,
    solution and certificate files, each best known and bound keeping the provenance it
    was found with (plus the version it comes from, when it names none), and its pairs
    left out. Nothing is re-solved: `memplace lib verify` re-checks every copied file and
    bound. Returns how many entries were copied."""
    import copy
    from memplace.instances.library import entry_of
    have = {e.id for e in lib.entries}
    copied = 0
    for old in older.entries:
        if old.id in have:
            continue
        data = copy.deepcopy(old.data)
        files = [data["best"].get("file"), data["instance"]] + [b.get("certificate")
                                                                for b in data["bounds"]]
        for relative in files:
            if relative and older.path(relative).is_file():  # (a catalog name is no file)
                lib.path(relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(older.path(relative), lib.path(relative))
        for prov in [data["best"].get("provenance")] + [b.get("provenance") for b in data["bounds"]]:
            if prov is not None:
                prov.setdefault("library", older.name)
        lib.entries.append(entry_of(data))
        copied += 1
        echo(f"{old.id}: copied from {older.name} (best {figure(old, old.best['objective'])} {unit(old)}, "
             f"{len(old.bounds)} bounds)")
    known = {d["id"] for d in lib.dropped}
    lib.dropped.extend(copy.deepcopy(d) for d in older.dropped if d["id"] not in known)
    store.save(lib)
    return copied


def carried_over(previous: int) -> Callable[[Library, Callable[[str], None]], None]:
    """The builder of version `previous` + 1: version `previous`'s entries as they were
    frozen, to be improved (`improve`)."""
    def build_next(lib: Library, echo: Callable[[str], None] = print) -> None:
        from memplace.instances.library import read_library
        carry_over(lib, read_library(previous), echo)
    build_next.__doc__ = f"Version {previous}'s entries as they were frozen, to be improved (`improve`)."
    return build_next


build_3, build_4, build_5, build_6, build_7, build_8, build_9, build_10 = (
    carried_over(v) for v in (2, 3, 4, 5, 6, 7, 8, 9))
BUILDERS: dict[int, Callable[[Library, Callable[[str], None]], None]] = {
    1: build, 2: build_2, 3: build_3, 4: build_4, 5: build_5, 6: build_6, 7: build_7, 8: build_8,
    9: build_9, 10: build_10}
DESCRIPTIONS = {
    1: "memplace-lib/1: real programs (ONNX exports, XLA programs, zoo exports) and generated "
       "residency workloads; packing traces",
    2: "memplace-lib/2: the zoo's exports of PyTorch models and the XLA programs (with version 1's "
       "ONNX exports and generated residency workloads), static and residency; packing: "
       "MiniMalloc's suite, idealloc's traces, XLA heaps and generated families",
    **{v: f"memplace-lib/{v}: memplace-lib/{v - 1}'s entries (the same instances and pairs left "
          "out) with better best known solutions and bounds" for v in (3, 4, 5, 6, 7, 8, 9, 10)},
}
