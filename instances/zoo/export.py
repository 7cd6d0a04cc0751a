"""Export the zoo's models to ONNX with both PyTorch exporters, import them with memplace's
ONNX importer, and write the instance files and the index.

    python -m memplace.instances.zoo.export [--model NAME ...] [--onnx-dir DIR]

Each (model, exporter) export runs in a child process (an exporter can crash or hang,
and a finished one gives its memory back), which writes `NAME.EXPORTER.onnx` and a
record `NAME.EXPORTER.json` (outcome, opset, inputs, versions) into the ONNX folder,
outside the repository. A record is reused on the next run unless `--force`, so an
interrupted run resumes. The instance committed for a model is the dynamo export's
where it exports and imports, else the TorchScript one's; the index records both.
Needs the dev-only extra `memplace[zoo]`; nothing is downloaded (`HF_HUB_OFFLINE=1`).
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import os
import platform
import re
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from memplace.instances.zoo.index import (EXPORTERS, INDEX_FORMAT, INDEX_NAME, PREFIX, ZOO_DIR,
                                          read_index)
from memplace.model.core.errors import MemplaceError

OPSETS = {"dynamo": 18, "torchscript": 17}
DEFAULT_TIMEOUT = 1800.0
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def default_onnx_dir() -> Path:
    """Where exports go by default: the user's cache, never the repository."""
    from platformdirs import user_cache_dir
    return Path(user_cache_dir("memplace")) / "zoo-onnx"


ANSI_COLOUR = re.compile(r"\x1b\[[0-9;]*m")  # the dynamo exporter colours its messages


