"""The problem-neutral core: one registry class, parameter specs checked in one place."""
from __future__ import annotations

import pytest

from memplace.model.core.errors import ParameterError
from memplace.model.core.params import Param, check_params
from memplace.model.core.problem import PROBLEMS, Problem
from memplace.model.core.registry import Registry

SPECS = {"n": Param(3, int, 1, 10, doc="count"), "rate": Param(0.5, float, 0.0, 1.0),
         "mode": Param("a", str, choices=("a", "b")), "flag": Param(True),
         "budget": Param(None, int, 0), "keep": Param(1, int, 0, "n-1")}


def test_registry_refuses_a_second_item_under_a_taken_name():
    reg: Registry[int] = Registry("widget")
    reg.add("x", 1)
    with pytest.raises(ValueError, match="widget name 'x' registered twice"):
        reg.add("x", 2)
    with pytest.raises(ParameterError, match="unknown widget 'y'; known: x"):
        reg.get("y")


def test_params_convert_strings_to_the_declared_type_and_fill_defaults():
    got = check_params("solver 't'", SPECS, {"n": "7", "rate": "0.25", "flag": "no", "budget": "none"})
    assert got == {"n": 7, "rate": 0.25, "mode": "a", "flag": False, "budget": None, "keep": 1}


@pytest.mark.parametrize("given, message", [
    ({"n": 0}, r"'n'=0 is outside \[1, 10\]"),
    ({"rate": 1.5}, r"'rate'=1.5 is outside \[0.0, 1.0\]"),
    ({"mode": "c"}, "'mode'='c' is not one of a, b"),
    ({"flag": 1}, "'flag' must be true or false"),
    ({"n": 2.5}, "'n' must be an integer"),
    ({"n": "many"}, "'n' cannot be 'many'"),
    ({"n": 2, "keep": 2}, r"'keep'=2 is outside \[0, n-1\] = \[0, 1\]"),
    ({"colour": 1}, "has no parameter 'colour'"),
])
def test_bad_parameters_are_named_with_what_is_allowed(given, message):
    with pytest.raises(ParameterError, match=message):
        check_params("solver 't'", SPECS, given)


def test_the_static_problem_is_registered_and_implements_the_protocol():
    static = PROBLEMS.get("static")
    assert isinstance(static, Problem)
    assert static.baselines == {"slowest": "all-slowest", "baseline": "compiler"}
