"""`import_xla`: an XLA program from any source it comes in, as an instance and XLA's heap.

Sources: a Python callable with example arguments, `pkg.mod:fn` (compiled with
JAX, the `[xla]` extra), an HLO text file (`Compiled.as_text()` saved, or a
dump's `*after_optimizations.txt`), a serialized module proto (a dump's
`*after_optimizations.hlo.pb` from `--xla_dump_hlo_as_proto`, or
`HloModule.as_serialized_hlo_module_proto()` saved), or a dump folder holding one
such module. A text file or folder needs no JAX; a proto is printed to text by
XLA itself, so it needs the extra. XLA's heap is read from the dump's
buffer-assignment and live-range files beside the module when they are there.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from memplace.instances.xla.errors import XlaImportError
from memplace.instances.xla.heap import HeapBaseline, heap_baseline
from memplace.instances.xla.importer import from_hlo_text, read_hlo

AFTER = "after_optimizations.txt"


@dataclass
class XlaImport:
    instance: dict[str, Any]
    heap: HeapBaseline | None
    source: str


def _module_file(folder: Path) -> Path:
    found = sorted(folder.glob(f"*{AFTER}"))
    if not found:
        raise XlaImportError(f"{folder}: no *{AFTER} in this folder (not an XLA dump with "
                             "--xla_dump_hlo_as_text?)")
    if len(found) > 1:
        names = ", ".join(p.name for p in found[:5])
        raise XlaImportError(f"{folder}: {len(found)} modules ({names}); name the file to import")
    return found[0]


def _module_text(path: Path) -> str:
    """A module file's HLO text: text as written; anything else is read as a proto."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise XlaImportError(f"{path}: cannot read the HLO module ({exc.strerror})") from None
    if not path.name.endswith(".pb"):
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            pass
    from memplace.instances.xla import jax_source
    return jax_source.hlo_text_from_proto(data, str(path))


def _beside(module_file: Path) -> HeapBaseline | None:
    name = str(module_file)
    stem = name.removesuffix(".hlo.pb").removesuffix(".pb").removesuffix(".txt")
    assignment, live = Path(f"{stem}-buffer-assignment.txt"), Path(f"{stem}-live-range.txt")
    if not (assignment.is_file() and live.is_file()):
        return None
    return heap_baseline(read_hlo(assignment), read_hlo(live), str(assignment))


def import_xla(source: str | Path | Callable[..., Any], hardware: str | dict[str, Any], *,
               args: tuple[Any, ...] | None = None, name: str | None = None) -> XlaImport:
    """An instance (and XLA's heap baseline when known) from a callable, `pkg.mod:fn`,
    an HLO text or module proto file, or a dump folder."""
    from memplace.instances.xla import jax_source
    if callable(source):
        if args is None:
            raise XlaImportError(f"{getattr(source, '__name__', source)!r}: give its example "
                                 "arguments (args=...)")
        return _compiled(jax_source.compile_program(source, tuple(args)), hardware, name)
    text = str(source)
    path = Path(text)
    if path.is_dir():
        path = _module_file(path)
    elif not path.exists() and ":" in text and not text.endswith(".txt"):
        jax_source.require_jax()
        fn, example = jax_source.load_target(text)
        program = jax_source.compile_program(fn, example if args is None else tuple(args),
                                             label=text)
        return _compiled(program, hardware, name or text.partition(":")[2])
    hlo = _module_text(path)
    instance = from_hlo_text(hlo, hardware, name=name, where=str(path),
                             provenance={"file": path.name})
    return XlaImport(instance, _beside(path), str(path))


def _compiled(program, hardware, name: str | None) -> XlaImport:
    heap = heap_baseline(program.buffer_assignment, program.live_ranges, "XLA's buffer assignment")
    provenance = {**program.provenance, "cost_analysis": program.cost_analysis,
                  "memory_analysis": program.memory_analysis}
    instance = from_hlo_text(program.hlo_text, hardware, name=name or program.provenance["program"],
                             where=program.provenance["program"], provenance=provenance)
    return XlaImport(instance, heap, program.provenance["program"])
