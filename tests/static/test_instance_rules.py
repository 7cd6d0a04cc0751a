"""Every rule of docs/spec.md section 2 rejects a broken file with an error naming the offender."""
from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memplace.model import Instance, InstanceError
from memplace.model.warmup import tiny_instance_dict


def _broken(mutate):
    data = tiny_instance_dict()
    mutate(data)
    return data


def _ops(d):
    return d["workload"]["ops"]


def _tensors(d):
    return d["workload"]["tensors"]


def _levels(d):
    return d["hardware"]["levels"]


def _set(obj, key, value):
    obj[key] = value


BROKEN = {
    "format": (lambda d: _set(d, "format", "memplace-instance/2"), "format must be"),
    "no ops": (lambda d: _set(d["workload"], "ops", []), "'ops' must be a non-empty list"),
    "op without name": (lambda d: _ops(d)[1].pop("name"), "op 1: 'name'"),
    "negative flops": (lambda d: _set(_ops(d)[2], "flops", -1.0), "op 2 'op2': flops must be a number >= 0"),
    "flops not a number": (lambda d: _set(_ops(d)[0], "flops", "many"), "op 0 'op0': flops"),
    "flops is a bool": (lambda d: _set(_ops(d)[0], "flops", True), "op 0 'op0': flops"),
    "unknown kind": (lambda d: _set(_tensors(d)[1], "kind", "buffer"), "tensor 1 'a': kind"),
    "zero size": (lambda d: _set(_tensors(d)[1], "size", 0), "tensor 1 'a': size"),
    "float size": (lambda d: _set(_tensors(d)[1], "size", 32.0), "tensor 1 'a': size"),
    "no accesses": (lambda d: _set(_tensors(d)[2], "accesses", []), "tensor 2 'b': accesses"),
    "access op out of range": (lambda d: _set(_tensors(d)[2], "accesses", [[1, 32], [3, 32]]),
                               "tensor 2 'b': access op index 3"),
    "negative bytes": (lambda d: _set(_tensors(d)[2], "accesses", [[1, 32], [2, -1]]),
                       "tensor 2 'b': access bytes for op 2"),
    "not a pair": (lambda d: _set(_tensors(d)[2], "accesses", [[1, 32, 5]]), "tensor 2 'b': access"),
    "two pairs for one op": (lambda d: _set(_tensors(d)[2], "accesses", [[1, 32], [1, 8]]),
                             "tensor 2 'b': more than one access pair for op 1"),
    "producer missing": (lambda d: _tensors(d)[1].pop("producer"), "tensor 1 'a': 'producer' is required"),
    "producer not accessing": (lambda d: _set(_tensors(d)[2], "producer", 0),
                               "tensor 2 'b': producer op 0 is not among its accesses"),
    "consumer before producer": (lambda d: _set(_tensors(d)[2], "producer", 2),
                                 "tensor 2 'b': producer op 2 must be the smallest op index"),
    "producer out of range": (lambda d: _set(_tensors(d)[2], "producer", 7), "tensor 2 'b': producer 7"),
    "compute rate zero": (lambda d: _set(d["hardware"], "compute_rate", 0), "compute_rate must be a number > 0"),
    "no levels": (lambda d: _set(d["hardware"], "levels", []), "'levels' must be a non-empty list"),
    "duplicate level": (lambda d: _set(_levels(d)[1], "name", "SRAM"), "level 1 'SRAM': level names must be unique"),
    "zero bandwidth": (lambda d: _set(_levels(d)[1], "bandwidth", 0.0), "level 1 'DRAM': bandwidth"),
    "null capacity not last": (lambda d: _set(_levels(d)[0], "capacity", None),
                               "level 0 'SRAM': capacity null (unbounded) is allowed on the last level only"),
    "float capacity": (lambda d: _set(_levels(d)[0], "capacity", 96.5), "level 0 'SRAM': capacity must be an integer"),
    "capacity missing": (lambda d: _levels(d)[0].pop("capacity"), "level 0 'SRAM': 'capacity' is required"),
    "bad alignment": (lambda d: _set(_levels(d)[0], "alignment", 0), "level 0 'SRAM': alignment"),
    "bad addressed": (lambda d: _set(_levels(d)[0], "addressed", "yes"), "level 0 'SRAM': 'addressed'"),
    "last level too small": (lambda d: _set(_levels(d)[1], "capacity", 100),
                             "level 1 'DRAM': capacity 100 is below the peak live bytes 128"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_instance_is_rejected_naming_the_offender(case):
    mutate, message = BROKEN[case]
    with pytest.raises(InstanceError) as err:
        Instance.from_dict(_broken(mutate))
    assert message in str(err.value)


def test_the_unbroken_instance_loads_and_unknown_keys_are_ignored():
    data = tiny_instance_dict()
    data["source"] = "a test"
    _tensors(data)[0]["notes"] = "anything"
    inst = Instance.from_dict(data)
    assert (inst.n_ops, inst.n_tensors, inst.level_names) == (3, 3, ["SRAM", "DRAM"])


def test_last_level_with_enough_capacity_is_accepted():
    inst = Instance.from_dict(_broken(lambda d: _set(_levels(d)[1], "capacity", 128)))
    assert inst.peak_live_bytes() == 128


def test_live_ranges_follow_section_3():
    inst = Instance.from_dict(tiny_instance_dict())
    # the weight is read only by op 0 but is resident at every step
    assert (inst.start.tolist(), inst.end.tolist()) == ([0, 0, 1], [2, 1, 2])


def test_graph_has_an_edge_per_activation_read():
    g = Instance.from_dict(tiny_instance_dict()).graph()
    assert sorted(g.edges()) == [(0, 1), (1, 2)]


def test_broken_file_error_names_the_file(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_broken(lambda d: _set(_tensors(d)[1], "size", -3))))
    with pytest.raises(InstanceError, match=r"bad\.json: tensor 1 'a': size"):
        Instance.from_file(path)
    path.write_text("{not json")
    with pytest.raises(InstanceError, match="not valid JSON"):
        Instance.from_file(path)


# ---------------------------------------------------------------------- rectify order
def _exact_rectify_rank(traffic: list[int], size: list[int]) -> list[int]:
    """docs/spec.md section 6's order by a plain comparison sort with exact cross products."""
    import functools

    def compare(a: int, b: int) -> int:
        lhs, rhs = traffic[a] * size[b], traffic[b] * size[a]
        if lhs != rhs:
            return -1 if lhs < rhs else 1
        if size[a] != size[b]:
            return -1 if size[a] > size[b] else 1
        return -1 if a > b else 1

    order = sorted(range(len(size)), key=functools.cmp_to_key(compare))
    rank = [0] * len(size)
    for position, t in enumerate(order):
        rank[t] = position
    return rank


_near_2_53 = st.integers(2**53 - 8, 2**53)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(
    st.tuples(st.integers(0, 12), st.integers(1, 4)),  # many exact ties
    st.tuples(st.integers(0, 2**61), st.integers(1, 2**53)),  # anything in range
    st.tuples(_near_2_53.map(lambda s: 3 * s + 1), _near_2_53),  # ratios within ulps
), min_size=1, max_size=40))
def test_vectorised_rectify_order_is_the_exact_order(pairs):
    from memplace.model.instance import _rectify_rank
    traffic, size = [t for t, _ in pairs], [s for _, s in pairs]
    got = _rectify_rank(np.array(traffic, np.int64), np.array(size, np.int64))
    assert got.tolist() == _exact_rectify_rank(traffic, size)