def _first_line(exc: BaseException) -> str:
    text = ANSI_COLOUR.sub("", str(exc)).strip().splitlines()
    line = next((t.strip() for t in text if t.strip()), "")
    return f"{type(exc).__name__}: {line}"[:400]


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version
    found = {"python": platform.python_version()}
    for package in ("torch", "torchvision", "timm", "transformers", "onnx", "onnxscript"):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            pass
    return found


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# ------------------------------------------------------------------ one export (child)
def export_one(name: str, exporter: str, onnx_dir: Path) -> dict[str, Any]:
    """Build model `name` and export it with `exporter`; returns the record (also written)."""
    import onnx
    import torch

    from memplace.instances.zoo.models import MODELS
    model = MODELS[name]
    path = onnx_dir / f"{name}.{exporter}.onnx"
    record: dict[str, Any] = {"model": name, "exporter": exporter, "versions": _versions()}
    began = time.perf_counter()
    try:
        module, inputs = model.build()
        with torch.no_grad():
            outputs = module(*inputs.values())
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        output_names = (["output"] if len(outputs) == 1 else
                        ["logits"] + [f"present_{kind}_{i}" for i in range(len(outputs) // 2)
                                      for kind in ("key", "value")])
        kwargs: dict[str, Any] = dict(input_names=list(inputs), output_names=output_names,
                                      opset_version=OPSETS[exporter])
        if exporter == "dynamo":
            kwargs.update(dynamo=True, external_data=True)
        else:
            kwargs.update(dynamo=False, do_constant_folding=True)
        record["call"] = ("torch.onnx.export(module, inputs, path, " + ", ".join(
            f"{k}={v!r}" for k, v in kwargs.items() if k not in ("input_names", "output_names")) + ")")
        record["inputs"] = [{"name": k, "dtype": str(v.dtype).removeprefix("torch."),
                             "shape": list(v.shape)} for k, v in inputs.items()]
        record["outputs"] = [{"name": k, "shape": list(v.shape)}
                             for k, v in zip(output_names, outputs)]
        record["parameters"] = sum(p.numel() for p in module.parameters())
        record["parameter_bytes"] = sum(p.numel() * p.element_size() for p in module.parameters())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(module, tuple(inputs.values()), str(path), **kwargs)
        proto = onnx.load(str(path), load_external_data=False)
        record.update(status="ok", path=str(path), onnx_sha256=sha256(path),
                      onnx_nodes=len(proto.graph.node),
                      opset=next(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")))
    except Exception as exc:  # noqa: BLE001 - any exporter failure is recorded, by its first line
        record.update(status="export-failed", error=_first_line(exc))
    record["seconds"] = round(time.perf_counter() - began, 1)
    _write_json(onnx_dir / f"{name}.{exporter}.json", record)
    return record


def _write_json(path: Path, data: Any) -> None:
    import json
    from memplace.model.core.files import write_atomically
    write_atomically(path, json.dumps(data, indent=1) + "\n")


def run_export(name: str, exporter: str, onnx_dir: Path, timeout: float,
               force: bool, export: bool = True) -> dict[str, Any] | None:
    """The record of (name, exporter): reused if present, else made by a child process
    (or None when `export` is false)."""
    from memplace.model.core.reading import read_json
    record_path = onnx_dir / f"{name}.{exporter}.json"
    if record_path.is_file() and not force:
        record = read_json(record_path, "export record")
        if record.get("status") != "ok" or Path(record["path"]).is_file():
            return record
    if not export:
        return None
    record_path.unlink(missing_ok=True)
    log = onnx_dir / f"{name}.{exporter}.log"
    began = time.perf_counter()
    with open(log, "w") as out:
        try:
            subprocess.run([sys.executable, "-m", "memplace.instances.zoo.export", "--child", name,
                            exporter, "--onnx-dir", str(onnx_dir)], stdout=out, stderr=out,
                           timeout=timeout, env={**os.environ, **OFFLINE}, check=False)
        except subprocess.TimeoutExpired:
            pass
    if record_path.is_file():
        return read_json(record_path, "export record")
    tail = [line for line in log.read_text(errors="replace").splitlines() if line.strip()][-1:]
    status = "timeout" if time.perf_counter() - began >= timeout else "export-failed"
    record = {"model": name, "exporter": exporter, "status": status,
              "error": (f"no result in {timeout:.0f} s" if status == "timeout" else
                        f"the exporting process died: {tail[0][:300] if tail else 'no output'}"),
              "seconds": round(time.perf_counter() - began, 1)}
    _write_json(record_path, record)
    return record


# ------------------------------------------------------------------ import and write
def summary(instance: dict[str, Any]) -> dict[str, Any]:
    """Sizes of an imported instance: ops, tensors, bytes by kind, FLOPs."""
    w = instance["workload"]
    by_kind = {"weight": 0, "activation": 0}
    for t in w["tensors"]:
        by_kind[t["kind"]] += t["size"]
    return {"onnx_nodes": instance["import"]["nodes"], "ops": len(w["ops"]),
            "tensors": len(w["tensors"]), "weight_bytes": by_kind["weight"],
            "activation_bytes": by_kind["activation"],
            "flops": sum(op["flops"] for op in w["ops"])}


def import_record(record: dict[str, Any], hardware: str) -> dict[str, Any]:
    """The instance of a successful export on `hardware`, with its provenance."""
    from memplace.instances.onnx import OnnxImportWarning, from_onnx
    from memplace.instances.zoo.models import MODELS
    model = MODELS[record["model"]]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", OnnxImportWarning)
        instance = from_onnx(record["path"], hardware, name=model.name)
    instance["name"] = f"{PREFIX}{model.name}@{hardware}"
    instance["source"] = (f"memplace.instances.zoo.export: {model.call}, exported by "
                          f"{record['call']}, imported by memplace.instances.from_onnx")
    instance["provenance"] = {
        "model": model.name, "family": model.family, "call": model.call,
        "exporter": record["exporter"], "exporter_call": record["call"], "opset": record["opset"],
        "inputs": record["inputs"], "outputs": record["outputs"],
        "parameters": record["parameters"], "parameter_bytes": record["parameter_bytes"],
        "versions": record["versions"], "onnx_nodes": record["onnx_nodes"],
        "onnx_sha256": record["onnx_sha256"], "hardware": hardware,
        "import_warnings": [str(w.message) for w in caught],
        "command": "python -m memplace.instances.zoo.export",
    }
    return instance


def export_model(name: str, onnx_dir: Path, data_dir: Path, hardware: str, timeout: float,
                 force: bool, log: Any = print, export: bool = True) -> dict[str, Any] | None:
    """Export `name` with both exporters, import each, write the chosen instance; returns
    the model's index entry (None if `export` is false and an export was never run)."""
    from memplace.instances.catalog import dumps
    from memplace.instances.zoo.models import MODELS
    from memplace.model.core.files import write_atomically
    model = MODELS[name]
    entry: dict[str, Any] = {"name": name, "family": model.family, "call": model.call,
                             "inputs": model.inputs, "exporters": {}}
    chosen = None
    for exporter in EXPORTERS:
        record = run_export(name, exporter, onnx_dir, timeout, force, export)
        if record is None:
            return None
        outcome = {k: record[k] for k in ("status", "error", "seconds", "opset", "onnx_nodes")
                   if k in record}
        if record["status"] == "ok":
            try:
                instance = import_record(record, hardware)
                outcome.update(summary(instance), import_seconds=instance["import"]["seconds"])
                chosen = chosen or instance
            except MemplaceError as exc:
                outcome.update(status="import-failed", error=_first_line(exc))
        entry["exporters"][exporter] = outcome
        log(f"{name} {exporter}: {outcome['status']} ({record['seconds']} s)"
            + (f" {outcome['error']}" if outcome.get("error") else "")
            + (f" ops {outcome['ops']} tensors {outcome['tensors']}" if "ops" in outcome else ""))
    path = data_dir / f"{name}@{hardware}.json"
    if chosen is None:
        path.unlink(missing_ok=True)
        return entry
    write_atomically(path, dumps(chosen), "instance file")
    entry.update(catalog_name=chosen["name"], file=path.name,
                 exporter=chosen["provenance"]["exporter"], summary=summary(chosen))
    return entry


def export_zoo(names: list[str], onnx_dir: Path, data_dir: Path, hardware: str = "nnpi",
               timeout: float = DEFAULT_TIMEOUT, force: bool = False,
               log: Any = print, export: bool = True) -> dict[str, Any]:
    """Export, import and index `names` (other models already in the index are kept).
    With `export` false, only models already exported are imported again."""
    from memplace.instances.zoo.models import MODELS
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        raise MemplaceError(f"unknown zoo model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}")
    onnx_dir.mkdir(parents=True, exist_ok=True)
    data_dir.mkdir(parents=True, exist_ok=True)
    index = read_index(data_dir)
    for name in names:
        entry = export_model(name, onnx_dir, data_dir, hardware, timeout, force, log, export)
        if entry is None:
            continue
        # read again: another run may have indexed other models meanwhile
        entries = {e["name"]: e for e in read_index(data_dir)["models"]}
        entries[name] = entry
        index = {"format": INDEX_FORMAT, "hardware": hardware,
                 "updated": datetime.date.today().isoformat(),
                 "command": "python -m memplace.instances.zoo.export",
                 "models": [entries[n] for n in MODELS if n in entries]}
        _write_json(data_dir / INDEX_NAME, index)  # after each model: a stopped run keeps its work
    return index


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m memplace.instances.zoo.export",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", action="append", help="a zoo model (repeatable; default: all)")
    parser.add_argument("--onnx-dir", type=Path, default=None,
                        help="where the ONNX files go (default: the user cache's zoo-onnx)")
    parser.add_argument("--data-dir", type=Path, default=ZOO_DIR,
                        help="where the instances and the index go (default: the package's)")
    parser.add_argument("--hardware", default="nnpi", help="the hardware preset (default: nnpi)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help="seconds for one export")
    parser.add_argument("--force", action="store_true", help="export again even if recorded")
    parser.add_argument("--import-only", action="store_true",
                        help="only import again the models already exported")
    parser.add_argument("--child", nargs=2, metavar=("MODEL", "EXPORTER"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    os.environ.update(OFFLINE)
    onnx_dir = args.onnx_dir or default_onnx_dir()
    if args.child:
        export_one(args.child[0], args.child[1], onnx_dir)
        return
    from memplace.instances.zoo.models import MODELS
    try:
        export_zoo(args.model or list(MODELS), onnx_dir, args.data_dir, args.hardware,
                   args.timeout, args.force, log=lambda line: print(line, flush=True),
                   export=not args.import_only)
    except MemplaceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
