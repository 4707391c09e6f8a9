"""The tool results a session file holds, read line by line independently of ctxpack."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agents.sessions import Session

_CODEX_OUTPUTS = ("function_call_output", "custom_tool_call_output")


@dataclass
class FileResults:
    every: dict[str, Any] = field(default_factory=dict)  # call id -> content, the whole file
    since_compaction: set[str] = field(default_factory=set)  # ids after the latest compaction


def tool_results(session: Session) -> FileResults:
    found = FileResults()
    for line in session.path.read_bytes().splitlines():
        record = json.loads(line)
        if _is_compaction(session.agent, record):
            found.since_compaction.clear()
        for call_id, content in _results(session.agent, record):
            found.every[call_id] = content
            found.since_compaction.add(call_id)
    return found


def _is_compaction(agent: str, record: dict[str, Any]) -> bool:
    if agent == "claude-code":
        return record.get("type") == "system" and record.get("subtype") == "compact_boundary"
    return record.get("type") == "compacted"


def _results(agent: str, record: dict[str, Any]) -> list[tuple[str, Any]]:
    if agent == "claude-code":
        content = (
            (record.get("message") or {}).get("content") if record.get("type") == "user" else None
        )
        blocks = content if isinstance(content, list) else []
        return [
            (block["tool_use_id"], block.get("content"))
            for block in blocks
            if isinstance(block, dict) and block.get("type") == "tool_result"
        ]
    payload = record.get("payload") if record.get("type") == "response_item" else None
    if isinstance(payload, dict) and payload.get("type") in _CODEX_OUTPUTS:
        return [(payload["call_id"], payload.get("output"))]
    return []
