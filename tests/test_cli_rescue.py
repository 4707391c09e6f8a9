"""``ctxpack rescue`` through the real executable: repairs in place, a line each, the exit
statuses, ``--dry-run`` writing nothing, ``restore`` giving the original back (issue 26)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agents.damage import cut_chain, removed_result
from helpers import TESTS, run

from cli.exit_codes import ExitStatus
from compactor_core.compaction.repairs import NO_RESULT

FIXTURES = TESTS / "fixtures"
IDLE = ("--min-idle", "0")  # the files were written moments ago


def damaged(tmp_path: Path, source: Path, agent: str, damage=removed_result) -> Path:
    path = tmp_path / source.name
    path.write_bytes(source.read_bytes())
    damage(path, agent)
    return path


def test_rescue_repairs_in_place_says_so_and_restore_gives_the_original_back(
    tmp_path: Path, transcripts: Path
) -> None:
    path = damaged(tmp_path, FIXTURES / "claude_code" / "session.jsonl", "claude-code")
    original = path.read_bytes()
    done = run("rescue", *IDLE, path)
    assert done.returncode == ExitStatus.OK, done.stderr
    lines = done.stderr.decode().splitlines()
    assert [line for line in lines if ": repaired: " in line] == [
        f"ctxpack: {path}: repaired: line 24: call toolu_7400f370ee554e399ee5bafe (Read) "
        "without a result: answered with an error"
    ]
    assert NO_RESULT.encode() in path.read_bytes()
    assert run("check", path).returncode == ExitStatus.OK
    assert len(list(transcripts.iterdir())) >= 1  # the original, kept
    assert run("restore", path).returncode == ExitStatus.OK
    assert path.read_bytes() == original


def test_dry_run_says_what_it_would_repair_and_changes_nothing(
    tmp_path: Path, transcripts: Path
) -> None:
    path = damaged(tmp_path, FIXTURES / "claude_code" / "session.jsonl", "claude-code", cut_chain)
    before = path.read_bytes(), path.stat().st_mtime_ns
    done = run("rescue", "--dry-run", path)
    assert done.returncode == ExitStatus.OK, done.stderr
    assert b": would repair: line 39: parent " in done.stderr
    assert b"1 would change" in done.stderr
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    assert not transcripts.exists()


def test_a_sound_session_is_not_touched(tmp_path: Path, transcripts: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes((FIXTURES / "codex" / "plain.jsonl").read_bytes())
    before = path.stat().st_mtime_ns
    done = run("rescue", *IDLE, path)
    assert done.returncode == ExitStatus.OK, done.stderr
    assert done.stderr.decode() == f"ctxpack: {path}: nothing to repair\n"
    assert path.stat().st_mtime_ns == before and not transcripts.exists()


def test_what_a_format_cannot_repair_is_said_and_exits_1(tmp_path: Path) -> None:
    # Gemini CLI keeps a result in its call: ctxpack does not write its answers (yet)
    path = damaged(tmp_path, FIXTURES / "more_agents" / "gemini-cli.jsonl", "gemini-cli")
    before = path.read_bytes()
    done = run("rescue", *IDLE, path)
    assert done.returncode == ExitStatus.PROBLEMS_LEFT, done.stderr
    assert b": not repaired: " in done.stderr and b"cannot be answered" in done.stderr
    assert path.read_bytes() == before


def test_a_conversation_of_messages_is_rescued_too(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "ls"}}]},
        {"role": "tool", "tool_call_id": "c9", "content": "from nowhere"},
        {"role": "user", "content": "and?"},
    ]
    path.write_text(json.dumps(messages))
    done = run("rescue", path)
    assert done.returncode == ExitStatus.OK, done.stderr
    assert [m.get("tool_call_id") for m in json.loads(path.read_text())] == [None, None, "c1", None]


def test_over_the_window_it_micro_compacts_then_summarizes_until_it_fits(
    tmp_path: Path,
) -> None:
    path = tmp_path / "m.json"
    messages: list[dict] = [{"role": "user", "content": "start " * 50}]
    for n in range(8):
        messages += [
            {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{n}", "name": "ls"}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{n}"}]},
            {"role": "assistant", "content": f"step {n} " + "words " * 400},
        ]
    messages[2]["content"][0]["content"] = "x" * 4000
    path.write_text(json.dumps([*messages, {"role": "user", "content": "and now?"}]))
    done = run("rescue", "--window", "1500", "--stats", path)
    assert done.returncode == ExitStatus.OK, done.stderr
    stats = done.stderr.decode()
    assert "summary: compacted" in stats and "1 tool results truncated" in stats
    after = int(stats.rsplit("-> ", 1)[1].split()[0])
    assert after <= 1500


def test_missing_and_invalid_inputs_exit_as_every_command_does(tmp_path: Path) -> None:
    assert run("rescue", tmp_path / "none.jsonl").returncode == ExitStatus.NO_INPUT
    bad = tmp_path / "bad.json"
    bad.write_text("[{")
    assert run("rescue", bad).returncode == ExitStatus.DATA_ERROR


def test_without_a_snapshot_folder_given_the_original_goes_to_the_state_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CTXPACK_TRANSCRIPT_DIR")
    path = damaged(tmp_path, FIXTURES / "claude_code" / "session.jsonl", "claude-code")
    original = path.read_bytes()
    assert run("rescue", *IDLE, path).returncode == ExitStatus.OK
    store = tmp_path / "home" / ".local" / "state" / "ctxpack"
    assert len(list(store.iterdir())) == 2  # the original and its .meta
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert run("restore", path, cwd=elsewhere).returncode == ExitStatus.OK
    assert path.read_bytes() == original


# --- issue 32.2: never a link to itself, a torn last line, and check's verdict at the end --------

REAL = TESTS / "corpus" / "originals" / "cc_kimi_516b7270__full.jsonl"


def real_session_damaged(tmp_path: Path) -> tuple[Path, int]:
    """The real session with one tool-result line removed and its last line torn, as a new user
    found it; the number of the line after the removed one."""
    lines = REAL.read_bytes().splitlines(keepends=True)
    results = [
        n for n, line in enumerate(lines) if b'"tool_result"' in line and b'"type":"user"' in line
    ]
    removed = results[len(results) // 2]
    del lines[removed]
    lines[-1] = lines[-1][: len(lines[-1]) // 2]
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"".join(lines))
    return path, removed + 1


def test_rescue_links_no_record_to_itself_drops_the_torn_line_and_ends_healthy(
    tmp_path: Path,
) -> None:
    path, after = real_session_damaged(tmp_path)
    torn = len(path.read_bytes().splitlines())
    done = run("rescue", *IDLE, path)
    assert done.returncode == 0, done.stderr
    said = done.stderr.decode().splitlines()
    assert f"ctxpack: {path}: check after rescue: healthy" == said[-1]
    relinked = next(line for line in said if f"line {after}: parent" in line)
    assert relinked.endswith(f"follows line {after - 1} (the record before it)")
    assert any(f"line {torn}: torn last line" in line for line in said)
    checked = run("check", path)
    assert checked.returncode == 0 and checked.stdout.decode().rstrip().endswith("healthy")
    records = [json.loads(line) for line in path.read_bytes().splitlines()]
    assert all(record["parentUuid"] != record["uuid"] for record in records if "uuid" in record)


def test_rescue_exits_with_checks_verdict_when_a_problem_is_left(tmp_path: Path) -> None:
    """An id given twice, which rescue does not claim to repair, beside a torn line it does:
    the verdict names it and the exit status says so."""
    lines = REAL.read_bytes().splitlines(keepends=True)
    first, second = json.loads(lines[2]), json.loads(lines[5])
    second["uuid"] = first["uuid"]
    lines[5] = json.dumps(second).encode() + b"\n"
    lines[-1] = lines[-1][:40]
    path = tmp_path / "twice.jsonl"
    path.write_bytes(b"".join(lines))
    done = run("rescue", *IDLE, path)
    verdict = [line for line in done.stderr.decode().splitlines() if "check after rescue" in line]
    assert done.returncode == ExitStatus.PROBLEMS_LEFT, done.stderr
    assert verdict and all(": duplicate-id: " in line for line in verdict)
