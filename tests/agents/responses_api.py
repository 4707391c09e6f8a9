"""Codex's side of the wire: an OpenAI Responses API reply as an SSE stream.

The events are those of the Responses API: ``response.created``, per output item
``response.output_item.added`` (text items also ``response.output_text.delta``) and
``response.output_item.done``, then ``response.completed`` with the usage Codex counts its
context by (and decides on auto-compaction by).

Two compactions: Codex's own (local) one asks for a summary with a prompt; the remote one, for a
provider named OpenAI (``responses_compaction_v2``), sends the history with a
``compaction_trigger`` item last and takes one ``compaction`` item back, whose
``encrypted_content`` only the server can read (here: the summary, base64-encoded).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

from agents.script import Reply, new_id

# The request Codex makes for its (auto-)compaction ends with a user message saying so.
_COMPACT_REQUEST = "COMPACTION"


def is_compaction(body: dict[str, Any]) -> bool:
    """Whether Codex asks for the summary of its own compaction."""
    items = body.get("input") or [{}]
    return _COMPACT_REQUEST in json.dumps(items[-1])


def is_remote_compaction(body: dict[str, Any]) -> bool:
    """Whether Codex asks for a remote compaction (an encrypted compaction item)."""
    items = body.get("input") or [{}]
    return isinstance(items[-1], dict) and items[-1].get("type") == "compaction_trigger"


def encrypted(summary: str) -> str:
    return "gAAAAB" + base64.b64encode(summary.encode()).decode()


def output_items(reply: Reply) -> list[dict[str, Any]]:
    """The reply as Responses API output items: a message, then one function call per call."""
    items: list[dict[str, Any]] = []
    if reply.compaction:
        items.append(
            {"type": "compaction", "id": new_id("cmp_"), "encrypted_content": reply.compaction}
        )
    if reply.text:
        items.append(
            {
                "type": "message",
                "id": new_id("msg_"),
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        )
    for call in reply.calls:
        item = {
            "type": "function_call",
            "id": new_id("fc_"),
            "call_id": new_id("call_"),
            "name": call.name,
            "arguments": json.dumps(call.arguments),
            "status": "completed",
        }
        items.append({**item, "namespace": call.namespace} if call.namespace else item)
    return items


def stream(reply: Reply, model: str, input_tokens: int, cached: int = 0) -> Iterator[bytes]:
    """``input_tokens`` of which ``cached`` were read from the prompt cache."""
    response_id = new_id("resp_")
    base = {"id": response_id, "object": "response", "model": model}
    yield _event("response.created", {**base, "status": "in_progress", "output": []})
    items = output_items(reply)
    for index, item in enumerate(items):
        yield from _item_events(index, item)
    output_tokens = max(1, len(json.dumps(items)) // 4)
    usage = {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input_tokens + output_tokens,
    }
    done = {**base, "status": "completed", "output": items, "usage": usage}
    yield _event("response.completed", done)


def _item_events(index: int, item: dict[str, Any]) -> Iterator[bytes]:
    added = {**item, "status": "in_progress"}
    if item["type"] == "message":
        added["content"] = []
    yield _sse("response.output_item.added", {"output_index": index, "item": added})
    if item["type"] == "message":
        text = item["content"][0]["text"]
        delta = {"item_id": item["id"], "output_index": index, "content_index": 0, "delta": text}
        yield _sse("response.output_text.delta", delta)
    yield _sse("response.output_item.done", {"output_index": index, "item": item})


def _event(name: str, response: dict[str, Any]) -> bytes:
    return _sse(name, {"response": response})


def _sse(name: str, fields: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps({'type': name, **fields})}\n\n".encode()
