"""What the summary is made of, gathered in one pass over the history."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from ...boilerplate import ACKNOWLEDGEMENTS, user_texts
from ...formats import Message
from ...micro import is_marker
from ...prompts import SUMMARY_PREFIX
from ...tools import UNKNOWN_TOOL, blocks, is_block
from .worklog import Call


@dataclass
class Facts:
    """What the summary is made of, gathered in one pass over the history."""

    requests: list[str] = field(default_factory=list)  # the user's own words, oldest first
    calls: list[Call] = field(default_factory=list)
    results: list[tuple[str, str, bool]] = field(default_factory=list)  # (tool, text, is_error)
    assistant_texts: list[str] = field(default_factory=list)
    previous: str | None = None  # our own previous summary, or a model's
    earlier: list[str] = field(default_factory=list)  # summaries a harness sent as user turns


def gather(messages: list[Message], outputs: dict[str, str] | None = None) -> Facts:
    """The facts of ``messages``; ``outputs`` are the tool results before micro compaction, by
    call id, so that old commands still tell how they ended."""
    facts = Facts()
    calls: dict[Any, Call] = {}
    for index, message in enumerate(messages):
        role = message.get("role")
        if index == 0 and role == "user" and _text_of(message).startswith(SUMMARY_PREFIX):
            facts.previous = _text_of(message)[len(SUMMARY_PREFIX) :]
            continue
        if role == "tool":
            _answer(calls, facts, message.get("tool_call_id"), message.get("content"), False, False)
            continue
        for block in blocks(message):
            if is_block(block, "tool_use"):
                _call(calls, facts, block.get("id"), block.get("name"), block.get("input"))
            elif is_block(block, "tool_result"):
                error, flagged = bool(block.get("is_error")), "is_error" in block
                _answer(
                    calls, facts, block.get("tool_use_id"), block.get("content"), error, flagged
                )
        for tool_call in message.get("tool_calls") or ():
            function = tool_call.get("function") or {}
            arguments = _arguments(function.get("arguments"))
            _call(calls, facts, tool_call.get("id"), function.get("name"), arguments)
        if role == "user":
            for text in user_texts(message):
                facts.requests.extend([text.written] if text.written else [])
                facts.earlier.extend([text.earlier_summary] if text.earlier_summary else [])
        elif role == "assistant" and _text_of(message).strip() not in ("", *ACKNOWLEDGEMENTS):
            facts.assistant_texts.append(_text_of(message).strip())
    facts.calls = [_with_output(call, outputs or {}) for call in facts.calls]
    return facts


def tool_outputs(messages: list[Message]) -> dict[str, str]:
    """The text of each tool result in ``messages``, by the id of the call it answers."""
    outputs = {}
    for message in messages:
        if message.get("role") == "tool":
            outputs[message.get("tool_call_id")] = _text_of(message)
        for block in blocks(message):
            if is_block(block, "tool_result"):
                outputs[block.get("tool_use_id")] = _content_text(block.get("content"))
    return {call_id: text for call_id, text in outputs.items() if isinstance(call_id, str)}


def _call(calls: dict, facts: Facts, call_id: Any, name: Any, arguments: Any) -> None:
    call = Call(
        len(facts.calls), call_id, name if isinstance(name, str) else UNKNOWN_TOOL, arguments
    )
    facts.calls.append(call)
    if isinstance(call_id, str):
        calls[call_id] = call


def _answer(
    calls: dict, facts: Facts, call_id: Any, content: Any, is_error: bool, flagged: bool
) -> None:
    call = calls.get(call_id) if isinstance(call_id, str) else None
    text = _content_text(content)
    facts.results.append((call.name if call else UNKNOWN_TOOL, text, is_error))
    if call is not None:
        answered = replace(call, answered=True, result=text, is_error=is_error, flagged=flagged)
        facts.calls[call.position] = calls[call_id] = answered


def _with_output(call: Call, outputs: dict) -> Call:
    original = outputs.get(call.call_id) if isinstance(call.call_id, str) else None
    if call.answered and is_marker(call.result) and isinstance(original, str):
        return replace(call, result=original)
    return call


def _arguments(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments


def _content_text(content: Any) -> str:
    """The readable text of a content: a string, or the text blocks of a list."""
    if isinstance(content, str):
        return content
    parts = []
    for block in content if isinstance(content, list) else ():
        if isinstance(block, str):
            parts.append(block)
        elif is_block(block, "text") and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "\n".join(parts)


def _text_of(message: Message) -> str:
    return _content_text(message.get("content"))
