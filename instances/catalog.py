"""The catalog: named workloads and hardware presets, full instances built from them,
the committed benchmark instances under `instances/data/`, and loading by name.

A built-in instance is named `workload@hardware` (e.g. `resnet50@nnpi`) and is a
committed file `instances/data/NAME.json`; `regenerate()` rewrites every such file
from the generators, so the files are always what the code makes (a test checks).
Real models exported from PyTorch and imported (`memplace.instances.zoo`) are named
`zoo/MODEL@HARDWARE` and live in `instances/data/zoo/`; `load` finds them by that name,
`builtin_names` does not list them (they are not generated).
"""
from __future__ import annotations

import difflib
import functools
import re
from pathlib import Path
from typing import Any, Callable

from memplace.instances.cnn import efficientnet_b0, mobilenetv2, resnet, unet, vgg16
from memplace.instances.hardware import HARDWARE, STATIC_PRESETS, hardware_preset
from memplace.instances.synthetic import synthetic_workload
from memplace.instances.transformer import bert_base, gpt2, vit_b16
from memplace.instances.zoo.index import PREFIX, zoo_names, zoo_path
from memplace.model import Instance
from memplace.model.instance import FORMAT, dumps
from memplace.model.core.errors import MemplaceError
from memplace.model.core.files import write_atomically

DATA_DIR = Path(__file__).resolve().parent / "data"
XLA_DIR = DATA_DIR / "xla"  # the committed XLA programs (memplace.instances.xla.programs)

# Each maker returns a spec `workload` dict; keyword parameters: batch, width
# (bytes per element), seq_len for the language models; seed for synthetic ones.
WORKLOADS: dict[str, Callable[..., dict[str, Any]]] = {
    "resnet50": functools.partial(resnet, 50),
    "resnet101": functools.partial(resnet, 101),
    "resnet152": functools.partial(resnet, 152),
    "vgg16": vgg16,
    "mobilenetv2": mobilenetv2,
    "efficientnet-b0": efficientnet_b0,
    "unet": unet,
    "bert-base": bert_base,
    "vit-b16": vit_b16,
    "gpt2": gpt2,
}
SYNTHETIC = re.compile(r"synth-([0-9]{1,12})")
MAX_SYNTHETIC_OPS = 10_000_000  # 100 times the largest size the scaling table measures
SYNTHETIC_SIZES = (100, 1000, 10000)

# The committed benchmark set: every named workload on every preset, and a few
# synthetic sizes (scaling studies) on the NNP-I and the edge NPU.
COMMITTED: tuple[tuple[str, str], ...] = tuple(
    [(w, h) for w in WORKLOADS for h in STATIC_PRESETS]
    + [(f"synth-{n}", "nnpi") for n in SYNTHETIC_SIZES]
    + [("synth-1000", "edge-npu")])
# The residency benchmark set (docs/spec.md sections 9-12): instances whose fast memory is small
# against what the ops need, so that homes and windows chosen together can beat the static
# optimum (README, "Instances where residency matters"). Workload parameters are in the name.
RESIDENCY_SET: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("bert-base", "nnpi", {"seq_len": 512}),
    ("bert-base", "nnpi", {"batch": 8}),
    ("gpt2", "nnpi", {"seq_len": 1024}),
    ("gpt2", "nnpi", {"batch": 4}),
    ("resnet50", "nnpi", {"batch": 8}),
    ("gpt2", "tpu", {"batch": 8}),
    ("gpt2", "gpu", {"batch": 8}),
    ("bert-base", "edge-npu", {"seq_len": 256}),
    ("resnet50", "edge-tpu", {}),
    ("bert-base", "edge-tpu", {}),
    ("gpt2", "edge-tpu", {}),
    ("vit-b16", "edge-tpu", {}),
)


def committed_specs() -> list[tuple[str, str, dict[str, Any]]]:
    """(workload, hardware, parameters) of every committed instance file."""
    return [(w, h, {}) for w, h in COMMITTED] + [(w, h, dict(p)) for w, h, p in RESIDENCY_SET]


def residency_names() -> list[str]:
    """Names of the residency benchmark set, in its order."""
    return [instance_name(w, h, p) for w, h, p in RESIDENCY_SET]


def _unknown(what: str, name: str, known: list[str]) -> MemplaceError:
    close = difflib.get_close_matches(name, known, n=5, cutoff=0.5)
    hint = f"; close matches: {', '.join(close)}" if close else f"; known: {', '.join(known)}"
    return MemplaceError(f"unknown {what} {name!r}{hint}")


def resolve_hardware(hardware: str | dict[str, Any]) -> dict[str, Any]:
    """A hardware dict: a copy of one given, or the preset of that name (an unknown name
    is a MemplaceError listing the presets). The importers' `--hardware`."""
    if isinstance(hardware, dict):
        return dict(hardware)
    if hardware not in HARDWARE:
        raise _unknown("hardware preset", hardware, list(HARDWARE))
    return hardware_preset(hardware)


