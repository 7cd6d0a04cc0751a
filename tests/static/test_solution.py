"""Solution files round-trip and the validator catches every way a placement can be wrong."""
from __future__ import annotations

import json

import numpy as np
import pytest

from memplace.model import Instance, Solution, SolutionError, latency, validate
from memplace.model.warmup import tiny_instance_dict


@pytest.fixture
def inst():
    return Instance.from_dict(tiny_instance_dict())


def _solution(inst, placement, offsets, claimed=None):
    place = np.array(placement, np.int64)
    lat = latency(inst, place) if claimed is None else claimed
    return Solution(inst.name, place, np.array(offsets, np.int64), lat)


def test_round_trip_through_a_file(inst, tmp_path):
    sol = _solution(inst, [1, 0, 0], [-1, 0, 32])
    sol.lower_bound = sol.latency * 0.5
    path = tmp_path / "s.json"
    sol.write(path, inst)
    data = json.loads(path.read_text())
    assert data["placement"] == ["DRAM", "SRAM", "SRAM"]
    assert data["offsets"] == [None, 0, 32]
    back = Solution.read(path, inst)
    assert back.placement.tolist() == [1, 0, 0]
    assert back.offsets.tolist() == [-1, 0, 32]
    assert validate(inst, back).ok


def test_over_capacity_is_invalid(inst):
    report = validate(inst, _solution(inst, [0, 0, 0], [0, 64, 32]))
    assert not report.valid
    assert any("over its capacity 96" in e for e in report.errors)


def test_overlapping_offsets_are_invalid(inst):
    report = validate(inst, _solution(inst, [1, 0, 0], [-1, 0, 16]))
    assert not report.valid
    assert any("overlap" in e for e in report.errors)


def test_tensors_not_live_together_may_share_addresses():
    data = tiny_instance_dict()
    data["workload"]["tensors"][2]["accesses"] = [[2, 32]]
    data["workload"]["tensors"][2]["producer"] = 2
    inst = Instance.from_dict(data)
    assert validate(inst, _solution(inst, [1, 0, 0], [-1, 0, 0])).ok


def test_misaligned_offset_is_invalid(inst):
    report = validate(inst, _solution(inst, [1, 0, 0], [-1, 0, 40]))
    assert any("alignment 16" in e for e in report.errors)


def test_offset_past_capacity_is_invalid(inst):
    report = validate(inst, _solution(inst, [1, 0, 0], [-1, 0, 80]))
    assert any("exceeds 'SRAM'" in e for e in report.errors)


def test_missing_offset_is_invalid(inst):
    report = validate(inst, _solution(inst, [1, 0, 0], [-1, 0, -1]))
    assert any("without an offset" in e for e in report.errors)


def test_wrong_latency_claim_is_rejected_but_placement_is_valid(inst):
    good = latency(inst, np.array([1, 0, 0]))
    report = validate(inst, _solution(inst, [1, 0, 0], [-1, 0, 32], claimed=good * (1 + 1e-6)))
    assert report.valid and not report.ok
    assert any("differs from the recomputed" in e for e in report.errors)
    assert validate(inst, _solution(inst, [1, 0, 0], [-1, 0, 32], claimed=good * (1 + 1e-10))).ok


def test_unknown_level_name_names_the_tensor(inst):
    data = {"format": "memplace-solution/1", "placement": ["DRAM", "HBM", "SRAM"], "latency": 1.0}
    with pytest.raises(SolutionError, match="tensor 1 'a': unknown level 'HBM'"):
        Solution.from_dict(data, inst)


def test_offset_on_unaddressed_level_is_rejected(inst):
    data = {"format": "memplace-solution/1", "placement": ["DRAM", "SRAM", "SRAM"],
            "offsets": [0, 0, 32], "latency": latency(inst, np.array([1, 0, 0]))}
    report = validate(inst, Solution.from_dict(data, inst))
    assert any("is not addressed" in e for e in report.errors)
