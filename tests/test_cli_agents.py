"""The commands on agent session files, as real processes (SPEC §8.3, §8.4, bad input).

Decisions tested here (README "Shrinking your agent's sessions"): a torn last line (an agent
killed while writing) is reported by ``check`` and kept byte for byte by ``micro``; invalid lines
in the middle, blank lines and records of unknown types are kept as they are; an empty agent
file is nothing to do; a file that is none of the known formats is refused in one line (65); a
session in use is skipped (75) unless ``--force``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import CORPUS, TESTS, run, wait_until_open

KIMI = CORPUS / "originals" / "cc_kimi_516b7270__full.jsonl"
OLD = time.time() - 3600


def session_copy(tmp_path: Path, source: Path = KIMI, name: str = "s.jsonl") -> Path:
    path = tmp_path / name
    shutil.copyfile(source, path)
    os.utime(path, (OLD, OLD))
    return path


def micro(path: Path, *flags: object) -> subprocess.CompletedProcess[bytes]:
    return run("micro", "--in-place", *flags, path, cwd=path.parent)


def test_estimate_check_micro_restore(tmp_path: Path) -> None:
    path = session_copy(tmp_path)
    original = path.read_bytes()
    before = int(run("estimate", path).stdout)
    checked = run("check", path)
    assert checked.returncode == 0, checked.stderr
    assert b"claude-code" in checked.stdout and b"healthy" in checked.stdout
    done = micro(path)
    assert done.returncode == 0, done.stderr
    assert int(run("estimate", path).stdout) < before
    assert len(path.read_bytes()) < len(original)
    assert path.read_bytes().count(b"\n") == original.count(b"\n")
    restored = run("restore", path, cwd=tmp_path)
    assert restored.returncode == 0, restored.stderr
    assert path.read_bytes() == original


def test_estimate_json_describes_the_file(tmp_path: Path) -> None:
    path = session_copy(tmp_path)
    report = json.loads(run("estimate", "--json", path).stdout)
    assert report["format"] == "claude-code"
    assert report["bytes"] == path.stat().st_size
    assert sum(report["bytes_by_type"].values()) == report["bytes"]
    assert report["tokens"] == int(run("estimate", path).stdout)


def test_micro_to_stdout_leaves_the_file_alone(tmp_path: Path) -> None:
    path = session_copy(tmp_path)
    original = path.read_bytes()
    result = run("micro", path)
    assert result.returncode == 0
    assert result.stdout.count(b"\n") == original.count(b"\n")
    assert len(result.stdout) < len(original)
    assert path.read_bytes() == original


def test_full_in_place_appends_and_restores(tmp_path: Path) -> None:
    path = session_copy(tmp_path)
    original = path.read_bytes()
    done = run("full", "--in-place", "--lang", "en", path, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert path.read_bytes().startswith(original)
    assert run("check", path).returncode == 0
    assert run("restore", path, cwd=tmp_path).returncode == 0
    assert path.read_bytes() == original


@pytest.mark.parametrize("where", [["--in-place"], []])
def test_a_missing_key_on_a_session_file_is_78_not_a_failed_summary(
    tmp_path: Path, where: list[str]
) -> None:
    path = session_copy(tmp_path)
    before = path.read_bytes()
    done = run("full", *where, "--provider", "anthropic", path, cwd=tmp_path)
    assert done.returncode == 78, done.stderr
    assert done.stderr == b"ctxpack: no API key for provider 'anthropic': set ANTHROPIC_API_KEY\n"
    assert done.stdout == b"" and path.read_bytes() == before


def test_a_recently_changed_session_is_skipped_unless_forced(tmp_path: Path) -> None:
    path = session_copy(tmp_path)
    os.utime(path)  # just now
    original = path.read_bytes()
    skipped = micro(path)
    assert skipped.returncode == 75
    assert b"in use" in skipped.stderr and skipped.stderr.count(b"\n") == 1
    assert path.read_bytes() == original
    assert micro(path, "--force").returncode == 0
    assert path.read_bytes() != original


def test_a_session_open_for_writing_is_skipped(tmp_path: Path) -> None:
    path = session_copy(tmp_path)
    writer = subprocess.Popen(
        [sys.executable, "-c", f"f = open({str(path)!r}, 'ab'); import time; time.sleep(30)"]
    )
    try:
        wait_until_open(writer.pid, path)
        os.utime(path, (OLD, OLD))
        skipped = micro(path)
        assert skipped.returncode == 75
        assert f"process {writer.pid}".encode() in skipped.stderr
    finally:
        writer.kill()
        writer.wait()


def test_recursive_dry_run_json(tmp_path: Path) -> None:
    folder = tmp_path / "projects" / "p"
    folder.mkdir(parents=True)
    first = session_copy(folder, name="a.jsonl")
    session_copy(folder, CORPUS / "originals" / "cc_entire_1284c080__full.jsonl", "b.jsonl")
    original = first.read_bytes()
    result = run("micro", "--in-place", "-r", "--dry-run", "--json", "-j", "2", tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["files"] == 2 and report["changed"] == 2
    assert report["tokens_after"] < report["tokens_before"]
    assert first.read_bytes() == original


OLD_ID, NEW_ID = "516b7270-b0ab-4d34-9e4d-1f05c9ccd20a", "1284c080-f9cd-45f8-9942-ff58f5c517e5"


def test_sessions_lists_newest_first_over_a_threshold(tmp_path: Path) -> None:
    home = tmp_path / "claude"
    project = home / "projects" / "-p"
    project.mkdir(parents=True)
    session_copy(project, name=f"{OLD_ID}.jsonl")
    newer = session_copy(
        project, CORPUS / "originals" / "cc_entire_1284c080__full.jsonl", f"{NEW_ID}.jsonl"
    )
    os.utime(newer, (OLD + 60, OLD + 60))
    env = {"CLAUDE_CONFIG_DIR": str(home), "CODEX_HOME": str(tmp_path / "none")}
    listed = subprocess.run(
        [*_ctxpack(), "sessions", "--json"], capture_output=True, env={**os.environ, **env}
    )
    assert listed.returncode == 0, listed.stderr
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [row["id"] for row in rows] == [NEW_ID, OLD_ID]
    assert all(row["agent"] == "claude" for row in rows)
    assert all(row["in_use"] is False and row["in_use_reason"] is None for row in rows)
    over = subprocess.run(
        [*_ctxpack(), "sessions", "--over", "35000"], capture_output=True, env={**os.environ, **env}
    )
    assert NEW_ID.encode() in over.stdout and OLD_ID.encode() not in over.stdout


def _ctxpack() -> list[str]:
    return [str(Path(sys.executable).parent / "ctxpack")]


# --- bad input -----------------------------------------------------------------------------------


def test_a_torn_last_line_is_reported_and_kept(tmp_path: Path) -> None:
    data = KIMI.read_bytes().rstrip(b"\n") + b"\n" + b'{"type":"user","uuid":"x","mess'
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    os.utime(path, (OLD, OLD))
    checked = run("check", path)
    assert checked.returncode == 1 and b"torn-line" in checked.stdout
    assert micro(path).returncode == 0
    assert path.read_bytes().endswith(b'{"type":"user","uuid":"x","mess')


def test_invalid_blank_and_unknown_lines_in_the_middle_are_kept(tmp_path: Path) -> None:
    lines = KIMI.read_bytes().split(b"\n")
    odd = [b"not json at all", b"", b'{"type":"from-the-future","x":1}']
    data = b"\n".join(lines[:5] + odd + lines[5:])
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    os.utime(path, (OLD, OLD))
    checked = run("check", "--json", path)
    assert checked.returncode == 1
    kinds = [problem["kind"] for problem in json.loads(checked.stdout)["problems"]]
    assert kinds == ["invalid-line"]
    assert micro(path).returncode == 0
    after = path.read_bytes().split(b"\n")
    assert after[5:8] == odd and len(after) == len(lines) + 3


def test_an_empty_agent_file_is_nothing_to_do(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"")
    result = run("micro", "--format", "claude-code", "--in-place", "--min-idle", "0", path)
    assert result.returncode == 0 and path.read_bytes() == b""
    assert run("estimate", "--format", "claude-code", path).stdout == b"0\n"


def test_a_file_of_no_known_format_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"hello": "world"}\n{"hello": 2}\n')
    for command in ("estimate", "micro", "check"):
        result = run(command, path)
        assert result.returncode == 65
        assert result.stderr.count(b"\n") == 1
        assert b"messages, claude-code, codex" in result.stderr


def test_a_huge_single_line_is_handled(tmp_path: Path) -> None:
    lines = KIMI.read_bytes().split(b"\n")
    record = json.loads(lines[3])
    record["padding"] = "x" * 30_000_000
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join([*lines[:3], json.dumps(record).encode(), *lines[4:]]))
    os.utime(path, (OLD, OLD))
    assert micro(path).returncode == 0
    assert path.read_bytes().split(b"\n")[3] == json.dumps(record).encode()


@pytest.mark.parametrize("forced", ["claude-code", "codex"])
def test_a_session_read_as_another_format_is_not_damaged(tmp_path: Path, forced: str) -> None:
    path = session_copy(tmp_path)
    original = path.read_bytes()
    fmt = "codex" if forced == "claude-code" else "claude-code"
    other = tmp_path / "other.jsonl"
    other.write_bytes(original)
    result = run("micro", "--format", forced, "--in-place", "--min-idle", "0", path)
    assert result.returncode in (0, 65)
    assert run("check", "--format", fmt, other).returncode in (0, 1)
    if forced == "codex":  # nothing of it is a Codex record: nothing changes
        assert path.read_bytes() == original


def claude_records(results: list[str]) -> list[dict]:
    """A small Claude Code session: one Bash call and its result per entry of ``results`` (no
    command repeated: none goes stale)."""
    records: list[dict] = []
    parent = None
    for number, output in enumerate(results):
        call = f"toolu_{number}"
        use = {"type": "tool_use", "id": call, "name": "Bash", "input": {"command": f"ls {number}"}}
        result = {"type": "tool_result", "tool_use_id": call, "content": output}
        for kind, content in (("assistant", [use]), ("user", [result])):
            uuid = f"00000000-0000-0000-0000-{len(records):012d}"
            message = {"role": kind, "content": content}
            if kind == "assistant":
                message["id"] = f"msg_{number}"
            records.append(
                {
                    "parentUuid": parent,
                    "isSidechain": False,
                    "type": kind,
                    "message": message,
                    "uuid": uuid,
                    "sessionId": "s",
                    "timestamp": f"2026-12-01T10:00:{len(records):02d}.000Z",
                }
            )
            parent = uuid
    return records


def test_a_marker_never_replaces_a_shorter_result_of_a_session_file(tmp_path: Path) -> None:
    """Issue 21.6: with --min-chars 0, "ok" became a 34-character marker and the file grew."""
    path = tmp_path / "s.jsonl"
    lines = [json.dumps(record) for record in claude_records(["ok", "x" * 500, "new"])]
    path.write_text("\n".join(lines) + "\n")
    os.utime(path, (OLD, OLD))
    done = micro(path, "--keep-recent", "1", "--min-chars", "0", "--stats")
    assert done.returncode == 0, done.stderr
    assert b": 1 tool results truncated, tokens " in done.stderr
    after = path.read_text().splitlines()
    assert after[1] == lines[1]  # "ok" stays, byte for byte
    assert "[truncated: Bash result, 500 chars]" in after[3]
    stats = done.stderr.splitlines()[0]
    before, now = (int(n) for n in stats.split(b"tokens ")[1].split(b" -> "))
    assert now < before


def test_a_marker_never_replaces_a_shorter_result_of_a_conversation(tmp_path: Path) -> None:
    """Issue 21.6: a 2-character result became a marker: tokens 49 -> 75."""
    conversation = [
        {"role": "user", "content": "list"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "bash"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]},
    ]
    data = json.dumps(conversation).encode()
    done = run("micro", "--keep-recent", "0", "--min-chars", "0", "--stats", stdin=data)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == conversation
    tokens = done.stderr.split(b"tokens ")[1].split(b" -> ")
    assert b": 0 tool results truncated" in done.stderr and tokens[0] == tokens[1].strip()


def chain(count: int, seconds_apart: int = 10) -> list[dict]:
    """A Claude Code session of ``count`` chained user and assistant records, all text."""
    records = []
    for number in range(count):
        kind = ("user", "assistant")[number % 2]
        message = {"role": kind, "content": f"message {number}"}
        if kind == "assistant":
            message = {
                "id": f"msg_{number}",
                **message,
                "content": [{"type": "text", "text": "ok"}],
            }
        records.append(
            {
                "parentUuid": records[-1]["uuid"] if records else None,
                "isSidechain": False,
                "type": kind,
                "message": message,
                "uuid": f"00000000-0000-4000-8000-{number:012d}",
                "sessionId": "s",
                "timestamp": f"2026-12-01T10:{number * seconds_apart // 60:02d}:"
                f"{number * seconds_apart % 60:02d}.000Z",
            }
        )
    return records


def checked(tmp_path: Path, records: list[dict]) -> tuple[int, dict]:
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    done = run("check", "--json", path)
    return done.returncode, json.loads(done.stdout)


def test_a_parent_loop_in_what_the_agent_resumes_is_a_problem(tmp_path: Path) -> None:
    """Issue 22.11: 40 records, the last its own parent, 39 out of the view: "healthy", exit 0."""
    records = chain(40)
    records[-1]["parentUuid"] = records[-1]["uuid"]
    status, report = checked(tmp_path, records)
    assert status == 1 and report["view_messages"] == 1
    assert [(p["line"], p["kind"]) for p in report["problems"]] == [(40, "parent-loop")]
    assert "line 40 -> line 40" in report["problems"][0]["detail"]
    records = chain(40)
    records[0]["parentUuid"] = records[39]["uuid"]  # the whole chain loops
    status, report = checked(tmp_path, records)
    assert status == 1 and report["view_messages"] == 40
    assert [p["kind"] for p in report["problems"]] == ["parent-loop"]


def test_a_loop_the_resume_does_not_read_is_a_note(tmp_path: Path) -> None:
    records = chain(6)
    records[1]["parentUuid"], records[2]["parentUuid"] = records[2]["uuid"], records[1]["uuid"]
    records[2]["isSidechain"] = records[1]["isSidechain"] = True  # a subagent's, off the chain
    records[3]["parentUuid"] = records[0]["uuid"]
    status, report = checked(tmp_path, records)
    assert status == 0 and report["problems"] == []
    assert [(n["line"], n["kind"]) for n in report["notes"]] == [(2, "parent-loop")]


def test_a_gap_in_what_the_agent_resumes_is_a_problem_and_elsewhere_a_note(tmp_path: Path) -> None:
    """Issue 21.9: dangling parents the resume never follows made healthy sessions exit 1."""
    records = chain(8)
    records[5]["parentUuid"] = "00000000-0000-4000-8000-00000000dead"  # in the view: a gap
    status, report = checked(tmp_path, records)
    assert status == 1 and [p["kind"] for p in report["problems"]] == ["dangling-parent"]
    assert report["view_messages"] == 3  # 10 s apart: the chain ends at the gap
    boundary = {
        "parentUuid": None,
        "logicalParentUuid": "00000000-0000-4000-8000-00000000dead",  # pruned by the agent
        "isSidechain": False,
        "type": "system",
        "subtype": "compact_boundary",
        "uuid": "00000000-0000-4000-8000-00000000b0b0",
        "sessionId": "s",
        "timestamp": "2026-12-01T10:02:00.000Z",
    }
    after = chain(4)
    after[0]["parentUuid"] = boundary["uuid"]
    before = chain(4)
    before[1]["parentUuid"] = "00000000-0000-4000-8000-00000000beef"  # before the boundary
    for number, record in enumerate(after):
        record["uuid"] = record["uuid"][:-4] + f"a{number:03d}"
        if number:
            record["parentUuid"] = after[number - 1]["uuid"]
    status, report = checked(tmp_path, [*before, boundary, *after])
    assert status == 0 and report["problems"] == [] and report["view_messages"] == 4
    assert [(n["line"], n["kind"]) for n in report["notes"]] == [
        (2, "dangling-parent"),
        (5, "dangling-parent"),
    ]
    text = run("check", tmp_path / "s.jsonl").stdout.decode().splitlines()
    assert text[0].endswith(": healthy, 2 notes")
    assert text[1].endswith(
        ": line 2: note: dangling-parent: parent "
        "00000000-0000-4000-8000-00000000beef is in no record"
    )


def test_a_call_left_running_at_the_end_is_a_note_one_in_the_middle_a_problem(
    tmp_path: Path,
) -> None:
    records = claude_records(["x" * 100, "y" * 100])
    status, report = checked(tmp_path, records[:-1])  # the last call never got its result
    assert status == 0 and [n["kind"] for n in report["notes"]] == ["unanswered-call"]
    records[1]["message"]["content"] = "no result here"  # the first call's result is gone
    status, report = checked(tmp_path, records)
    assert status == 1 and [p["kind"] for p in report["problems"]] == ["unanswered-call"]


def test_sessions_lists_only_the_agents_own_files(tmp_path: Path) -> None:
    """Issue 21.7: a snapshot folder under ~/.codex/sessions/… gave the same rollout twice."""
    claude, codex = tmp_path / "claude", tmp_path / "codex"
    project = claude / "projects" / "-p"
    project.mkdir(parents=True)
    day = codex / "sessions" / "2026" / "12" / "01"
    day.mkdir(parents=True)
    rollout = day / "rollout-2026-12-01T10-00-00-0199e0c2-5b7a-7d43-9a27-2f2c5e8f2e1a.jsonl"
    sessions = [
        session_copy(project, name=f"{OLD_ID}.jsonl"),
        session_copy(day, TESTS / "fixtures" / "codex" / "tools.jsonl", rollout.name),
    ]
    for path in sessions:  # snapshots beside them, where a user's run may have put them
        for folder in (path.parent / ".transcripts", path.parent.parent / ".transcripts"):
            done = micro(path, "--force", "--snapshot-dir", folder)
            assert done.returncode == 0, done.stderr
            run("restore", "--snapshot-dir", folder, path)
    shutil.copyfile(sessions[0], project / "copy of the session.jsonl")
    env = {"CLAUDE_CONFIG_DIR": str(claude), "CODEX_HOME": str(codex)}
    listed = subprocess.run(
        [*_ctxpack(), "sessions", "--json"], capture_output=True, env={**os.environ, **env}
    )
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert sorted(row["path"] for row in rows) == sorted(map(str, sessions))


def test_a_session_in_use_is_skipped_not_failed_in_a_batch(tmp_path: Path) -> None:
    """Issue 21.10: the batch line counted a session in use as failed."""
    idle = session_copy(tmp_path, name="idle.jsonl")
    busy = session_copy(tmp_path, name="busy.jsonl")
    os.utime(busy)  # just written: its agent is at work
    done = run("micro", "--in-place", "--json", idle, busy, cwd=tmp_path)
    assert done.returncode == 75  # try again later
    lines = done.stderr.decode().splitlines()
    before, _, after = lines[0].partition(" (changed ")  # 0s, or 1s on a busy machine
    assert before == f"ctxpack: {busy}: in use by its agent"
    assert re.fullmatch(r"\ds ago, less than --min-idle 60s\): skipped, see --force", after)
    assert ", 1 changed, 0 failed, " in lines[-1]
    assert lines[-1].endswith(", 1 skipped (in use by their agent: see --force)")
    report = json.loads(done.stdout)
    assert (report["failed"], report["skipped"], report["in_use"]) == (0, 1, 1)
    [skipped] = [result for result in report["results"] if result["skipped"]]
    assert skipped["path"] == str(busy) and skipped["error"] is None
    assert "in use by its agent" in skipped["in_use"]


def test_sessions_json_says_in_use_as_a_boolean_and_why(tmp_path: Path) -> None:
    project = tmp_path / "claude" / "projects" / "-p"
    project.mkdir(parents=True)
    os.utime(session_copy(project, name=f"{OLD_ID}.jsonl"))  # changed just now
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude"), "CODEX_HOME": str(tmp_path / "none")}
    listed = subprocess.run(
        [*_ctxpack(), "sessions", "--json"], capture_output=True, env={**os.environ, **env}
    )
    [row] = [json.loads(line) for line in listed.stdout.splitlines()]
    assert row["in_use"] is True and "less than --min-idle 60s" in row["in_use_reason"]


def test_a_session_file_is_not_poured_onto_a_terminal(tmp_path: Path) -> None:
    """Issue 21.10: forgetting --in-place wrote the whole JSONL onto the terminal."""
    import pty

    path = session_copy(tmp_path)
    controller, terminal = pty.openpty()
    try:
        done = subprocess.run(
            [*_ctxpack(), "micro", str(path)], stdout=terminal, stderr=subprocess.PIPE, timeout=60
        )
        os.set_blocking(controller, False)
        try:
            written = os.read(controller, 1 << 16)
        except BlockingIOError:
            written = b""
    finally:
        os.close(controller)
        os.close(terminal)
    assert done.returncode == 2 and written == b""
    assert done.stderr.decode() == (
        f"ctxpack: {path}: an agent's session file is not written to a terminal: add "
        "--in-place to shrink it where it is (the original is kept), or -o FILE or a "
        "redirection to write the result elsewhere\n"
    )
    piped = run("micro", path)  # not a terminal: written as asked
    assert piped.returncode == 0 and piped.stdout.count(b"\n") == path.read_bytes().count(b"\n")
