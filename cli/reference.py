"""docs/cli.md, made from every command's ``--help``: ``python -m cli.reference > docs/cli.md``
(``make cli-reference``); tests/test_cli_reference.py keeps the file equal to what this prints."""

from __future__ import annotations

import sys

import click
from click.testing import CliRunner

from .main import cli

WIDTH = 100  # columns the help is wrapped at, here as in a wide terminal
INTRO = """# Command-line reference

Every command's `--help`, as `ctxpack` prints it (made by `python -m cli.reference`; a test keeps
this file equal to it). The README says why; this page says how.
"""


def reference() -> str:
    """The page: ``ctxpack --help``, then each command's, in the order ``--help`` lists them."""
    context = click.Context(cli, info_name="ctxpack")
    names = cli.list_commands(context)
    sections = [_section("ctxpack", []), *(_section(f"ctxpack {name}", [name]) for name in names)]
    return INTRO + "".join(sections)


def _section(title: str, args: list[str]) -> str:
    done = CliRunner().invoke(
        cli,
        [*args, "--help"],
        prog_name="ctxpack",
        terminal_width=WIDTH,
        env={"COLUMNS": str(WIDTH)},
    )
    if done.exit_code != 0:
        raise SystemExit(f"{title} --help: exit {done.exit_code}: {done.output}")
    return f"\n## `{title}`\n\n```text\n{done.output.rstrip()}\n```\n"


if __name__ == "__main__":
    sys.stdout.write(reference())
