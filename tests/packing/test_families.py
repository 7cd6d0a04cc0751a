"""The held-out families: deterministic, committed as generated, shaped as documented."""
from __future__ import annotations

import pytest

from memplace.bench.pack_table import FAMILIES, minimalloc_instances
from memplace.model.core.errors import MemplaceError
from memplace.model.packing.families import HELDOUT_FAMILIES, family_instance
from memplace.model.packing.packers import check_packing, peak_live_size


def test_committed_family_files_are_what_the_generators_write():
    committed = {i.name: i for i in minimalloc_instances(FAMILIES, "families")}
    assert len(committed) == len(HELDOUT_FAMILIES) == 12
    for spec in HELDOUT_FAMILIES:
        got = family_instance(*spec)
        file = committed[got.name]
        assert file.capacity == got.capacity
        assert list(file.buffers) == got.buffers


@pytest.mark.parametrize("kind", ["kv", "pipe", "tiny"])
def test_natural_families_sit_at_their_peak_live_size(kind):
    got = family_instance(kind, {"kv": 12, "pipe": 6, "tiny": 200}[kind], 7)
    assert got.capacity == peak_live_size(got.buffers)
    again = family_instance(kind, {"kv": 12, "pipe": 6, "tiny": 200}[kind], 7)
    assert again.buffers == got.buffers


def test_tight_family_has_a_packing_with_one_thousandth_to_spare():
    got = family_instance("tight", 40, 3)
    assert check_packing(got.buffers, got.certificate, got.capacity) == []
    peak = peak_live_size(got.buffers)
    assert peak <= got.capacity and got.capacity - peak <= peak // 999 + 1
    assert max(int(o) + b.size for o, b in zip(got.certificate, got.buffers)) == peak


def test_tiny_family_mixes_huge_and_tiny_and_alignments():
    got = family_instance("tiny", 300, 601)
    sizes = sorted(b.size for b in got.buffers)
    assert sizes[0] <= 4096 and sizes[-1] >= 0.2 * got.capacity
    assert {b.alignment for b in got.buffers} >= {1, 64, 256}


def test_unknown_family_is_named():
    with pytest.raises(MemplaceError, match="unknown family 'bogus'"):
        family_instance("bogus", 10, 1)
