"""MkDocs hooks: the pages that are generated from the code at build time.

- `<!-- memplace:cli -->` becomes the command-line reference, read from the click
  commands of the installed `memplace` entry point (whatever module it lives in), so
  the reference is the `--help` text of the same build.
- `<!-- memplace:solvers -->` becomes the solver catalogue, read from every problem's
  solver registry (names, descriptions, parameters with default, type, range, doc).
- `<!-- memplace:tour -->` becomes the README's ten-minute tour, so the site shows the
  commands the tests run.
- The plots of `results/` (PNG files that `memplace report` writes) are added to the
  site under the same paths, so pages show them without a copy in `docs/`.

Results tables are not generated here: pages include the files the commands wrote
with pymdownx.snippets (`--8<-- "results/..."`), so a table on the site is the file.
"""
from __future__ import annotations

import importlib.metadata
from pathlib import Path

import click
from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]
API_SOURCES = ROOT / "build" / "api"  # mkdocstrings' search path (mkdocs.yml): memplace/<root> links


def _link_package_roots() -> None:
    """`build/api/memplace/<root>` -> `<root>/` for every installed root folder, so that
    mkdocstrings reads the sources as the package `memplace.<root>` (setup.py maps each
    root folder to `memplace.<root>`; no folder on disk is called memplace)."""
    package = API_SOURCES / "memplace"
    package.mkdir(parents=True, exist_ok=True)
    for root in sorted(p.parent.name for p in ROOT.glob("*/__init__.py")):
        link = package / root
        if not link.exists():
            link.symlink_to(ROOT / root, target_is_directory=True)


_link_package_roots()


def _entry_point() -> click.Command:
    """The `memplace` console script's click group, as installed."""
    for entry in importlib.metadata.entry_points(group="console_scripts"):
        if entry.name == "memplace":
            return entry.load()
    raise RuntimeError("memplace is not installed: no 'memplace' console script")


def _commands(group: click.Command, ctx: click.Context, path: str):
    """(path, command, context) for `group` and every command below it, in name order."""
    yield path, group, ctx
    if isinstance(group, click.Group):
        for name in group.list_commands(ctx):
            sub = group.get_command(ctx, name)
            if sub is None or sub.hidden:
                continue
            yield from _commands(sub, click.Context(sub, info_name=name, parent=ctx), f"{path} {name}")


def cli_reference() -> str:
    """Markdown: one section per command with its usage, help and options."""
    main = _entry_point()
    root = click.Context(main, info_name="memplace")
    parts = []
    for path, command, ctx in _commands(main, root, "memplace"):
        formatter = ctx.make_formatter()
        formatter.width = 100
        command.format_help(ctx, formatter)
        parts += [f"## `{path}`", "", "```text", formatter.getvalue().rstrip(), "```", ""]
    return "\n".join(parts)


def solver_catalogue() -> str:
    """Markdown: one table per problem, and each solver's parameters."""
    from memplace.model.core.problem import PROBLEMS
    from memplace.solvers import registry
    parts = []
    for problem in PROBLEMS.names():
        solvers = registry(problem)
        parts += [f"## Problem `{problem}`", "",
                  f"{len(solvers)} solvers (`memplace solvers list --problem {problem}`).", "",
                  "| solver | what it does | seed matters | parameters |", "|---|---|---|---|"]
        for info in solvers.values():
            params = "<br>".join(
                f"`{key}={'none' if spec.default is None else spec.default}` ({spec.describe()})"
                + (f" {spec.doc}" if spec.doc else "")
                for key, spec in info.params.items()) or "none"
            description = info.description.replace("|", "\\|")
            parts.append(f"| `{info.name}` | {description} | "
                         f"{'no' if info.deterministic else 'yes'} | {params.replace('|', '&#124;')} |")
        parts.append("")
    return "\n".join(parts)


def readme_tour() -> str:
    """The README's tour block, as the README writes it (and tests/docs/test_readme.py runs it)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    tour = text.split("\n## Ten-minute tour", 1)[1]
    return "```bash\n" + tour.split("```bash\n", 1)[1].split("```", 1)[0] + "```"


GENERATED = {"<!-- memplace:cli -->": cli_reference, "<!-- memplace:solvers -->": solver_catalogue,
             "<!-- memplace:tour -->": readme_tour}


def on_page_markdown(markdown: str, page, config, files) -> str:
    for marker, make in GENERATED.items():
        if marker in markdown:
            markdown = markdown.replace(marker, make())
    return markdown


def on_files(files, config):
    """The committed plots of results/ join the site at results/<plan>/<name>.png."""
    site_dir = config["site_dir"]
    for path in sorted((ROOT / "results").glob("*/*.png")):
        uri = path.relative_to(ROOT).as_posix()
        if files.get_file_from_path(uri) is None:
            files.append(File(uri, str(ROOT), site_dir, config["use_directory_urls"]))
    return files
