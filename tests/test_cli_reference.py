"""docs/cli.md is every command's ``--help`` as it is now (issue 30.6): a changed option or help
text changes the page in the same commit (``make cli-reference`` writes it anew)."""

from __future__ import annotations

from helpers import REPO

from cli.reference import reference


def test_the_cli_reference_is_the_help_of_today() -> None:
    written = (REPO / "docs" / "cli.md").read_text()
    assert written == reference(), "docs/cli.md is out of date: run make cli-reference"
