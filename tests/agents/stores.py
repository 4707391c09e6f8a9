"""OpenCode's and Cline's stores, read here independently of ctxpack: the tool outputs they
hold (OpenCode: ``part.data`` of the session's completed tool parts; Cline: the ``tool_result``
blocks of ``<id>.messages.json``) and the summary of their latest compaction, which the real
agents must send when they resume.
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


def opencode_summary(database: Path, session_id: str) -> str:
    """The text of the session's newest summary (an assistant message, ``summary: true``)."""
    uri = f"file:{database}?mode=ro"
    with closing(sqlite3.connect(uri, uri=True)) as connection:
        rows = connection.execute(
            "SELECT message.data, part.data FROM part JOIN message ON message.id = part.message_id"
            " WHERE part.session_id = ? ORDER BY message.time_created, message.id, part.id",
            (session_id,),
        ).fetchall()
    texts = [
        part["text"]
        for message, part in ((json.loads(m), json.loads(p)) for m, p in rows)
        if message.get("summary") is True and part.get("type") == "text"
    ]
    assert texts, f"no summary in session {session_id}"
    return texts[-1]


def cline_outputs(path: Path) -> dict[str, Any]:
    """Call id -> content of every tool result of a ``<id>.messages.json``."""
    document = json.loads(path.read_bytes())
    return {
        block["tool_use_id"]: block.get("content")
        for message in document["messages"]
        for block in _blocks(message)
        if block.get("type") == "tool_result"
    }


def cline_summary(path: Path) -> str:
    """The summary of Cline's latest compaction (``metadata.kind`` ``compaction_summary``)."""
    document = json.loads(path.read_bytes())
    summaries = [
        message["metadata"]["summary"]
        for message in document["messages"]
        if (message.get("metadata") or {}).get("kind") == "compaction_summary"
    ]
    assert summaries, f"no compaction summary in {path}"
    return summaries[-1]


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
