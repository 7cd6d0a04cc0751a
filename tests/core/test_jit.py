"""memplace's `njit` compiles a kernel once per argument types, whatever constants other
kernels pass it (Numba alone compiles once per constant: msa's allocator's largest kernel
was compiled twice, the move loop's four times); `CompileLog` says what compiling cost."""
from __future__ import annotations

import ast
from pathlib import Path

from memplace.model.core.jit import CompileLog, njit

ROOT = Path(__file__).resolve().parents[2]


def test_a_kernel_called_with_constants_compiles_once_per_plain_types():
    @njit(nogil=True)
    def shifted(x, up):
        return x + 1 if up else x - 1

    @njit
    def caller(x):
        return shifted(x, True) * 100 + shifted(x, False) * 10 + shifted(x, x > 3)

    assert caller(5) == 600 + 40 + 6
    assert [tuple(str(a) for a in sig) for sig in shifted.signatures] == [("int64", "bool")]


def test_the_compile_log_names_each_kernel_with_its_own_seconds():
    @njit
    def inner(x):
        return x * 2

    @njit
    def outer(x):
        return inner(x) + inner(x + 1)

    with CompileLog() as log:
        outer(3)
    names = {name.rsplit(".", 1)[-1]: n for name, n in log.compiles.items()}
    assert names["outer"] == 1 and names["inner"] == 1
    assert all(seconds >= 0.0 for seconds in log.seconds.values())
    assert not log.ours()  # kernels defined in a test are not memplace's


def test_every_kernel_of_memplace_uses_memplace_njit():
    """A kernel decorated with Numba's own njit would again compile once per constant."""
    offenders = []
    for folder in ("model", "solvers", "bench", "envs", "instances", "cli"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module == "numba" and \
                        any(alias.name in ("njit", "jit") for alias in node.names):
                    offenders.append(str(path.relative_to(ROOT)))
                if isinstance(node, ast.Attribute) and node.attr in ("njit", "jit") and \
                        isinstance(node.value, ast.Name) and node.value.id == "numba" and \
                        path.name != "jit.py":
                    offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []
