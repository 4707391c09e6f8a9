"""What Codex records of its bill: its ``token_count`` events.

Each ``event_msg`` of type ``token_count`` carries ``info.total_token_usage``, the session's
running totals in OpenAI's terms (``input_tokens`` includes ``cached_input_tokens``); Codex
repeats an event now and then, so a request is an event whose totals grew, and its usage is
what they grew by: the calls add up to the last totals. The request was sent before the first
item the model wrote for it (a reply, a reasoning item, a call) since the previous request.
A ``compacted`` record (Codex's compaction) or another ``session_meta`` (a resumed session)
since the previous request changed what this one sent. A ``compacted`` record that follows a
request's usage with no item between was that request's own: Codex asked for the summary with
instructions of its own (another prompt, a miss), so that request is the compaction's too. The
model is the latest ``turn_context``'s.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from ..session_files.base import COMPACTED, RESUMED, Record, RecordedCall, first_change
from ..session_files.records import milliseconds
from ..session_files.usage import token_count

_MODEL_ITEMS = frozenset(
    {"reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call"}
)
_TOTALS = (
    "input_tokens",
    "cached_input_tokens",
    "cache_write_input_tokens",
    "output_tokens",
)
_CHANGES = {"compacted": COMPACTED, "session_meta": RESUMED}


def recorded_usage(records: Iterable[tuple[int, Record]]) -> list[RecordedCall]:
    calls: list[RecordedCall] = []
    totals = dict.fromkeys(_TOTALS, 0)
    asked: int | None = None  # the first line the model wrote since the last request
    change, started, model = None, False, None
    summarized = False  # whether the latest request may have been a compaction's summary
    for index, record in records:
        payload = record.get("payload")
        if not isinstance(payload, dict):
            continue
        kind = record.get("type")
        if kind == "compacted" and summarized and calls[-1].change is None:
            calls[-1] = replace(calls[-1], change=COMPACTED)
        if kind in _CHANGES and (started or kind != "session_meta"):
            change = first_change(change, _CHANGES[kind])
        started = True
        summarized &= kind != "response_item"
        if kind == "turn_context" and isinstance(payload.get("model"), str):
            model = payload["model"]
        if kind == "response_item" and _from_the_model(payload):
            asked = index if asked is None else asked
        now = _totals(payload) if record.get("type") == "event_msg" else None
        if now is None or now["input_tokens"] <= totals["input_tokens"]:
            continue
        grown = {name: max(now[name] - totals[name], 0) for name in _TOTALS}
        cached, written = grown["cached_input_tokens"], grown["cache_write_input_tokens"]
        stamp = milliseconds(record.get("timestamp"))
        calls.append(
            RecordedCall(
                line=index if asked is None else asked,
                time=None if stamp is None else stamp / 1000,
                input=max(grown["input_tokens"] - cached - written, 0),
                cache_read=cached,
                cache_write_5m=written,
                output=grown["output_tokens"],
                model=model,
                change=change,
            )
        )
        totals, asked, change, summarized = now, None, None, True
    return calls


def _from_the_model(payload: dict[str, Any]) -> bool:
    kind = payload.get("type")
    return kind in _MODEL_ITEMS or (kind == "message" and payload.get("role") == "assistant")


def _totals(payload: dict[str, Any]) -> dict[str, int] | None:
    info = payload.get("info") if payload.get("type") == "token_count" else None
    totals = info.get("total_token_usage") if isinstance(info, dict) else None
    if not isinstance(totals, dict):
        return None
    return {name: token_count(totals.get(name)) for name in _TOTALS}
