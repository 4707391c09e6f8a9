"""The receipt from the record (issue 31): what Claude Code and Codex recorded of their bill, and
the simulation calibrated on it, which must agree with it on the corpus's real sessions."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from helpers import CORPUS, TESTS

from compactor_core.agents.claude_code import ClaudeCode
from compactor_core.compaction.cache_plan import request_points
from compactor_core.replay import recordings
from compactor_core.replay.pricing import PROFILES
from compactor_core.replay.receipt import fit, receipt
from compactor_core.replay.run import KEEPS, UNTOUCHED, Recording, replay
from compactor_core.session_files.index import index_session
from compactor_core.session_files.registry import detect
from compactor_core.session_files.usage import recorded_calls
from compactor_core.settings import Settings

ORIGINALS = CORPUS / "originals"
ENTIRE = ORIGINALS / "cc_entire_1284c080__full.jsonl"  # 1-hour writes, compactions
KIMI = ORIGINALS / "cc_kimi_516b7270__full.jsonl"  # 5-minute writes
CODEX = TESTS / "fixtures" / "codex" / "compacted.jsonl"


def read(path: Path) -> Recording:
    with path.open("rb") as handle:
        session = index_session(handle, detect(handle, "auto", str(path)), str(path))
        return recordings.from_session(handle, session)


def bill(path: Path, threshold: int = 20000, **only: Any):
    recording = read(path)
    prices = PROFILES[recording.profile or "anthropic-5m"]
    return replay(recording, Settings(threshold=threshold), prices, **only)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        # Claude Code: message.usage once per message.id, <synthetic> replies left out
        (ENTIRE, (258, 340, 25_184_049, 973_296, 973_296, 340 + 2_518_404.9 + 2 * 973_296)),
        (KIMI, (42, 48, 1_687_293, 108_173, 0, 48 + 168_729.3 + 1.25 * 108_173)),
        # Codex: the last token_count totals, 14 requests (two events repeat their totals)
        (CODEX, (14, 170_321, 0, 0, 0, 170_321)),
    ],
)
def test_the_recorded_bill_of_the_corpus_files(path: Path, expected: tuple) -> None:
    found = bill(path, uses=(), policies=()).recorded
    assert found is not None
    assert (
        found.requests,
        found.input,
        found.cache_read,
        found.cache_write,
        found.cache_write_1h,
    ) == expected[:5]
    assert found.billed == pytest.approx(expected[5])


def claude_record(number: int, reply: str, usage: dict[str, Any], **extra: Any) -> str:
    record = {
        "type": "assistant",
        "uuid": f"u{number}",
        "parentUuid": f"u{number - 1}" if number else None,
        "sessionId": "s",
        "timestamp": f"2026-01-01T00:00:{number:02d}Z",
        "message": {"id": reply, "role": "assistant", "model": "claude-sonnet-4-5", "usage": usage}
        | {"content": [{"type": "text", "text": "hi"}]},
        **extra,
    }
    return json.dumps(record) + "\n"


def test_claude_code_counts_each_reply_once_its_subagents_too_and_hours_at_their_price():
    hour = {"ephemeral_1h_input_tokens": 1000, "ephemeral_5m_input_tokens": 0}
    usage = {
        "input_tokens": 3,
        "cache_read_input_tokens": 500,
        "cache_creation_input_tokens": 1000,
        "cache_creation": hour,
    }
    lines = [
        claude_record(0, "msg_a", usage),
        claude_record(1, "msg_a", usage),  # the same reply's second block: the same usage
        claude_record(2, "msg_b", {"input_tokens": 10}, isSidechain=True),
        claude_record(3, "msg_c", {"input_tokens": 0}).replace("claude-sonnet-4-5", "<synthetic>"),
    ]
    calls = recorded_calls(io.BytesIO("".join(lines).encode()), ClaudeCode())
    assert [(call.line, call.side) for call in calls] == [(0, False), (2, True)]
    assert (calls[0].cache_write_1h, calls[0].cache_write_5m, calls[0].time) == (
        1000,
        0,
        1767225600,
    )
    prices = PROFILES["anthropic-1h"].cache_rules().prices
    assert receipt(calls, prices).billed == pytest.approx(3 + 0.1 * 500 + 2.0 * 1000 + 10)


def test_the_simulation_covers_the_whole_session_across_its_compactions() -> None:
    recording = read(ENTIRE)
    assert len(recording.requests) == 258
    assert len(request_points(recording.messages)) < 100  # the view: after the last boundary
    assert recording.profile == "anthropic-1h"  # its writes were 1-hour ones
    assert 40_000 < recording.calibration.extras < 50_000  # system prompt and tools
    assert read(KIMI).profile == "anthropic-5m" and read(CODEX).profile == "openai"


@pytest.mark.parametrize("path", [ENTIRE, KIMI])
def test_the_simulated_untouched_bill_agrees_with_the_recorded_one(path: Path) -> None:
    result = bill(path, uses=(), policies=())
    assert result.requests >= 20 and result.recorded is not None
    simulated = result.find(KEEPS, UNTOUCHED).bill.billed
    assert abs(simulated / result.recorded.billed - 1) <= 0.10


def test_the_calibration_is_a_straight_line_through_the_recorded_tokens() -> None:
    assert fit([10_000 + 2 * tokens for tokens in (100, 300, 700)], [100, 300, 700]) == (
        10_000,
        pytest.approx(2.0),
    )
    assert fit([5000], [1000]) == (4000, 1.0)  # one request: its difference, at face value
    assert fit([5000, 4000], [1000, 2000]) == (4000, 1.0)  # a falling line: the same
