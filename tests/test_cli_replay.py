"""``ctxpack replay`` through real processes: its output, its JSON, its picture, its exit codes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import CORPUS, TESTS, invoke, run

from compactor_core.replay.pricing import PROFILES as CORE_PROFILES

TRANSCRIPT = CORPUS / "oai_openhands_ponyc4593.json"
SESSION = TESTS / "fixtures" / "codex" / "compacted.jsonl"
RECORDED = CORPUS / "originals" / "cc_kimi_516b7270__full.jsonl"  # a real Claude Code session


def test_the_table_compares_three_policies_in_two_ways_of_use() -> None:
    result = run("replay", "--threshold", "10000", TRANSCRIPT)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.decode().splitlines()
    assert lines[0].startswith(f"{TRANSCRIPT}: 33 requests; anthropic-5m: read 0.1x, write 1.25x")
    assert lines[1] == "  basis: a simulation (the file records no usage)"
    assert lines[2] == "  chosen: cache-aware, threshold 10000, min-gain 5000, keep-recent 3"
    assert lines[3].split()[:2] == ["way", "of"]
    policies = [line.split("  ")[1:3] for line in lines[4:]]
    assert len(policies) == 5
    assert lines[4].split()[:2] == ["either", "untouched"]
    assert "every-turn (BareAgent's)" in lines[5] and "cache-aware" in lines[6]
    assert "re-sends history" in lines[7]
    assert result.stderr == b""


def test_json_for_scripts_and_a_total_only_in_the_table() -> None:
    result = run("replay", "--json", "--pricing", "openai", TRANSCRIPT, SESSION)
    assert result.returncode == 0, result.stderr
    reports = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert [report["file"] for report in reports] == [str(TRANSCRIPT), str(SESSION)]
    first = reports[0]
    assert first["pricing"] == {
        "name": "openai",
        "rules": "openai",
        "read": 0.1,
        "write": 1.0,
        "ttl": 300.0,
    }
    assert first["recorded"] is None
    rows = {(row["use"], row["policy"]): row for row in first["rows"]}
    assert rows[("any", "untouched")]["vs_untouched"] == 1.0
    assert rows[("keeps", "chosen")]["billed"] < rows[("keeps", "bareagent")]["billed"]
    assert len(first["per_request"]["keeps/chosen"]) == first["requests"] == 33
    table = run("replay", TRANSCRIPT, SESSION).stdout.decode()
    assert "total of 2 files" in table


def test_explicit_multipliers_and_ttl_replace_the_files_own_profile() -> None:
    result = run("replay", "--json", "--read", "0.25", "--write", "1", "--ttl", "60", SESSION)
    report = json.loads(result.stdout)
    assert report["pricing"] == {  # a Codex rollout: OpenAI's prefix cache
        "name": "openai, custom",
        "rules": "openai",
        "read": 0.25,
        "write": 1.0,
        "ttl": 60.0,
    }
    named = run("replay", "--json", "--pricing", "anthropic-1h", SESSION)
    assert json.loads(named.stdout)["pricing"]["name"] == "anthropic-1h"


def test_a_session_that_records_its_usage_gets_its_receipt() -> None:
    result = run("replay", "--threshold", "20000", RECORDED)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.decode().splitlines()
    assert lines[0] == (f"{RECORDED}: 42 requests; anthropic-5m: read 0.1x, write 1.25x, ttl 300 s")
    assert lines[1].startswith("  basis: recorded usage of 42 requests; simulated with ")
    assert lines[4].split()[:5] == ["either", "as", "recorded", "303,994", "0.96x"]
    assert lines[5].split()[:2] == ["either", "untouched"]
    report = json.loads(run("replay", "--json", RECORDED).stdout)
    assert report["recorded"] == {
        "requests": 42,
        "input": 48,
        "cache_read": 1687293,
        "cache_write": 108173,
        "cache_write_1h": 0,
        "billed": 303993.55,
    }


def test_a_picture_of_every_request(tmp_path: Path) -> None:
    picture, png = tmp_path / "tokens.svg", tmp_path / "tokens.png"
    small = CORPUS / "oai_taubench_airline_task33.json"
    result = run("replay", "--threshold", "4000", "--plot", picture, small)
    assert result.returncode == 0, result.stderr
    assert b"<svg" in picture.read_bytes()[:2000]
    assert run("replay", "--plot", png, small).returncode == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_without_matplotlib_the_picture_is_one_line_naming_the_extra(tmp_path: Path) -> None:
    hidden = tmp_path / "hide"
    (hidden / "matplotlib").mkdir(parents=True)
    (hidden / "matplotlib" / "__init__.py").write_text("raise ImportError('hidden by the test')\n")
    env = {**os.environ, "PYTHONPATH": str(hidden)}
    result = run("replay", "--plot", tmp_path / "x.svg", TRANSCRIPT, env=env)
    assert result.returncode == 78
    assert result.stderr == b"ctxpack: --plot needs matplotlib: pip install 'ctxpack[plot]'\n"
    assert not (tmp_path / "x.svg").exists()


@pytest.mark.parametrize(
    ("arguments", "status", "message"),
    [
        (["missing.json"], 66, b"missing.json"),
        (["--plot", "x.gif", str(TRANSCRIPT)], 2, b"must end in .svg or .png"),
        (["--plot", "x.svg", str(TRANSCRIPT), str(SESSION)], 2, b"name one input"),
        (["--pricing", "azure", str(TRANSCRIPT)], 2, b"azure"),
        (["--min-gain", "-1", str(TRANSCRIPT)], 2, b"--min-gain"),
        ([], 2, b"Missing argument"),
    ],
)
def test_exit_statuses(arguments: list[str], status: int, message: bytes, tmp_path: Path) -> None:
    result = run("replay", *arguments, cwd=tmp_path)
    assert result.returncode == status
    assert message in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_a_bad_file_among_good_ones_is_reported_and_the_rest_replayed(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('[{"role": 1}]')
    result = run("replay", bad, TRANSCRIPT)
    assert result.returncode == 65
    assert result.stderr.decode().startswith(f"ctxpack: {bad}: messages[0]")
    assert str(TRANSCRIPT) in result.stdout.decode()


def test_the_command_lists_the_cores_choices() -> None:
    """The choices are written out so that ``ctxpack --help`` imports no replay code."""
    from cli import replay
    from compactor_core.defaults import MIN_GAIN

    assert tuple(CORE_PROFILES) == replay.PROFILES
    assert f"[default: {MIN_GAIN} with cache-aware" in help_text("auto")


def help_text(command: str) -> str:
    return " ".join(invoke(command, "--help").stdout.split())
