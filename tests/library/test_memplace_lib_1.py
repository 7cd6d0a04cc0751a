"""memplace-lib/1 as published: frozen, verified whole, usable by the environments."""
from __future__ import annotations

import time

import pytest

from memplace.bench.library.verify import verify
from memplace.instances.library import FROZEN, content_hash, instance_set, read_library


def test_memplace_lib_1_is_frozen_and_its_content_has_not_changed():
    lib = read_library(1)
    assert lib.manifest["frozen"] is True
    assert lib.manifest["format"] == "memplace-lib/1"
    # A failure here means a file of the frozen version changed: make memplace-lib/2 instead.
    assert content_hash(lib.folder) == FROZEN["memplace-lib/1"]


def test_memplace_lib_1_verifies_whole_within_a_minute():
    lib = read_library(1)
    began = time.perf_counter()
    reports, problems = verify(lib, FROZEN["memplace-lib/1"])
    seconds = time.perf_counter() - began
    assert problems == []
    assert {r.entry.id: r.errors for r in reports if r.errors} == {}
    assert {e.problem for e in lib.entries} == {"static", "residency", "packing"}
    assert all(r.checked_bounds >= 1 for r in reports)  # every entry has a re-checked bound
    print(f"verified {len(reports)} entries in {seconds:.1f} s")


def test_environments_sample_from_a_library_split():
    gym = pytest.importorskip("gymnasium")
    import memplace.envs  # noqa: F401  registers the environments
    train = {str(s) for s in instance_set("memplace-lib/1:train")}
    test = {str(s) for s in instance_set("memplace-lib/1:test")}
    assert train and test and not train & test
    env = gym.make("memplace/Placement-v0", instances="memplace-lib/1:test")
    try:
        names = {e.name for e in read_library(1).split("test") if e.problem != "packing"}
        for seed in range(3):
            _, info = env.reset(seed=seed)
            assert info["instance"] in names
    finally:
        env.close()


def test_library_plans_run_on_the_newest_library_test_split():
    from memplace.bench.plan import load_plan
    from memplace.instances.library import latest
    lib = read_library(latest())
    for plan, problem in (("library-static", "static"), ("library-residency", "residency")):
        names = {e.name for e in lib.split("test", problem)}
        loaded = load_plan(plan)
        assert names and {t.instance for t in loaded.tasks} == names, plan
