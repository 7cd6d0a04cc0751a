"""`memplace import-xla SOURCE ...`: an XLA program (JAX) as an instance file, with XLA's heap
as a packing problem; `memplace xla-heap CSV`: memplace's packing of it against XLA's."""
from __future__ import annotations

from pathlib import Path

import click

from memplace.cli.onnx_import import _hardware
from memplace.cli.values import SECONDS
from memplace.model.core.errors import MemplaceError
from memplace.model.core.files import atomic_write


@click.command("import-xla")
@click.argument("source")
@click.option("--hardware", required=True, help="a preset (nnpi, tpu, edge-npu, gpu) or a JSON file")
@click.option("--name", help="the workload's name (default: the HLO module's or function's)")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="the instance file to write")
@click.option("--heap", "heap_csv", type=click.Path(dir_okay=False),
              help="also write XLA's temp buffers as a MiniMalloc CSV here, with XLA's offsets "
                   "(NAME.xla.csv) and heap size (NAME.xla.json) beside it")
def import_xla_command(source: str, hardware: str, name: str | None, output: str,
                       heap_csv: str | None) -> None:
    """Import SOURCE: an HLO text file (Compiled.as_text(), or a dump's
    *after_optimizations.txt), a serialized HLO module (*.hlo.pb; needs memplace[xla]),
    an XLA dump folder, or pkg.mod:fn (compiled with JAX on its example_args; needs
    memplace[xla]). See memplace.instances.xla."""
    from memplace.instances import dumps
    from memplace.instances.xla import cost_comparison, import_xla, write_baseline
    got = import_xla(source, _hardware(hardware), name=name)
    instance, record = got.instance, got.instance["import"]
    if heap_csv is not None and got.heap is None:
        raise MemplaceError(f"--heap: {source} has no buffer assignment and live ranges beside "
                            "it (dump with XLA_FLAGS=--xla_dump_to=DIR --xla_dump_hlo_as_text)")
    with atomic_write(output, "instance file") as out:
        out.write(dumps(instance))
    w = instance["workload"]
    click.echo(f"{instance['name']}: {record['instructions']} HLO instructions -> {len(w['ops'])} "
               f"ops ({len(record['loops'])} loops unrolled), {len(w['tensors'])} tensors, "
               f"import {record['seconds']:.2f} s")
    for key, row in cost_comparison(instance).items():
        against = (f", XLA cost_analysis {row['xla']:.0f} (ratio {row['ratio']:.4f})"
                   if "xla" in row else "")
        click.echo(f"  {key} (each computation once): {row['memplace']:.0f}{against}")
    click.echo(f"wrote {output}")
    if heap_csv is not None:
        solution, record_path = write_baseline(got.heap, heap_csv, got.source)
        problems = got.heap.problems()
        click.echo(f"wrote {heap_csv}: {len(got.heap.buffers)} buffers of XLA's heap "
                   f"({got.heap.heap_size} B, {len(got.heap.merged)} in-place groups merged); "
                   f"XLA's offsets in {solution.name} "
                   + ("validate" if not problems else f"DO NOT validate: {problems[0]}"))


@click.command("xla-heap")
@click.argument("csv_path", metavar="HEAP.csv", type=click.Path(dir_okay=False))
@click.option("--time-limit", type=SECONDS, default=10.0, show_default=True)
def xla_heap_command(csv_path: str, time_limit: float) -> None:
    """Pack HEAP.csv (written by import-xla --heap) and compare with XLA's own heap beside it."""
    from memplace.instances.xla.heap import compare_heap
    got = compare_heap(csv_path, time_limit)
    xla = "valid" if not got.xla_valid else f"INVALID ({got.xla_valid[0]})"
    click.echo(f"{Path(csv_path).name}: {got.buffers} buffers; XLA heap {got.xla_height} B "
               f"(its offsets: {xla}); memplace {got.height} B ({got.status}, lower bound "
               f"{got.lower_bound}, {got.seconds:.2f} s, "
               + ("checked" if not got.check else f"INVALID: {got.check[0]}")
               + f"), {100 * got.saving:.2f}% smaller")


@click.command("xla-programs")
@click.argument("names", nargs=-1)
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="folder to write [default: the package's instances/data/xla]")
def xla_programs_command(names: tuple[str, ...], out: str | None) -> None:
    """Compile the committed JAX programs (all, or NAMES) and rewrite their instance files,
    XLA heap baselines, HLO text and PROVENANCE.json (needs memplace[xla])."""
    from memplace.instances.xla.programs import regenerate
    written = regenerate(Path(out) if out else None, list(names) or None, progress=click.echo)
    click.echo(f"wrote {len(written)} files into {written[0].parent}")


@click.command("xla-table")
@click.option("--runs", "runs_dir", type=click.Path(file_okay=False), default="results/xla",
              show_default=True, help="folder holding static/runs.jsonl and residency/runs.jsonl "
                                      "(memplace bench xla / xla-residency --out FOLDER/...)")
@click.option("--pack-time-limit", type=SECONDS, default=10.0, show_default=True)
def xla_table_command(runs_dir: str, pack_time_limit: float) -> None:
    """Write FOLDER/table.md (XLA's heap vs memplace's packing, msa vs the best residency
    solver vs the bound, per committed XLA program) and FOLDER/solvers.md (every run)."""
    from memplace.bench.xla_table import solver_check_markdown, xla_rows, xla_table_markdown
    folder = Path(runs_dir)
    static, residency = folder / "static" / "runs.jsonl", folder / "residency" / "runs.jsonl"
    rows = xla_rows(static, residency, pack_time_limit,
                    progress=lambda r: click.echo(f"{r.program}: XLA heap {r.xla_heap} B, memplace "
                                                  f"{r.packed} B ({'checked' if r.checked else 'NOT CHECKED'})"))
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in (("table.md", xla_table_markdown(rows)),
                       ("solvers.md", solver_check_markdown(static, residency))):
        with atomic_write(folder / name, "table") as out:
            out.write(text)
        click.echo(f"wrote {folder / name}")
