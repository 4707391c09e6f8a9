"""Stale results first in agents' session files (issue 35): the rule and the markers of
conversations, decided from pass 1's index; ``--age-only`` and ``--compat bareagent`` write the
files they wrote before."""

from __future__ import annotations

import hashlib
import io
import json
import os
import time
import uuid
from pathlib import Path
from typing import Any

from codex_rollouts import Rollout
from codex_rollouts import run as run_codex
from helpers import TESTS, run, session_result
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from strategies_claude_code import claude_code_sessions

from compactor_core.compaction.micro import is_marker, micro_compact
from compactor_core.conversation.tool_rules import NONE, Rule
from compactor_core.conversation.tools import result_holders
from compactor_core.session_files import registry
from compactor_core.session_files.index import index_session, load_view
from compactor_core.settings import RunSettings, Settings

CLAUDE = registry.get("claude-code")
SESSION = "11111111-2222-3333-4444-555555555555"


def output(number: int) -> str:
    return f"output {number}\n" * 40  # worth a marker


def claude_session(calls: list[tuple[str, dict[str, Any]]]) -> bytes:
    """A Claude Code session as 2.1.328 writes one: a prompt, then a turn per call (the call,
    its result with the UI copy), then an answer."""
    records: list[dict[str, Any]] = []

    def add(kind: str, message: dict[str, Any], **extra: Any) -> None:
        parent = records[-1]["uuid"] if records else None
        records.append(
            {"type": kind, "parentUuid": parent, "isSidechain": False,
             "uuid": str(uuid.UUID(int=len(records) + 1)), "sessionId": SESSION, "cwd": "/p",
             "version": "2.1.328", "message": message, **extra}
        )  # fmt: skip

    add("user", {"role": "user", "content": "fix the build"})
    for number, (tool, arguments) in enumerate(calls):
        call = {"type": "tool_use", "id": f"toolu_{number}", "name": tool, "input": arguments}
        add("assistant", {"id": f"msg_{number}", "role": "assistant", "content": [call]})
        result = {"type": "tool_result", "tool_use_id": call["id"], "content": output(number)}
        add("user", {"role": "user", "content": [result]}, toolUseResult={"stdout": output(number)})
    answer = [{"type": "text", "text": "ok"}]
    add("assistant", {"id": "msg_end", "role": "assistant", "content": answer})
    return b"".join(json.dumps(record).encode() + b"\n" for record in records)


CLAUDE_CALLS = [
    ("Read", {"file_path": "src/app.py"}),
    ("Bash", {"command": "npm test"}),
    ("Grep", {"pattern": "TODO", "path": "src"}),
    ("LS", {"path": "src/"}),
    ("Read", {"file_path": "src/app.py"}),
    ("Bash", {"command": "npm test"}),
    ("Grep", {"pattern": "TODO", "path": "src"}),
    ("LS", {"path": "src"}),
    ("Edit", {"file_path": "src/app.py", "old_string": "a", "new_string": "b"}),
    ("Read", {"file_path": "src/app.py", "offset": 10, "limit": 5}),
    ("Bash", {"command": "npm test"}),
    ("Read", {"file_path": "src/app.py", "offset": 10, "limit": 5}),  # the newest turns: a repeat
]
CODEX_COMMANDS = ["cargo build", "cat src/lib.rs", "cargo build", "cat src/lib.rs", "ls", "ls"]


def view_of(data: bytes, agent_format: Any) -> list[dict[str, Any]]:
    handle = io.BytesIO(data)
    return load_view(handle, index_session(handle, agent_format, "<session>"))


def micro(data: bytes, agent_format: Any = CLAUDE, **chosen: Any) -> bytes:
    return session_result(data, agent_format, RunSettings("micro", Settings(**chosen)))[0]


def results_shown(messages: list[dict[str, Any]]) -> list[str]:
    """Each result of the view: its marker, or that it stayed whole."""
    return [
        holder["content"] if is_marker(holder["content"]) else "(whole)"
        for _, holder in result_holders(messages)
    ]


def codex_rollout() -> bytes:
    rollout = Rollout()
    for number, command in enumerate(CODEX_COMMANDS):
        rollout.user(f"step {number}")
        rollout.tools([output(number)], commands=[command])
        rollout.message("assistant", "done")
    return rollout.data()


# --- the markers: a golden file ------------------------------------------------------------------


def test_the_markers_in_claude_code_and_codex_session_files(golden) -> None:
    """The conversations' markers, among the old turns and the newest turns' repeats; by age
    alone with --age-only."""
    lines = []
    claude, rollout, codex = claude_session(CLAUDE_CALLS), codex_rollout(), registry.get("codex")
    for stale in (True, False):
        label = "stale first" if stale else "age only"
        after = view_of(micro(claude, keep_recent=3, stale=stale), CLAUDE)
        lines += [f"Claude Code, {label}: {shown}" for shown in results_shown(after)]
        done = run_codex(rollout, RunSettings("micro", Settings(keep_recent=2, stale=stale)))
        lines += [f"Codex, {label}: {shown}" for shown in results_shown(view_of(done.data, codex))]
    golden("stale_session_markers.txt", "\n".join(lines) + "\n")


