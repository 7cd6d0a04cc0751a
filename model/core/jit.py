"""How memplace compiles its Numba kernels: `njit`, compiled once per argument types, and
`CompileLog`, what compiling each kernel cost.

Numba types a constant that one kernel passes to another as a literal
(`Literal[int](-1)`, `Literal[bool](True)`) and compiles the callee once per constant
value. msa's allocator called `_close(..., next_use)` and `_close(..., -1)`, the move loop
`_encode_tensor` with `add` True and False and `logged` -1 or a count: the two largest
kernels of the project were compiled two and four times, about half of the whole cold
compile (docs/residency-scale.md, "Cold start"). `njit` is Numba's, except that a kernel
called from another is typed by the plain types of its arguments (`int64`, `bool`), so it
is compiled once whatever constants its callers pass; called from Python nothing changes
(Python values never type as literals). No kernel of memplace needs a literal argument: a
branch on a flag costs a compare where the literal copy saved it.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import numba
from numba.core import event, types


def njit(*args, **options):
    """`numba.njit(*args, **options)` whose kernel compiles once per plain argument types
    when other kernels call it (`@njit(cache=True, nogil=True)` as with Numba's)."""
    if len(args) == 1 and callable(args[0]) and not options:  # bare @njit
        return _plain_arguments(numba.njit(args[0]))
    decorate = numba.njit(*args, **options)
    return lambda fn: _plain_arguments(decorate(fn))


def _plain_arguments(dispatcher):
    """Type a call from another kernel by its arguments' plain types (see the module's docstring)."""
    typed_by = dispatcher.get_call_template

    def get_call_template(args, kws):
        return typed_by(tuple(types.unliteral(a) for a in args),
                        {k: types.unliteral(v) for k, v in kws.items()})

    dispatcher.get_call_template = get_call_template
    dispatcher.plain_arguments = True  # (tests find kernels decorated otherwise)
    return dispatcher


@dataclass
class CompileLog:
    """The kernels compiled while it records, each with its CPU seconds excluding the kernels
    it compiled inside (a caller compiles its callees first: Numba nests the events); the
    CPU clock, not the wall clock, so that the figures hold on a loaded machine."""

    seconds: dict[str, float] = field(default_factory=dict)  # "module.function" -> CPU s
    compiles: dict[str, int] = field(default_factory=dict)  # -> how many signatures
    _open: list = field(default_factory=list)

    def __enter__(self) -> "CompileLog":
        self._listener = _Listener(self)
        event.register("numba:compile", self._listener)
        return self

    def __exit__(self, *exc) -> None:
        event.unregister("numba:compile", self._listener)

    def started(self) -> None:
        self._open.append([time.process_time(), 0.0])

    def ended(self, dispatcher) -> None:
        began, inner = self._open.pop()
        spent = time.process_time() - began
        if self._open:
            self._open[-1][1] += spent
        fn = dispatcher.py_func
        name = f"{fn.__module__}.{fn.__qualname__}"
        self.seconds[name] = self.seconds.get(name, 0.0) + spent - inner
        self.compiles[name] = self.compiles.get(name, 0) + 1

    def ours(self) -> dict[str, float]:
        """The seconds of memplace's own kernels (not Numba's library code they pulled in)."""
        return {k: v for k, v in self.seconds.items() if k.startswith("memplace.")}


class _Listener(event.Listener):
    def __init__(self, log: CompileLog):
        self.log = log

    def on_start(self, ev) -> None:
        self.log.started()

    def on_end(self, ev) -> None:
        self.log.ended(ev.data["dispatcher"])


def cpu_seconds() -> float:
    """CPU seconds of this process so far (user + system)."""
    t = os.times()
    return t.user + t.system
