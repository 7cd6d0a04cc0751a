"""FLOPs and bytes of an HLO instruction, counted the way XLA's `HloCostAnalysis`
counts them (what `Compiled.cost_analysis()` reports), so the two can be held
against each other.

- dot: 2 x output elements x the product of the lhs contracting dimensions.
- convolution: 2 x (input features / feature groups) x output features x
  (batch / batch groups) x, per spatial dimension, the number of (output,
  kernel) position pairs that land inside the input (padding and dilation
  excluded), as XLA counts it.
- reduce, reduce-window, map, select-and-scatter: the FLOPs of the applied
  computation times the number of applications (input - output elements for a
  reduce; (window - 1) x output elements for a reduce-window).
- elementwise (arithmetic, compare, select, clamp, convert): 1 per output
  element; exp, log, tanh, logistic, sqrt, rsqrt, power, sin, cos, erf, ... are
  *transcendentals* instead (XLA keeps them apart from FLOPs).
- data movement (copy, transpose, slice, concatenate, pad, broadcast, gather,
  dynamic-slice, dynamic-update-slice, iota, reshape): no FLOPs.
- a fusion: the sum over its fused instructions; its bytes are what crosses its
  boundary: each operand read once (only the slice read by a slice or
  dynamic-slice user, nothing for the buffer a dynamic-update-slice updates in
  place), each output written once (only the update of a dynamic-update-slice
  root).
Unfused instructions move their operands and output, except a slice or
dynamic-slice (2 x output), a dynamic-update-slice (2 x update) and the no-data
instructions (parameter, constant, get-tuple-element, bitcast, tuple).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from memplace.instances.xla.hlo import Computation, Instruction, Module, Shape

TRANSCENDENTAL = {"acosh", "erf", "exp", "log", "logistic", "power", "sqrt", "cbrt", "rsqrt",
                  "tanh", "sine", "cosine", "exponential-minus-one", "log-plus-one", "atan2",
                  "tan", "exponential"}
ELEMENTWISE = {"abs", "add", "and", "ceil", "clamp", "compare", "complex", "convert", "divide",
               "floor", "imag", "is-finite", "maximum", "minimum", "multiply", "negate", "not",
               "or", "popcnt", "real", "reduce-precision", "remainder", "round-nearest-afz",
               "round-nearest-even", "select", "shift-left", "shift-right-arithmetic",
               "shift-right-logical", "sign", "subtract", "xor", "count-leading-zeros",
               "stochastic-convert"} | TRANSCENDENTAL
NO_DATA = {"parameter", "constant", "get-tuple-element", "bitcast", "tuple", "after-all",
           "add-dependency", "domain", "opt-barrier"}


@dataclass
class Cost:
    flops: float = 0.0
    transcendentals: float = 0.0

    def add(self, other: "Cost", times: float = 1.0) -> None:
        self.flops += other.flops * times
        self.transcendentals += other.transcendentals * times


class CostModel:
    """Per-instruction FLOPs and bytes over one module (applied computations cached)."""

    def __init__(self, module: Module):
        self.module = module
        self._computation_cost: dict[str, Cost] = {}

    def shape_of(self, computation: Computation, name: str) -> Shape:
        return computation.by_name[name].shape

    # ------------------------------------------------------------------ FLOPs
    def computation_cost(self, name: str) -> Cost:
        """Summed cost of every instruction of a computation (an applied function, a fusion)."""
        found = self._computation_cost.get(name)
        if found is None:
            computation = self.module.computations[name]
            found = Cost()
            for instruction in computation.instructions:
                found.add(self.cost(computation, instruction))
            self._computation_cost[name] = found
        return found

    def cost(self, computation: Computation, ins: Instruction) -> Cost:
        op = ins.opcode
        if op in ELEMENTWISE:
            count = ins.shape.count if not ins.shape.is_tuple else 0
            return Cost(0, count) if op in TRANSCENDENTAL else Cost(count, 0)
        if op == "dot":
            lhs = self.shape_of(computation, ins.operands[0])
            width = math.prod(lhs.dims[d] for d in ins.int_list("lhs_contracting_dims"))
            return Cost(2.0 * ins.shape.count * width)
        if op == "convolution":
            return Cost(self._convolution(computation, ins))
        if op in ("fusion", "call"):
            callee = ins.called("calls") or ins.called("to_apply")
            return Cost(**vars(self.computation_cost(callee))) if callee else Cost()
        if op == "reduce":
            data = self.shape_of(computation, ins.operands[0])
            out = ins.shape.elements[0] if ins.shape.is_tuple else ins.shape
            found = Cost()
            found.add(self.computation_cost(ins.called("to_apply")), data.count - out.count)
            return found
        if op == "reduce-window":
            window = _window(ins.attr("window") or "")
            out = ins.shape.elements[0] if ins.shape.is_tuple else ins.shape
            found = Cost()
            size = math.prod(w["size"] for w in window) if window else 1
            found.add(self.computation_cost(ins.called("to_apply")), (size - 1) * out.count)
            return found
        if op == "map":
            found = Cost()
            found.add(self.computation_cost(ins.called("to_apply")), ins.shape.count)
            return found
        if op == "select-and-scatter":
            source = self.shape_of(computation, ins.operands[1])
            window = _window(ins.attr("window") or "")
            size = math.prod(w["size"] for w in window) if window else 1
            found = Cost()
            found.add(self.computation_cost(ins.called("select")), source.count * (size - 1))
            found.add(self.computation_cost(ins.called("scatter")), source.count)
            return found
        if op == "sort":
            count = self.shape_of(computation, ins.operands[0]).count
            return Cost(float(count * max(count - 1, 0).bit_length()))
        if op == "scatter":
            updates = self.shape_of(computation, ins.operands[-1])
            found = Cost()
            found.add(self.computation_cost(ins.called("to_apply")), updates.count)
            return found
        if op == "fft":
            data = self.shape_of(computation, ins.operands[0])
            factors = math.prod(max(d, 1).bit_length() - 1 for d in ins.int_list("fft_length"))
            return Cost(2.0 * 4 * factors * data.count)
        if op in ("rng", "rng-bit-generator"):
            return Cost(0, sum(leaf.count for leaf in ins.shape.leaves()))
        if op in ("all-reduce", "all-reduce-start"):
            return Cost(sum(leaf.count for leaf in ins.shape.leaves()))
        return Cost()

    def _convolution(self, computation: Computation, ins: Instruction) -> float:
        lhs = self.shape_of(computation, ins.operands[0])
        rhs = self.shape_of(computation, ins.operands[1])
        out = ins.shape
        labels = ins.attr("dim_labels") or ""
        lhs_l, rest = labels.split("_", 1)
        rhs_l, out_l = rest.split("->")
        spatial = [c for c in lhs_l if c.isdigit()]
        window = _window(ins.attr("window") or "") or [{}]
        counts = []
        for s, dim in zip(spatial or ["0"], window):
            if not spatial:
                counts.append(1)
                continue
            n_in, n_k, n_out = lhs.dims[lhs_l.index(s)], rhs.dims[rhs_l.index(s)], out.dims[out_l.index(s)]
            stride, lhs_dil, rhs_dil = dim.get("stride", 1), dim.get("lhs_dilate", 1), dim.get("rhs_dilate", 1)
            pad_lo = dim.get("pad_lo", 0)
            valid = 0
            for k in range(n_k):
                if stride == 1 and lhs_dil == 1:
                    base = pad_lo - k * rhs_dil
                    valid += max(min(n_in + base, n_out) - max(base, 0), 0)
                    continue
                for o in range(n_out):
                    undilated = o * stride - pad_lo + k * rhs_dil
                    if undilated % lhs_dil:
                        continue
                    if 0 <= undilated // lhs_dil < n_in:
                        valid += 1
            counts.append(valid)
        features = lhs.dims[lhs_l.index("f")]
        groups = int(ins.attr("feature_group_count") or 1)
        batch_groups = int(ins.attr("batch_group_count") or 1)
        return 2.0 * (features // groups) * out.dims[out_l.index("f")] * \
            (lhs.dims[lhs_l.index("b")] // batch_groups) * math.prod(counts)

    # ------------------------------------------------------------------ bytes
    def operand_bytes(self, computation: Computation, ins: Instruction) -> list[int]:
        """Bytes the instruction reads of each operand (XLA's operand bytes accessed)."""
        shapes = [self.shape_of(computation, o) for o in ins.operands]
        op = ins.opcode
        if op in NO_DATA:
            return [0] * len(shapes)
        if op == "slice":
            return [ins.shape.nbytes] + [0] * (len(shapes) - 1)
        if op == "dynamic-slice":
            return [ins.shape.nbytes] + [s.nbytes for s in shapes[1:]]
        if op == "dynamic-update-slice":
            return [0] + [s.nbytes for s in shapes[1:]]
        if op == "gather":
            return [ins.shape.nbytes, shapes[1].nbytes]
        if op == "scatter":  # operands, indices, updates: XLA counts the updates' size
            n = (len(shapes) - 1) // 2
            updates = [s.nbytes for s in shapes[n + 1:]]
            return updates + [shapes[n].nbytes] + updates
        if op == "fusion":
            fused = self.module.computations[ins.called("calls")]
            params = fused.parameters()
            return [_parameter_read_bytes(fused, p) for p in params]
        return [sum(leaf.nbytes for leaf in s.leaves()) for s in shapes]

    def output_bytes(self, computation: Computation, ins: Instruction) -> list[int]:
        """Bytes written to each array output (tuple leaves in order)."""
        op = ins.opcode
        leaves = ins.shape.leaves()
        if op in NO_DATA:
            return [0] * len(leaves)
        if op == "scatter":  # written: the updates' size
            n = (len(ins.operands) - 1) // 2
            return [self.shape_of(computation, ins.operands[n + 1 + i]).nbytes
                    for i in range(len(leaves))]
        if op in ("dynamic-update-slice", "fusion"):
            roots = self._output_roots(ins)
            if len(roots) != len(leaves):  # one root writing a tuple (a variadic reduce)
                return [leaf.nbytes for leaf in leaves]
            return [self._written(r, leaf) for r, leaf in zip(roots, leaves)]
        return [leaf.nbytes for leaf in leaves]

    def _output_roots(self, ins: Instruction) -> list[tuple[Computation, Instruction] | None]:
        if ins.opcode != "fusion":
            return [None]
        fused = self.module.computations[ins.called("calls")]
        root = fused.root
        if root.opcode == "tuple" and ins.shape.is_tuple:
            return [(fused, fused.by_name[o]) for o in root.operands]
        return [(fused, root)]

    def _written(self, root, leaf: Shape) -> int:
        if root is None:
            return leaf.nbytes
        computation, ins = root
        if ins.opcode == "dynamic-update-slice":
            return computation.by_name[ins.operands[1]].shape.nbytes
        return leaf.nbytes

    def in_place_operand(self, ins: Instruction) -> list[int | None]:
        """For each output: the operand XLA updates in place (a dynamic-update-slice's or a
        scatter's buffer, also as a fusion's root), else None."""
        if ins.opcode in ("dynamic-update-slice", "scatter"):
            return [0]
        roots = self._output_roots(ins) if ins.opcode == "fusion" else []
        if len(roots) != len(ins.shape.leaves()):
            return [None] * len(ins.shape.leaves())
        out = []
        for root in roots:
            computation, r = root
            buffer = r.operands[0] if r.opcode in ("dynamic-update-slice", "scatter") else None
            node = computation.by_name[buffer] if buffer else None
            while node is not None and node.opcode == "bitcast":
                node = computation.by_name[node.operands[0]]
            out.append(int(node.literal) if node is not None and node.opcode == "parameter" else None)
        return out


def _parameter_read_bytes(fused: Computation, param: Instruction) -> int:
    """XLA's FusionParameterReadBytes: a parameter is read once, except where every
    use reads a part (slice, dynamic-slice) or nothing (the buffer of an in-place update)."""
    users = [u for u in fused.instructions if param.name in u.operands]
    size, trivial = 0, False
    for user in users:
        op = user.opcode
        if op == "slice":
            size += user.shape.nbytes
        elif op == "dynamic-slice":
            if user.operands[0] == param.name:
                size += user.shape.nbytes
            elif not trivial:
                trivial, size = True, size + param.shape.nbytes
        elif op == "dynamic-update-slice":
            if user.operands[0] != param.name and not trivial:
                trivial, size = True, size + param.shape.nbytes
        elif op in ("broadcast", "reshape"):
            size += param.shape.nbytes
        elif not trivial:
            trivial, size = True, size + param.shape.nbytes
    return size


def _window(text: str) -> list[dict[str, int]]:
    """`{size=3x3 stride=2x2 pad=1_1x1_1 lhs_dilate=.. rhs_dilate=..}` as one dict per dimension."""
    fields: dict[str, list[str]] = {}
    for part in text.strip("{}").split():
        key, _, value = part.partition("=")
        fields[key] = value.split("x")
    n = max((len(v) for v in fields.values()), default=0)
    dims = []
    for d in range(n):
        dim: dict[str, int] = {}
        for key in ("size", "stride", "lhs_dilate", "rhs_dilate"):
            if key in fields:
                dim[key] = int(fields[key][d])
        if "pad" in fields:
            lo, hi = fields["pad"][d].split("_")
            dim["pad_lo"], dim["pad_hi"] = int(lo), int(hi)
        dims.append(dim)
    return dims
