"""The residency model is a sibling of the static one: neither imports the other's modules
(residency uses static only through `memplace.model`'s public names)."""
from __future__ import annotations

import ast
from pathlib import Path

MODEL = Path(__file__).resolve().parent.parent / "model"


def _imports(folder: Path) -> set[tuple[str, str]]:
    found = set()
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                found.add((path.name, node.module))
            elif isinstance(node, ast.Import):
                found |= {(path.name, alias.name) for alias in node.names}
    return found


def test_residency_does_not_import_static_modules():
    bad = {(f, m) for f, m in _imports(MODEL / "residency") if m.startswith("memplace.model.static")}
    assert bad == set()


def test_static_does_not_import_residency():
    bad = {(f, m) for f, m in _imports(MODEL / "static") if "residency" in m}
    assert bad == set()
