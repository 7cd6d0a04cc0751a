"""`from_hlo_text`: a scheduled XLA HLO module as a memplace instance (spec section 2).

Ops are the entry computation's instructions in XLA's schedule order. A fusion
is one op; parameter, constant, tuple, get-tuple-element, bitcast (and the
ordering-only after-all, add-dependency, opt-barrier) are no ops and move no data.
A `call` is inlined. A `while` loop whose trip count XLA knows (`lax.scan`,
`fori_loop`, scanned `jax.checkpoint` layers: the `known_trip_count` XLA writes
in its backend config) is unrolled: its condition and body run trip-count times
(and the condition once more), in XLA's order, each iteration's instructions
being ops of their own. Unrolling, not one repeated body, because an instance
is a straight-line schedule: every iteration's activations have their own live
ranges and a placement may treat iteration 0 and iteration 9 differently.
A loop without a known trip count, a `conditional` and communication
(send/recv, infeed/outfeed, collectives) are refused, by name.

Tensors are XLA's buffers with XLA's sizes (elements x width; a tuple is a
table of 8-byte pointers and is not a tensor). Entry parameters and non-empty
constants are weights. Every array an op writes is an activation, live from its
producer to its last reader; the entry's outputs are also read (0 bytes) by the
last op, since XLA keeps them live to the end. Aliasing as XLA does it: a
bitcast, get-tuple-element, tuple or loop-carried value is the same tensor as
its source; a dynamic-update-slice or scatter (alone or as a fusion's root)
updates its buffer operand in place, so its output is that operand's tensor
(XLA's copy insertion has already added a `copy` where the old value is still
needed), unless the operand is a weight, which is never written.

FLOPs and bytes per op follow XLA's `HloCostAnalysis` (see `costs`); an op's
`flops` is XLA's FLOPs plus its transcendentals (kept apart in the op's
`transcendentals`), and each access's bytes are XLA's operand or output bytes.
"""
from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any, Union

from memplace.instances.xla.costs import NO_DATA, CostModel
from memplace.instances.xla.errors import XlaImportError
from memplace.instances.xla.hlo import Computation, Instruction, Module, parse_module

FORMAT = "memplace-instance/1"
MAX_OPS = 2_000_000
REFUSED = {"conditional": "a conditional (its branch is chosen at run time)",
           "send": "communication", "send-done": "communication", "recv": "communication",
           "recv-done": "communication", "infeed": "an infeed", "outfeed": "an outfeed",
           "all-reduce": "a collective", "all-gather": "a collective", "all-to-all": "a collective",
           "reduce-scatter": "a collective", "collective-permute": "a collective",
           "all-reduce-start": "a collective", "all-gather-start": "a collective",
           "collective-permute-start": "a collective", "async-start": "an async computation",
           "copy-start": "an asynchronous copy", "custom-call": "a custom call (its work is "
           "opaque to memplace)", "rng-get-and-update-state": "a stateful RNG"}
OP_TYPE_ORDER = ("convolution", "dot", "scatter", "gather", "reduce-window", "reduce", "sort",
                 "dynamic-update-slice", "dynamic-slice", "concatenate", "transpose", "pad",
                 "slice", "broadcast")

Value = Union[int, None, list]  # a tensor index, no tensor (an empty array), or a tuple


def _trip_count(ins: Instruction) -> int:
    match = re.search(r'"known_trip_count"\s*:\s*\{\s*"n"\s*:\s*"?(\d+)', ins.attrs)
    if match is None:
        raise XlaImportError(f"while loop {ins.name} (line {ins.line}): XLA does not know its "
                             "trip count, so it cannot be unrolled into a straight-line schedule")
    return int(match.group(1))


def _leaves(value: Value) -> list[int | None]:
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


