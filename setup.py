"""Package discovery and the compiled packing core for setuptools (everything else is in
pyproject.toml).

The root folders `model`, `solvers`, `instances`, `bench`, `envs` and `cli` are installed
as `memplace.model`, `memplace.solvers`, ... together with every subpackage found
under them, so a new subpackage (a folder with an `__init__.py`) is installed
without anyone having to list it: a forgotten entry in a hand-kept list once
made the non-editable install of the README's first command miss
the command line (then `memplace.bench.cli`).

`memplace.model.packing._core` is one C file against the CPython API (no numpy
headers, no other dependency): it needs a C compiler at install time (gcc or
clang; `apt install gcc`, `xcode-select --install`). Without one the build
stops with a message that says so.
"""
from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

ROOTS = ("model", "solvers", "instances", "bench", "envs", "cli")


class BuildCore(build_ext):
    """build_ext that names the missing piece when the C compiler is absent or fails."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # setuptools/distutils raise several types here
            raise SystemExit(
                "memplace: building its compiled packing core (model/packing/_core.c) failed: "
                f"{exc}\nmemplace needs a C compiler to install from source: install gcc "
                "(Debian/Ubuntu: apt install gcc; Fedora: dnf install gcc; macOS: "
                "xcode-select --install) and the Python headers (apt install python3-dev), "
                "then run pip install again.") from None


setup(
    packages=[f"memplace.{name}" for root in ROOTS
              for name in [root, *(f"{root}.{sub}" for sub in find_packages(root))]],
    package_dir={f"memplace.{root}": root for root in ROOTS},
    ext_modules=[Extension("memplace.model.packing._core", ["model/packing/_core.c"],
                           extra_compile_args=["-O2"])],
    cmdclass={"build_ext": BuildCore},
)
