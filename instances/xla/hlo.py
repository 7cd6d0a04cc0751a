"""XLA's HLO module text (what `Compiled.as_text()` returns and a dump's
`*after_optimizations.txt` holds) parsed into computations of instructions.

Only what the importer needs is read: each instruction's name, shape, opcode,
operands, attributes (as raw text) and the computations it calls. The schedule
of a scheduled module (`is_scheduled=true`) is the order of the instructions in
each computation's text, which is how XLA prints a scheduled module.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from memplace.instances.xla.errors import XlaImportError

# Bytes per element (XLA's primitive types; sub-byte types take a byte each on the CPU).
ELEMENT_BYTES = {
    "pred": 1, "s2": 1, "s4": 1, "s8": 1, "u2": 1, "u4": 1, "u8": 1,
    "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4, "f32": 4,
    "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16,
    "f8e5m2": 1, "f8e4m3fn": 1, "f8e4m3b11fnuz": 1, "f8e5m2fnuz": 1, "f8e4m3fnuz": 1,
    "f8e4m3": 1, "f8e3m4": 1, "f4e2m1fn": 1, "f8e8m0fnu": 1, "token": 0,
}
POINTER_BYTES = 8  # a tuple is a table of pointers to its elements


@dataclass(frozen=True)
class Shape:
    """An array shape (`dtype`, `dims`) or a tuple of shapes (`elements`)."""

    dtype: str = ""
    dims: tuple[int, ...] = ()
    elements: tuple["Shape", ...] | None = None

    @property
    def is_tuple(self) -> bool:
        return self.elements is not None

    @property
    def count(self) -> int:
        """Elements of an array (1 for a scalar)."""
        return math.prod(self.dims)

    @property
    def nbytes(self) -> int:
        """XLA's byte size: elements x width for an array, the pointer table for a tuple."""
        if self.elements is not None:
            return POINTER_BYTES * len(self.elements)
        return self.count * ELEMENT_BYTES[self.dtype]

    def leaves(self) -> list["Shape"]:
        if self.elements is None:
            return [self]
        return [leaf for element in self.elements for leaf in element.leaves()]


@dataclass
class Instruction:
    name: str
    shape: Shape
    opcode: str
    operands: list[str]
    attrs: str  # the text after the operand list: `dimensions={0}, calls=%f, ...`
    line: int
    root: bool = False
    literal: str = ""  # a constant's value text

    def attr(self, key: str) -> str | None:
        """The raw value of attribute `key` (a braced value whole), or None."""
        match = re.search(rf"(?:^|[\s,]){re.escape(key)}=", self.attrs)
        if match is None:
            return None
        text, i = self.attrs, match.end()
        if i < len(text) and text[i] in "{[(\"":
            end = _closing(text, i)
            return text[i:end + 1]
        j = i
        while j < len(text) and text[j] not in ", ":
            j += 1
        return text[i:j]

    def called(self, key: str) -> str | None:
        value = self.attr(key)
        return None if value is None else value.lstrip("%")

    def int_list(self, key: str) -> list[int]:
        value = self.attr(key)
        if not value:
            return []
        return [int(v) for v in re.findall(r"-?\d+", value)]


@dataclass
class Computation:
    name: str
    instructions: list[Instruction] = field(default_factory=list)
    by_name: dict[str, Instruction] = field(default_factory=dict)
    entry: bool = False

    @property
    def root(self) -> Instruction:
        return next((i for i in self.instructions if i.root), self.instructions[-1])

    def parameters(self) -> list[Instruction]:
        params = [i for i in self.instructions if i.opcode == "parameter"]
        return sorted(params, key=lambda i: int(i.literal or 0))


@dataclass
class Module:
    name: str
    scheduled: bool
    computations: dict[str, Computation]
    entry: Computation
    header: str


_DIMS = re.compile(r"^([a-z][a-z0-9]*)\[([^\]]*)\]")


def _closing(text: str, i: int) -> int:
    """Index of the bracket closing the one at text[i] (quotes skipped)."""
    pairs = {"(": ")", "{": "}", "[": "]", '"': '"'}
    stack, j = [pairs[text[i]]], i + 1
    while j < len(text):
        c = text[j]
        if stack[-1] == '"':
            if c == "\\":
                j += 1
            elif c == '"':
                stack.pop()
        elif c == stack[-1]:
            stack.pop()
        elif c in pairs:
            stack.append(pairs[c])
        if not stack:
            return j
        j += 1
    raise ValueError(f"unbalanced {text[i]!r}")


