"""`memplace zoo ...`: the committed real models (list), their table (table), and
exporting them again from PyTorch (export, needs the dev-only extra `memplace[zoo]`)."""
from __future__ import annotations

from pathlib import Path

import click

from memplace.model.core.errors import MemplaceError


@click.group("zoo")
def zoo_group() -> None:
    """Real models exported from PyTorch and imported: `zoo/MODEL@HARDWARE` instances."""


@zoo_group.command("list")
def list_command() -> None:
    """One line per committed zoo instance: family, exporter, ops, tensors, bytes."""
    from memplace.instances.zoo import read_index
    for entry in read_index()["models"]:
        if entry.get("file"):
            s = entry["summary"]
            click.echo(f"{entry['catalog_name']:<40} {entry['family']:<19} {entry['exporter']:<11} "
                       f"ops {s['ops']:>5}  tensors {s['tensors']:>5}  weights {s['weight_bytes']:>11} B"
                       f"  activations {s['activation_bytes']:>10} B")
        else:
            click.echo(f"{entry['name']:<40} {entry['family']:<19} not committed (no export imported)")


@zoo_group.command("table")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default="results/zoo/zoo.md",
              show_default=True, help="the Markdown file to write")
def table_command(output: str) -> None:
    """Write the table of the zoo's models (from the committed index) as Markdown."""
    from memplace.instances.zoo.index import write_table
    write_table(Path(output))
    click.echo(f"wrote {output}")


@zoo_group.command("export")
@click.option("--model", "models", multiple=True, help="a zoo model (repeatable; default: all)")
@click.option("--onnx-dir", type=click.Path(file_okay=False), default=None,
              help="where the ONNX files go (default: the user cache's zoo-onnx)")
@click.option("--data-dir", type=click.Path(file_okay=False), default=None,
              help="where the instances and the index go (default: the package's)")
@click.option("--hardware", default="nnpi", show_default=True, help="the hardware preset")
@click.option("--timeout", type=float, default=1800.0, show_default=True,
              help="seconds for one export")
@click.option("--force", is_flag=True, help="export again even where a record exists")
@click.option("--import-only", is_flag=True, help="only import again the models already exported")
def export_command(models: tuple[str, ...], onnx_dir: str | None, data_dir: str | None,
                   hardware: str, timeout: float, force: bool, import_only: bool) -> None:
    """Export the zoo's models with both PyTorch exporters, import them, write the instances
    and the index (needs torch, torchvision, timm, transformers: pip install 'memplace[zoo]')."""
    import importlib.util
    from memplace.instances.zoo.export import default_onnx_dir, export_zoo
    from memplace.instances.zoo.index import ZOO_DIR
    from memplace.instances.zoo.models import MODELS
    missing = [m for m in ("torch", "torchvision", "timm", "transformers")
               if importlib.util.find_spec(m) is None]
    if missing:
        raise MemplaceError(f"exporting the zoo needs the dev-only extra: pip install "
                            f"'memplace[zoo]' ({', '.join(missing)} missing)")
    export_zoo(list(models) or list(MODELS), Path(onnx_dir) if onnx_dir else default_onnx_dir(),
               Path(data_dir) if data_dir else ZOO_DIR, hardware, timeout, force,
               log=lambda line: click.echo(line), export=not import_only)