def workload(name: str, **params: Any) -> dict[str, Any]:
    """The workload dict named `name` (`synth-N` for any N), built with `params`."""
    match = SYNTHETIC.fullmatch(name)
    if name in WORKLOADS:
        maker: Callable[..., dict[str, Any]] = WORKLOADS[name]
    elif match:
        if int(match.group(1)) > MAX_SYNTHETIC_OPS:
            raise MemplaceError(f"workload {name!r}: a synthetic workload has at most "
                                f"{MAX_SYNTHETIC_OPS} ops")
        maker = functools.partial(synthetic_workload, int(match.group(1)))
    else:
        raise _unknown("workload", name, list(WORKLOADS) + ["synth-N"])
    try:
        return maker(**params)
    except (TypeError, ValueError) as exc:
        raise MemplaceError(f"workload {name!r} with parameters {params}: {exc}") from None


def instance_name(workload_name: str, hardware_name: str, params: dict[str, Any]) -> str:
    """`workload@hardware`, with non-default parameters in brackets: `resnet50[batch=4]@nnpi`."""
    if not params:
        return f"{workload_name}@{hardware_name}"
    args = ",".join(f"{k}={v}" for k, v in sorted(params.items()))
    return f"{workload_name}[{args}]@{hardware_name}"


def build_instance(workload_name: str, hardware_name: str, **params: Any) -> dict[str, Any]:
    """A full `memplace-instance/1` dict of a catalog workload on a hardware preset."""
    if hardware_name not in HARDWARE:
        raise _unknown("hardware preset", hardware_name, list(HARDWARE))
    w = workload(workload_name, **params)
    hw = hardware_preset(hardware_name)
    call = ", ".join([repr(workload_name), repr(hardware_name)]
                     + [f"{k}={v!r}" for k, v in sorted(params.items())])
    made_with = " ".join(f"{k}={v}" for k, v in w["params"].items())
    return {
        "format": FORMAT,
        "name": instance_name(workload_name, hardware_name, params),
        "source": f"memplace.instances.build_instance({call})",
        "notes": (f"{w['name']} with {made_with} on {hw['name']}; flops count "
                  "2 per multiply-accumulate; the sources of the figures are in workload.source "
                  "and hardware.source"),
        "workload": w,
        "hardware": hw,
    }


# ---------------------------------------------------------------------- files
def regenerate(data_dir: Path = DATA_DIR) -> list[Path]:
    """Rewrite every committed instance file and drop files no longer in the set."""
    data_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for workload_name, hardware_name, params in committed_specs():
        instance = build_instance(workload_name, hardware_name, **params)
        path = data_dir / f"{instance['name']}.json"
        write_atomically(path, dumps(instance), "instance file")
        written.append(path)
    for stale in set(data_dir.glob("*.json")) - set(written):
        stale.unlink()
    return written


def builtin_names() -> list[str]:
    """Names of the committed instances, sorted."""
    return sorted(path.stem for path in DATA_DIR.glob("*.json"))


def xla_names() -> list[str]:
    """Names of the committed XLA programs (`instances/data/xla/`, written by
    `memplace xla-programs`), sorted; loadable by name like the built-in instances."""
    return sorted(path.stem for path in XLA_DIR.glob("*.json") if "@" in path.stem)


def builtin_path(name: str) -> Path:
    """The file of a built-in instance (or a committed XLA program, or a zoo instance such
    as `zoo/resnet18@nnpi`), or the path itself if `name` is an existing file."""
    for folder in (DATA_DIR, XLA_DIR):
        path = folder / f"{name}.json"
        if "/" not in name and path.is_file():
            return path
    candidate = Path(name)
    zoo = zoo_path(name)
    if zoo is not None and not candidate.exists():
        return zoo
    if name.startswith(PREFIX) and not candidate.exists():
        raise _unknown("zoo instance", name, zoo_names())
    if candidate.exists() or "/" in name or name.endswith(".json"):
        return candidate  # a path: loading it names what is wrong (a folder, no such file)
    raise _unknown("instance", name, builtin_names() + xla_names())


SYNTHETIC_NAME = re.compile(r"(synth-[0-9]+)@([^/]+)")


def synthetic_source(name: str) -> dict[str, Any] | None:
    """The instance dict of `synth-N@HARDWARE` built by the generator, for any N (a
    committed size is read from its file instead: None), or None when `name` is no such
    name or is an existing file. A bad N or hardware is a MemplaceError naming it."""
    match = SYNTHETIC_NAME.fullmatch(name)
    if match is None or (DATA_DIR / f"{name}.json").is_file() or Path(name).exists():
        return None
    workload_name, hardware_name = match.groups()
    if not SYNTHETIC.fullmatch(workload_name) or int(workload_name[6:]) > MAX_SYNTHETIC_OPS:
        raise MemplaceError(f"instance {name!r}: a synthetic workload has 2 to "
                            f"{MAX_SYNTHETIC_OPS:,} ops")
    return build_instance(workload_name, hardware_name)


def load(name_or_path: str | Path, problem: str = "static") -> Instance:
    """A built-in instance by name (`resnet50@nnpi`; `synth-N@HARDWARE` for any N, built
    by the generator when no committed file holds it: about 7 s at 10^5 ops) or an
    instance file by path, loaded and checked by the problem (`Problem.load`)."""
    from memplace.model.core.problem import problem as get_problem
    name = str(name_or_path)
    built = synthetic_source(name)
    return get_problem(problem).load(builtin_path(name) if built is None else built)
