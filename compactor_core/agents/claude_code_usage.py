"""What Claude Code records of its bill: each assistant record's ``message.usage``.

Claude Code writes one record per block of a reply, each repeating the reply's ``message.id`` and
usage, so a request is counted once, at the first record of its id; a subagent's requests
(``isSidechain``) are on the bill too. The usage is Anthropic's: ``input_tokens`` (plain),
``cache_read_input_tokens``, ``cache_creation_input_tokens`` split by TTL in ``cache_creation``
(``ephemeral_5m_input_tokens``, ``ephemeral_1h_input_tokens``; without the split, 5 minutes).
Claude Code's own placeholder replies (model ``<synthetic>``) were never requested.

What changed the prompt since the previous request, where the file shows it: a
``compact_boundary`` (its compaction or ``/clear``); a ``cost-state`` record, which a run writes
as it ends, so the next request is a resumed session's; another ``version`` of Claude Code, or
another ``shapeHash`` of its ``api-request`` records (the hash of the system prompt and tools), or
a skill loaded (a ``Skill`` call, or a slash command: either can change the tools and the
instructions the next request carries); a new
prompt of the user's after a reply that thought (the API drops the thinking blocks of earlier
turns, so the messages' cached prefix ends where the first of them stood).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..session_files.base import (
    CHANGES,
    COMPACTED,
    PROMPT_CHANGED,
    RESUMED,
    THINKING_DROPPED,
    Record,
    RecordedCall,
)
from ..session_files.records import milliseconds
from ..session_files.usage import token_count

SYNTHETIC = "<synthetic>"
SKILL = "Skill"  # the tool that loads a skill
COMMAND = "<command-name>/"  # how a slash command the user typed is recorded


def recorded_usage(records: Iterable[tuple[int, Record]]) -> list[RecordedCall]:
    calls: list[RecordedCall] = []
    seen: set[Any] = set()
    changes = _Changes()
    for index, record in records:
        message = record.get("message")
        if _is_new_reply(record, message, seen):
            seen.add(message["id"])
            calls.append(_call(index, record, message, message["usage"], changes.take()))
        changes.see(record, message)
    return calls


class _Changes:
    """What the records since the previous request say changed in the prompt."""

    def __init__(self) -> None:
        self.change: str | None = None
        self.last: dict[str, Any] = {}  # the last "version" and "shapeHash" seen
        self.thought = False  # a reply since the user's last prompt held thinking

    def see(self, record: Record, message: Any) -> None:
        kind = record.get("type")
        blocks = message.get("content") if isinstance(message, dict) else None
        kinds = (
            {block.get("type") for block in blocks if isinstance(block, dict)}
            if isinstance(blocks, list)
            else set()
        )
        if kind == "assistant":
            self.thought |= bool(kinds & {"thinking", "redacted_thinking"})
            if any(_is_skill(block) for block in blocks or ()):
                self._note(PROMPT_CHANGED)
        elif kind == "user" and isinstance(blocks, str) and COMMAND in blocks:
            self._note(PROMPT_CHANGED)
            self.thought = False
        elif kind == "user" and not record.get("isMeta") and "tool_result" not in kinds:
            if self.thought:
                self._note(THINKING_DROPPED)
            self.thought = False
        if kind == "system" and record.get("subtype") == "compact_boundary":
            self._note(COMPACTED)
        elif kind == "cost-state":
            self._note(RESUMED)
        for key in ("version", "shapeHash"):
            value = record.get(key)
            if value is not None and self.last.setdefault(key, value) != value:
                self._note(PROMPT_CHANGED)
                self.last[key] = value

    def _note(self, change: str) -> None:
        # the first cause wins: a compaction's prompt is new whatever came with it
        if self.change is None or CHANGES.index(change) < CHANGES.index(self.change):
            self.change = change

    def take(self) -> str | None:
        change, self.change = self.change, None
        return change


def _is_new_reply(record: Record, message: Any, seen: set[Any]) -> bool:
    """The first record of a reply that was requested (a record per block repeats it)."""
    return (
        record.get("type") == "assistant"
        and isinstance(message, dict)
        and isinstance(message.get("usage"), dict)
        and message.get("model") != SYNTHETIC
        and message.get("id") not in seen
    )


def _is_skill(block: Any) -> bool:
    return (
        isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name") == SKILL
    )


def _call(
    index: int, record: Record, message: dict[str, Any], usage: dict[str, Any], change: str | None
) -> RecordedCall:
    written = token_count(usage.get("cache_creation_input_tokens"))
    split = usage.get("cache_creation")
    hour = token_count(split.get("ephemeral_1h_input_tokens")) if isinstance(split, dict) else 0
    stamp = milliseconds(record.get("timestamp"))
    return RecordedCall(
        line=index,
        time=None if stamp is None else stamp / 1000,
        input=token_count(usage.get("input_tokens")),
        cache_read=token_count(usage.get("cache_read_input_tokens")),
        cache_write_5m=written - min(hour, written),
        cache_write_1h=min(hour, written),
        model=message.get("model") if isinstance(message.get("model"), str) else None,
        side=record.get("isSidechain") is True,
        output=token_count(usage.get("output_tokens")),
        change=change,
    )