class _Unroller:
    """Walks the entry computation in schedule order, emitting ops and tensors."""

    def __init__(self, module: Module):
        self.module = module
        self.costs = CostModel(module)
        self.ops: list[dict[str, Any]] = []
        self.tensors: list[dict[str, Any]] = []
        self._constants: dict[tuple[str, str], Value] = {}
        self.loops: list[dict[str, Any]] = []
        self.counts: dict[str, int] = {}

    def _tensor(self, name: str, kind: str, size: int, producer: int | None) -> int | None:
        if size <= 0:
            return None
        self.tensors.append({"name": name, "kind": kind, "size": size, "producer": producer,
                             "accesses": {}})
        return len(self.tensors) - 1

    def _access(self, t: int | None, k: int, nbytes: int) -> None:
        if t is not None:
            accesses = self.tensors[t]["accesses"]
            accesses[k] = accesses.get(k, 0) + int(nbytes)

    def run(self, computation: Computation, args: list[Value], prefix: str) -> Value:
        env: dict[str, Value] = {}
        for ins in computation.instructions:
            env[ins.name] = self._instruction(computation, ins, args, env, prefix)
        return env[computation.root.name]

    def _instruction(self, computation: Computation, ins: Instruction, args: list[Value],
                     env: dict[str, Value], prefix: str) -> Value:
        op = ins.opcode
        operands = [env[o] for o in ins.operands]
        if op == "parameter":
            return args[int(ins.literal)]
        if op == "constant":
            key = (computation.name, ins.name)
            if key not in self._constants:
                if ins.shape.is_tuple:
                    raise XlaImportError(f"constant {ins.name} (line {ins.line}) is a tuple")
                self._constants[key] = self._tensor(f"{prefix}{ins.name}", "weight",
                                                    ins.shape.nbytes, None)
            return self._constants[key]
        if op == "tuple":
            return operands
        if op == "get-tuple-element":
            index = int(ins.attr("index"))
            if not isinstance(operands[0], list):
                raise XlaImportError(f"get-tuple-element {ins.name} (line {ins.line}) reads "
                                     f"{ins.operands[0]}, which is not a tuple")
            return operands[0][index]
        if op in ("bitcast", "opt-barrier", "add-dependency", "domain"):
            return operands[0]
        if op == "after-all":
            return None
        if op == "while":
            return self._while(ins, operands[0], prefix)
        if op == "call":
            callee = ins.called("to_apply")
            return self.run(self.module.computations[callee], operands, f"{prefix}{ins.name}/")
        if op in REFUSED or op.endswith("-start") or op.endswith("-done"):
            what = REFUSED.get(op, "an asynchronous operation")
            target = ins.attr("custom_call_target")
            named = f" {target}" if target else ""
            raise XlaImportError(f"instruction {ins.name} (line {ins.line}, {op}{named}): "
                                 f"{what}, which memplace cannot model")
        return self._emit(computation, ins, operands, prefix)

    def _while(self, ins: Instruction, state: Value, prefix: str) -> Value:
        trips = _trip_count(ins)
        body = self.module.computations[ins.called("body")]
        condition = self.module.computations[ins.called("condition")]
        before = len(self.ops)
        for i in range(trips):
            self.run(condition, [state], f"{prefix}{ins.name}[{i}].cond/")
            state = self.run(body, [state], f"{prefix}{ins.name}[{i}]/")
        self.run(condition, [state], f"{prefix}{ins.name}[{trips}].cond/")
        self.loops.append({"while": f"{prefix}{ins.name}", "trip_count": trips,
                           "ops": len(self.ops) - before})
        return state

    def _op_type(self, ins: Instruction) -> str:
        if ins.opcode != "fusion":
            return ins.opcode
        opcodes = {i.opcode for i in self.module.computations[ins.called("calls")].instructions}
        return next((t for t in OP_TYPE_ORDER if t in opcodes), "elementwise")

    def _emit(self, computation: Computation, ins: Instruction, operands: list[Value],
              prefix: str) -> Value:
        k = len(self.ops)
        if k >= MAX_OPS:
            raise XlaImportError(f"instruction {ins.name}: unrolling gives over {MAX_OPS} ops")
        cost = self.costs.cost(computation, ins)
        name = f"{prefix}{ins.name}"
        self.ops.append({"name": name, "type": self._op_type(ins),
                         "flops": float(cost.flops + cost.transcendentals),
                         "transcendentals": float(cost.transcendentals)})
        self.counts[ins.opcode] = self.counts.get(ins.opcode, 0) + 1
        read = self.costs.operand_bytes(computation, ins)
        for value, nbytes in zip(operands, read):
            leaves = _leaves(value)
            for leaf in leaves:  # a tuple operand: each leaf read whole (XLA's default)
                self._access(leaf, k, nbytes if len(leaves) == 1 else self._leaf_size(leaf))
        written = self.costs.output_bytes(computation, ins)
        in_place = self.costs.in_place_operand(ins)
        shapes = ins.shape.leaves()
        outputs: list[int | None] = []
        for i, (shape, nbytes) in enumerate(zip(shapes, written)):
            source = in_place[i] if i < len(in_place) else None
            target = operands[source] if source is not None and source < len(operands) else None
            if isinstance(target, int) and self.tensors[target]["kind"] == "activation":
                t = target  # updated in place: the output is the operand's buffer
            else:
                label = name if len(shapes) == 1 else f"{name}.{i}"
                t = self._tensor(label, "activation", shape.nbytes, k)
            self._access(t, k, nbytes)
            outputs.append(t)
        if not ins.shape.is_tuple:
            return outputs[0]
        return _rebuild(ins.shape, iter(outputs))

    def _leaf_size(self, leaf: int | None) -> int:
        return 0 if leaf is None else self.tensors[leaf]["size"]


