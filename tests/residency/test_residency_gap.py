"""`memplace gap`: search and bound in one budget; the best solution valid, its latency the
one printed, the bound at most every valid latency met, within the time limit."""
from __future__ import annotations

import re
import time

import pytest
from click.testing import CliRunner

from memplace.bench import certified_gap as gap_module
from memplace.cli import main
from memplace.instances import load
from memplace.model.residency import ResidencySolution, simulate, validate
from memplace.solvers import load_kernels, solve


@pytest.fixture(scope="module", autouse=True)
def kernels_loaded():
    """The kernels in this process before the commands run: `memplace gap` counts loading
    them in its time limit, which this module's limits are not about."""
    load_kernels(["sa", "bound"], "residency")


def test_gap_prints_a_valid_best_a_bound_below_it_and_who_found_each(tmp_path):
    out = tmp_path / "best.json"
    table = tmp_path / "gap.md"
    result = CliRunner().invoke(main, ["gap", "synth-100@nnpi", "--time-limit", "6", "-o", str(out),
                                       "--table", str(table)])
    assert result.exit_code == 0, result.output
    best = float(re.search(r"best valid\s+([\d.]+) us\s+found by (\S+)", result.output).group(1))
    bound = float(re.search(r"best bound\s+([\d.]+) us\s+proven by (\S+)", result.output).group(1))
    seconds = float(re.search(r"\(([\d.]+) s in all", result.output).group(1))
    assert seconds <= 6 + 5
    inst = load("synth-100@nnpi", problem="residency")
    sol = ResidencySolution.read(out, inst)
    assert validate(inst, sol).valid
    assert abs(simulate(inst, sol) * 1e6 - best) <= 1e-3
    assert bound <= best
    row = table.read_text(encoding="utf-8").splitlines()[-1].split(" | ")
    assert row[0] == "| synth-100@nnpi" and float(row[2]) == best and float(row[4]) == bound
    # no valid latency met here is below the bound: the compiler's and msa's
    for solver in ("compiler", "msa"):
        assert bound <= solve(inst, solver, time_limit=None, problem="residency").latency * 1e6 + 1e-3


def test_gap_refuses_a_problem_other_than_residency():
    result = CliRunner().invoke(main, ["gap", "synth-100@nnpi", "--problem", "static"])
    assert result.exit_code == 2 and "static" in result.output


def test_gap_refuses_one_output_file_for_two_programs(tmp_path):
    result = CliRunner().invoke(main, ["gap", "synth-100@nnpi", "synth-200@nnpi", "-o", str(tmp_path / "x")])
    assert result.exit_code == 2 and "one instance" in result.output


def test_gap_clock_starts_with_the_command_before_loading(monkeypatch):
    """`memplace gap --time-limit` is the command's time: its clock starts before the
    program and the kernels are loaded, so their time comes out of the first program's
    budget (compiling them on an empty cache does not: below)."""
    import memplace.bench.certified_gap as module
    import memplace.instances as instances
    import memplace.solvers as solvers
    seen: dict[str, float] = {}
    real_load, real_kernels, real_gap = instances.load, solvers.load_kernels, module.certified_gap

    def load_(*args, **kwargs):
        seen.setdefault("load", time.perf_counter())
        return real_load(*args, **kwargs)

    def kernels(*args, **kwargs):
        seen["kernels"] = time.perf_counter()
        return real_kernels(*args, **kwargs)

    def gap(*args, **kwargs):
        seen["began"] = kwargs["began"]
        return real_gap(*args, **kwargs)

    monkeypatch.setattr(instances, "load", load_)
    monkeypatch.setattr(solvers, "load_kernels", kernels)
    monkeypatch.setattr(module, "certified_gap", gap)
    result = CliRunner().invoke(main, ["gap", "synth-100@nnpi", "--time-limit", "2"])
    assert result.exit_code == 0, result.output
    assert seen["began"] < seen["load"] < seen["kernels"]


def test_gap_says_it_compiles_and_keeps_the_compile_out_of_its_clock(monkeypatch):
    """On an empty kernel cache `memplace gap` says so on stderr once and starts its clock
    after the compile (once per install, minutes on a loaded machine: a 30 s limit would
    otherwise be spent before the search starts); loading them stays on the clock (above)."""
    import memplace.bench.certified_gap as module
    import memplace.solvers as solvers
    seen: dict[str, float] = {}
    real_gap = module.certified_gap

    def kernels(names, problem, announce=None):
        seen["kernels"] = time.perf_counter()
        announce("compiling kernels once, ~58 s (sa's move loop); `memplace warmup` does it ahead")
        time.sleep(1.0)
        return time.perf_counter() - seen["kernels"]

    def gap(*args, **kwargs):
        seen["began"] = kwargs["began"]
        return real_gap(*args, **kwargs)

    monkeypatch.setattr(solvers, "load_kernels", kernels)
    monkeypatch.setattr(module, "certified_gap", gap)
    result = CliRunner().invoke(main, ["gap", "synth-100@nnpi", "--time-limit", "2"])
    assert result.exit_code == 0, result.output
    assert result.output.count("compiling kernels once") == 1
    assert seen["began"] > seen["kernels"]


