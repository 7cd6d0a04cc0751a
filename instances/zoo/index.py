"""The committed zoo: instance files of real models under `instances/data/zoo/` and
their index, read without torch.

Each instance is `instances/data/zoo/MODEL@HARDWARE.json`, named `zoo/MODEL@HARDWARE`
in the catalog (`memplace.instances.load("zoo/resnet18@nnpi")`), and carries a
`provenance` object: the model and the call that built it, the exporter and its
opset, the library versions and the example inputs. `index.json` lists every model
the export tried, with each exporter's outcome and, for the committed ones, the file.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from memplace.model.core.errors import MemplaceError
from memplace.model.core.reading import read_json

ZOO_DIR = Path(__file__).resolve().parent.parent / "data" / "zoo"
INDEX_NAME = "index.json"
INDEX_FORMAT = "memplace-zoo-index/1"
PREFIX = "zoo/"
# What every committed instance's `provenance` holds.
PROVENANCE_FIELDS = ("model", "family", "call", "exporter", "opset", "inputs", "versions",
                     "onnx_nodes", "onnx_sha256", "hardware")
VERSION_FIELDS = ("torch", "onnx", "python")
EXPORTERS = ("dynamo", "torchscript")


def read_index(data_dir: Path = ZOO_DIR) -> dict[str, Any]:
    """The index of the zoo in `data_dir` (an empty one if none was written yet)."""
    path = data_dir / INDEX_NAME
    if not path.is_file():
        return {"format": INDEX_FORMAT, "models": []}
    index = read_json(path, "zoo index")
    if not isinstance(index, dict) or index.get("format") != INDEX_FORMAT:
        raise MemplaceError(f"{path}: not a {INDEX_FORMAT} file")
    return index


def zoo_names(data_dir: Path = ZOO_DIR) -> list[str]:
    """Catalog names (`zoo/MODEL@HARDWARE`) of the committed zoo instances, sorted."""
    return sorted(PREFIX + path.stem for path in data_dir.glob("*@*.json"))


def zoo_path(name: str, data_dir: Path = ZOO_DIR) -> Path | None:
    """The file of zoo instance `name` (`zoo/MODEL@HARDWARE`), or None if there is none."""
    if not name.startswith(PREFIX) or "/" in name[len(PREFIX):]:
        return None
    path = data_dir / f"{name[len(PREFIX):]}.json"
    return path if path.is_file() else None


def _size(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


def table(index: dict[str, Any]) -> str:
    """The zoo as a Markdown table: one row per model, committed or not."""
    lines = ["| model | family | exporter | ONNX nodes | ops | tensors | weights | activations "
             "| GFLOPs | dynamo | torchscript |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |"]
    for entry in index["models"]:
        outcome = {e: entry["exporters"].get(e, {}).get("status", "-") for e in EXPORTERS}
        if entry.get("file"):
            s = entry["summary"]
            lines.append(
                f"| `{entry['catalog_name']}` | {entry['family']} | {entry['exporter']} | "
                f"{s['onnx_nodes']} | {s['ops']} | {s['tensors']} | {_size(s['weight_bytes'])} | "
                f"{_size(s['activation_bytes'])} | {s['flops'] / 1e9:.2f} | "
                f"{outcome['dynamo']} | {outcome['torchscript']} |")
        else:
            lines.append(f"| {entry['name']} (not committed) | {entry['family']} | - | - | - | - "
                         f"| - | - | - | {outcome['dynamo']} | {outcome['torchscript']} |")
    failures = [(entry["name"], e, entry["exporters"][e]["error"])
                for entry in index["models"] for e in EXPORTERS
                if entry["exporters"].get(e, {}).get("error")]
    if failures:
        lines += ["", "Failures (first line of each error):", ""]
        lines += [f"- {name}, {exporter}: {error}" for name, exporter, error in failures]
    return "\n".join(lines) + "\n"


def write_table(path: Path, data_dir: Path = ZOO_DIR) -> str:
    """Write the zoo's table (from the index in `data_dir`) to `path`; returns the text."""
    from memplace.model.core.files import write_atomically
    index = read_index(data_dir)
    committed = sum(1 for e in index["models"] if e.get("file"))
    text = (f"Real models imported on `{index.get('hardware', '-')}`, written by "
            f"`memplace zoo table` from `instances/data/zoo/{INDEX_NAME}` (exported "
            f"{index.get('updated', '-')}): {committed} of {len(index['models'])} models "
            "committed. Sizes are the imported instance's: weights and activations are the "
            "summed sizes of its weight and activation tensors; ops are after fusion at a "
            "compiler's granularity. `dynamo` and `torchscript` give each exporter's outcome; "
            "`exporter` is the one whose export the committed instance comes from.\n\n"
            + table(index))
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, text, "zoo table")
    return text
