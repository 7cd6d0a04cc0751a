"""Compiling the kernels ahead: the parts `memplace warmup` compiles (in two processes with `--jobs 2`), in
an order where no part compiles a kernel that a part running beside it calls, and what a
run that finds its kernels missing says before compiling them."""
from __future__ import annotations

import pytest

from memplace.solvers import warm
from memplace.solvers.warm import PARTS, PartReport


def test_parts_are_listed_after_the_parts_they_call():
    seen: set[str] = set()
    for name, part in PARTS.items():
        assert set(part.after) <= seen, name
        seen.add(name)


def test_parts_that_may_run_at_once_are_the_unordered_ones():
    """Only parts that call none of each other's kernels run beside each other: the
    allocator and the move loop, the static solvers and either."""
    def ordered(a, b):
        return a in warm._ancestors(b) or b in warm._ancestors(a)
    beside = {frozenset((a, b)) for a in PARTS for b in PARTS if a < b and not ordered(a, b)}
    assert frozenset(("msa's allocator", "sa's move loop")) in beside
    assert frozenset(("static cost model", "residency simulator")) in beside
    assert frozenset(("offset packers", "msa's allocator")) not in beside


def test_a_part_starts_after_the_parts_it_calls(monkeypatch):
    order = []
    monkeypatch.setattr(warm, "run_part", order.append)
    started, done = [], []
    reports = warm.warm_parts(["msa's allocator"], jobs=1, on_start=started.append,
                              on_done=lambda r: done.append(r.name))
    assert order == started == done == [r.name for r in reports] == [
        "static cost model", "residency simulator", "offset packers", "msa's allocator"]


def test_every_part_names_functions_that_exist():
    for part in PARTS.values():
        assert callable(warm._named(part.warm))
        for kernel in part.kernels:
            assert hasattr(warm._named(kernel), "signatures"), kernel


def test_two_workers_compile_two_parts_and_report_each():
    """Each part reported once, whether its worker compiled it or, when a worker died (seen
    in CI: "munmap_chunk(): invalid pointer"), this process did (then often in no
    measurable CPU time: the kernels were loaded already)."""
    reports = warm.warm_parts(["static cost model", "residency simulator"], jobs=2)
    assert sorted(r.name for r in reports) == ["residency simulator", "static cost model"]
    assert all(r.wall_s > 0 and r.cpu_s >= 0 for r in reports)


def test_a_kernel_compiled_by_two_parts_is_reported():
    reports = [PartReport("a", 1.0, 1.0, {"memplace.x.k": 2.0, "memplace.x.j": 1.0}),
               PartReport("b", 1.0, 1.0, {"memplace.x.k": 2.0})]
    assert warm.compiled_twice(reports) == {"memplace.x.k": ["a", "b"]}


@pytest.mark.parametrize("solvers, problem, has, lacks", [
    (["sa"], "residency", ["msa's allocator", "sa's move loop"], []),
    (["msa"], "residency", ["msa's allocator", "static solvers"], ["sa's move loop"]),
    (["compiler"], "static", ["static solvers"], ["msa's allocator", "sa's move loop"]),
])
def test_a_run_needs_the_parts_of_its_solvers(solvers, problem, has, lacks):
    parts = warm.needed_parts(solvers, problem)
    assert set(has) <= set(parts) and not set(lacks) & set(parts)


def test_a_run_says_once_that_it_compiles_and_about_how_long(monkeypatch):
    said = []
    monkeypatch.setattr(warm, "missing_parts", lambda names=None: ["msa's allocator"])
    warm.load_kernels(["msa"], "residency", announce=said.append)
    expected = round(PARTS["msa's allocator"].cpu_s)
    assert said == [f"compiling kernels once, ~{expected} s (msa's allocator); "
                    "`memplace warmup` does it ahead"]
    monkeypatch.setattr(warm, "missing_parts", lambda names=None: [])
    warm.load_kernels(["msa"], "residency", announce=said.append)
    assert len(said) == 1


def test_a_worker_that_dies_leaves_its_parts_to_this_process(monkeypatch):
    """A pool whose worker died (BrokenProcessPool) does not fail the warmup: the parts not
    done yet compile here, each reported once."""
    import concurrent.futures as cf

    class DeadPool:
        def __init__(self, *args, **kwargs):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def submit(self, fn, *args):
            future = cf.Future()
            future.set_exception(cf.process.BrokenProcessPool("worker died"))
            return future

    monkeypatch.setattr(cf, "ProcessPoolExecutor", DeadPool)
    monkeypatch.setattr(warm, "warm_part", lambda name: PartReport(name, 1.0, 1.0))
    reports = warm.warm_parts(["static cost model", "residency simulator"], jobs=2)
    assert sorted(r.name for r in reports) == ["residency simulator", "static cost model"]


def test_by_default_every_part_compiles_in_this_process(monkeypatch):
    """No worker process unless asked (`jobs` > 1): a spawned compile worker was seen to
    crash, so neither `memplace warmup` nor a first `memplace bench` depends on one."""
    import concurrent.futures as cf

    def no_pool(*args, **kwargs):
        raise AssertionError("a worker pool was started")

    monkeypatch.setattr(cf, "ProcessPoolExecutor", no_pool)
    monkeypatch.setattr(warm, "warm_part", lambda name: PartReport(name, 1.0, 1.0))
    reports = warm.warm_parts(["static cost model", "residency simulator"])
    assert [r.name for r in reports] == ["static cost model", "residency simulator"]
