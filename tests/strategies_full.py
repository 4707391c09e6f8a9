"""Conversations for the full-compaction properties: ``strategies.conversations`` plus the tails
that make the pending turn interesting.

A drawn conversation ends in one of: nothing more; a pending user request (text, or text blocks);
an unanswered tool call; tool calls split over two assistant messages answered by one results
message (Anthropic) or one tool run (OpenAI) — results that no single message fully called; then
zero to two trailing system messages. Text mixes CJK and everything else ``strategies`` draws.
"""

from __future__ import annotations

import json
from typing import Any

from checks_full import calls_made, results_given
from hypothesis import strategies as st
from strategies import Style, conversations, texts

Message = dict[str, Any]


@st.composite
def full_conversations(draw: st.DrawFn, style: Style = "mixed") -> list[Message]:
    messages = draw(conversations(style=style, max_turns=8))
    tail = draw(st.sampled_from(["none", "request", "blocks", "unanswered", "split", "split"]))
    turn_style = style if style != "mixed" else draw(st.sampled_from(["anthropic", "openai"]))
    if tail == "request":
        messages.append({"role": "user", "content": draw(texts(min_size=1))})
    elif tail == "blocks":
        text = draw(texts(min_size=1))
        messages.append({"role": "user", "content": [{"type": "text", "text": text}]})
    elif tail == "unanswered":
        messages.append(_call_message(turn_style, [("x_open", "bash")]))
    elif tail == "split":
        messages += [
            _call_message(turn_style, [("x_one", "bash")]),
            _call_message(turn_style, [("x_two", "read")]),
            *_results(turn_style, ["x_one", "x_two"], draw(texts())),
        ]
    for _ in range(draw(st.integers(0, 2))):
        messages.append({"role": "system", "content": draw(texts())})
    return messages


def _call_message(style: str, calls: list[tuple[str, str]]) -> Message:
    if style == "anthropic":
        return {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": call_id, "name": name, "input": {"path": "文件.txt"}}
                for call_id, name in calls
            ],
        }
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps({"path": "文件.txt"})},
            }
            for call_id, name in calls
        ],
    }


def _results(style: str, ids: list[str], text: str) -> list[Message]:
    if style == "anthropic":
        blocks = [
            {"type": "tool_result", "tool_use_id": call_id, "content": text} for call_id in ids
        ]
        return [{"role": "user", "content": blocks}]
    return [{"role": "tool", "tool_call_id": call_id, "content": text} for call_id in ids]


def expected_pending(messages: list[Message]) -> tuple[list[int], bool]:
    """SPEC §3.1 with its extensions, written from the spec: the indexes of the pending turn and
    whether the acknowledgement is kept.

    The last message that is not a system message: a user message, or the run of tool messages it
    ends, is pending. If that turn holds tool results, the nearest earlier message that made any of
    the calls goes with it, and the acknowledgement is dropped, provided it made all of them;
    otherwise nothing is pending (keeping the results would orphan one).
    """
    last = max((i for i, m in enumerate(messages) if m.get("role") != "system"), default=None)
    if last is None:
        return [], True
    if messages[last].get("role") == "tool":
        first = last
        while first > 0 and messages[first - 1].get("role") == "tool":
            first -= 1
        turn = list(range(first, last + 1))
    elif messages[last].get("role") == "user":
        turn = [last]
    else:
        return [], True
    answered = {call_id for i in turn for call_id in results_given(messages[i])}
    if not answered:
        return turn, True
    for index in range(turn[0] - 1, -1, -1):
        made = calls_made(messages[index])
        if made & answered:
            return ([index, *turn], False) if answered <= made else ([], True)
    return [], True
