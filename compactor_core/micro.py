"""Micro compaction: old tool results become one-line markers, no model call (SPEC §2).

Every tool-result turn but the newest ``keep_recent`` has each tool result's ``content`` replaced
by ``[truncated: {tool} result, {N} chars]``, where N is the length in code points of the original
content. Nothing else in the conversation changes, and a second run changes nothing more.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any

from . import bareagent, defaults
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
    compat: bool = False  # the BareAgent profile: its tool names, turns and lengths


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
    compat: bool = False,
) -> MicroResult:
    """Truncate old tool results in place (the messages list is modified, as the reference does).

    ``keep_recent <= 0`` compacts every tool-result turn. ``exclude_tools`` names tools whose
    results are never truncated; results shorter than ``min_chars`` are left alone. ``compat``
    follows the BareAgent reference (see bareagent.py): OpenAI ``tool`` messages stay whole.
    """
    turns = (bareagent.tool_result_turns if compat else tool_result_turns)(messages)
    old_turns = turns[: max(len(turns) - keep_recent, 0)] if keep_recent > 0 else turns
    if not old_turns:
        return MicroResult(0, 0)
    results = _reference_results if compat else _tool_results
    names = (bareagent.tool_names if compat else tool_names)(messages)
    truncated = removed = 0
    for turn in old_turns:
        for holder, tool, chars in results(messages, turn, names):
            if tool in exclude_tools or chars < min_chars:
                continue
            holder["content"] = marker(tool, chars)
            truncated += 1
            removed += chars - len(holder["content"])
    return MicroResult(truncated, removed)


def micro_with(messages: list[Message], settings: MicroSettings) -> MicroResult:
    return micro_compact(
        messages, settings.keep_recent, settings.exclude_tools, settings.min_chars, settings.compat
    )


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


ToolResult = tuple[dict[str, Any], str, int]  # what holds the content, its tool, its length


def _tool_results(messages: list[Message], turn: list[int], names: Any) -> Iterator[ToolResult]:
    """Each tool result of this turn not yet truncated (SPEC §2)."""
    for index in turn:
        message = messages[index]
        if message.get("role") == "tool":
            holders = [(message, message.get("tool_call_id"))]
        else:
            holders = [
                (block, block.get("tool_use_id"))
                for block in blocks(message)
                if is_block(block, "tool_result")
            ]
        for holder, call_id in holders:
            content = holder.get("content")
            if not is_marker(content):
                yield holder, names.get(call_id, UNKNOWN_TOOL), content_length(content)


def _reference_results(
    messages: list[Message], turn: list[int], names: dict[str, str]
) -> Iterator[ToolResult]:
    """The same, by the reference's rules: a missing content is "", ``null`` is "null"."""
    for index in turn:
        for block in bareagent.tool_results(messages[index]):
            text = bareagent.stringify(block.get("content", ""))
            if not text.startswith(MARKER_PREFIX):
                yield block, bareagent.result_tool(block, names), len(text)
