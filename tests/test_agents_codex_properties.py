"""Codex rollouts: the invariants of SPEC §8.4 over generated rollouts, and bad input.

Nothing lost: every line stays valid JSON, a line no rule changes comes back byte for byte, micro
never adds or removes a line, ids and ``call_id``s, reasoning (``encrypted_content``) and the
session_meta line never change, and the view after a command pairs every tool result with its
call. Bad lines are kept as they are and reported by ``check``.
"""

from __future__ import annotations

import io
import json
from typing import Any

from codex_rollouts import Rollout, index, records, run, user_item, view_messages
from hypothesis import given, settings
from hypothesis import strategies as st

from compactor_core.agents.claude_code import ClaudeCode
from compactor_core.agents.codex import Codex
from compactor_core.compaction.estimate import quarters_to_tokens, text_quarters
from compactor_core.conversation.boilerplate import CODEX_SUMMARY_INTRO
from compactor_core.providers.base import SummaryRequest
from compactor_core.session_files import check
from compactor_core.session_files import index as session
from compactor_core.settings import RunSettings, Settings

MICRO = RunSettings("micro")
FULL = RunSettings("full", Settings(lang="en"))
PROPERTIES = settings(max_examples=60, deadline=None)
# Payload types a command may change: tool outputs (also inside a replacement history) and
# the UI copies of them.
CHANGEABLE = {
    "function_call_output",
    "custom_tool_call_output",
    "item_completed",
    "exec_command_end",
}

texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
long_texts = st.builds(lambda text, times: text * times, texts, st.integers(1, 40))
outputs = st.one_of(texts, long_texts)
steps = st.one_of(
    st.tuples(st.just("user"), long_texts),
    st.tuples(st.just("assistant"), long_texts),
    st.tuples(st.just("reasoning"), texts),
    st.tuples(
        st.just("tools"),
        st.lists(outputs, min_size=1, max_size=3),
        st.sampled_from(["item_completed", "exec_command_end", "none"]),
    ),
    st.tuples(st.just("compacted"), st.booleans()),
    st.tuples(st.just("unknown"), texts),
)


@st.composite
def rollouts(draw: Any) -> bytes:
    rollout = Rollout(ordinals=draw(st.booleans()))
    for step in draw(st.lists(steps, max_size=30)):
        kind = step[0]
        if kind == "user":
            rollout.user(step[1])
        elif kind == "assistant":
            rollout.message("assistant", step[1])
        elif kind == "reasoning":
            rollout.reasoning(step[1])
        elif kind == "tools":
            rollout.tools(step[1], ui=step[2])
        elif kind == "compacted":
            rollout.compacted([user_item("earlier work")] if step[1] else None)
        else:
            rollout.add("future_record_type", {"note": step[1]})
    data = rollout.data()
    return data if draw(st.booleans()) else data.removesuffix(b"\n")


class ShortSummary:
    """A provider whose summary is always smaller than the history (the guard never fails)."""

    name = "short"

    def summarize(self, request: SummaryRequest) -> str:
        return "Summary."


def unchanged_except_outputs(before: dict[str, Any], after: dict[str, Any]) -> None:
    """Two versions of a record agree on everything but tool outputs and their UI copies."""
    assert before.keys() == after.keys()
    assert before["type"] == after["type"] and before.get("ordinal") == after.get("ordinal")
    old, new = before["payload"], after["payload"]
    if before["type"] == "compacted":
        old_items, new_items = old["replacement_history"], new["replacement_history"]
        assert len(old_items) == len(new_items)
        for old_item, new_item in zip(old_items, new_items, strict=True):
            assert {**new_item, "output": old_item.get("output")} == {
                **old_item,
                "output": old_item.get("output"),
            }
        return
    assert old["type"] in CHANGEABLE
    assert old.get("call_id") == new.get("call_id") and old.get("id") == new.get("id")
    holder_old, holder_new = (old["item"], new["item"]) if "item" in old else (old, new)
    assert holder_old.keys() == holder_new.keys() and holder_old.get("id") == holder_new.get("id")


def pairs_of(messages: list[dict[str, Any]]) -> list[str]:
    """Tool results of the view without their call before them."""
    asked: set[Any] = set()
    orphans = []
    for message in messages:
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            if block.get("type") == "tool_use":
                asked.add(block["id"])
            elif block.get("type") == "tool_result" and block["tool_use_id"] not in asked:
                orphans.append(block["tool_use_id"])
    return orphans


