"""Independent checks of full compaction's output, shared by the tests and bench/bench_full.py.

These are oracles: they read conversations with their own small code, not with compactor_core's
helpers, so a bug there cannot hide itself here.
"""

from __future__ import annotations

import json
import re
from typing import Any

Message = dict[str, Any]

PATH_FIELDS = ("path", "file_path", "filename", "notebook_path")
SUMMARY_PREFIX = "[Context Compressed]\n"
QUOTE_CHARS = 200  # how much of the first user request the summary must quote


def _blocks(message: Message) -> list[Any]:
    content = message.get("content")
    return content if isinstance(content, list) else []


def calls_made(message: Message) -> set[Any]:
    """Ids of the tool calls a message makes, in both styles."""
    ids = {
        block.get("id")
        for block in _blocks(message)
        if isinstance(block, dict) and block.get("type") == "tool_use"
    }
    ids.update(call.get("id") for call in message.get("tool_calls") or () if isinstance(call, dict))
    return ids


def results_given(message: Message) -> list[Any]:
    """Ids of the calls the tool results in a message answer, in both styles."""
    ids = [
        block.get("tool_use_id")
        for block in _blocks(message)
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]
    if message.get("role") == "tool":
        ids.append(message.get("tool_call_id"))
    return ids


def pair_violations(messages: list[Message]) -> list[str]:
    """Every tool result whose call is not in an earlier message, as ``messages[i]: id``."""
    problems = []
    made: set[Any] = set()
    for index, message in enumerate(messages):
        problems.extend(
            f"messages[{index}]: {call_id!r}"
            for call_id in results_given(message)
            if call_id not in made
        )
        made |= calls_made(message)
    return problems


def tool_inputs(message: Message) -> list[Any]:
    """The inputs of a message's tool calls; OpenAI arguments parsed from their JSON string."""
    inputs = [
        block.get("input")
        for block in _blocks(message)
        if isinstance(block, dict) and block.get("type") == "tool_use"
    ]
    for call in message.get("tool_calls") or ():
        arguments = (call.get("function") or {}).get("arguments")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                continue
        inputs.append(arguments)
    return inputs


def tool_paths(messages: list[Message]) -> list[str]:
    """The distinct file paths given to tools (fields path, file_path, filename, notebook_path)."""
    found: dict[str, None] = {}
    for message in messages:
        for tool_input in tool_inputs(message):
            if not isinstance(tool_input, dict):
                continue
            for field in PATH_FIELDS:
                value = tool_input.get(field)
                if isinstance(value, str) and value.strip():
                    found[value.strip()] = None
    return list(found)


def text_of(message: Message) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(
        block["text"]
        for block in _blocks(message)
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    )


def first_request(messages: list[Message]) -> str | None:
    """The text of the first user message that has any (a previous summary does not count)."""
    for message in messages:
        if message.get("role") != "user":
            continue
        text = text_of(message)
        if text.startswith(SUMMARY_PREFIX):
            continue
        if text.strip():
            return text
    return None


def squeeze(text: str) -> str:
    """Runs of whitespace as one space: the summary puts a multi-line request on one line."""
    return re.sub(r"\s+", " ", text).strip()


def quotes_request(summary: str, request: str, chars: int = QUOTE_CHARS) -> bool:
    """Whether the first ``chars`` characters of the request, whitespace squeezed, are quoted."""
    return squeeze(request)[:chars].strip() in squeeze(summary)


def named(summary: str, paths: list[str]) -> list[str]:
    return [path for path in paths if path in summary]


def summary_of(messages: list[Message]) -> str | None:
    """The summary text in a compacted conversation (its first non-system message)."""
    for message in messages:
        if message.get("role") == "system":
            continue
        content = message.get("content")
        if isinstance(content, str) and content.startswith(SUMMARY_PREFIX):
            return content[len(SUMMARY_PREFIX) :]
        return None
    return None
