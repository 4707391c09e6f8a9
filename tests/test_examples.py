"""examples/: one session in four shapes, each used in the README tour (issue 10.4)."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest
from helpers import REPO, fingerprint, run

EXAMPLES = REPO / "examples"
SHAPES = ["session.json", "openai_session.json", "request.json", "session.jsonl"]


def tour_commands() -> list[list[str]]:
    """The ctxpack lines of the README's first shell block in "A 30-second tour"."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    tour = readme.split("## A 30-second tour", 1)[1]
    block = re.search(r"```sh\n(.*?)```", tour, re.S)
    assert block is not None
    return [shlex.split(line.split("  #", 1)[0]) for line in block[1].splitlines() if line]


def test_every_example_is_in_the_tour() -> None:
    named = {Path(word).name for words in tour_commands() for word in words}
    assert set(SHAPES) <= named | {"examples"}
    assert all(name in (REPO / "README.md").read_text(encoding="utf-8") for name in SHAPES)


def test_the_tour_runs(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    before = {path.name: fingerprint(path) for path in (tmp_path / "examples").iterdir()}
    for words in tour_commands():
        assert words[0] == "ctxpack"
        result = run(*words[1:], cwd=tmp_path)
        assert result.returncode == 0, (words, result.stderr)
        assert result.stderr.count(b"None") == 0
    after = {path.name: fingerprint(path) for path in (tmp_path / "examples").iterdir()}
    assert after == before  # the tour writes nothing (its in-place line is a dry run)


def test_the_shapes_are_one_session() -> None:
    estimates = {run("estimate", EXAMPLES / name).stdout for name in SHAPES}
    assert len(estimates) == 1


@pytest.mark.parametrize("name", SHAPES)
def test_each_shape_comes_back_in_its_shape(name: str) -> None:
    result = run("auto", "--threshold", "1000", "--no-transcript", EXAMPLES / name)
    assert result.returncode == 0, result.stderr
    if name.endswith(".jsonl"):
        messages = [json.loads(line) for line in result.stdout.splitlines()]
        assert len(result.stdout.splitlines()) == len(messages) >= 3
    elif name == "request.json":
        envelope = json.loads(result.stdout)
        source = json.loads((EXAMPLES / name).read_bytes())
        assert {key: envelope[key] for key in ("model", "system", "max_tokens")} == {
            key: source[key] for key in ("model", "system", "max_tokens")
        }
        messages = envelope["messages"]
    else:
        messages = json.loads(result.stdout)
    summary = next(m for m in messages if m["role"] == "user")["content"]
    assert summary.startswith("[Context Compressed]\n## 目标")  # a Chinese session: lang auto
    if name == "openai_session.json":
        source = json.loads((EXAMPLES / name).read_bytes())
        assert any(m["role"] == "tool" for m in source)
