"""The `memplace` command line: one click group over a registry of commands (`DOORS`).

Each command lives in its own module under `memplace.cli`, which is imported only
when that command runs, so `memplace --help` imports click alone and `memplace pack`
imports what packing needs, not the harness, the solvers or Numba's compiler. The
registry keeps each command's one-line help for the same reason: listing the commands
must not import them. A new command is one `Door` here (its module need not list it).

Errors a user can cause become one line on stderr and exit status 2, never a
traceback: a `MemplaceError` from any command, and click's usage errors (an
option's value out of range, a missing argument, an unknown option), which click
would print with the whole usage text.
"""
from __future__ import annotations

import importlib
import os
import sys
import threading
from typing import Any, NamedTuple

import click


class Door(NamedTuple):
    """A command: its name, where it lives (`module:attribute`) and its one-line help."""

    name: str
    target: str
    help: str

    def load(self) -> click.Command:
        module, _, attribute = self.target.partition(":")
        command = getattr(importlib.import_module(module), attribute)
        command.short_help = self.help  # the listing says the same whether loaded or not
        return command


DOORS = {door.name: door for door in [
    Door("bench", "memplace.cli.bench:bench_command",
         "Run a benchmark plan; append its runs to runs.jsonl"),
    Door("envs", "memplace.cli.envs:envs_group",
         "The Gymnasium environments and their baselines"),
    Door("gap", "memplace.cli.gap:gap_command",
         "Certified gap of a residency program: search and bound"),
    Door("evaluate", "memplace.cli.model:evaluate_command",
         "Print a solution's validity and recomputed latency"),
    Door("explain", "memplace.cli.explain:explain_command",
         "Which tensor went where and when, by the model's own names"),
    Door("import", "memplace.cli.onnx_import:import_command",
         "Import an ONNX model as an instance file"),
    Door("import-perf", "memplace.cli.onnx_import:import_perf_command",
         "Time the ONNX import of a generated graph"),
    Door("import-xla", "memplace.cli.xla_import:import_xla_command",
         "Import an XLA program (HLO text or JAX) as an instance"),
    Door("lib", "memplace.cli.library:lib_group",
         "Instances with best known solutions and certified bounds"),
    Door("instances", "memplace.cli.instances:instances_group",
         "List, show and export the benchmark instances"),
    Door("limits", "memplace.cli.limits:limits_command",
         "Run every solver at a short limit; wall time against it"),
    Door("pack", "memplace.cli.pack:pack_command",
         "Give every buffer of a MiniMalloc CSV an offset"),
    Door("pack-bench", "memplace.cli.pack:pack_bench_command",
         "Pack benchmark instances and print a table of times"),
    Door("pack-generate", "memplace.cli.pack:pack_generate_command",
         "Write a generated packing instance (MiniMalloc CSV)"),
    Door("perf", "memplace.cli.model:perf_command",
         "Measure the cost model's speed on an instance"),
    Door("relocate-runs", "memplace.cli.bench:relocate_runs_command",
         "Store a runs file's instance files relative to the package"),
    Door("report", "memplace.cli.bench:report_command",
         "Tables and plots from a runs file"),
    Door("residency-bound", "memplace.cli.bound:residency_bound_command",
         "Lower bounds, incumbents and gaps of residency instances"),
    Door("residency-table", "memplace.cli.residency:residency_table_command",
         "Run msa on the committed instances; write the table"),
    Door("solve", "memplace.cli.solve:solve_command",
         "Place an instance's tensors with one solver"),
    Door("solvers", "memplace.cli.solve:solvers_group",
         "The registered solvers and their parameters"),
    Door("validate", "memplace.cli.model:validate_command",
         "Exit 0 when a solution is valid and its latency holds"),
    Door("validate-results", "memplace.cli.bench:validate_results_command",
         "Re-check every stored placement of a runs file"),
    Door("warmup", "memplace.cli.model:warmup_command",
         "Compile every Numba kernel once (cached on disk)"),
    Door("xla-heap", "memplace.cli.xla_import:xla_heap_command",
         "Pack XLA's heap and compare with XLA's own"),
    Door("xla-programs", "memplace.cli.xla_import:xla_programs_command",
         "Recompile the committed JAX programs and their files"),
    Door("xla-table", "memplace.cli.xla_import:xla_table_command",
         "Write the XLA comparison tables from bench runs"),
    Door("zoo", "memplace.cli.zoo:zoo_group",
         "Real models exported from PyTorch: list, table, export"),
]}


def _is_user_error(exc: BaseException) -> bool:
    """Whether `exc` is a `MemplaceError`, without importing memplace.model (whose
    package imports Numba) for commands that never loaded it: such a command cannot
    have raised one."""
    errors = sys.modules.get("memplace.model.core.errors")
    return errors is not None and isinstance(exc, errors.MemplaceError)


class _Group(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(DOORS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        door = DOORS.get(name)
        return door.load() if door is not None else None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands and their one-line help, from the registry (nothing imported)."""
        limit = formatter.width - 6 - max(map(len, DOORS))
        rows = [(name, click.Command(name, short_help=DOORS[name].help).get_short_help_str(limit))
                for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def main(self, args: Any = None, *rest: Any, **kwargs: Any) -> Any:
        try:
            return super().main(args, *rest, **kwargs)
        except SystemExit as done:
            if args is None:  # the `memplace` process itself, not a caller such as a test
                leave(done.code)
            raise

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx is not None else ctx.command_path
            click.echo(f"error: {exc.format_message()} (see '{where} --help')", err=True)
            sys.exit(2)
        except Exception as exc:
            if not _is_user_error(exc):
                raise
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)


def leave(code: Any) -> None:
    """End the `memplace` process with its command's status, without the interpreter's
    shutdown when the command loaded Numba or left a solver thread running.

    Tearing down the compiled kernels (LLVM's code, module by module) took 0.4 s of CPU
    after every command that loaded them: 1-1.5 s of wall time at a load of 6 on 2 cores,
    past the end of a `memplace gap` whose time limit counts until the process ends. And
    `solve()` returns the incumbent when a library ignores its limit, leaving its thread
    behind: HiGHS, busy in such a thread, aborted the shutdown with "terminate called
    without an active exception", status 134, after the command's output was complete.
    So the exit handlers registered with `atexit` run (logging, multiprocessing, temporary
    files), the output is flushed, and the process ends with `code`; a command that never
    loaded Numba (`memplace --help`, `memplace pack`) returns and Python exits as usual."""
    running = any(t.name.startswith("memplace-") and t.is_alive() for t in threading.enumerate())
    if not running and "numba" not in sys.modules:
        return
    if isinstance(code, str):
        print(code, file=sys.stderr)
    status = code if isinstance(code, int) else (0 if code is None else 1)
    import atexit
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said
            pass
    os._exit(status)


@click.group(cls=_Group)
@click.version_option(package_name="memplace")
def main() -> None:
    """memplace: place tensors into an accelerator's memory hierarchy."""


if __name__ == "__main__":
    main()
