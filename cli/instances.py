"""`memplace instances ...`: list, show, export and regenerate the benchmark instances."""
from __future__ import annotations

import fnmatch
from pathlib import Path

import click

from memplace.cli.values import SEED, count
from memplace.model.core.errors import MemplaceError

MiB = 1024 * 1024


def _summary(inst) -> tuple[int, float, float]:
    """Peak live bytes (everything counted), slowest-placement latency, compute floor."""
    from memplace.model import slowest_latency
    return inst.peak_live_bytes(), slowest_latency(inst), inst.compute_floor()


@click.group("instances")
def instances_group() -> None:
    """The benchmark instances: built-in `workload@hardware` names or instance files."""


@instances_group.command("list")
@click.argument("patterns", nargs=-1)
def list_command(patterns: tuple[str, ...]) -> None:
    """One line per built-in instance: size, peak live bytes, slowest latency, compute floor.

    PATTERNS (glob, e.g. 'resnet*@nnpi') keep only the names matching one of them."""
    from memplace.instances import builtin_names, load
    names = [n for n in builtin_names()
             if not patterns or any(fnmatch.fnmatchcase(n, p) for p in patterns)]
    if not names:
        raise MemplaceError(f"no built-in instance matches {' '.join(patterns)}")
    width = max(len(n) for n in names)
    click.echo(f"{'name':<{width}}  {'ops':>6}  {'tensors':>7}  {'peak live MiB':>13}  "
               f"{'slowest us':>12}  {'floor us':>10}")
    for name in names:
        inst = load(name)
        peak, slowest, floor = _summary(inst)
        click.echo(f"{name:<{width}}  {inst.n_ops:>6}  {inst.n_tensors:>7}  {peak / MiB:>13.2f}  "
                   f"{slowest * 1e6:>12.1f}  {floor * 1e6:>10.1f}")


@instances_group.command("show")
@click.argument("instance")
def show_command(instance: str) -> None:
    """Summary of INSTANCE (a built-in name or a file): workload, levels, sizes, bounds."""
    from memplace.instances import load
    inst = load(instance)
    data = inst.to_dict()
    workload, hardware = data["workload"], data["hardware"]
    peak, slowest, floor = _summary(inst)
    weights = int(inst.size[inst.is_weight == 1].sum())
    activations = int(inst.size[inst.is_weight == 0].sum())
    click.echo(f"instance      {inst.name}")
    params = workload.get("params")  # provenance, not checked (unknown keys are ignored)
    params = " ".join(f"{k}={v}" for k, v in params.items()) if isinstance(params, dict) else ""
    click.echo(f"workload      {inst.workload_name}  {params}")
    if workload.get("source"):
        click.echo(f"  source      {workload['source']}")
    click.echo(f"hardware      {inst.hardware_name}  compute {inst.compute_rate:.4g} op/s")
    if hardware.get("source"):
        click.echo(f"  source      {hardware['source']}")
    for l, level in enumerate(inst.levels):
        extra = f"  addressed, alignment {level.alignment}" if level.addressed else ""
        capacity = ("unbounded" if level.capacity is None
                    else f"{level.capacity / MiB:.2f} MiB ({level.capacity} B)")
        click.echo(f"  level {l}     {level.name:<6} capacity {capacity}, "
                   f"bandwidth {level.bandwidth:.4g} B/s{extra}")
    click.echo(f"ops           {inst.n_ops}")
    click.echo(f"tensors       {inst.n_tensors}  ({int(inst.is_weight.sum())} weights, "
               f"{inst.n_tensors - int(inst.is_weight.sum())} activations)")
    click.echo(f"weights       {weights / MiB:.2f} MiB ({weights} B)")
    click.echo(f"activations   {activations / MiB:.2f} MiB ({activations} B)")
    click.echo(f"peak live     {peak / MiB:.2f} MiB ({peak} B)")
    click.echo(f"slowest       {slowest * 1e6:.3f} us  (everything in {inst.level_names[-1]})")
    click.echo(f"floor         {floor * 1e6:.3f} us  (every op compute-bound)")


@instances_group.command("export")
@click.argument("instance")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="the instance file to write")
@click.option("--onnx", "onnx_output", type=click.Path(dir_okay=False),
              help="write the workload as an ONNX graph instead (weights: zeros in OUT.data)")
@click.option("--batch", type=count(1 << 20), help="rebuild WORKLOAD@HARDWARE with this batch size")
@click.option("--width", type=count(1 << 20), help="rebuild with this element width in bytes")
@click.option("--seq-len", type=count(1 << 20), help="rebuild a language model with this sequence length")
@click.option("--seed", type=SEED, help="rebuild a synthetic workload with this seed")
def export_command(instance: str, output: str | None, onnx_output: str | None,
                   batch: int | None, width: int | None, seq_len: int | None,
                   seed: int | None) -> None:
    """Write INSTANCE to a memplace-instance/1 file (-o), or its workload as ONNX (--onnx).

    INSTANCE is a built-in name or a file; any WORKLOAD@HARDWARE of the catalog
    (e.g. synth-5000@gpu) is built anew, as is every instance given parameters.
    With --onnx, INSTANCE may be a bare WORKLOAD name (resnet50, bert-base, ...)."""
    from memplace.instances import build_instance, builtin_names, dumps, load
    from memplace.model import Instance
    from memplace.model.core.files import write_atomically
    params = {k: v for k, v in (("batch", batch), ("width", width), ("seq_len", seq_len),
                                ("seed", seed)) if v is not None}
    if (output is None) == (onnx_output is None):
        raise MemplaceError("give exactly one of -o OUTPUT (an instance file) and --onnx OUT.onnx")
    if onnx_output is not None:
        _export_onnx(instance, onnx_output, params)
        return
    workload_name, sep, hardware_name = instance.partition("@")
    if params or (sep and instance not in builtin_names() and not Path(instance).is_file()):
        if not sep:
            raise MemplaceError(f"instance {instance!r}: parameters need a WORKLOAD@HARDWARE name")
        data = build_instance(workload_name, hardware_name, **params)
        Instance.from_dict(data)  # the same checks as loading
    else:
        data = load(instance).to_dict()
    write_atomically(output, dumps(data), "instance file")
    click.echo(f"wrote {output} ({data['name']})")


def _export_onnx(instance: str, output: str, params: dict) -> None:
    from memplace.cli.onnx_import import _onnx_module
    from memplace.instances import workload
    save_onnx = _onnx_module().save_onnx
    workload_name = instance.partition("@")[0]
    try:
        data = save_onnx(workload(workload_name, **params), output)
    except OSError as exc:
        raise MemplaceError(f"cannot write {output}: {exc.strerror or exc}") from None
    click.echo(f"wrote {output} and {data} ({workload_name}; weights are zeros, stored sparse)")


@instances_group.command("regenerate")
def regenerate_command() -> None:
    """Rewrite every committed instance file under instances/data from the generators."""
    from memplace.instances import DATA_DIR, regenerate
    paths = regenerate()
    click.echo(f"wrote {len(paths)} instance files to {DATA_DIR}")
