"""Every memplace-lib version in the package as published: frozen exactly when its content
hash is pinned (and then unchanged), verified whole within a minute of processor time, its
best knowns and bounds naming who found them, its splits usable by the environments; from
version 3 on, a version keeps its predecessor's entries, each as good or better. A new
version is checked by these tests as soon as its folder exists.

The default run verifies whole the newest version and every version not frozen; an older
frozen version is held to its pinned content hash there (any changed file fails), and is
verified whole again by `pytest -m slow` (its files cannot change, only the checking code)."""
from __future__ import annotations

import time

import pytest

from memplace.bench.library.contents import workload_of
from memplace.bench.library.tables import TARGET_GAP, TARGET_OPS, target_report
from memplace.bench.library.verify import verify
from memplace.instances.library import FROZEN, content_hash, instance_set, read_library, versions

VERSIONS = versions()
REAL = ("zoo/", "xla-")  # the zoo's PyTorch exports and the XLA programs


@pytest.fixture(scope="module", params=VERSIONS, ids=[f"memplace-lib-{v}" for v in VERSIONS])
def lib(request):
    return read_library(request.param)


def test_the_package_holds_the_published_versions_frozen():
    assert {1, 2, 3, 4, 5, 6, 7, 8, 9, 10} <= set(VERSIONS)
    assert set(FROZEN) <= {f"memplace-lib/{v}" for v in VERSIONS}
    for version in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10):
        assert read_library(version).manifest["frozen"] is True


def test_library_plans_run_on_the_newest_library_test_split():
    from memplace.bench.plan import load_plan
    from memplace.instances.library import latest
    lib = read_library(latest())
    for plan, problem in (("library-static", "static"), ("library-residency", "residency")):
        names = {e.name for e in lib.split("test", problem)}
        loaded = load_plan(plan)
        assert names and {t.instance for t in loaded.tasks} == names, plan


def test_a_version_is_frozen_iff_its_hash_is_pinned(lib):
    assert lib.manifest["format"] == lib.name
    if lib.manifest.get("frozen"):
        # A failure here means a file of the frozen version changed: make a new version.
        assert content_hash(lib.folder) == FROZEN[lib.name]
    else:
        assert lib.name not in FROZEN


def _verified_by_default(version: int) -> bool:
    return version == VERSIONS[-1] or f"memplace-lib/{version}" not in FROZEN


@pytest.mark.parametrize("version", [v if _verified_by_default(v) else pytest.param(v, marks=pytest.mark.slow)
                                     for v in VERSIONS], ids=[f"memplace-lib-{v}" for v in VERSIONS])
def test_a_version_verifies_whole_within_a_minute(version):
    lib = read_library(version)
    began, cpu = time.perf_counter(), time.process_time()
    reports, problems = verify(lib, FROZEN.get(lib.name))
    seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
    assert problems == []
    assert {r.entry.id: r.errors for r in reports if r.errors} == {}
    assert {e.problem for e in lib.entries} == {"static", "residency", "packing"}
    assert all(r.checked_bounds >= 1 for r in reports)  # every entry has a re-checked bound
    # the processor time verify needs (the wall time on 2 cores shared with other jobs is
    # a multiple of it: the same check on idle cores takes about this long)
    assert cpu < 60, f"verify needed {cpu:.1f} s of processor time"
    print(f"verified {len(reports)} entries in {seconds:.1f} s ({cpu:.1f} s of processor time)")


def test_every_best_known_and_bound_names_who_found_it(lib):
    for e in lib.entries:
        prov = e.best["provenance"]
        assert prov["solver"] and "seed" in prov and prov["commit"], e.id
        for b in e.bounds:
            assert b["provenance"]["solver"], (e.id, b["kind"])


def test_residency_target_report_is_the_certified_gaps(lib):
    within, above = target_report(lib)
    assert within or above
    for e in within:
        assert e.ops <= TARGET_OPS and e.certified_gap <= TARGET_GAP
    for e in above:  # honestly above: no certified bound within the target
        assert e.certified_gap is None or e.certified_gap > TARGET_GAP


def test_environments_sample_from_a_versions_splits(lib):
    gym = pytest.importorskip("gymnasium")
    import memplace.envs  # noqa: F401  registers the environments
    train = {str(s) for s in instance_set(f"{lib.name}:train", "residency")}
    test = {str(s) for s in instance_set(f"{lib.name}:test", "residency")}
    assert train and test and not train & test
    for env_id, split in (("memplace/Residency-v0", "train"), ("memplace/Placement-v0", "test")):
        env = gym.make(env_id, instances=f"{lib.name}:{split}")
        try:
            names = {e.name for e in lib.split(split) if e.problem != "packing"}
            for seed in range(2):
                _, info = env.reset(seed=seed)
                assert info["instance"] in names, (env_id, split)
        finally:
            env.close()


@pytest.mark.parametrize("version", [v for v in VERSIONS if v >= 2])
def test_a_version_from_2_on_has_thirty_real_programs_on_both_problems_and_packing(version):
    lib = read_library(version)
    real = {e.name for e in lib.entries if e.name.startswith(REAL) and e.problem != "packing"}
    assert len(real) >= 30
    for problem in ("static", "residency"):
        assert any(e.problem == problem and e.name.startswith("zoo/") for e in lib.entries)
    packing = [e.name for e in lib.entries if e.problem == "packing"]
    assert any(n.startswith("minimalloc-") for n in packing)
    assert any(n.startswith("idealloc-") for n in packing)
    assert any(n.startswith("gen-") for n in packing)
    # every pair left out says why, and is not also an entry
    ids = {e.id for e in lib.entries}
    assert all(d["reason"] and d["id"] not in ids for d in lib.dropped)


@pytest.mark.parametrize("version", [v for v in VERSIONS if v >= 2])
def test_each_program_of_a_version_from_2_on_sits_on_one_side_of_the_split(version):
    sides: dict[str, set[str]] = {}
    for e in read_library(version).entries:
        if e.problem != "packing":
            sides.setdefault(workload_of(e.name), set()).add(e.split)
            assert e.data["workload"] == workload_of(e.name)
    assert all(len(s) == 1 for s in sides.values())
    assert {"train", "test"} <= set().union(*sides.values())


@pytest.mark.parametrize("version", [v for v in VERSIONS if v >= 3])
def test_a_version_from_3_on_keeps_its_predecessors_entries_each_as_good_or_better(version):
    lib, old_lib = read_library(version), read_library(version - 1)
    mine = {e.id: e for e in lib.entries}
    assert set(mine) == {e.id for e in old_lib.entries}
    assert {d["id"] for d in lib.dropped} == {d["id"] for d in old_lib.dropped}
    for old in old_lib.entries:
        e = mine[old.id]
        assert e.sha256 == old.sha256 and e.split == old.split, e.id
        assert e.best["objective"] <= old.best["objective"], e.id
        assert (e.certified_bound or 0) >= (old.certified_bound or 0), e.id
    assert len(target_report(lib)[0]) >= len(target_report(old_lib)[0])
