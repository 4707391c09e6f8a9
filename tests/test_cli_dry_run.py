"""--dry-run reports the tokens it would save (issue 10.3), through the real executable."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from helpers import CORPUS, REPO, fingerprint, run

SESSIONS = [
    REPO / "examples" / "session.json",
    CORPUS / "cc_kimi_516b7270.json",
    CORPUS / "originals" / "cc_kimi_516b7270__full.jsonl",  # an agent's own session files
    REPO / "tests" / "fixtures" / "codex" / "compacted.jsonl",
]
STATS = re.compile(r"tokens (\d+) -> (at most )?(\d+)$")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    target = tmp_path / "sessions"
    target.mkdir()
    for session in SESSIONS:
        shutil.copy(session, target / session.name)
    return target


def figures(stderr: bytes) -> dict[str, tuple[int, bool, int]]:
    """file -> (before, whether "at most", after) from the --stats lines."""
    found = {}
    for line in stderr.decode().splitlines():
        match = STATS.search(line)
        if match and line.startswith("ctxpack: ") and re.search(r"\.jsonl?: ", line):
            name = line.split(": ", 2)[1]
            found[Path(name).name] = (int(match[1]), bool(match[2]), int(match[3]))
    return found


@pytest.mark.parametrize("command", ["micro", "full", "auto"])
def test_dry_run_stats_show_the_tokens_and_write_nothing(command: str, folder: Path) -> None:
    """Issue 21.5: ``full --in-place --dry-run`` said a session would not change."""
    before = {path.name: fingerprint(path) for path in folder.iterdir()}
    threshold = ["--threshold", "1000"] if command == "auto" else []
    args = [command, "--dry-run", "--stats", "-i", "-r", folder, "--min-idle", "0", *threshold]
    dry = run(*args)
    assert dry.returncode == 0, dry.stderr
    assert b"None" not in dry.stderr
    assert {path.name: fingerprint(path) for path in folder.iterdir()} == before
    would = figures(dry.stderr)
    assert set(would) == set(before)
    for tokens_before, at_most, tokens_after in would.values():
        assert tokens_after < tokens_before
        assert at_most == (command != "micro")  # a summary is counted at its whole budget
    assert dry.stderr.decode().splitlines()[-1].startswith(f"ctxpack: {len(before)} files, ")
    assert f"{len(before)} would change" in dry.stderr.decode().splitlines()[-1]
    real = run(*[arg for arg in args if arg != "--dry-run"], "--no-transcript")
    assert real.returncode == 0, real.stderr
    for name, (tokens_before, _, tokens_after) in figures(real.stderr).items():
        assert would[name][0] == tokens_before
        assert would[name][2] >= tokens_after  # never promises more than it does
        if command == "micro":
            assert would[name][2] == tokens_after  # micro is previewed exactly


@pytest.mark.parametrize("command", ["full", "auto"])
def test_dry_run_json_reports_the_tokens(command: str, folder: Path, tmp_path: Path) -> None:
    threshold = ["--threshold", "1000"] if command == "auto" else []
    for where in (["-O", tmp_path / "out"], ["-i", "--min-idle", "0"]):
        before = {path.name: fingerprint(path) for path in folder.iterdir()}
        result = run(command, *threshold, "--dry-run", "--json", *where, "-r", folder)
        assert result.returncode == 0, result.stderr
        report = json.loads(result.stdout)
        assert report["dry_run"] is True and report["changed"] == len(SESSIONS)
        assert 0 < report["tokens_after"] < report["tokens_before"]
        for item in report["results"]:
            assert item["changed"] is True and item["summary"] == "would run"
            assert 0 < item["tokens_after"] < item["tokens_before"]
        assert not (tmp_path / "out").exists()
        assert {path.name: fingerprint(path) for path in folder.iterdir()} == before
