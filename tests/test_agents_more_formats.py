"""Gemini CLI, Qwen Code, pi and Copilot CLI sessions through every command (SPEC §8, issue 25).

The fixtures in tests/fixtures/more_agents were written by the real agents (see regenerate.py
there). Each is detected from its content, checked, shrunk in place by ``micro`` (only tool
outputs become markers, every other record byte-identical), compacted by ``full`` (the agent's
own compaction record appended, nothing before it touched) and restored byte for byte; the bad
inputs every agent leaves (a torn last line, a half-written record, a record of a type not known
today, an empty file) are reported and kept. The real agents resuming these files is
test_agents_resume_{gemini,qwen,pi,copilot}.py.
"""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import TESTS, estimated_tokens, invoke

from compactor_core.compaction.micro import is_marker
from compactor_core.session_files import registry
from compactor_core.session_files.index import index_session, load_view

FIXTURES = TESTS / "fixtures" / "more_agents"
AGENTS = ("gemini-cli", "qwen-code", "pi", "copilot-cli")
OLD = time.time() - 3600
IN_PLACE = ("--in-place", "--min-idle", "0")
# What the agent's own compaction appends, as (key, value) of the first new record's content.
COMPACTIONS = {
    "gemini-cli": lambda record: isinstance(record.get("$set", {}).get("messages"), list),
    "qwen-code": lambda record: record.get("subtype") == "chat_compression",
    "pi": lambda record: record.get("type") == "compaction",
    "copilot-cli": lambda record: record.get("type") == "session.compaction_complete",
}

# How an agent chains its records: (the key naming a record's parent, the key of its own id).
CHAINS = {
    "qwen-code": ("parentUuid", "uuid"),
    "pi": ("parentId", "id"),
    "copilot-cli": ("parentId", "id"),
}


def placed(tmp_path: Path, agent: str, data: bytes | None = None) -> Path:
    path = tmp_path / f"{agent}.jsonl"
    path.write_bytes((FIXTURES / f"{agent}.jsonl").read_bytes() if data is None else data)
    os.utime(path, (OLD, OLD))
    return path


def only_outputs_shrank(before: Any, after: Any) -> bool:
    """``after`` is ``before`` with some strings turned into markers (a tool's response object
    may become one ``{"output": marker}``); nothing else differs."""
    if before == after:
        return True
    if isinstance(after, str):
        return isinstance(before, str) and is_marker(after)
    if isinstance(before, dict) and isinstance(after, dict):
        if before.keys() != after.keys():
            return len(after) == 1 and is_marker(next(iter(after.values())))
        return all(only_outputs_shrank(before[key], after[key]) for key in before)
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return all(only_outputs_shrank(a, b) for a, b in zip(before, after, strict=True))
    return False


@pytest.mark.parametrize("agent", AGENTS)
def test_a_real_session_is_detected_from_its_content_and_healthy(agent: str) -> None:
    path = FIXTURES / f"{agent}.jsonl"
    with open(path, "rb") as handle:
        assert registry.detect(handle, "auto", "x.json").name == agent
    checked = invoke("check", "--json", path)
    assert checked.exit_code == 0, checked.stdout
    report = json.loads(checked.stdout)
    assert report["format"] == agent and report["problems"] == []
    assert report["tokens"] == estimated_tokens(path, "--format", agent)


@pytest.mark.parametrize("agent", AGENTS)
def test_micro_shrinks_only_tool_outputs_and_restore_gives_the_file_back(
    agent: str, tmp_path: Path
) -> None:
    path = placed(tmp_path, agent)
    original = path.read_bytes()
    before = estimated_tokens(path)
    done = invoke("micro", *IN_PLACE, path)
    assert done.exit_code == 0, done.stderr
    after = path.read_bytes()
    assert estimated_tokens(path) < before
    old_lines, new_lines = original.splitlines(), after.splitlines()
    assert len(old_lines) == len(new_lines) and after.endswith(b"\n") == original.endswith(b"\n")
    changed = [(a, b) for a, b in zip(old_lines, new_lines, strict=True) if a != b]
    assert changed
    for old, new in changed:
        assert only_outputs_shrank(json.loads(old), json.loads(new)), old[:200]
    assert invoke("check", path).exit_code == 0
    again = invoke("micro", *IN_PLACE, path)  # idempotent: nothing left to shrink
    assert again.exit_code == 0 and path.read_bytes() == after
    restored = invoke("restore", path)
    assert restored.exit_code == 0, restored.stderr
    assert path.read_bytes() == original


