"""The `memplace` group: a lazy registry of commands (listing them imports none of them,
running one imports only its own module) and one error line with exit status 2."""
from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from memplace.cli.main import DOORS, main
from memplace.model.warmup import tiny_instance_dict

COMMAND_MODULES = sorted({door.target.partition(":")[0] for door in DOORS.values()})


def _modules_after(args: list[str], tmp_path) -> tuple[str, set[str]]:
    """Run `memplace ARGS` in a fresh interpreter; its output and the modules it imported."""
    script = ("import json, sys\n"
              "from memplace.cli.main import main\n"
              "try:\n"
              f"    main({args!r}, standalone_mode=False)\n"
              "finally:\n"
              f"    open({str(tmp_path / 'modules.json')!r}, 'w').write(json.dumps(sorted(sys.modules)))\n")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    return run.stdout, set(json.loads((tmp_path / "modules.json").read_text()))


def test_help_lists_every_command_with_its_short_help_and_imports_none_of_them(tmp_path):
    out, modules = _modules_after(["--help"], tmp_path)
    for name, door in DOORS.items():
        assert f"  {name} " in out and door.help in out, name
    assert not modules & set(COMMAND_MODULES)
    assert not {m for m in modules if m.split(".")[0] in ("numba", "numpy", "networkx")}
    assert not {m for m in modules if m.startswith(("memplace.model", "memplace.solvers", "memplace.bench"))}


def test_pack_imports_neither_the_harness_nor_the_solvers_nor_other_commands(tmp_path):
    out, modules = _modules_after(["pack", "--help"], tmp_path)
    assert "--capacity" in out
    assert "memplace.cli.pack" in modules
    assert not {m for m in modules if m.startswith(("memplace.bench", "memplace.solvers"))}
    assert not (modules & set(COMMAND_MODULES)) - {"memplace.cli.pack", "memplace.cli.values"}


def test_pack_packs_without_loading_numba_or_the_cost_model(tmp_path):
    """`memplace pack` starts like a binary: the compiled core packs, no JIT is loaded, and
    neither is numpy.ma (numpy 2's np.unique would import it, 12 ms of start-up)."""
    from memplace.model.packing import BENCHMARKS
    instance = BENCHMARKS / "minimalloc" / "challenging" / "F.1048576.csv"
    out, modules = _modules_after(["pack", str(instance), "--capacity", "1048576"], tmp_path)
    assert out.startswith("packed 296 buffers at capacity 1048576")
    assert "memplace.model.packing._core" in modules
    assert not {m for m in modules if m.split(".")[0] in ("numba", "llvmlite", "platformdirs")}
    assert "numpy.ma" not in modules
    assert not {m for m in modules if m.startswith(("memplace.model.static",
                                                    "memplace.model.residency",
                                                    "memplace.model.packing.search",
                                                    "memplace.model.packing.heuristics"))}


def test_solve_reaches_a_solver_without_importing_the_harness(tmp_path):
    instance = tmp_path / "tiny.json"
    instance.write_text(json.dumps(tiny_instance_dict()))
    out, modules = _modules_after(["solve", str(instance), "--solver", "sa", "--time-limit", "1"], tmp_path)
    assert "latency" in out and "status=" in out
    assert "memplace.solvers.static.sa" in modules
    assert not {m for m in modules if m.startswith("memplace.bench")}


@pytest.mark.parametrize("name", sorted(DOORS))
def test_every_door_opens_the_command_of_its_name(name):
    command = DOORS[name].load()
    assert isinstance(command, click.Command) and command.name == name
    assert command.get_short_help_str(200) == DOORS[name].help


def test_the_listing_fits_the_help_width_without_truncation():
    width = 80 - 6 - max(map(len, DOORS))  # click's layout at its default width
    assert all(len(door.help) <= width for door in DOORS.values())


def test_an_unknown_command_is_one_error_line_with_status_2():
    result = CliRunner().invoke(main, ["sovle"], prog_name="memplace")
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == ["error: No such command 'sovle'. (see 'memplace --help')"]


def test_a_user_error_from_a_command_is_one_line_with_status_2(tmp_path):
    result = CliRunner().invoke(main, ["solve", str(tmp_path / "missing.json")])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "missing.json" in lines[0]


def test_a_programming_error_is_not_swallowed_as_a_user_error(monkeypatch):
    def broken(**_):
        raise RuntimeError("a bug")
    command = DOORS["solve"].load()
    monkeypatch.setattr(command, "callback", broken)
    result = CliRunner().invoke(main, ["solve", "x"])
    assert result.exit_code == 1 and isinstance(result.exception, RuntimeError)


def _run_script(*lines: str) -> tuple[int, str]:
    """Run the Python `lines` in a fresh interpreter; its exit status and standard output."""
    done = subprocess.run([sys.executable, "-c", "".join(line + "\n" for line in lines)],
                          capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout


def test_the_process_leaves_a_solver_thread_it_gave_up_on_behind_with_its_own_status():
    # a thread solve() abandoned (a library ignoring its limit) must neither hold the
    # process nor abort its exit: `leave` ends it with the command's status, output flushed
    assert _run_script("import threading, time",
                       "from memplace.cli.main import leave",
                       "threading.Thread(target=time.sleep, args=(600,), name='memplace-stuck', "
                       "daemon=True).start()",
                       "print('the answer', end='')",
                       "leave(3)",
                       "print('not reached')") == (3, "the answer")


def test_leave_ends_a_process_that_loaded_numba_after_its_exit_handlers_with_its_status():
    # the kernels' teardown is skipped, not the handlers registered with atexit
    assert _run_script("import atexit, numba",
                       "from memplace.cli.main import leave",
                       "atexit.register(lambda: print('handler ran', end=''))",
                       "print('the answer ', end='')",
                       "leave(None)",
                       "print('not reached')") == (0, "the answer handler ran")


def test_leave_returns_when_the_command_loaded_no_numba_and_left_no_thread():
    assert _run_script("from memplace.cli.main import leave",
                       "leave(0)",
                       "print('Python exits as usual', end='')") == (0, "Python exits as usual")