def _rebuild(shape, leaves) -> Value:
    if not shape.is_tuple:
        return next(leaves)
    return [_rebuild(element, leaves) for element in shape.elements]


def xla_view_totals(module: Module) -> dict[str, float]:
    """FLOPs, transcendentals and bytes with every computation counted once (a loop body
    once, whatever its trip count): what `Compiled.cost_analysis()` sums, for comparison.
    Bytes include the pointer tables tuples write (8 bytes per element), which XLA counts
    and which are no tensors in an instance."""
    costs = CostModel(module)
    totals = {"flops": 0.0, "transcendentals": 0.0, "bytes accessed": 0.0}

    def walk(computation: Computation) -> None:
        for ins in computation.instructions:
            if ins.opcode == "while":
                walk(module.computations[ins.called("condition")])
                walk(module.computations[ins.called("body")])
            elif ins.opcode == "call":
                walk(module.computations[ins.called("to_apply")])
            elif ins.opcode == "tuple":  # XLA counts the pointer table a tuple writes
                totals["bytes accessed"] += ins.shape.nbytes
            elif ins.opcode not in NO_DATA:
                cost = costs.cost(computation, ins)
                totals["flops"] += cost.flops
                totals["transcendentals"] += cost.transcendentals
                totals["bytes accessed"] += (sum(costs.operand_bytes(computation, ins))
                                             + sum(costs.output_bytes(computation, ins)))
    walk(module.entry)
    return totals


def _hardware(hardware: str | dict[str, Any]) -> dict[str, Any]:
    from memplace.instances.catalog import resolve_hardware  # (the generators load only here)
    return resolve_hardware(hardware)


def read_hlo(path: str | Path) -> str:
    """The text of an HLO dump file; a missing or unreadable file raises XlaImportError."""
    path = Path(path)
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise XlaImportError(f"{path}: cannot read the HLO text ({reason})") from None