@pytest.mark.parametrize("agent", AGENTS)
def test_full_appends_the_agents_own_compaction_and_leaves_the_rest(
    agent: str, tmp_path: Path
) -> None:
    path = placed(tmp_path, agent)
    original = path.read_bytes()
    before = estimated_tokens(path)
    done = invoke("full", *IN_PLACE, path)
    assert done.exit_code == 0, done.stderr
    after = path.read_bytes()
    assert after.startswith(original)
    appended = [json.loads(line) for line in after[len(original) :].splitlines()]
    assert appended and COMPACTIONS[agent](appended[0])
    if agent in CHAINS:  # the compaction is the child of a record the file holds, by its id
        parent, own = CHAINS[agent]
        ids = {json.loads(line).get(own) for line in original.splitlines()}
        assert appended[0][parent] in ids - {None}
    assert estimated_tokens(path) < before  # Copilot: its system prompt is most of it
    assert invoke("check", path).exit_code == 0
    assert invoke("restore", path).exit_code == 0 and path.read_bytes() == original


@pytest.mark.parametrize("command", ["micro", "full", "auto"])
@pytest.mark.parametrize("agent", AGENTS)
def test_a_dry_run_changes_nothing(agent: str, command: str, tmp_path: Path) -> None:
    path = placed(tmp_path, agent)
    status = path.stat()
    done = invoke(command, *IN_PLACE, "--dry-run", path)
    assert done.exit_code == 0, done.stderr
    assert path.read_bytes() == (FIXTURES / f"{agent}.jsonl").read_bytes()
    assert path.stat().st_mtime_ns == status.st_mtime_ns


# --- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS)
def test_a_torn_last_line_is_reported_and_kept(agent: str, tmp_path: Path) -> None:
    torn = b'{"id":"half-writ'
    path = placed(tmp_path, agent, (FIXTURES / f"{agent}.jsonl").read_bytes() + torn)
    checked = invoke("check", "--json", path)
    assert checked.exit_code == 1
    assert [p["kind"] for p in json.loads(checked.stdout)["problems"]] == ["torn-line"]
    for command in ("micro", "full"):
        assert invoke(command, *IN_PLACE, "--format", agent, path).exit_code == 0
    assert torn + b"\n" in path.read_bytes()  # full appends after it, on lines of their own


@pytest.mark.parametrize("agent", AGENTS)
def test_a_half_written_record_and_an_unknown_one_in_the_middle_are_kept(
    agent: str, tmp_path: Path
) -> None:
    lines = (FIXTURES / f"{agent}.jsonl").read_bytes().splitlines(keepends=True)
    half = lines[3][: len(lines[3]) // 2] + b"\n"
    unknown = b'{"type":"from-the-future","id":"f1","data":{"x":1}}\n'
    path = placed(tmp_path, agent, b"".join([*lines[:3], half, unknown, *lines[4:]]))
    checked = invoke("check", "--json", path)
    assert checked.exit_code == 1
    problems = json.loads(checked.stdout)["problems"]
    assert [(p["line"], p["kind"]) for p in problems][:1] == [(4, "invalid-line")]
    assert invoke("micro", *IN_PLACE, "--format", agent, path).exit_code == 0
    after = path.read_bytes().splitlines(keepends=True)
    assert after[3:5] == [half, unknown] and len(after) == len(lines) + 1


@pytest.mark.parametrize("agent", AGENTS)
def test_an_empty_session_is_nothing_to_do(agent: str, tmp_path: Path) -> None:
    path = placed(tmp_path, agent, b"")
    assert invoke("micro", *IN_PLACE, "--format", agent, path).exit_code == 0
    assert path.read_bytes() == b""
    assert estimated_tokens(path, "--format", agent) == 0


# --- sessions on this machine --------------------------------------------------------------------

# agent -> (its home variable, where a session lies under that home)
HOMES = {
    "gemini": (
        "GEMINI_CLI_HOME",
        ".gemini/tmp/project/chats/session-2026-12-03T13-29-8244cb54.jsonl",
    ),
    "qwen": (
        "QWEN_HOME",
        "projects/-work-project/chats/5f6ad1a4-0000-4000-8000-000000000000.jsonl",
    ),
    "pi": ("PI_CODING_AGENT_DIR", "sessions/--work-project--/2026-12-03T13-28-56-622Z_01a2.jsonl"),
    "copilot": ("COPILOT_HOME", "session-state/c1774c1c-e64a-4454-b00d-528f456ff7e8/events.jsonl"),
}
FORMATS = dict(zip(HOMES, AGENTS, strict=True))


def test_sessions_finds_each_agents_sessions_under_its_own_home(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "nobody"), "PATH": os.environ.get("PATH", "")}
    for agent, (variable, relative) in HOMES.items():
        home = tmp_path / agent
        path = home / relative
        path.parent.mkdir(parents=True)
        path.write_bytes((FIXTURES / f"{FORMATS[agent]}.jsonl").read_bytes())
        os.utime(path, (OLD, OLD))
        env[variable] = str(home)
    listed = invoke("sessions", "--json", env=env)
    assert listed.exit_code == 0, listed.stderr
    rows = {row["agent"]: row for row in map(json.loads, listed.stdout.splitlines())}
    assert set(rows) == set(HOMES)
    for agent, (_, relative) in HOMES.items():
        assert rows[agent]["path"] == str(tmp_path / agent / relative)
        assert rows[agent]["tokens"] > 0 and rows[agent]["in_use"] is False
    copilot = rows["copilot"]
    assert copilot["id"] == "c1774c1c-e64a-4454-b00d-528f456ff7e8"
    only = invoke("sessions", "--json", "--agent", "pi", env=env)
    assert [json.loads(line)["agent"] for line in only.stdout.splitlines()] == ["pi"]


