"""Claude Code session files in the core: the view, micro, full and check (SPEC §8.2-8.4).

On the two real sessions of the corpus, the genuine sessions the real agent wrote
(tests/fixtures/claude_code), and, as properties, on generated sessions.
"""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from helpers import CORPUS, TESTS, session_result
from hypothesis import HealthCheck, given, settings
from strategies_claude_code import claude_code_sessions

from compactor_core.compaction.estimate import estimate
from compactor_core.compaction.micro import is_marker, marker
from compactor_core.conversation.tools import blocks
from compactor_core.providers.extractive import ExtractiveSummarizer
from compactor_core.session_files import registry
from compactor_core.session_files.check import problems
from compactor_core.session_files.compact import Surroundings
from compactor_core.session_files.index import index_session, load_view
from compactor_core.settings import RunSettings, Settings

CLAUDE = registry.get("claude-code")
REAL = sorted(CORPUS.glob("originals/cc_*__full.jsonl"))
GENUINE = sorted((TESTS / "fixtures" / "claude_code").glob("*.jsonl"))
SESSIONS = REAL + GENUINE
NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def transform(data: bytes, job: RunSettings) -> tuple[bytes, object]:
    around = Surroundings(NOW, Path("/s.jsonl"))
    after, outcome, _ = session_result(data, CLAUDE, job, ExtractiveSummarizer(), around)
    return after, outcome


def micro(data: bytes, keep: int = 3, stale: bool = True) -> bytes:
    return transform(data, RunSettings("micro", Settings(keep_recent=keep, stale=stale)))[0]


def full(data: bytes) -> bytes:
    return transform(data, RunSettings("full", Settings(lang="en")))[0]


def records(data: bytes) -> list[dict]:
    return [json.loads(line) for line in data.splitlines() if line.strip()]


def session_of(data: bytes):
    return index_session(io.BytesIO(data), CLAUDE, "s.jsonl")


def assert_only_results_shrank(before: bytes, after: bytes) -> None:
    """Same lines in the same order; a changed line differs only in tool results and UI copy."""
    old_lines, new_lines = before.split(b"\n"), after.split(b"\n")
    assert len(old_lines) == len(new_lines)
    for old, new in zip(old_lines, new_lines, strict=True):
        if old == new:
            continue
        old_record, new_record = json.loads(old), json.loads(new)
        assert set(old_record) == set(new_record)
        for key in old_record:
            if key not in ("message", "toolUseResult"):
                assert old_record[key] == new_record[key]
        if "toolUseResult" in old_record and isinstance(old_record["toolUseResult"], dict):
            assert set(old_record["toolUseResult"]) == set(new_record["toolUseResult"])
        old_blocks = old_record["message"]["content"]
        new_blocks = new_record["message"]["content"]
        for old_block, new_block in zip(old_blocks, new_blocks, strict=True):
            if old_block.get("type") != "tool_result":
                assert old_block == new_block  # thinking and its signature never change
            else:
                assert new_block["tool_use_id"] == old_block["tool_use_id"]
                assert new_block["content"] == old_block["content"] or is_marker(
                    new_block["content"]
                )  # a truncation marker, or a superseded one (stale results first)


@pytest.mark.parametrize("path", SESSIONS, ids=lambda path: path.stem)
def test_the_view_estimate_is_the_estimate_of_the_view(path: Path) -> None:
    with open(path, "rb") as handle:
        session = index_session(handle, CLAUDE, str(path))
        assert session.tokens == estimate(load_view(handle, session))
    assert problems(session) == []  # the agent's own files are healthy


@pytest.mark.parametrize("path", SESSIONS, ids=lambda path: path.stem)
def test_micro_changes_only_old_tool_results(path: Path) -> None:
    data = path.read_bytes()
    after = micro(data, keep=1)
    assert after != data
    assert_only_results_shrank(data, after)
    assert micro(after, keep=1) == after  # idempotent
    assert problems(session_of(after)) == []
    assert data.endswith(b"\n") == after.endswith(b"\n")


def test_micro_keeps_the_newest_three_tool_result_turns_of_the_view_whole() -> None:
    """By age alone (stale results first: tests/test_stale_session_files.py)."""
    data = (CORPUS / "originals" / "cc_entire_1284c080__full.jsonl").read_bytes()
    before, after = session_of(data), session_of(micro(data, stale=False))
    turns = [m for m in before.view if any(before.infos[i].results for i in m.records)]
    for message in turns[-3:]:
        for index in message.records:
            assert not any(result.is_marker for result in after.infos[index].results)
    for message in turns[:-3]:
        for index in message.records:
            pairs = zip(before.infos[index].results, after.infos[index].results, strict=True)
            for was, now in pairs:
                # a result its marker would not shorten stays (issue 21.6)
                tool = before.tool(was.call_id, "unknown")
                assert now.is_marker == (len(marker(tool, was.chars)) < was.chars)
    assert after.tokens < before.tokens