def test_gap_stages_get_only_the_time_left_of_the_budget(monkeypatch):
    """Each stage's limit is what is left of `seconds` counted from `began`; with the
    budget spent before the first stage (a slow load), the bound still answers at once
    with its closed-form bounds and the compiler placement."""
    import memplace.solvers as solvers
    from memplace.bench.certified_gap import MIN_STAGE_S, after_lanes, certified_gap
    inst = load("synth-100@nnpi", problem="residency")
    calls: list[tuple[str, float, float]] = []
    real = solvers.solve

    def spy(instance, name, time_limit=None, **kwargs):
        calls.append((name, time_limit, time.perf_counter()))
        return real(instance, name, time_limit=time_limit, **kwargs)

    monkeypatch.setattr(solvers, "solve", spy)
    began = time.perf_counter() - 7.0  # 7 of 10 s already spent
    got = certified_gap(inst, 10.0, began=began)
    end = began + 10.0 - after_lanes(inst)
    stages = [(n, lim, at) for n, lim, at in calls if n in ("milp", "bound", "sa")]
    # the bound lane in its order (sa, beside it, if any time is left)
    assert [n for n, _, _ in stages if n != "sa"][:2] == ["milp", "bound"]
    for name, limit, at in stages:
        assert limit <= end - at + 0.01, name  # (left was read just before the call)
    assert got.bound <= got.latency

    calls.clear()
    got = certified_gap(inst, 10.0, began=time.perf_counter() - 10.0)  # nothing left
    assert [(n, lim) for n, lim, _ in calls if n in ("milp", "bound", "sa")] == [("bound", MIN_STAGE_S)]
    assert got.found_by.startswith("bound") and 0 < got.bound <= got.latency


def test_the_gap_bound_run_spends_its_time_proving_not_polishing(monkeypatch):
    """`bound`'s polish (an anneal of its best solution, 10% of its time by default) is the
    search lane's work here: the gap's bound run asks for none, so its bounds have all of
    their lane's time; sa's anneals are capped, one after another from the best."""
    import memplace.solvers as solvers
    from memplace.bench.certified_gap import SEARCH_ANNEAL_MOVES, certified_gap
    inst = load("synth-100@nnpi", problem="residency")
    calls: dict[str, dict] = {}
    real = solvers.solve

    def spy(instance, name, time_limit=None, **kwargs):
        calls[name] = dict(kwargs)
        return real(instance, name, time_limit=time_limit, **kwargs)

    monkeypatch.setattr(solvers, "solve", spy)
    certified_gap(inst, 6.0)
    assert calls["bound"].get("polish") == 0.0
    assert "polish" not in calls["sa"]
    assert calls["sa"].get("anneal_moves") == SEARCH_ANNEAL_MOVES > 0


def test_what_follows_the_lanes_is_kept_at_the_pace_the_process_gets():
    """The lanes end early enough for their results' validation and the report at the
    share of a core measured so far: at a fifth of a core, five times the CPU time."""
    from memplace.bench.certified_gap import MIN_PACE, after_lanes
    small, large = load("synth-100@nnpi", problem="residency"), load("synth-1000@nnpi", problem="residency")
    assert after_lanes(large) > after_lanes(small) > 0
    assert after_lanes(large, 0.2) == pytest.approx(5 * after_lanes(large))
    assert after_lanes(large, 3.0) == after_lanes(large)  # two threads' CPU: still one core
    assert after_lanes(large, 0.0) == after_lanes(large, MIN_PACE)


def test_a_slow_start_up_gives_the_lanes_less_time(monkeypatch):
    import memplace.solvers as solvers
    from memplace.bench.certified_gap import after_lanes, certified_gap
    inst = load("synth-100@nnpi", problem="residency")
    limits: dict[float, dict[str, float]] = {}
    real = solvers.solve

    def spy(instance, name, time_limit=None, **kwargs):
        limits[pace][name] = time_limit
        return real(instance, name, time_limit=time_limit, **kwargs)

    monkeypatch.setattr(solvers, "solve", spy)
    for pace in (1.0, 0.2):
        limits[pace] = {}
        began = time.perf_counter()
        certified_gap(inst, 4.0, began=began, pace=pace)
    assert limits[0.2]["sa"] < limits[1.0]["sa"] - 3 * after_lanes(inst)


def test_gap_falls_back_to_the_closed_form_bounds_when_the_bound_run_proved_none(monkeypatch):
    """A `bound` run stopped before it proved anything (its thread cut off by solve()'s
    hard stop at 10^4 ops) leaves the closed-form bounds, never an error."""
    import memplace.solvers as solvers
    from memplace.bench.certified_gap import certified_gap
    from memplace.model.residency import lower_bound
    inst = load("synth-100@nnpi", problem="residency")
    real = solvers.solve

    def no_bound(instance, name, **kwargs):
        result = real(instance, name, **kwargs)
        if name == "bound":
            result.lower_bound = None
        return result

    monkeypatch.setattr(solvers, "solve", no_bound)
    got = certified_gap(inst, 10.0, began=time.perf_counter() - 10.0)
    assert got.bound == lower_bound(inst) and got.bound_by == "closed-form bounds"


def test_above_its_size_cap_the_gap_runs_no_static_milp(monkeypatch):
    inst = load("synth-100@nnpi", problem="residency")
    monkeypatch.setattr(gap_module, "STATIC_MAX_OPS", inst.n_ops - 1)
    got = gap_module.certified_gap(inst, 10.0)
    assert "milp" not in got.runs and {"bound", "sa"} <= set(got.runs)
    assert got.bound <= got.latency


def test_the_search_runs_beside_the_bound_for_the_whole_budget():
    from memplace.bench.certified_gap import certified_gap
    inst = load("synth-100@nnpi", problem="residency")
    got = certified_gap(inst, 6.0)
    # side by side: the search is not left what the bound lane did not use
    assert got.runs["sa"]["wall_s"] >= 4.0
    assert "bound" in got.runs and got.runs["milp"]["wall_s"] <= 0.6 + 0.5
    assert got.seconds <= 6 + 5 and got.bound <= got.latency