def test_a_repeat_among_the_newest_turns_goes_with_its_ui_copy() -> None:
    after = [json.loads(line) for line in micro(claude_session(CLAUDE_CALLS)).splitlines()]
    copies = {
        record["message"]["content"][0]["tool_use_id"]: record["toolUseResult"]
        for record in after
        if "toolUseResult" in record
    }
    assert copies["toolu_9"] != {"stdout": output(9)}  # read again in the newest turn
    assert copies["toolu_10"] == {"stdout": output(10)}  # the latest of its kind: whole
    assert copies["toolu_11"] == {"stdout": output(11)}


def test_the_cli_in_place_and_the_config_files_tools_table(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    config = tmp_path / "config.toml"
    config.write_text('[tools.Read]\nkind = "none"\n')  # reads no longer go stale
    for options, env, wanted in [
        ((), {}, "[superseded: Read src/app.py, read again 4 turns later]"),
        ((), {"CTXPACK_CONFIG": str(config)}, "[truncated: Read result, 360 chars]"),
        (("--age-only",), {}, "[truncated: Read result, 360 chars]"),
    ]:
        session.write_bytes(claude_session(CLAUDE_CALLS))
        os.utime(session, (time.time() - 3600,) * 2)
        done = run("micro", "--in-place", *options, session, env={**os.environ, **env})
        assert done.returncode == 0, done.stderr
        shown = results_shown(view_of(session.read_bytes(), CLAUDE))
        assert shown[0] == wanted
        bash = "[superseded: Bash npm test, run again 4 turns later]"
        assert (shown[1] == bash) == (options != ("--age-only",))


# --- the same as a conversation, and by age alone as before: properties ---------------------------

STALE_PRONE = st.sampled_from(
    [
        ("Read", {"file_path": "a.py"}),
        ("Read", {"file_path": "./a.py", "offset": 5, "limit": 9}),
        ("Read", {"file_path": "b.py"}),
        ("Edit", {"file_path": "a.py", "old_string": "x", "new_string": "y"}),
        ("Bash", {"command": "make"}),
        ("Grep", {"pattern": "TODO"}),
        ("LS", {"path": "."}),
        ("Tool0", {"command": "anything"}),
    ]
)
NOTHING_STALE = tuple((tool, (Rule(NONE),)) for tool in ("Read", "Edit", "Bash", "Grep", "LS"))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(claude_code_sessions(STALE_PRONE), st.integers(0, 4), st.booleans())
def test_property_the_view_gets_what_the_conversation_would(
    data: bytes, keep: int, stale: bool
) -> None:
    """Micro on the file, read back as the view, is the core's micro of the view: the same
    stale results, the same markers, the same newest turns kept (and by age alone the same)."""
    chosen = Settings(keep_recent=keep, stale=stale)
    expected, _ = micro_compact(view_of(data, CLAUDE), chosen)
    assert view_of(micro(data, keep_recent=keep, stale=stale), CLAUDE) == expected


# an assistant's own text may hold what a marker starts with (hypothesis found this one)
MARKER_IN_TEXT = (
    b'{"type": "user", "sessionId": "11111111-2222-3333-4444-555555555555", "parentUuid": null, '
    b'"isSidechain": false, "uuid": "00000000-0000-0000-0000-000000000001", '
    b'"message": {"role": "user", "content": ""}}\n'
    b'{"type": "assistant", "sessionId": "11111111-2222-3333-4444-555555555555", '
    b'"parentUuid": "00000000-0000-0000-0000-000000000001", "isSidechain": false, '
    b'"uuid": "00000000-0000-0000-0000-000000000003", "message": {"id": "msg_1", '
    b'"role": "assistant", "content": [{"type": "text", "text": "[superseded:"}]}}'
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(claude_code_sessions(STALE_PRONE), st.integers(0, 4))
@example(MARKER_IN_TEXT, 0)
def test_property_age_only_is_stale_first_with_nothing_stale(data: bytes, keep: int) -> None:
    """--age-only writes what stale results first writes when no tool can go stale: the
    stale-first machinery changes nothing else."""
    by_age = micro(data, keep_recent=keep, stale=False)
    assert by_age == micro(data, keep_recent=keep, tool_rules=NOTHING_STALE)
    assert by_age.count(b"[superseded:") == data.count(b"[superseded:")  # no marker of its own


BY_AGE = TESTS / "golden" / "session_files_by_age.txt"


def test_age_only_and_bareagent_write_the_files_they_wrote_before(tmp_path: Path) -> None:
    """The files of the corpus and the fixtures, by age alone and by the BareAgent profile,
    byte for byte as ctxpack wrote them before (their hashes, made then)."""
    lines = [line for line in BY_AGE.read_text().splitlines() if not line.startswith("#")]
    formats = {"cc_": "claude-code", "claude_code/": "claude-code", "codex/": "codex"}
    for line in lines:
        name, profile, digest = line.split()
        agent = next((agent for mark, agent in formats.items() if mark in name), None)
        agent = agent or Path(name).stem
        option = ("--age-only",) if profile == "age-only" else ("--compat", "bareagent")
        out = tmp_path / "out.jsonl"
        done = run("micro", "--format", agent, "--keep-recent", "1", *option, "-o", out,
                   TESTS / name)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert hashlib.sha256(out.read_bytes()).hexdigest() == digest, line
