"""Compiling a JAX program to what the importer reads (the optional extra `memplace[xla]`).

`compile_program(fn, args)` jits `fn`, lowers it on `args` (arrays or
`jax.ShapeDtypeStruct`s), compiles it for the CPU with XLA's dump switched on
for this compilation only (`compiler_options`, so the process's XLA_FLAGS are
left alone) and returns the scheduled HLO text, XLA's `cost_analysis()` and
`memory_analysis()`, and the dump's buffer assignment and live ranges.
`load_target("pkg.mod:fn")` finds a function and its example arguments.
"""
from __future__ import annotations

import importlib
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from memplace.instances.xla.errors import XlaImportError

# Versions whose `Compiled` API (as_text, cost_analysis, memory_analysis, compiler_options
# dumping) and dump file names this module was checked against.
SUPPORTED_JAX = ("0.10",)
INSTALL = "pip install 'memplace[xla]'"


def require_jax():
    """The jax module, or a MemplaceError saying how to install it or which versions work."""
    try:
        import jax
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] in ("jax", "jaxlib"):
            raise XlaImportError(f"compiling JAX programs needs the optional extra: {INSTALL} "
                                 f"({exc.name} is missing)") from None
        raise
    if not jax.__version__.startswith(SUPPORTED_JAX):
        raise XlaImportError(f"jax {jax.__version__} is not supported (supported: "
                             f"{', '.join(v + '.x' for v in SUPPORTED_JAX)}); {INSTALL}")
    return jax


@dataclass
class CompiledProgram:
    """What XLA decided for one program, as text and numbers (no JAX objects)."""

    hlo_text: str
    cost_analysis: dict[str, float]
    memory_analysis: dict[str, int]
    buffer_assignment: str
    live_ranges: str
    provenance: dict[str, Any]


def _dump_file(folder: Path, suffix: str) -> str:
    found = sorted(folder.glob(f"*{suffix}"))
    if not found:
        raise XlaImportError(f"XLA wrote no *{suffix} into its dump folder (jax version?)")
    return found[-1].read_text(encoding="utf-8")


def compile_program(fn: Callable[..., Any], args: tuple[Any, ...], label: str = "") -> CompiledProgram:
    """Jit, lower and compile `fn(*args)` on the CPU, with XLA's dump of this compilation."""
    jax = require_jax()
    label = label or getattr(fn, "__name__", "program")
    try:
        lowered = jax.jit(fn).lower(*args)
    except Exception as exc:  # a user's program failing to trace: one line naming it
        raise XlaImportError(f"{label}: JAX could not trace it with the example arguments "
                             f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
                             ) from None
    with tempfile.TemporaryDirectory(prefix="memplace-xla-") as folder:
        options = {"xla_dump_to": folder, "xla_dump_hlo_as_text": True}
        compiled = lowered.compile(compiler_options=options)
        assignment = _dump_file(Path(folder), "after_optimizations-buffer-assignment.txt")
        live_ranges = _dump_file(Path(folder), "after_optimizations-live-range.txt")
    costs = compiled.cost_analysis()
    if isinstance(costs, list):  # older jax: one dict per device
        costs = costs[0]
    memory = compiled.memory_analysis()
    memory_stats = {key: int(getattr(memory, key)) for key in (
        "argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes",
        "temp_size_in_bytes", "generated_code_size_in_bytes") if hasattr(memory, key)}
    provenance = {"jax": jax.__version__, "jaxlib": _jaxlib_version(),
                  "backend": jax.default_backend(), "platform": sys.platform,
                  "xla_flags": os.environ.get("XLA_FLAGS", ""),
                  "compiler_options": {"xla_dump_hlo_as_text": True},
                  "program": label}
    return CompiledProgram(compiled.as_text(), {k: float(v) for k, v in costs.items()
                                                if k in ("flops", "transcendentals",
                                                         "bytes accessed")},
                           memory_stats, assignment, live_ranges, provenance)


def _jaxlib_version() -> str:
    try:
        import jaxlib
        return jaxlib.__version__
    except (ModuleNotFoundError, AttributeError):
        return "unknown"


def load_target(target: str) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """`pkg.mod:fn` as (function, example arguments). The arguments come from `fn.example_args`
    or the module's `example_args` (a tuple, or a function returning one), so a module
    says which shapes its program is compiled for."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise XlaImportError(f"{target!r}: expected an HLO text file, a dump folder or pkg.mod:fn")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise XlaImportError(f"{target}: cannot import {module_name} ({exc})") from None
    fn = module
    for part in attr.split("."):
        fn = getattr(fn, part, None)
        if fn is None:
            raise XlaImportError(f"{target}: {module_name} has no attribute {attr!r}")
    if not callable(fn):
        raise XlaImportError(f"{target}: {attr} is not a JAX callable")
    example = getattr(fn, "example_args", None)
    if example is None:
        example = getattr(module, "example_args", None)
    if example is None:
        raise XlaImportError(f"{target}: give example arguments as {attr}.example_args or a "
                             f"module-level example_args (a tuple or a function returning one)")
    if callable(example):
        example = example()
    if not isinstance(example, (tuple, list)):
        raise XlaImportError(f"{target}: example_args must be a tuple of arguments")
    return fn, tuple(example)


def hlo_text_from_proto(data: bytes, where: str) -> str:
    """The HLO text of a serialized module, printed by XLA itself: an `HloModuleProto`
    (`HloModule.as_serialized_hlo_module_proto()`) or an `HloProto`, the envelope that
    XLA's `--xla_dump_hlo_as_proto` writes to `*.hlo.pb` (the module is its field 1).
    Needs JAX (the wheel carries XLA's proto parser and printer)."""
    require_jax()
    from jax._src.lib import xla_client
    inner = _hlo_proto_module(data)
    # Field 1 is the module's name in an HloModuleProto and the module in an HloProto:
    # try the likelier reading first (the other makes XLA log a parse error on stderr).
    named = inner is not None and inner.isascii() and inner.decode("ascii").isprintable()
    for module in ((data,) if inner is None or named else (inner, data)):
        try:  # the long form, as Compiled.as_text() prints it (as_hlo_text() is the short one)
            text = xla_client.XlaComputation(module).get_hlo_module().to_string()
        except RuntimeError:  # XLA's own error: not a module proto
            continue
        if "\nENTRY " in text:  # (the envelope read as a module parses to an empty one)
            return text
    raise XlaImportError(f"{where}: neither HLO text nor a serialized HloModuleProto/HloProto "
                         "that XLA can read")


def _hlo_proto_module(data: bytes) -> bytes | None:
    """Field 1 (`hlo_module`, length-delimited) of a protobuf message, read off the wire
    format; None when `data` is not a well-formed message holding one. (XLA's Python
    package exposes no HloProto class, and this is the one field needed.)"""
    pos = 0

    def varint() -> int:
        nonlocal pos
        value = shift = 0
        while True:
            if pos >= len(data) or shift > 63:
                raise ValueError("truncated varint")
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value

    try:
        while pos < len(data):
            key = varint()
            field, wire = key >> 3, key & 7
            if wire == 0:
                varint()
            elif wire == 1:
                pos += 8
            elif wire == 5:
                pos += 4
            elif wire == 2:
                length = varint()
                if pos + length > len(data):
                    return None
                if field == 1:
                    return data[pos:pos + length]
                pos += length
            else:
                return None
    except ValueError:
        return None
    return None
