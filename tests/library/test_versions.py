"""Which library a command, plan or environment uses when none is named: the newest."""
from __future__ import annotations

import pytest

from memplace.instances.library import (instance_set, is_spec, latest, read_library, resolve,
                                        versions)
from memplace.model.core.errors import MemplaceError


def test_an_unversioned_library_is_the_newest_version_in_the_package():
    newest = max(versions())
    assert latest() == newest
    assert resolve(None) == resolve("memplace-lib") == resolve("memplace-lib:test") == \
        f"memplace-lib/{newest}"
    assert read_library().version == read_library("memplace-lib").version == newest
    assert instance_set("memplace-lib:test") == instance_set(f"memplace-lib/{newest}:test")


def test_a_named_version_is_that_version():
    assert resolve("memplace-lib/1:train") == resolve(1) == resolve("1") == "memplace-lib/1"
    assert read_library("memplace-lib/1").version == 1


@pytest.mark.parametrize("text", ["memplace-lib/x", "memplace-lib:dev", "mplib/1", "memplace-lib/1:"])
def test_what_is_not_a_library_spec_is_refused_by_name(text):
    assert not is_spec(text)
    with pytest.raises(MemplaceError, match="memplace-lib"):
        instance_set(text)


def test_a_gap_that_rounds_to_zero_prints_without_a_sign():
    from memplace.bench.library.tables import percent
    assert percent(-1e-12) == percent(1e-12) == "0.00"
    assert percent(-0.0125) == "-1.25" and percent(None) == "-"
