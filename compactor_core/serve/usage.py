"""What the upstream billed for a request: the usage in its reply, read as the reply goes by.

Anthropic's Messages API puts the input's usage in ``message_start`` (a stream) and again, with
the output's, in ``message_delta``; a reply that is not streamed has it in its JSON body. Chat
Completions puts it in its last chunk (``usage.prompt_tokens`` and
``prompt_tokens_details.cached_tokens``), Responses in ``response.completed``
(``usage.input_tokens`` and ``input_tokens_details.cached_tokens``). The reader sees every chunk
the caller gets, keeps at most one event (or a JSON body up to ``MAX_BODY``) and never delays a
chunk: it only reads.
"""

from __future__ import annotations

from typing import Any

import orjson

from ..replay.cache_rules import Usage

MAX_BODY = 4 << 20  # bytes of a reply that is not streamed, kept to read its usage
MAX_EVENT = 1 << 20  # bytes of one event, kept to read its usage


class UsageReader:
    """The usage of one reply, from its chunks as they pass."""

    def __init__(self, streamed: bool) -> None:
        self.streamed = streamed
        self._pending = b""
        self._found: dict[str, Any] = {}
        self._dropped = False  # more than could be kept: no usage from this reply

    def feed(self, chunk: bytes) -> None:
        if self._dropped:
            return
        self._pending += chunk
        if not self.streamed:
            self._dropped = len(self._pending) > MAX_BODY
            return
        *events, self._pending = self._pending.split(b"\n\n")
        for event in events:
            if b'"usage"' in event:
                self._read_event(event)
        self._dropped = len(self._pending) > MAX_EVENT

    def usage(self) -> Usage | None:
        """The input's usage as the upstream counted it, or None when the reply had none."""
        if not self.streamed and not self._dropped and b'"usage"' in self._pending:
            self._merge(_json(self._pending))
        return _as_usage(self._found) if self._found else None

    def _read_event(self, event: bytes) -> None:
        for line in event.split(b"\n"):
            if line.startswith(b"data:"):
                self._merge(_json(line[5:]))

    def _merge(self, value: Any) -> None:
        usage = _usage_in(value)
        if usage:
            # a later event repeats the input's figures with the output's, or adds them
            self._found.update({key: item for key, item in usage.items() if item is not None})


def _json(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


def _usage_in(value: Any) -> dict[str, Any] | None:
    """The ``usage`` object of an event or body, wherever its API puts it."""
    if not isinstance(value, dict):
        return None
    for holder in (value, value.get("message"), value.get("response")):
        if isinstance(holder, dict) and isinstance(holder.get("usage"), dict):
            return holder["usage"]
    return None


def _as_usage(found: dict[str, Any]) -> Usage | None:
    if "cache_read_input_tokens" in found or "cache_creation_input_tokens" in found:
        return _anthropic(found)
    total = _count(found.get("prompt_tokens", found.get("input_tokens")))
    details = found.get("prompt_tokens_details") or found.get("input_tokens_details") or {}
    cached = _count(details.get("cached_tokens")) if isinstance(details, dict) else 0
    return Usage(read=cached, plain=max(total - cached, 0)) if total else None


def _anthropic(found: dict[str, Any]) -> Usage:
    written = _count(found.get("cache_creation_input_tokens"))
    split = found.get("cache_creation")
    hour = _count(split.get("ephemeral_1h_input_tokens")) if isinstance(split, dict) else 0
    hour = min(hour, written)
    return Usage(
        read=_count(found.get("cache_read_input_tokens")),
        written_5m=written - hour,
        written_1h=hour,
        plain=_count(found.get("input_tokens")),
    )


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