def test_parallel_results_are_one_message_of_the_view() -> None:
    # 2.1.328 writes each result as the child of the record that made its call
    path = TESTS / "fixtures" / "claude_code" / "session.jsonl"
    with open(path, "rb") as handle:
        session = index_session(handle, CLAUDE, str(path))
        messages = load_view(handle, session)
    results = [
        m
        for m in messages
        if any(isinstance(b, dict) and b["type"] == "tool_result" for b in blocks(m))
    ]
    assert results and all(m["role"] == "user" for m in results)
    assert max(len(m["content"]) for m in results) >= 2


def test_the_view_after_a_newer_compact_is_summary_then_preserved_segment() -> None:
    path = TESTS / "fixtures" / "claude_code" / "compacted.jsonl"
    with open(path, "rb") as handle:
        session = index_session(handle, CLAUDE, str(path))
        messages = load_view(handle, session)
    assert messages[0]["content"].startswith("This session is being continued")
    assert messages[1]["role"] == "assistant"  # the preserved segment: the reply before /compact


@pytest.mark.parametrize("path", SESSIONS, ids=lambda path: path.stem)
def test_full_appends_a_boundary_and_a_summary_like_claude_codes_compact(path: Path) -> None:
    data = path.read_bytes()
    after = full(data)
    kept = data if data.endswith(b"\n") else data + b"\n"
    assert after.startswith(kept)  # append-only
    new = records(after[len(kept) :])
    boundary, summary = new[0], new[1]
    assert boundary["type"] == "system" and boundary["subtype"] == "compact_boundary"
    assert boundary["parentUuid"] is None
    assert boundary["compactMetadata"]["trigger"] == "manual"
    assert boundary["logicalParentUuid"] in {r.get("uuid") for r in records(data)}
    assert summary["isCompactSummary"] is True and summary["parentUuid"] == boundary["uuid"]
    assert len(new) == 2  # the recent messages are kept where they are, not copied
    session = session_of(after)
    assert problems(session) == []
    assert session.tokens < session_of(data).tokens
    assert_kept_like_compact(data, after)


def assert_kept_like_compact(before: bytes, after: bytes) -> None:
    """The boundary keeps the last messages (the pending turn, else the last reply) by id, as
    /compact does; the view after it is the summary, then those messages as they were."""
    boundary = records(after)[len(records(before))]
    kept = boundary["compactMetadata"]["preservedMessages"]
    summary = records(after)[-1]
    assert (
        kept["anchorUuid"]
        == summary["uuid"]
        == boundary["compactMetadata"]["preservedSegment"]["anchorUuid"]
    )
    was, now = view_of(before), view_of(after)
    assert now[0]["content"].startswith("This session is being continued")
    assert now[1:] == was[len(was) - len(now) + 1 :]
    ids = [r.get("uuid") for r in records(before)]
    assert all(uuid in ids for uuid in kept["uuids"])


def view_of(data: bytes) -> list[dict]:
    handle = io.BytesIO(data)
    return load_view(handle, index_session(handle, CLAUDE, "s.jsonl"))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(claude_code_sessions())
def test_property_micro_keeps_every_other_byte(data: bytes) -> None:
    after = micro(data, keep=1)
    assert_only_results_shrank(data, after)
    assert micro(after, keep=1) == after
    assert data.endswith(b"\n") == after.endswith(b"\n")
    assert problems(session_of(after)) == problems(session_of(data)) == []


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(claude_code_sessions())
def test_property_full_is_append_only_and_pair_safe(data: bytes) -> None:
    after, outcome = transform(data, RunSettings("full", Settings(lang="en")))
    if outcome.full != "compacted":
        assert after == data
        return
    assert after.startswith(data if data.endswith(b"\n") else data + b"\n")
    assert problems(session_of(after)) == []
    assert_kept_like_compact(data, after)


def test_auto_is_micro_below_the_threshold_and_appends_a_summary_above_it() -> None:
    data = (CORPUS / "originals" / "cc_kimi_516b7270__full.jsonl").read_bytes()
    small, outcome = transform(data, RunSettings("auto", Settings(lang="en", threshold=1_000_000)))
    assert small == micro(data) and outcome.full == "not run"
    big, outcome = transform(data, RunSettings("auto", Settings(lang="en", threshold=5000)))
    assert outcome.full == "compacted" and not outcome.over_threshold
    shrunk = micro(data)
    assert big.startswith(shrunk if shrunk.endswith(b"\n") else shrunk + b"\n")  # then appended
    assert session_of(big).tokens < 5000


def test_with_fewer_result_turns_than_keep_recent_every_one_stays_whole() -> None:
    """The session's two tool-result turns are both among the newest three: the plan kept only
    the last one (``turns[len(turns) - keep:]`` with a negative start) and truncated the other."""
    data = (TESTS / "fixtures" / "claude_code" / "session.jsonl").read_bytes()
    assert (
        sum(
            1
            for m in session_of(data).view
            if any(session_of(data).infos.has_results(i) for i in m.records)
        )
        == 2
    )
    assert micro(data, keep=3) == data
    assert micro(data, keep=2) == data
    assert micro(data, keep=1) != data
