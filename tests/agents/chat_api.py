"""The OpenAI Chat Completions side of the wire (pi, OpenCode, Copilot CLI, Qwen Code, Cline).

A reply is one ``chat.completion`` object, or with ``"stream": true`` its SSE chunks: the role
and text first, then each tool call (its id and name, then its arguments in one piece), then a
chunk with the finish reason (``tool_calls`` or ``stop``), the usage (sent whether or not the
client asked for it with ``stream_options``; every client here takes it), and ``[DONE]``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

from agents.script import Reply, new_id


def offers_tools(body: dict[str, Any]) -> bool:
    """A request that offers tools is the agent's turn; one without is a title, a memory note."""
    return bool(body.get("tools"))


def message(reply: Reply) -> dict[str, Any]:
    """The reply as a Chat Completions assistant message (with ``tool_calls``)."""
    answer: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.calls:
        answer["tool_calls"] = [
            {
                "id": new_id("call_"),
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            for call in reply.calls
        ]
    return answer


def completion(reply: Reply, model: str, input_tokens: int, cached: int = 0) -> dict[str, Any]:
    """``input_tokens`` of which ``cached`` were read from the prompt cache."""
    answer = message(reply)
    return {
        "id": new_id("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": answer, "finish_reason": _finish(answer)}],
        "usage": _usage(answer, input_tokens, cached),
    }


def stream(whole: dict[str, Any]) -> Iterator[bytes]:
    """The same completion as the chunks of a streamed one."""
    answer = whole["choices"][0]["message"]
    base = {key: whole[key] for key in ("id", "created", "model")}
    base["object"] = "chat.completion.chunk"

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return _data({**base, "choices": [choice], **extra})

    yield chunk({"role": "assistant", "content": ""})
    if answer.get("content"):
        yield chunk({"content": answer["content"]})
    for index, call in enumerate(answer.get("tool_calls") or ()):
        function = call["function"]
        opening = {"index": index, "id": call["id"], "type": "function"}
        yield chunk({"tool_calls": [{**opening, "function": {"name": function["name"]}}]})
        arguments = {"arguments": function["arguments"]}
        yield chunk({"tool_calls": [{"index": index, "function": arguments}]})
    yield chunk({}, _finish(answer), usage=whole["usage"])
    yield b"data: [DONE]\n\n"


def _finish(answer: dict[str, Any]) -> str:
    return "tool_calls" if answer.get("tool_calls") else "stop"


def _usage(answer: dict[str, Any], input_tokens: int, cached: int) -> dict[str, Any]:
    output = max(1, len(json.dumps(answer)) // 4)
    return {
        "prompt_tokens": input_tokens,
        "completion_tokens": output,
        "total_tokens": input_tokens + output,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


def _data(value: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(value)}\n\n".encode()
