"""Package discovery and the compiled packing core for setuptools (everything else is in
pyproject.toml).

The root folders `model`, `solvers`, `instances`, `bench`, `envs` and `cli` are installed
as `memplace.model`, `memplace.solvers`, ... together with every subpackage found
under them, so a new subpackage (a folder with an `__init__.py`) is installed
without anyone having to list it: a forgotten entry in a hand-kept list once
made the non-editable install of the README's first command miss
the command line (then `memplace.bench.cli`).

`memplace.model.packing._core` is one C file against the CPython API (no numpy
headers, no other dependency), built when memplace is installed: it needs a C
compiler and the Python headers (Debian/Ubuntu: `apt install gcc python3-dev`;
macOS: `xcode-select --install`). It is optional, as the C speed-ups of PyYAML or
MarkupSafe are: when it cannot be built, the install goes on without it, says so,
and `memplace pack` warns and packs with the Numba kernels it is tested against
(same answers; the first run compiles them, each start loads Numba).
"""
from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

ROOTS = ("model", "solvers", "instances", "bench", "envs", "cli")


class BuildCore(build_ext):
    """build_ext that names the missing piece and goes on when the core cannot be built."""

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:  # setuptools/distutils raise several types here
            self.warn(
                f"memplace: its compiled packing core ({ext.sources[0]}) was not built: {exc}\n"
                "memplace works without it (memplace pack falls back to Numba kernels, "
                "slower to start); to build it, install a C compiler and the Python headers "
                "(Debian/Ubuntu: apt install gcc python3-dev; Fedora: dnf install gcc "
                "python3-devel; macOS: xcode-select --install) and run pip install again.")


setup(
    packages=[f"memplace.{name}" for root in ROOTS
              for name in [root, *(f"{root}.{sub}" for sub in find_packages(root))]],
    package_dir={f"memplace.{root}": root for root in ROOTS},
    ext_modules=[Extension("memplace.model.packing._core", ["model/packing/_core.c"],
                           extra_compile_args=["-O2"], optional=True)],
    cmdclass={"build_ext": BuildCore},
)
