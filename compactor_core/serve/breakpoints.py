"""One cache breakpoint more where a compacted request needs it to read its unchanged prefix
(issue 31): Anthropic's cache is read only at a request's ``cache_control`` breakpoints, each
looking back 20 blocks at most.

An agent marks the tail of each request (Claude Code: the last block of the last message), so
every earlier request left an entry where it ended. When the policy changes a message (a batch
of markers, a cut), the prefix before it is still in the cache — up to the newest earlier
request that ended before it — but a lookup from the tail, more than 20 blocks on, never finds
it, and the whole conversation is written again at 1.25×. A breakpoint on the last block of the
unchanged prefix finds that entry (it lies within its 20 blocks, a request or two back) and
writes one there for the requests after. It is added only to a request the policy changed, of
a caller that marks its messages, only where the caller's own breakpoints cannot reach the
prefix, never beyond 4 in all, never on a thinking block; the caller's are never moved or
dropped.
"""

from __future__ import annotations

from typing import Any

from ..conversation.formats import Message

MAX_BREAKPOINTS = 4  # the API refuses a request with more
LOOKBACK = 20  # blocks a breakpoint's lookup reaches back
_NO_MARK = frozenset({"thinking", "redacted_thinking"})  # blocks that cannot carry one
EPHEMERAL = {"type": "ephemeral"}


def with_prefix_breakpoint(
    body: dict[str, Any], messages: list[Message], kept: int
) -> list[Message]:
    """``messages`` with a breakpoint at the end of their first ``kept`` (the prefix the cache
    still holds), where it reads what the caller's breakpoints would not; else as they are."""
    if kept < 1 or kept >= len(messages):
        return messages
    marks = _marks(body.get("tools")) + _marks(body.get("system")) + _marks(messages)
    if not _marks(messages) or len(marks) >= MAX_BREAKPOINTS:
        return messages  # a caller that marks no message caches none: not ours to start
    last = sum(_blocks(message) for message in messages[:kept]) - 1  # the prefix's last block
    if any(last <= position <= last + LOOKBACK for position in _marked_blocks(messages)):
        return messages  # a breakpoint of the caller's reaches it already
    marked = _marked(messages[kept - 1], marks[-1] if marks else EPHEMERAL)
    if marked is None:
        return messages
    return [*messages[: kept - 1], marked, *messages[kept:]]


def _marked(message: Message, mark: dict[str, Any]) -> Message | None:
    """The message with ``mark`` on its last block that can carry one; None if none can."""
    content = message.get("content")
    if isinstance(content, str):
        return {**message, "content": [{"type": "text", "text": content, "cache_control": mark}]}
    if not isinstance(content, list):
        return None
    for index in range(len(content) - 1, -1, -1):
        block = content[index]
        if isinstance(block, dict) and block.get("type") not in _NO_MARK:
            blocks = [*content[:index], {**block, "cache_control": mark}, *content[index + 1 :]]
            return {**message, "content": blocks}
    return None


def _blocks(message: Message) -> int:
    content = message.get("content")
    return len(content) if isinstance(content, list) else 1


def _marked_blocks(messages: list[Message]) -> list[int]:
    """The block positions (counted over the messages) that carry a breakpoint."""
    positions, position = [], 0
    for message in messages:
        content = message.get("content")
        for block in content if isinstance(content, list) else [None]:
            if isinstance(block, dict) and "cache_control" in block:
                positions.append(position)
            position += 1
    return positions


def _marks(value: Any) -> list[dict[str, Any]]:
    """Every ``cache_control`` under ``value`` (tools, system blocks, messages' blocks)."""
    if isinstance(value, list):
        return [mark for item in value for mark in _marks(item)]
    if not isinstance(value, dict):
        return []
    own = [value["cache_control"]] if isinstance(value.get("cache_control"), dict) else []
    return own + _marks(value.get("content"))
