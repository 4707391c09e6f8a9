"""Micro compaction: old tool results become one-line markers, no model call (SPEC §2).

Every tool-result turn but the newest ``keep_recent`` has each tool result's ``content`` replaced
by ``[truncated: {tool} result, {N} chars]``, where N is the length in code points of the original
content. Nothing else in the conversation changes, and a second run changes nothing more.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any

from . import defaults
from .estimate import json_text
from .formats import Message
from .tools import UNKNOWN_TOOL, blocks, is_block, tool_names, tool_result_turns

MARKER_PREFIX = "[truncated:"
DEFAULT_KEEP_RECENT = defaults.KEEP_RECENT


@dataclass(frozen=True)
class MicroResult:
    """What a micro compaction did."""

    truncated: int  # tool results replaced by a marker
    chars_removed: int  # code points of content removed, net of the markers written


@dataclass(frozen=True)
class MicroSettings:
    keep_recent: int = DEFAULT_KEEP_RECENT
    exclude_tools: tuple[str, ...] = ()
    min_chars: int = 0


def marker(tool: str, chars: int) -> str:
    return f"[truncated: {tool} result, {chars} chars]"


def content_length(content: Any) -> int:
    """Code points of a tool result's content: a string as is, null 0, anything else as JSON."""
    if isinstance(content, str):
        return len(content)
    if content is None:
        return 0
    return len(json_text(content))


def is_marker(content: Any) -> bool:
    return isinstance(content, str) and content.startswith(MARKER_PREFIX)


def micro_compact(
    messages: list[Message],
    keep_recent: int = DEFAULT_KEEP_RECENT,
    exclude_tools: Collection[str] = (),
    min_chars: int = 0,
) -> MicroResult:
    """Truncate old tool results in place (the messages list is modified, as the reference does).

    ``keep_recent <= 0`` compacts every tool-result turn. ``exclude_tools`` names tools whose
    results are never truncated; results shorter than ``min_chars`` are left alone.
    """
    turns = tool_result_turns(messages)
    old_turns = turns[: max(len(turns) - keep_recent, 0)] if keep_recent > 0 else turns
    if not old_turns:
        return MicroResult(0, 0)
    names = tool_names(messages)
    truncated = removed = 0
    for turn in old_turns:
        for holder, call_id in _tool_results(messages, turn):
            content = holder.get("content")
            if is_marker(content):
                continue
            tool = names.get(call_id, UNKNOWN_TOOL)
            chars = content_length(content)
            if tool in exclude_tools or chars < min_chars:
                continue
            holder["content"] = marker(tool, chars)
            truncated += 1
            removed += chars - len(holder["content"])
    return MicroResult(truncated, removed)


def micro_with(messages: list[Message], settings: MicroSettings) -> MicroResult:
    return micro_compact(messages, settings.keep_recent, settings.exclude_tools, settings.min_chars)


def copy_tool_results(messages: list[Message]) -> list[Message]:
    """A copy that micro compaction can change without touching ``messages``.

    Only what micro rewrites is copied (messages holding tool results, their content lists and
    result blocks); everything else is shared, so this is cheap even for huge conversations.
    """
    copied = list(messages)
    for turn in tool_result_turns(messages):
        for index in turn:
            message = dict(messages[index])
            if isinstance(message.get("content"), list):
                message["content"] = [
                    dict(block) if is_block(block, "tool_result") else block
                    for block in message["content"]
                ]
            copied[index] = message
    return copied


def _tool_results(messages: list[Message], turn: list[int]) -> Iterator[tuple[dict, Any]]:
    """Each dict whose ``content`` is a tool result in this turn, with the call id it answers."""
    for index in turn:
        message = messages[index]
        if message.get("role") == "tool":
            yield message, message.get("tool_call_id")
            continue
        for block in blocks(message):
            if is_block(block, "tool_result"):
                yield block, block.get("tool_use_id")
