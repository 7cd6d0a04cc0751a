"""memplace-lib/3 as published: memplace-lib/2's entries with better best knowns and bounds,
verified whole within a minute (CI runs this), its splits usable by the environments."""
from __future__ import annotations

import time

import pytest

from memplace.bench.library.tables import TARGET_GAP, TARGET_OPS, target_report
from memplace.bench.library.verify import verify
from memplace.instances.library import FROZEN, content_hash, instance_set, read_library


@pytest.fixture(scope="module")
def lib3():
    return read_library(3)


def test_memplace_lib_3_verifies_whole_within_a_minute(lib3):
    began, cpu = time.perf_counter(), time.process_time()
    reports, problems = verify(lib3, FROZEN.get(lib3.name))
    seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
    assert problems == []
    assert {r.entry.id: r.errors for r in reports if r.errors} == {}
    assert all(r.checked_bounds >= 1 for r in reports)  # every entry has a re-checked bound
    # processor time, as for memplace-lib/2 (the wall time on shared cores is a multiple)
    assert cpu < 60, f"verify needed {cpu:.1f} s of processor time"
    print(f"verified {len(reports)} entries in {seconds:.1f} s ({cpu:.1f} s of processor time)")


def test_memplace_lib_3_is_frozen_iff_its_hash_is_pinned(lib3):
    if lib3.manifest.get("frozen"):
        # A failure here means a file of the frozen version changed: make memplace-lib/4.
        assert content_hash(lib3.folder) == FROZEN["memplace-lib/3"]
    else:
        assert "memplace-lib/3" not in FROZEN


def test_memplace_lib_3_has_version_2s_entries_each_as_good_or_better(lib3):
    lib2 = read_library(2)
    mine = {e.id: e for e in lib3.entries}
    assert set(mine) == {e.id for e in lib2.entries}
    assert {d["id"] for d in lib3.dropped} == {d["id"] for d in lib2.dropped}
    for old in lib2.entries:
        e = mine[old.id]
        assert e.sha256 == old.sha256 and e.split == old.split, e.id
        assert e.best["objective"] <= old.best["objective"], e.id
        assert (e.certified_bound or 0) >= (old.certified_bound or 0), e.id


def test_every_best_known_and_bound_names_who_found_it(lib3):
    for e in lib3.entries:
        prov = e.best["provenance"]
        assert prov["solver"] and "seed" in prov and prov["commit"], e.id
        for b in e.bounds:
            assert b["provenance"]["solver"], (e.id, b["kind"])


def test_residency_target_report_is_the_certified_gaps(lib3):
    within, above = target_report(lib3)
    assert within or above
    for e in within:
        assert e.ops <= TARGET_OPS and e.certified_gap <= TARGET_GAP
    for e in above:  # honestly above: no certified bound within the target
        assert e.certified_gap is None or e.certified_gap > TARGET_GAP
    assert len(within) >= len(target_report(read_library(2))[0])


def test_environments_sample_from_memplace_lib_3_splits(lib3):
    gym = pytest.importorskip("gymnasium")
    import memplace.envs  # noqa: F401  registers the environments
    train = {str(s) for s in instance_set("memplace-lib/3:train", "residency")}
    test = {str(s) for s in instance_set("memplace-lib/3:test", "residency")}
    assert train and test and not train & test
    env = gym.make("memplace/Residency-v0", instances="memplace-lib/3:train")
    try:
        names = {e.name for e in lib3.split("train") if e.problem != "packing"}
        for seed in range(2):
            _, info = env.reset(seed=seed)
            assert info["instance"] in names
    finally:
        env.close()
