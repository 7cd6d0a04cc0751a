"""memplace.model's names load on first use (PEP 562); each is what it names whatever
was imported before it."""
from __future__ import annotations

import subprocess
import sys


def _python(code: str) -> str:
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


def test_warmup_is_the_function_even_after_its_module_was_imported():
    code = ("from memplace.model.warmup import tiny_instance_dict\n"
            "from memplace.model import warmup\nimport memplace.model\n"
            "print(callable(warmup), warmup is memplace.model.warmup, warmup.__name__)\n")
    assert _python(code) == "True True warmup"


def test_importing_the_model_package_imports_neither_numpy_nor_numba():
    code = "import sys, memplace.model\nprint(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'numba'}))"
    assert _python(code) == "[]"