# --- Gemini CLI's log of one mutable record ------------------------------------------------------


def view_of(agent: str, data: bytes) -> list[dict[str, Any]]:
    handle = io.BytesIO(data)
    session = index_session(handle, registry.get(agent), "s")
    return load_view(handle, session)


def gemini_view(data: bytes) -> list[dict[str, Any]]:
    return view_of("gemini-cli", data)


def test_gemini_a_rewind_drops_its_message_and_every_later_one() -> None:
    data = (FIXTURES / "gemini-cli.jsonl").read_bytes()
    records = [json.loads(line) for line in data.splitlines()]
    request = next(
        r["id"]
        for r in reversed(records)
        if r.get("type") == "user" and r["content"][0].get("text", "").startswith("Request 1")
    )
    before = gemini_view(data)
    after = gemini_view(data + json.dumps({"$rewindTo": request}).encode() + b"\n")
    texts = [b.get("text") for m in before for b in m["content"] if b.get("type") == "text"]
    cut = next(n for n, m in enumerate(before) if "Request 1" in json.dumps(m))
    assert "Request 1: build, test and read the report again." in texts
    assert after == before[:cut]
    gone = gemini_view(data + b'{"$rewindTo":"no-such-message"}\n')
    assert gone == []  # as Gemini CLI: a rewind to an unknown message clears them all


def test_gemini_the_last_record_of_an_id_wins_in_the_place_of_its_first() -> None:
    data = (FIXTURES / "gemini-cli.jsonl").read_bytes()
    records = [json.loads(line) for line in data.splitlines()]
    first = next(r for r in records if r.get("type") == "gemini" and r.get("content"))
    again = {**first, "content": "Rewritten answer.", "toolCalls": []}
    view = gemini_view(data + json.dumps(again).encode() + b"\n")
    texts = [b.get("text") for m in view for b in m["content"] if b.get("type") == "text"]
    assert "Rewritten answer." in texts
    assert texts.index("Rewritten answer.") < len(texts) - 2  # where the message first came


def test_pi_a_compaction_keeps_the_entries_from_its_first_kept_one_on() -> None:
    data = (FIXTURES / "pi.jsonl").read_bytes()
    records = [json.loads(line) for line in data.splitlines()]
    leaf, kept = records[-1]["id"], records[-4]["id"]  # the last assistant, a result before it

    def compacted(first_kept: str) -> list[Any]:
        entry = {"type": "compaction", "id": "c0ffee00", "parentId": leaf, "summary": "S"}
        entry |= {"timestamp": "2026-12-03T10:00:00.000Z", "firstKeptEntryId": first_kept}
        return view_of("pi", data + json.dumps(entry).encode() + b"\n")

    alone, with_kept = compacted("c0ffee00"), compacted(kept)
    assert len(alone) == 1  # the summary, nothing kept
    assert len(with_kept) > 1 and with_kept[0] == alone[0]
    assert json.dumps(records[-1]["message"]["content"][0]) in json.dumps(with_kept[-1])
