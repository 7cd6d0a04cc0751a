"""A small library built once per test session: one instance (both problems) and one
packing instance, defaults, cheap bounds, then one improve pass of 1 s per solver."""
from __future__ import annotations

import pytest

from memplace.bench.library import improve, store
from memplace.instances.library import read_library
from memplace.model.packing import BENCHMARKS

INSTANCE = "vgg16@nnpi"


@pytest.fixture(scope="session")
def small_library(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lib") / "memplace-lib-7"
    lib = store.create(7, "test library", folder)
    improve.add_instance(lib, INSTANCE)
    improve.add_packing(lib, BENCHMARKS / "minimalloc" / "examples" / "input.12.csv", "example-12",
                        "example-12", capacity=12)
    # improve a library read back from its files, as 'memplace lib improve' does
    improve.improve(read_library(folder), 1.0, echo=lambda line: None)
    return folder


