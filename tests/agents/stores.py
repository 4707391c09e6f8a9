"""OpenCode's and Cline's stores, read and rewritten here the way a ctxpack format would.

ctxpack has no format module for these two yet (they are a database and a whole JSON document,
not JSONL; docs/sessions.md says what they need). These helpers prove, with the real agents,
what such a module would rely on: which tool outputs resume sends, and that outputs rewritten in
the store (OpenCode: ``part.data`` in one SQLite transaction; Cline: the ``messages`` array of
``<id>.messages.json`` replaced whole) are what the agent sends next.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from helpers import original_length

from agents.checks import KEEP_RECENT

MARKER = "[truncated: {tool} result, {chars} chars]"


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


def shrink_opencode(database: Path, session_id: str) -> dict[str, str]:
    """Every tool output but those of the newest turns becomes its marker, in one transaction;
    the markers by call id. OpenCode must not be running (it holds the WAL)."""
    with closing(sqlite3.connect(database)) as connection, connection:
        rows = connection.execute(
            "SELECT id, message_id, data FROM part WHERE session_id = ? ORDER BY id",
            (session_id,),
        ).fetchall()
        tools = [(pid, mid, json.loads(data)) for pid, mid, data in rows]
        tools = [(pid, mid, p) for pid, mid, p in tools if p.get("type") == "tool"]
        turns = list(dict.fromkeys(mid for _, mid, _ in tools))
        kept = set(turns[-KEEP_RECENT:])
        markers = {}
        for pid, mid, part in tools:
            state = part.get("state", {})
            if mid in kept or state.get("status") != "completed":
                continue
            marker = MARKER.format(tool=part["tool"], chars=original_length(state["output"]))
            state["output"] = markers[part["callID"]] = marker
            connection.execute(
                "UPDATE part SET data = ? WHERE id = ?",
                (json.dumps(part, ensure_ascii=False, separators=(",", ":")), pid),
            )
    return markers


def cline_outputs(path: Path) -> dict[str, Any]:
    """Call id -> content of every tool result of a ``<id>.messages.json``."""
    document = json.loads(path.read_bytes())
    return {
        block["tool_use_id"]: block.get("content")
        for message in document["messages"]
        for block in _blocks(message)
        if block.get("type") == "tool_result"
    }


def shrink_cline(path: Path) -> dict[str, str]:
    """Every tool result but those of the newest turns becomes its marker: the document is
    written again whole (it is one JSON object); the markers by call id."""
    document = json.loads(path.read_bytes())
    names = {
        block["id"]: block.get("name", "unknown")
        for message in document["messages"]
        for block in _blocks(message)
        if block.get("type") == "tool_use"
    }
    with_results = [
        message
        for message in document["messages"]
        if any(block.get("type") == "tool_result" for block in _blocks(message))
    ]
    # a turn: the results of one assistant reply (Cline writes one user message per result)
    turns: list[list[dict[str, Any]]] = []
    previous = None
    for message in document["messages"]:
        if message in with_results:
            if previous is not None and previous in with_results and turns:
                turns[-1].append(message)
            else:
                turns.append([message])
        previous = message
    markers = {}
    for turn in turns[:-KEEP_RECENT]:
        for message in turn:
            for block in _blocks(message):
                if block.get("type") != "tool_result":
                    continue
                tool = names.get(block["tool_use_id"], "unknown")
                block["content"] = MARKER.format(
                    tool=tool, chars=original_length(block.get("content"))
                )
                markers[block["tool_use_id"]] = block["content"]
    path.write_text(json.dumps(document, ensure_ascii=False, indent=2))
    return markers


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
