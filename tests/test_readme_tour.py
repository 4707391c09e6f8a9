"""The README's 30-second tour, run as a user runs it (issue 32.6): each command of its first shell
block, on a copy of examples/, through the real executable; what its comment promises is checked.
A command added to the tour without a check here fails the first test."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import REPO, run

TOUR = re.compile(r"## A 30-second tour\n.*?```sh\n(.*?)```", re.S)


def tour() -> dict[str, str]:
    """Each command of the tour, with the comment that says what it prints."""
    block = TOUR.search((REPO / "README.md").read_text())
    assert block, "README.md: no tour"
    commands = {}
    for line in block.group(1).splitlines():
        command, _, comment = line.partition("#")
        commands[command.strip()] = comment.strip()
    return commands


def estimates_both(out: bytes, err: bytes) -> None:
    lines = out.decode().splitlines()
    assert [line.split("\t")[0] for line in lines] == ["2892", "2892"]


def micro_jsonl(out: bytes, err: bytes) -> None:
    messages = [json.loads(line) for line in out.decode().splitlines()]
    assert len(messages) > 1
    assert b"[truncated: bash result, " in out


def envelope_kept(out: bytes, err: bytes) -> None:
    envelope = json.loads(out)
    assert envelope["model"] and envelope["system"]
    assert envelope["messages"][0]["content"].startswith("[Context Compressed]\n")
    assert re.search(rb"tokens 2892 -> \d+", err)


def english(out: bytes, err: bytes) -> None:
    summary = json.loads(out)[1]["content"]
    assert summary.startswith("[Context Compressed]\n## Goal\n")
    assert json.loads(out)[2]["role"] == "assistant"


def would_change(out: bytes, err: bytes) -> None:
    assert err.decode().splitlines()[-1] == (
        "ctxpack: 5 files, 4 would change, 0 failed, tokens 13095 -> 4911"
    )


CHECKS: dict[str, Callable[[bytes, bytes], None]] = {
    "ctxpack estimate examples/session.json examples/openai_session.json": estimates_both,
    "ctxpack micro examples/session.jsonl": micro_jsonl,
    "ctxpack auto --threshold 1000 --stats examples/request.json": envelope_kept,
    "ctxpack full --lang en examples/openai_session.json": english,
    "ctxpack micro -i -r examples --dry-run --stats": would_change,
}


def test_every_command_of_the_tour_is_checked() -> None:
    assert set(tour()) == set(CHECKS)


@pytest.mark.parametrize("command", sorted(CHECKS))
def test_the_tour_does_what_it_says(command: str, tmp_path: Path) -> None:
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    before = {path.name: path.read_bytes() for path in (tmp_path / "examples").iterdir()}
    done = run(*shlex.split(command)[1:], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    CHECKS[command](done.stdout, done.stderr)
    after = {path.name: path.read_bytes() for path in (tmp_path / "examples").iterdir()}
    assert after == before  # the tour changes no file, even with -i --dry-run