@PROPERTIES
@given(rollouts())
def test_micro_keeps_every_line_and_changes_only_outputs(data: bytes) -> None:
    result = run(data, MICRO)
    old_lines = data.splitlines(keepends=True)
    new_lines = result.data.splitlines(keepends=True)
    assert len(new_lines) == len(old_lines)
    assert result.data.endswith(b"\n") == data.endswith(b"\n")  # the file ends as it ended
    for old_line, new_line in zip(old_lines, new_lines, strict=True):
        after = json.loads(new_line)
        if old_line != new_line:
            before = json.loads(old_line)
            assert before["type"] not in ("session_meta", "turn_context")
            assert before["payload"].get("type") != "reasoning"
            unchanged_except_outputs(before, after)
            assert (
                new_line.rstrip(b"\n")
                == json.dumps(after, ensure_ascii=False, separators=(",", ":")).encode()
            )
    assert pairs_of(view_messages(result.data)) == pairs_of(view_messages(data))
    assert run(result.data, MICRO).data == result.data  # idempotent


@PROPERTIES
@given(rollouts())
def test_full_appends_and_leaves_a_pair_safe_view(data: bytes) -> None:
    result = run(data, FULL, ShortSummary())
    if result.outcome.full != "compacted":
        assert result.data == data
        return
    body = data if data.endswith(b"\n") else data + b"\n"
    assert result.data.startswith(body)  # the file's lines stay; records are appended
    appended = records(result.data[len(body) :])
    assert [record["type"] for record in appended] == ["compacted", "event_msg"]
    after = view_messages(result.data)
    assert pairs_of(after) == []
    # smaller but for the intro Codex puts before a summary (it matters in tiny histories only)
    intro = quarters_to_tokens(text_quarters([CODEX_SUMMARY_INTRO]))
    assert result.after.tokens <= result.before.tokens + intro


# --- bad input -----------------------------------------------------------------------------------


def sample() -> Rollout:
    rollout = Rollout()
    for turn in range(5):
        rollout.user(f"request {turn}")
        rollout.tools([f"output {turn} " * 100])
        rollout.message("assistant", f"done {turn}")
    return rollout


def micro_lines(data: bytes) -> tuple[list[bytes], list[bytes]]:
    return data.splitlines(keepends=True), run(data, MICRO).data.splitlines(keepends=True)


def test_a_torn_last_line_is_kept_and_reported() -> None:
    data = sample().data() + b'{"timestamp":"2026-12-02T10:00:00.000Z","type":"respon'
    before, after = micro_lines(data)
    assert after[-1] == before[-1] and len(after) == len(before)
    assert after[:-1] != before[:-1]  # the rest was compacted
    kinds = [(p.line, p.kind) for p in check.problems(index(data))]
    assert kinds == [(len(before), "torn-line")]


def test_an_invalid_middle_line_and_a_blank_line_are_kept() -> None:
    lines = sample().data().splitlines(keepends=True)
    lines.insert(3, b"{not json\n")
    lines.insert(5, b"\n")
    lines.insert(7, b"[1, 2]\n")
    data = b"".join(lines)
    _, after = micro_lines(data)
    assert [after[3], after[5], after[7]] == [b"{not json\n", b"\n", b"[1, 2]\n"]
    problems = [(p.line, p.kind) for p in check.problems(index(data))]
    assert problems == [(4, "invalid-line"), (8, "invalid-line")]


def test_unknown_record_types_come_back_byte_for_byte() -> None:
    rollout = sample()
    rollout.add("token_usage_record", {"usage": {"input_tokens": 5}})
    rollout.add("brand_new_type", {"output": "z" * 5000, "call_id": "call_1"})
    before, after = micro_lines(rollout.data())
    assert after[-2:] == before[-2:]


def test_an_empty_rollout_and_one_with_only_its_session_meta() -> None:
    empty = index(b"")
    assert len(empty.view) == 0 and empty.tokens == 0 and check.problems(empty) == []
    assert run(b"", MICRO).data == b""
    meta_only = Rollout().data()
    assert run(meta_only, MICRO).data == meta_only
    assert run(meta_only, FULL).outcome.full == "nothing"


def test_a_file_that_is_half_claude_code_keeps_the_other_half() -> None:
    result = {"type": "tool_result", "tool_use_id": "t", "content": "c" * 900}
    claude = {
        "type": "user",
        "uuid": "u1",
        "parentUuid": None,
        "sessionId": "s1",
        "message": {"role": "user", "content": [result]},
    }
    data = sample().data() + json.dumps(claude).encode() + b"\n"
    before, after = micro_lines(data)
    assert after[-1] == before[-1]
    handle = io.BytesIO(data)
    mixed = session.index_session(handle, Codex(), "<rollout>", others=[ClaudeCode()])
    assert [p.kind for p in check.problems(mixed)] == ["foreign-record"]


def test_a_huge_single_output_is_truncated() -> None:
    rollout = Rollout()
    rollout.user("dump it")
    rollout.tools(["x" * 5_000_000], ui="exec_command_end")
    for turn in range(3):
        rollout.user(f"next {turn}")
        rollout.tools(["small"])
    data = rollout.data()
    result = run(data, MICRO)
    assert len(result.data) < 2000 + len(data) - 3 * 5_000_000
    assert b"[truncated: exec_command result, 5000000 chars]" in result.data
