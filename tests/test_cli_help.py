"""The exit statuses: one table (SPEC §6 as amended by issues 8 and 9), in every --help."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from cli.exit_codes import TABLE, ExitStatus
from cli.main import cli

ROW = re.compile(r"^\s+(\d+)\s+(\S.*)$")


def table_rows(text: str) -> dict[int, str]:
    after = text.split("Exit status:", 1)[1]
    return {int(m[1]): m[2].strip() for m in map(ROW.match, after.splitlines()) if m}


def test_every_status_has_a_row_and_every_row_a_status() -> None:
    assert set(table_rows(TABLE)) == {status.value for status in ExitStatus}


COMMANDS = [[], ["estimate"], ["micro"], ["full"], ["auto"], ["restore"]]


@pytest.mark.parametrize("command", COMMANDS)
def test_help_shows_the_table_unwrapped(command: list[str]) -> None:
    # regression: click re-wrapped the epilog into one long paragraph
    result = CliRunner().invoke(cli, [*command, "--help"])
    assert result.exit_code == 0
    assert result.stderr == ""
    assert table_rows(result.stdout) == table_rows(TABLE)


def test_help_table_golden(golden) -> None:
    result = CliRunner().invoke(cli, ["--help"])
    golden("help_exit_status.txt", "Exit status:" + result.stdout.split("Exit status:", 1)[1])
