"""OpenCode's and Cline's stores, read here independently of ctxpack: the tool outputs they
hold (OpenCode: ``part.data`` of the session's completed tool parts; Cline: the ``tool_result``
blocks of ``<id>.messages.json``), which the real agents must send when they resume.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any


def opencode_outputs(database: Path, session_id: str) -> dict[str, Any]:
    """Call id -> output of every completed tool part of the session, oldest first."""
    uri = f"file:{database}?mode=ro"
    with closing(sqlite3.connect(uri, uri=True)) as connection:
        rows = connection.execute(
            "SELECT data FROM part WHERE session_id = ? ORDER BY id", (session_id,)
        ).fetchall()
    outputs = {}
    for (data,) in rows:
        part = json.loads(data)
        if part.get("type") == "tool" and part.get("state", {}).get("status") == "completed":
            outputs[part["callID"]] = part["state"].get("output")
    return outputs


def cline_outputs(path: Path) -> dict[str, Any]:
    """Call id -> content of every tool result of a ``<id>.messages.json``."""
    document = json.loads(path.read_bytes())
    return {
        block["tool_use_id"]: block.get("content")
        for message in document["messages"]
        for block in _blocks(message)
        if block.get("type") == "tool_result"
    }


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
