"""`memplace-solution/2` files round-trip; `/1` files read as solutions without windows;
malformed files raise SolutionError naming the window; copy_bandwidth is read from levels."""
from __future__ import annotations

import json

import numpy as np
import pytest

from memplace.model import Instance, InstanceError, Solution, SolutionError, latency
from memplace.model.residency import ResidencySolution, Window, simulate, validate
from residency_cases import DRAM, LLC, SRAM, small, small_dict, solution


def test_round_trip_through_a_file(tmp_path):
    inst = small(addressed=True)
    wins = [Window(0, SRAM, 0, 2, 2, offset=16), Window(1, LLC, 0, 0, 1, evict=(2, 4))]
    sol = solution(inst, wins, homes=[DRAM, DRAM, LLC, SRAM], offsets=[-1, -1, -1, 256])
    sol.latency = simulate(inst, sol)
    sol.lower_bound = sol.latency / 2
    sol.solver = {"name": "msa", "params": {}, "seed": 0}
    path = tmp_path / "s.json"
    sol.write(path, inst)
    data = json.loads(path.read_text())
    assert data["format"] == "memplace-solution/2"
    assert data["placement"] == ["DRAM", "DRAM", "LLC", "SRAM"]
    assert data["offsets"] == [None, None, None, 256]
    assert data["windows"][1] == {"tensor": 1, "level": "LLC", "start": 0, "first": 0, "last": 1,
                                  "offset": None, "evict": [2, 4]}
    back = ResidencySolution.read(path, inst)
    assert back.windows == tuple(wins)
    assert back.placement.tolist() == [2, 2, 1, 0]
    assert back.latency == sol.latency and back.solver == sol.solver
    assert validate(inst, back).ok


def test_window_keys_offset_and_evict_may_be_left_out():
    inst = small()
    data = {"format": "memplace-solution/2", "instance": inst.name, "placement": ["DRAM"] * 4,
            "windows": [{"tensor": 0, "level": "SRAM", "start": 0, "first": 2, "last": 2}],
            "latency": 1.0}
    assert ResidencySolution.from_dict(data, inst).windows == (Window(0, SRAM, 0, 2, 2, None, None),)


def test_a_static_solution_file_reads_as_one_without_windows(tmp_path):
    inst = small()
    place = np.array([SRAM, LLC, DRAM, LLC])
    static = Solution(inst.name, place, None, latency(inst, place))
    static.write(tmp_path / "s1.json", inst)
    sol = ResidencySolution.read(tmp_path / "s1.json", inst)
    assert sol.windows == () and sol.placement.tolist() == place.tolist()
    assert validate(inst, sol).ok and validate(inst, sol).latency == static.latency


def test_windows_are_required_in_format_2():
    inst = small()
    data = {"format": "memplace-solution/2", "placement": ["DRAM"] * 4, "latency": 1.0}
    with pytest.raises(SolutionError, match="'windows' is required"):
        ResidencySolution.from_dict(data, inst)


@pytest.mark.parametrize("window, message", [
    ({"tensor": 9, "level": "SRAM", "start": 0, "first": 0, "last": 0}, "window 0: tensor 9"),
    ({"tensor": 0, "level": "L9", "start": 0, "first": 0, "last": 0}, "unknown level 'L9'"),
    ({"tensor": 0, "level": "SRAM", "start": 0, "first": 7, "last": 0}, "first 7 is not an op"),
    ({"tensor": 0, "level": "SRAM", "start": 0, "first": 1, "last": 2, "evict": [1]}, "evict \\[1\\]"),
    ({"tensor": 0, "level": "SRAM", "start": 0, "first": 1, "last": 2, "offset": 1.5}, "offset 1.5"),
    ("x", "window 0: must be an object"),
])
def test_malformed_windows_are_named(window, message):
    inst = small()
    data = {"format": "memplace-solution/2", "placement": ["DRAM"] * 4, "windows": [window],
            "latency": 1.0}
    with pytest.raises(SolutionError, match=message):
        ResidencySolution.from_dict(data, inst)


@pytest.mark.parametrize("claim, message", [
    ({"latency": -1.0}, "latency must be a number >= 0"),
    ({"latency": "x"}, "latency must be a number >= 0"),
    ({"lower_bound": "x"}, "lower_bound must be a number or null"),
    ({"status": "proved"}, "status must be 'optimal' or 'feasible'"),
    ({"instance": 7}, "instance must be the instance's name"),
    ({"solver": [1]}, "solver must be an object"),
])
def test_claims_are_read_as_in_a_static_file(claim, message):
    """docs/spec.md section 10: latency, lower_bound and status as in section 7, in either format."""
    inst = small()
    data = {"placement": ["DRAM"] * 4, "windows": [], "latency": 1.0} | claim
    for reader, file_format in ((ResidencySolution.from_dict, "memplace-solution/2"),
                                (ResidencySolution.from_dict, "memplace-solution/1"),
                                (Solution.from_dict, "memplace-solution/1")):
        with pytest.raises(SolutionError, match=message):
            reader(data | {"format": file_format}, inst)


def test_copy_bandwidth_defaults_to_the_bandwidth():
    inst = small(L2={"copy_bandwidth": 2.5e7})
    assert inst.copy_bandwidth.tolist() == [1e9, 4e8, 2.5e7]
    assert inst.levels[0].copy_bandwidth == 1e9 and inst.levels[2].copy_bandwidth == 2.5e7


@pytest.mark.parametrize("bad", [0, -1.0, "fast", None, float("inf")])
def test_copy_bandwidth_must_be_positive(bad):
    data = small_dict()
    data["hardware"]["levels"][1]["copy_bandwidth"] = bad
    with pytest.raises(InstanceError, match="level 1 'LLC': copy_bandwidth must be a number > 0"):
        Instance.from_dict(data)
