"""Package discovery for setuptools (everything else is in pyproject.toml).

The root folders `model`, `solvers`, `instances`, `bench`, `envs` and `cli` are installed
as `memplace.model`, `memplace.solvers`, ... together with every subpackage found
under them, so a new subpackage (a folder with an `__init__.py`) is installed
without anyone having to list it: a forgotten entry in a hand-kept list once
made the non-editable install of the README's first command miss
the command line (then `memplace.bench.cli`).
"""
from setuptools import find_packages, setup

ROOTS = ("model", "solvers", "instances", "bench", "envs", "cli")

setup(
    packages=[f"memplace.{name}" for root in ROOTS
              for name in [root, *(f"{root}.{sub}" for sub in find_packages(root))]],
    package_dir={f"memplace.{root}": root for root in ROOTS},
)
