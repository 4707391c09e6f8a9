"""The exit statuses: one table, the README's (SPEC §6), shown as a table in each --help."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner
from helpers import REPO

from cli.exit_codes import TABLE, ExitStatus
from cli.main import cli

ROW = re.compile(r"^\s+(\d+)\s+(\S.*)$")


def table_rows(text: str) -> dict[int, str]:
    after = text.split("Exit status:", 1)[1]
    return {int(m[1]): m[2].strip() for m in map(ROW.match, after.splitlines()) if m}


def spec_rows() -> dict[int, str]:
    """The table of the README, which is the spec's (the spec itself is not in the repository)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Exit status", 1)[1]
    rows = re.findall(r"^ *\| (\d+) \| (.+?) \|$", section, flags=re.M)
    return {int(code): meaning.replace("`", "") for code, meaning in rows}


def test_table_is_the_spec_table() -> None:
    expected = spec_rows()
    assert len(expected) == 10
    assert table_rows(TABLE) == expected


def test_every_status_has_a_name() -> None:
    assert set(table_rows(TABLE)) <= {status.value for status in ExitStatus}


@pytest.mark.parametrize("command", [[], ["estimate"], ["micro"], ["full"], ["auto"], ["restore"]])
def test_help_shows_the_table_unwrapped(command: list[str]) -> None:
    # regression: click re-wrapped the epilog into one long paragraph
    result = CliRunner().invoke(cli, [*command, "--help"])
    assert result.exit_code == 0
    assert result.stderr == ""
    assert table_rows(result.stdout) == spec_rows()


def test_help_table_golden(golden) -> None:
    result = CliRunner().invoke(cli, ["--help"])
    golden("help_exit_status.txt", "Exit status:" + result.stdout.split("Exit status:", 1)[1])