def from_hlo_text(text: str, hardware: str | dict[str, Any], *, name: str | None = None,
                  where: str = "HLO text", provenance: dict[str, Any] | None = None
                  ) -> dict[str, Any]:
    """A `memplace-instance/1` dict of a scheduled HLO module's text on `hardware`.

    `provenance` (e.g. the jax version, XLA flags, XLA's own `cost_analysis()`) is
    kept in the instance's `import` record. Raises `XlaImportError` naming the
    line or instruction at fault.
    """
    began = time.perf_counter()
    hw = _hardware(hardware)
    module = parse_module(text, where)
    if not module.scheduled:
        raise XlaImportError(f"{where}: module {module.name} is not scheduled (is_scheduled=true "
                             "missing): import the optimized HLO, e.g. Compiled.as_text() or a "
                             "dump's *after_optimizations.txt")
    unroller = _Unroller(module)
    args = []
    for param in module.entry.parameters():
        if param.shape.is_tuple:
            args.append([unroller._tensor(f"{param.name}.{i}", "weight", leaf.nbytes, None)
                         for i, leaf in enumerate(param.shape.leaves())])
        else:
            args.append(unroller._tensor(param.name, "weight", param.shape.nbytes, None))
    result = unroller.run(module.entry, args, "")
    if not unroller.ops:
        raise XlaImportError(f"{where}: module {module.name} has no instruction that moves data")
    last = len(unroller.ops) - 1
    for t in _leaves(result):
        if t is not None and unroller.tensors[t]["kind"] == "activation":
            unroller._access(t, last, 0)  # outputs live to the end, as XLA keeps them
    tensors = [{**t, "accesses": [[k, b] for k, b in sorted(t["accesses"].items())]}
               for t in unroller.tensors if t["accesses"]]
    workload_name = name or module.name
    flops = sum(op["flops"] - op["transcendentals"] for op in unroller.ops)
    record: dict[str, Any] = {
        "module": module.name, "instructions": sum(len(c.instructions) for c in
                                                   module.computations.values()),
        "ops": len(unroller.ops), "op_counts": dict(sorted(unroller.counts.items())),
        "loops": unroller.loops,
        "totals": {"flops": flops,
                   "transcendentals": sum(op["transcendentals"] for op in unroller.ops),
                   "bytes accessed": float(sum(b for t in tensors for _, b in t["accesses"]))},
        "xla_view_totals": xla_view_totals(module),
    }
    if provenance:
        record.update(provenance)
    workload = {"name": workload_name,
                "source": f"imported from XLA HLO module {module.name} by "
                          "memplace.instances.xla.from_hlo_text",
                "params": {}, "ops": unroller.ops, "tensors": tensors}
    instance = {"format": FORMAT, "name": f"{workload_name}@{hw.get('name', 'hardware')}",
                "source": "memplace import-xla", "import": record,
                "notes": ("ops are XLA's scheduled entry instructions (fusion = one op, known-trip "
                          "while loops unrolled); flops = XLA's flops + transcendentals; bytes "
                          "as XLA's HloCostAnalysis; see memplace.instances.xla"),
                "workload": workload, "hardware": hw}
    from memplace.model import Instance
    Instance.from_dict(instance)  # the same checks as loading a file
    record["seconds"] = round(time.perf_counter() - began, 3)
    return instance


def cost_comparison(instance: dict[str, Any]) -> dict[str, dict[str, float]]:
    """For each of flops, transcendentals, bytes accessed: memplace's count of the module
    (every computation once, as XLA sums it), XLA's `cost_analysis()` figure when the
    instance carries it, and their ratio."""
    record = instance["import"]
    ours, theirs = record["xla_view_totals"], record.get("cost_analysis") or {}
    out = {}
    for key in ("flops", "transcendentals", "bytes accessed"):
        row = {"memplace": ours[key]}
        if theirs:  # XLA leaves out a property that is zero
            row["xla"] = float(theirs.get(key, 0.0))
            row["ratio"] = (ours[key] / row["xla"] if row["xla"]
                            else 1.0 if not ours[key] else float("inf"))
        out[key] = row
    return out
