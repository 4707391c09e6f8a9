"""The tool results a session file holds, read line by line independently of ctxpack."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from agents.conversation import function_output
from agents.sessions import Session

_CODEX_OUTPUTS = ("function_call_output", "custom_tool_call_output")


@dataclass
class FileResults:
    every: dict[str, Any] = field(default_factory=dict)  # call id -> content, the whole file
    since_compaction: set[str] = field(default_factory=set)  # ids after the latest compaction


def tool_results(session: Session) -> FileResults:
    found = FileResults()
    for line in session.path.read_bytes().splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        if _is_compaction(session.agent, record):
            found.since_compaction.clear()
        for call_id, content in _results(session.agent, record):
            found.every[call_id] = content
            found.since_compaction.add(call_id)
    return found


def _is_compaction(agent: str, record: dict[str, Any]) -> bool:
    kind, subtype = record.get("type"), record.get("subtype")
    if agent == "claude-code":
        return kind == "system" and subtype == "compact_boundary"
    if agent == "gemini-cli":  # every $set of the messages replaces them
        return isinstance((record.get("$set") or {}).get("messages"), list)
    if agent == "qwen-code":
        return kind == "system" and subtype == "chat_compression"
    if agent == "pi":
        return kind == "compaction"
    if agent == "copilot-cli":
        return kind == "session.compaction_complete"
    return kind == "compacted"


def _results(agent: str, record: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    if agent == "claude-code":
        content = (
            (record.get("message") or {}).get("content") if record.get("type") == "user" else None
        )
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") == "tool_result":
                yield block["tool_use_id"], block.get("content")
    elif agent in ("gemini-cli", "qwen-code"):
        yield from _function_responses(record)
    elif agent == "pi":
        message = record.get("message") or {}
        if record.get("type") == "message" and message.get("role") == "toolResult":
            texts = [b.get("text", "") for b in message.get("content") or () if "text" in b]
            yield message["toolCallId"], "\n".join(texts)
    elif agent == "copilot-cli":
        data = record.get("data") or {}
        if record.get("type") == "tool.execution_complete" and "result" in data:
            yield data["toolCallId"], data["result"].get("content")
    else:
        payload = record.get("payload") if record.get("type") == "response_item" else None
        if isinstance(payload, dict) and payload.get("type") in _CODEX_OUTPUTS:
            yield payload["call_id"], payload.get("output")


def _function_responses(value: Any) -> Iterator[tuple[str, Any]]:
    """Every Gemini ``functionResponse`` anywhere in a record (messages, checkpoints, calls)."""
    if isinstance(value, dict):
        response = value.get("functionResponse")
        if isinstance(response, dict) and isinstance(response.get("id"), str):
            # Gemini CLI stores a call's id as NAME__ID and sends ID
            call_id, prefix = response["id"], f"{response.get('name')}__"
            yield call_id.removeprefix(prefix), function_output(response)
            return
        for item in value.values():
            yield from _function_responses(item)
    elif isinstance(value, list):
        for item in value:
            yield from _function_responses(item)
