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
another ``shapeHash`` of its ``api-request`` records (the hash of the system prompt and tools).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..session_files.base import (
    CHANGES,
    COMPACTED,
    PROMPT_CHANGED,
    RESUMED,
    Record,
    RecordedCall,
)
from ..session_files.records import milliseconds
from ..session_files.usage import token_count

SYNTHETIC = "<synthetic>"


def recorded_usage(records: Iterable[tuple[int, Record]]) -> list[RecordedCall]:
    calls: list[RecordedCall] = []
    seen: set[Any] = set()
    changes = _Changes()
    for index, record in records:
        changes.see(record)
        message = record.get("message")
        if record.get("type") != "assistant" or not isinstance(message, dict):
            continue
        usage, reply = message.get("usage"), message.get("id")
        if not isinstance(usage, dict) or message.get("model") == SYNTHETIC or reply in seen:
            continue
        seen.add(reply)
        calls.append(_call(index, record, message, usage, changes.take()))
    return calls


class _Changes:
    """What the records since the previous request say changed in the prompt."""

    def __init__(self) -> None:
        self.change: str | None = None
        self.last: dict[str, Any] = {}  # the last "version" and "shapeHash" seen

    def see(self, record: Record) -> None:
        kind = record.get("type")
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
