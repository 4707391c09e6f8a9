"""Micro compaction: old tool results become one-line markers, no model call (SPEC §2).

Every tool-result turn but the newest ``keep_recent`` has each tool result's ``content`` replaced
by ``[truncated: {tool} result, {N} chars]``, where N is the length in code points of the original
content. Nothing else in the conversation changes, and a second run changes nothing more.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass, replace
from typing import Any

from ..conversation.formats import Message
from ..conversation.tools import UNKNOWN_TOOL, blocks, is_block, tool_names, tool_result_turns
from ..settings import DEFAULT_SETTINGS, Settings
from . import bareagent
from .estimate import json_text

MARKER_PREFIX = "[truncated:"


@dataclass(frozen=True)
class MicroResult:
    """What a micro compaction did."""

    truncated: int  # tool results replaced by a marker
    chars_removed: int  # code points of content removed, net of the markers written
    images: int = 0  # image blocks replaced by a marker (``Settings.images``: old_images.py)


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
    messages: list[Message], settings: Settings = DEFAULT_SETTINGS
) -> tuple[list[Message], MicroResult]:
    """A new list with old tool results as markers, and what was done; ``messages`` is untouched.

    Every tool-result turn but the newest ``settings.keep_recent`` is truncated (``<= 0``: every
    turn), except the results ``worth_a_marker`` leaves alone. ``settings.compat`` follows the
    BareAgent reference (bareagent.py): OpenAI ``tool`` messages stay whole. Only the messages
    that change are copied (with their content lists and result blocks); the rest are shared, so
    this is cheap on huge conversations.
    """
    compat = settings.compat
    turns = (bareagent.tool_result_turns if compat else tool_result_turns)(messages)
    keep = settings.keep_recent
    old_turns = turns[: max(len(turns) - keep, 0)] if keep > 0 else turns
    compacted, done = _truncate(messages, old_turns, settings)
    if settings.images and not compat:
        return with_old_images(compacted, done, settings)
    return compacted, done


def with_old_images(
    messages: list[Message], done: MicroResult, settings: Settings
) -> tuple[list[Message], MicroResult]:
    """``--images``: the old turns' images become markers too (old_images.py)."""
    from .old_images import mark_old_images

    marked, images = mark_old_images(messages, settings.keep_recent)
    return marked, replace(done, images=images)


def mark_turns(
    messages: list[Message], settings: Settings, selected: Collection[int]
) -> tuple[list[Message], MicroResult]:
    """Micro compaction of the chosen tool-result turns only (positions in
    ``tool_result_turns(messages)``, oldest 0), by the same rules: the cache-aware policy picks
    the turns (cache_policy.py), this writes their markers. Default profile only."""
    turns = tool_result_turns(messages)
    chosen = [turns[position] for position in sorted(selected) if 0 <= position < len(turns)]
    return _truncate(messages, chosen, replace(settings, compat=False))


def _truncate(
    messages: list[Message], old_turns: list[list[int]], settings: Settings
) -> tuple[list[Message], MicroResult]:
    compat = settings.compat
    compacted = list(messages)
    if not old_turns:
        return compacted, MicroResult(0, 0)
    results = _reference_results if compat else _tool_results
    names = (bareagent.tool_names if compat else tool_names)(messages)
    truncated = removed = 0
    for turn in old_turns:
        for index in turn:
            compacted[index] = _copy_results(messages[index])
        for holder, tool, chars in results(compacted, turn, names):
            if not worth_a_marker(tool, chars, settings):
                continue
            holder["content"] = marker(tool, chars)
            truncated += 1
            removed += chars - len(holder["content"])
    return compacted, MicroResult(truncated, removed)


def worth_a_marker(tool: str, chars: int, settings: Settings) -> bool:
    """Whether an old result of ``chars`` code points from ``tool`` gets the marker (SPEC §2).

    Not a result of an excluded tool, nor one shorter than ``min_chars``; and, but for the
    BareAgent profile (which marks every result, as the reference does), never a result the
    marker would not make shorter: ``[truncated: bash result, 2 chars]`` in place of ``ok``
    would grow the conversation it is meant to shrink.
    """
    if tool in settings.exclude_tools or chars < settings.min_chars:
        return False
    return settings.compat or len(marker(tool, chars)) < chars


def _copy_results(message: Message) -> Message:
    """A copy of the message that its tool results can be rewritten in."""
    copied = dict(message)
    if isinstance(copied.get("content"), list):
        copied["content"] = [
            dict(block) if is_block(block, "tool_result") else block for block in copied["content"]
        ]
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
