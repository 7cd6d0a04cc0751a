"""The `memplace` command line: one click group; each command module adds its commands.

Errors a user can cause become one line on stderr and exit status 2, never a
traceback: a `MemplaceError` from any command, and click's usage errors (an
option's value out of range, a missing argument, an unknown option), which click
would print with the whole usage text.
"""
from __future__ import annotations

import sys

import click

from memplace.cli import (bench, bound, envs, instances, library, model, onnx_import, pack,
                          residency, solve, xla_import)
from memplace.model.core.errors import MemplaceError

# Modules that define click commands in a list named COMMANDS.
COMMAND_MODULES = (instances, model, pack, solve, bench, residency, envs, onnx_import, bound,
                   xla_import, library)


class _Group(click.Group):
    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except MemplaceError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)
        except click.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx is not None else ctx.command_path
            click.echo(f"error: {exc.format_message()} (see '{where} --help')", err=True)
            sys.exit(2)


@click.group(cls=_Group)
@click.version_option(package_name="memplace")
def main() -> None:
    """memplace: place tensors into an accelerator's memory hierarchy."""


for _module in COMMAND_MODULES:
    for _command in _module.COMMANDS:
        main.add_command(_command)


if __name__ == "__main__":
    main()