def parse_shape(text: str, where: str) -> tuple[Shape, int]:
    """The shape at the start of `text` and the length it takes."""
    text_l = text
    if text_l.startswith("("):
        end = _closing(text_l, 0)
        inner, elements, i = text_l[1:end], [], 0
        while i < len(inner):
            while i < len(inner) and inner[i] in ", ":
                i += 1
            if i >= len(inner):
                break
            shape, used = parse_shape(inner[i:], where)
            elements.append(shape)
            i += used
        return Shape(elements=tuple(elements)), end + 1
    match = _DIMS.match(text_l)
    if match is None:
        raise XlaImportError(f"{where}: cannot read the shape {text_l[:40]!r}")
    dtype, dims_text = match.group(1), match.group(2)
    if dtype not in ELEMENT_BYTES:
        raise XlaImportError(f"{where}: unsupported element type {dtype!r}")
    if "<=" in dims_text or "?" in dims_text:
        raise XlaImportError(f"{where}: dynamic shape {match.group(0)!r} is not supported "
                             "(memplace needs static sizes)")
    dims = tuple(int(d) for d in dims_text.split(",") if d.strip())
    used = match.end()
    if used < len(text_l) and text_l[used] == "{":  # the layout
        used = _closing(text_l, used) + 1
    return Shape(dtype, dims), used


_COMMENT = re.compile(r"/\*.*?\*/")
_INSTRUCTION = re.compile(r"^\s*(ROOT\s+)?%?([^\s=]+)\s*=\s*")
_HEADER = re.compile(r"^\s*(ENTRY\s+)?%?([^\s(]+)\s*\(.*\{\s*$")


def _instruction(line: str, number: int, where: str) -> Instruction:
    match = _INSTRUCTION.match(line)
    if match is None:
        raise XlaImportError(f"{where} line {number}: not an HLO instruction: {line.strip()[:80]!r}")
    root, name = bool(match.group(1)), match.group(2)
    rest = line[match.end():]
    here = f"{where} line {number} (instruction {name})"
    try:
        shape, used = parse_shape(rest, here)
        rest = rest[used:].lstrip()
        op_match = re.match(r"([a-z][a-z0-9\-]*)\(", rest)
        if op_match is None:
            raise XlaImportError(f"{here}: cannot read the opcode in {rest[:40]!r}")
        opcode = op_match.group(1)
        close = _closing(rest, op_match.end() - 1)
    except XlaImportError:
        raise
    except ValueError as exc:  # an unbalanced bracket
        raise XlaImportError(f"{here}: cannot read it ({exc})") from None
    inside, attrs = rest[op_match.end():close], rest[close + 1:].lstrip(", ").strip()
    literal, operands = "", []
    if opcode in ("constant", "parameter", "iota", "rng-get-and-update-state"):
        literal = inside.strip()
    else:
        # an operand is `%name`, or `shape %name` in the long form
        operands = re.findall(r"%([^\s,()]+)", inside)
        if not operands and inside.strip():
            operands = [t.strip().split()[-1] for t in inside.split(",") if t.strip()]
    return Instruction(name, shape, opcode, operands, attrs, number, root, literal)


def parse_module(text: str, where: str = "HLO text") -> Module:
    """Parse HLO module text; raises XlaImportError naming the line or instruction at fault."""
    lines = text.splitlines()
    header = next((l for l in lines if l.startswith("HloModule ")), None)
    if header is None:
        raise XlaImportError(f"{where}: not an HLO module (no 'HloModule' line)")
    name = header.split()[1].rstrip(",")
    computations: dict[str, Computation] = {}
    current: Computation | None = None
    entry = None
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if current is None:
            match = _HEADER.match(line)
            if match and not stripped.startswith("HloModule"):
                current = Computation(match.group(2), entry=bool(match.group(1)))
            continue
        if stripped == "}":
            if not current.instructions:
                raise XlaImportError(f"{where} line {number}: computation {current.name} is empty")
            computations[current.name] = current
            if current.entry:
                entry = current
            current = None
            continue
        if not stripped:
            continue
        if "/*" in line:  # `/*index=5*/` marks in long tuple shapes
            line = _COMMENT.sub("", line)
        instruction = _instruction(line, number, where)
        current.instructions.append(instruction)
        current.by_name[instruction.name] = instruction
    if current is not None:
        raise XlaImportError(f"{where}: computation {current.name} is not closed (truncated file?)")
    if entry is None:
        raise XlaImportError(f"{where}: no ENTRY computation")
    for computation in computations.values():
        for instruction in computation.instructions:
            for operand in instruction.operands:
                if operand not in computation.by_name:
                    raise XlaImportError(f"{where} line {instruction.line}: instruction "
                                         f"{instruction.name} reads {operand!r}, which "
                                         f"computation {computation.name} does not define")
    return Module(name, "is_scheduled=true" in header, computations, entry, header)
