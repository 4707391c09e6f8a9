"""Hypothesis strategies: agent conversations with tool-call pairs, in both wire styles.

``conversations(style=...)`` draws a list of messages the way agents write them:

- ``"anthropic"``: an assistant message with ``tool_use`` blocks (one or several, in parallel),
  answered by one user message of ``tool_result`` blocks (sometimes followed by a text block);
- ``"openai"``: an assistant message with ``tool_calls``, answered by a run of ``role: "tool"``
  messages, one per call;
- ``"mixed"`` (the default): either, turn by turn. Each turn's style is drawn on its own, so every
  all-Anthropic and every all-OpenAI conversation is a mixed one too: the properties draw mixed
  conversations only, rather than running once per style.

Every call is answered by exactly one result that follows it (pair-safe), ids are unique, and the
text mixes ASCII, CJK (U+3000 included), emoji, accents and odd whitespace so each weight class of
the estimate is exercised. System messages appear at the start and between turns. Results are
strings, null, lists of blocks or markers left by an earlier micro compaction.

Later tests (full compaction, pair safety) reuse these: ``tool_pairs(messages)`` lists each call
with the index of the message that makes it and of the one that answers it.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Literal

from hypothesis import strategies as st

Style = Literal["anthropic", "openai", "mixed"]
STYLES: tuple[Style, ...] = ("anthropic", "openai", "mixed")

TOOL_NAMES = ("bash", "read_file", "Grep", "web.search", "edit_file", "工具", "get_reservation")

# One or more characters of each class of SPEC §1, boundaries of the CJK ranges included.
SPECIAL_CHARACTERS = (
    "你好世界中文結果ひらがなカタカナ한국어"
    "\u3000\u3001\u303f\u3040\u309f\u30a0\u30ff\u3400\u4dbf\u4e00\u9fff\uac00\ud7af\uf900\ufaff"
    "\U00020000\U0002a6df\U0002f800\U0002fa1f"
    "\u2fff\u3400\u33ff\u4dc0\u4dff\ud7b0\uf8ff\ufb00\U0001ffff\U0002a6e0\U0002f7ff\U0002fa20"
    " \t\n\r\x0b\x0c\x1c\x1f\x85\xa0\u1680\u2000\u200a\u200b\u2028\u2029\u202f\u205f\ufeff"
    "aZ09.,;:!?-_/\\\"'{}[]()<>@#$%^&*~`|+="
    "éüñß€™©…—“”、。，！？（）：；「」ＡＢ１２"
    "😀🚀👍🏽\u200d\ufe0f"
)

text_characters = st.one_of(
    st.sampled_from(SPECIAL_CHARACTERS),
    st.characters(codec="utf-8"),  # anything but surrogates
)


@functools.cache  # strategies are built once: hypothesis validates each new one, which is slow
def texts(min_size: int = 0, max_size: int = 24) -> st.SearchStrategy[str]:
    """Short text with every class of character the estimate tells apart."""
    return st.text(text_characters, min_size=min_size, max_size=max_size)


json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),  # unbounded: integers beyond 64 bits must survive parse and dump
    st.floats(allow_nan=False, allow_infinity=False),
    texts(max_size=12),
)


@functools.cache
def json_values(max_leaves: int = 8) -> st.SearchStrategy[Any]:
    """Any JSON value (no NaN or infinity), nested a little."""
    return st.recursive(
        json_scalars,
        lambda children: st.one_of(
            st.lists(children, max_size=4),
            st.dictionaries(texts(max_size=8), children, max_size=4),
        ),
        max_leaves=max_leaves,
    )


tool_inputs = st.one_of(
    st.dictionaries(
        st.sampled_from(["command", "file_path", "pattern", "query", "reservation_id", "路径"]),
        st.one_of(texts(), st.integers(), st.lists(texts(max_size=6), max_size=2)),
        max_size=3,
    ),
    # the same command or file again, so that a later result makes an earlier one stale
    st.sampled_from([{"command": "ls -la"}, {"file_path": "src/app.py"}]),
)

text_blocks = st.builds(lambda text: {"type": "text", "text": text}, texts())
other_blocks = st.one_of(
    st.builds(
        lambda thinking: {"type": "thinking", "thinking": thinking, "signature": "sig"}, texts()
    ),
    st.just(
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "QQ"}}
    ),
    st.builds(
        lambda text: {"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}, texts()
    ),
)


@functools.cache
def result_contents() -> st.SearchStrategy[Any]:
    """What a tool result holds: text (often long), null, a list of blocks, or an old marker."""
    return st.one_of(
        texts(max_size=60),
        st.builds(
            lambda text, times: text * times, texts(min_size=1, max_size=8), st.integers(1, 40)
        ),
        st.none(),
        st.lists(st.one_of(text_blocks, other_blocks), max_size=3),
        st.builds(
            lambda tool, chars: f"[truncated: {tool} result, {chars} chars]",
            st.sampled_from(TOOL_NAMES),
            st.integers(0, 10_000),
        ),
    )


_message_contents = st.one_of(texts(), st.lists(st.one_of(text_blocks, other_blocks), max_size=3))
_booleans = st.booleans()
_turn_styles = st.sampled_from(["anthropic", "openai"])
_call_names = st.lists(st.sampled_from(TOOL_NAMES), min_size=1, max_size=3)
_kinds = {
    True: st.sampled_from(["user", "assistant", "tools", "tools", "tools", "system"]),
    False: st.sampled_from(["user", "assistant", "tools", "tools", "tools"]),
}
_openai_results = st.one_of(texts(max_size=60), st.none(), st.just(""))
_openai_call_contents = st.one_of(st.none(), texts())


@st.composite
def conversations(
    draw: st.DrawFn,
    style: Style = "mixed",
    min_turns: int = 0,
    max_turns: int = 8,
    system: bool = True,
) -> list[dict[str, Any]]:
    """A conversation of ``min_turns`` to ``max_turns`` turns in ``style`` (see module doc)."""
    if style not in STYLES:
        raise ValueError(f"unknown style {style!r}")
    messages: list[dict[str, Any]] = []
    calls = 0
    if system and draw(_booleans):
        messages.append({"role": "system", "content": draw(texts())})
    for _ in range(draw(st.integers(min_turns, max_turns))):
        kind = draw(_kinds[system])
        if kind in ("user", "assistant", "system"):
            content = draw(texts()) if kind == "system" else draw(_message_contents)
            messages.append({"role": kind, "content": content})
            continue
        turn_style = draw(_turn_styles) if style == "mixed" else style
        names = draw(_call_names)
        ids = []
        for _ in names:
            calls += 1
            ids.append(f"toolu_{calls:04d}" if turn_style == "anthropic" else f"call_{calls:04d}")
        if turn_style == "anthropic":
            messages.extend(_anthropic_tool_turn(draw, ids, names))
        else:
            messages.extend(_openai_tool_turn(draw, ids, names))
    return messages


def _anthropic_tool_turn(draw: st.DrawFn, ids: list[str], names: list[str]) -> list[dict]:
    content: list[Any] = [draw(text_blocks)] if draw(_booleans) else []
    for call_id, name in zip(ids, names, strict=True):
        content.append(
            {"type": "tool_use", "id": call_id, "name": name, "input": draw(tool_inputs)}
        )
    results: list[Any] = []
    for call_id in ids:
        block = {"type": "tool_result", "tool_use_id": call_id, "content": draw(result_contents())}
        if draw(_booleans):
            block["is_error"] = draw(_booleans)
        results.append(block)
    if draw(_booleans):
        results.append(draw(text_blocks))
    return [{"role": "assistant", "content": content}, {"role": "user", "content": results}]


def _openai_tool_turn(draw: st.DrawFn, ids: list[str], names: list[str]) -> list[dict]:
    call_message: dict[str, Any] = {
        "role": "assistant",
        "content": draw(_openai_call_contents),
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": json.dumps(draw(tool_inputs), ensure_ascii=False),
                },
            }
            for call_id, name in zip(ids, names, strict=True)
        ],
    }
    results = []
    for call_id, name in zip(ids, names, strict=True):
        result: dict[str, Any] = {
            "role": "tool",
            "tool_call_id": call_id,
            "content": draw(_openai_results),
        }
        if draw(_booleans):
            result["name"] = name
        results.append(result)
    return [call_message, *results]


_models = st.sampled_from(["gpt-4o", "claude-sonnet-4"])
_systems = st.one_of(texts(), st.lists(text_blocks, max_size=2))
_max_tokens = st.integers(1, 100_000)


@st.composite
def envelopes(draw: st.DrawFn, style: Style = "mixed") -> dict[str, Any]:
    """A request envelope: ``messages`` plus other keys that must come back untouched."""
    envelope: dict[str, Any] = {"model": draw(_models)}
    if draw(_booleans):
        envelope["system"] = draw(_systems)
    if draw(_booleans):
        envelope["max_tokens"] = draw(_max_tokens)
    if draw(_booleans):
        envelope["metadata"] = draw(json_values(max_leaves=4))
    envelope["messages"] = draw(conversations(style=style))
    return envelope


def tool_pairs(messages: list[dict[str, Any]]) -> list[tuple[str, int, int]]:
    """Each tool call as ``(id, index of the calling message, index of the answering message)``;
    the answer index is -1 for a call without a result."""
    calls: dict[str, int] = {}
    answers: dict[str, int] = {}
    for index, message in enumerate(messages):
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") == "tool_use":
                calls[block["id"]] = index
            elif isinstance(block, dict) and block.get("type") == "tool_result":
                answers[block["tool_use_id"]] = index
        for call in message.get("tool_calls") or ():
            calls[call["id"]] = index
        if message.get("role") == "tool":
            answers[message["tool_call_id"]] = index
    return [(call_id, index, answers.get(call_id, -1)) for call_id, index in calls.items()]


# --- conversations the reference reads in its own way --------------------------------------------

# Values that BareAgent's str()/json.dumps treatment tells apart from ctxpack's default profile.
_odd_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    st.dictionaries(st.sampled_from(["k", "name", "text", "content"]), json_scalars, max_size=2),
    st.lists(json_scalars, max_size=2),
)
_MISSING = object()


@st.composite
def odd_conversations(draw: st.DrawFn, style: Style = "mixed") -> list[dict[str, Any]]:
    """``conversations(style)`` with some keys made strange: names, ids, inputs, texts and
    contents that are not strings or are missing, and tool results of any JSON value."""
    messages = draw(conversations(style=style))
    for message in messages:
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            for key in ("name", "id", "tool_use_id", "input", "text", "content"):
                if key in block and draw(st.integers(0, 5)) == 0:
                    value = draw(st.one_of(_odd_values, st.just(_MISSING)))
                    if value is _MISSING:
                        del block[key]
                    else:
                        block[key] = value
            if block.get("type") == "tool_use" and draw(st.integers(0, 4)) == 0:
                block["input"] = {"name": draw(_odd_values), "text": draw(_odd_values)}
    return messages
