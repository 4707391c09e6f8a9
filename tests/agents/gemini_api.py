"""Gemini CLI's side of the wire: ``models/M:generateContent`` and ``:streamGenerateContent``.

A reply is one ``GenerateContentResponse``: a candidate whose ``content`` (role ``model``) holds
a text part and a ``functionCall`` part per call, the finish reason and ``usageMetadata``.
Streamed (``?alt=sse``), it is that one response as a single SSE ``data:`` event: the CLI joins
the events of a stream and takes the calls from them. ``:countTokens`` gets a rough count.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from agents.script import Reply

# /v1beta/models/gemini-2.5-flash:streamGenerateContent
PATH = re.compile(r"^/v1(?:beta|alpha)?/models/(?P<model>[^/:]+):(?P<method>\w+)$")
GENERATE = ("generateContent", "streamGenerateContent")


def method(path: str) -> tuple[str, str] | None:
    """(model, method) of a Gemini API path, or None."""
    match = PATH.match(path)
    return (match["model"], match["method"]) if match else None


def offers_tools(body: dict[str, Any]) -> bool:
    """The agent's turn offers function declarations; a routing or JSON request does not."""
    return any(tool.get("functionDeclarations") for tool in body.get("tools") or ())


def response(reply: Reply, model: str, input_tokens: int, cached: int = 0) -> dict[str, Any]:
    """The reply with its usage: ``input_tokens`` in all, ``cached`` of them read from the
    cache (``cachedContentTokenCount``, only where some were)."""
    parts: list[dict[str, Any]] = []
    if reply.text:
        parts.append({"text": reply.text})
    parts += [{"functionCall": {"name": c.name, "args": c.arguments}} for c in reply.calls]
    output = max(1, len(json.dumps(parts)) // 4)
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": input_tokens,
            "candidatesTokenCount": output,
            "totalTokenCount": input_tokens + output,
            **({"cachedContentTokenCount": cached} if cached else {}),
        },
        "modelVersion": model,
    }


def stream(whole: dict[str, Any]) -> Iterator[bytes]:
    yield f"data: {json.dumps(whole)}\r\n\r\n".encode()


def count_tokens(raw: bytes) -> dict[str, int]:
    return {"totalTokens": len(raw) // 4}
