"""Claude Code's side of the wire: an Anthropic Messages reply, as JSON or as an SSE stream.

Claude Code asks with ``"stream": true`` and, if a stream fails, asks again without; both are
answered. The streamed events are the ones the Messages API sends: ``message_start``, per block
``content_block_start`` / ``content_block_delta`` / ``content_block_stop``, then
``message_delta`` (the stop reason) and ``message_stop``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from agents.script import Reply, new_id

# The end of the request Claude Code makes for /compact (and for its auto-compaction).
_COMPACT_REQUEST = "followed by a <summary> block"


def is_compaction(body: dict[str, Any]) -> bool:
    """Whether Claude Code asks for the summary of its own compaction."""
    messages = body.get("messages") or [{}]
    return _COMPACT_REQUEST in json.dumps(messages[-1])


def summary_reply(summary: str) -> Reply:
    return Reply(text=f"<analysis>What happened so far.</analysis>\n<summary>{summary}</summary>")


def message(
    reply: Reply, model: str, input_tokens: int, usage: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The whole reply as one Messages API response; ``usage``: its input side as billed
    (``billing.anthropic_usage``), else ``input_tokens`` alone."""
    input_side = usage or {"input_tokens": input_tokens}
    content: list[dict[str, Any]] = []
    if reply.thinking:
        signature = new_id("sig_")
        content.append({"type": "thinking", "thinking": reply.thinking, "signature": signature})
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for call in reply.calls:
        content.append(
            {"type": "tool_use", "id": new_id("toolu_"), "name": call.name, "input": call.arguments}
        )
    return {
        "id": new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if reply.calls else "end_turn",
        "stop_sequence": None,
        "usage": {**input_side, "output_tokens": _output_tokens(content)},
    }


def stream(whole: dict[str, Any]) -> Iterator[bytes]:
    """The same response as the SSE events of a streamed reply (``message_delta``'s usage is
    cumulative, as the API's: the input side again, the output tokens in full)."""
    start = {**whole, "content": [], "stop_reason": None}
    start["usage"] = {**whole["usage"], "output_tokens": 1}
    yield _event("message_start", {"type": "message_start", "message": start})
    for index, block in enumerate(whole["content"]):
        yield from _block_events(index, block)
    delta = {"stop_reason": whole["stop_reason"], "stop_sequence": None}
    usage = whole["usage"]
    yield _event("message_delta", {"type": "message_delta", "delta": delta, "usage": usage})
    yield _event("message_stop", {"type": "message_stop"})


def _block_events(index: int, block: dict[str, Any]) -> Iterator[bytes]:
    kind = block["type"]
    if kind == "thinking":
        opening: dict[str, Any] = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [
            {"type": "thinking_delta", "thinking": block["thinking"]},
            {"type": "signature_delta", "signature": block["signature"]},
        ]
    elif kind == "text":
        opening = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": block["text"]}]
    else:
        opening = {**block, "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
    yield _event(
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": opening},
    )
    for delta in deltas:
        yield _event(
            "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        )
    yield _event("content_block_stop", {"type": "content_block_stop", "index": index})


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def _output_tokens(content: list[dict[str, Any]]) -> int:
    return max(1, len(json.dumps(content)) // 4)
