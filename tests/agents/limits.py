"""What the real APIs refuse, so that the local model server refuses it too (``limits=``).

The published rules a session can break for good, since every later request of it re-sends the
same history (Anthropic's vision page; OpenAI's and Gemini's tool-call rules):

- an image over 5 MB (decoded), or over 8000 pixels on a side; over 2000 when the request holds
  more than 20 images;
- a tool call without its result, or a result without its call: Anthropic wants each
  ``tool_use`` answered in the next user message and each ``tool_result`` to answer one there;
  Chat Completions each ``tool_calls`` entry answered by the ``tool`` messages right after it;
  the Responses API each ``function_call_output`` to follow its call and each call answered;
  Gemini a turn of ``functionResponse`` parts for each turn of ``functionCall`` parts;
- a prompt longer than the model's window (``tokens_in``, at 4 bytes a token, an image 1600);
- a Messages API message with empty content ("" or []), or an empty text block: "all messages
  must have non-empty content". A ``system`` message that carries an ``output_config`` is Claude
  Code's own statement of the effort (2.1.328 sends ``{"role": "system", "content": [],
  "output_config": …}`` after its own ``/compact`` as well): its content is allowed to be empty.

``refusal(path, body, size)`` says why a request would be refused (one line), or None. The image
dimensions are read here from the PNG header on purpose (the tests make PNGs): the server judges
ctxpack's output with code of its own.
"""

from __future__ import annotations

import base64
import binascii
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

MB = 1000 * 1000


@dataclass(frozen=True)
class Limits:
    image_bytes: int = 5 * MB
    image_side: int = 8000
    many_images: int = 20  # more than this many in one request...
    many_images_side: int = 2000  # ...and each must fit this
    tokens_in: int | None = 200_000  # the window; None: any length


def refusal(limits: Limits, path: str, body: Any, size: int) -> str | None:
    """Why the API would refuse this request, or None."""
    if not isinstance(body, dict):
        return None
    images = list(_images(body))
    # an image is billed by its pixels, not its bytes: about 1600 tokens at most
    tokens = (size - sum(len(data) * 4 // 3 for data in images)) // 4 + 1600 * len(images)
    if limits.tokens_in is not None and tokens > limits.tokens_in:
        return f"prompt is too long: {tokens} tokens > {limits.tokens_in} maximum"
    side = limits.many_images_side if len(images) > limits.many_images else limits.image_side
    for number, data in enumerate(images):
        if len(data) > limits.image_bytes:
            return f"image {number}: {len(data)} bytes exceeds {limits.image_bytes} maximum"
        width, height = _png_size(data)
        if max(width, height) > side:
            return f"image {number}: {width}x{height} px exceeds {side} px maximum"
    return _pair_problem(path, body)


# --- images --------------------------------------------------------------------------------------


def _images(value: Any) -> Iterator[bytes]:
    """The decoded bytes of every inline image in a request, in any of the three wire styles."""
    if isinstance(value, list):
        for item in value:
            yield from _images(item)
        return
    if not isinstance(value, dict):
        return
    data = _inline_image(value)
    if data is not None:
        yield _decoded(data)
        return
    for item in value.values():
        yield from _images(item)


def _inline_image(part: dict[str, Any]) -> str | None:
    source = part.get("source")
    if part.get("type") == "image" and isinstance(source, dict) and source.get("type") == "base64":
        return source.get("data")  # Anthropic
    url = part.get("image_url")
    url = url.get("url") if isinstance(url, dict) else url  # Chat Completions, Responses
    if isinstance(url, str) and url.startswith("data:"):
        return url.partition(",")[2]
    inline = part.get("inlineData")
    if isinstance(inline, dict) and str(inline.get("mimeType", "")).startswith("image/"):
        return inline.get("data")  # Gemini
    return None


def _decoded(data: Any) -> bytes:
    try:
        return base64.b64decode(data if isinstance(data, str) else "", validate=False)
    except (binascii.Error, ValueError):
        return b""


def _png_size(data: bytes) -> tuple[int, int]:
    if data[:8] != b"\x89PNG\r\n\x1a\n" or len(data) < 24:
        return 0, 0
    width, height = struct.unpack(">II", data[16:24])
    return width, height


# --- tool pairs ----------------------------------------------------------------------------------


def _pair_problem(path: str, body: dict[str, Any]) -> str | None:
    if path == "/v1/messages":
        messages = body.get("messages") or []
        return _anthropic_empty(messages) or _anthropic_pairs(messages)
    if path.endswith("/chat/completions"):
        return _chat_pairs(body.get("messages") or [])
    if path == "/v1/responses":
        return _responses_pairs(body.get("input") or [])
    if ":" in path:  # Gemini's models/M:method
        return _gemini_pairs(body.get("contents") or [])
    return None


def _blocks(message: Any, kind: str) -> list[dict[str, Any]]:
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return []
    return [block for block in content if isinstance(block, dict) and block.get("type") == kind]


def _anthropic_empty(messages: list[Any]) -> str | None:
    for number, message in enumerate(messages):
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        statement = message.get("role") == "system" and "output_config" in message
        prefill = message.get("role") == "assistant" and number == len(messages) - 1
        if content in ("", []) and not statement and not prefill:
            return (
                f"messages.{number}: all messages must have non-empty content except for the "
                "optional final assistant message"
            )
        for block in _blocks(message, "text"):
            if not str(block.get("text") or "").strip():
                return f"messages.{number}: text content blocks must contain non-whitespace text"
    return None


def _anthropic_pairs(messages: list[Any]) -> str | None:
    for number, message in enumerate(messages):
        calls = {block.get("id") for block in _blocks(message, "tool_use")}
        following = messages[number + 1] if number + 1 < len(messages) else None
        answered = {block.get("tool_use_id") for block in _blocks(following, "tool_result")}
        asked = {block.get("id") for block in _blocks(messages[number - 1], "tool_use")}
        for block in _blocks(message, "tool_result"):
            if number == 0 or block.get("tool_use_id") not in asked:
                return (
                    f"messages.{number}: unexpected tool_use_id found in tool_result blocks: "
                    f"{block.get('tool_use_id')}. Each tool_result block must have a "
                    "corresponding tool_use block in the previous message."
                )
        missing = calls - answered
        if missing and following is not None:
            return (
                f"messages.{number}: tool_use ids were found without tool_result blocks "
                f"immediately after: {', '.join(sorted(map(str, missing)))}"
            )
    return None


def _chat_pairs(messages: list[Any]) -> str | None:
    waiting: set[Any] = set()
    for number, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role == "tool":
            if message.get("tool_call_id") not in waiting:
                return (
                    f"messages.[{number}].role: messages with role 'tool' must be a response to "
                    "a preceeding message with 'tool_calls'."
                )
            waiting.discard(message.get("tool_call_id"))
            continue
        if waiting:
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages "
                f"responding to each 'tool_call_id'. The following tool_call_ids did not have "
                f"response messages: {', '.join(sorted(map(str, waiting)))}"
            )
        calls = message.get("tool_calls") if role == "assistant" else None
        waiting = {call.get("id") for call in calls or () if isinstance(call, dict)}
    return None


def _responses_pairs(items: list[Any]) -> str | None:
    calls: set[Any] = set()
    answered: set[Any] = set()
    for item in items if isinstance(items, list) else ():
        kind = item.get("type") if isinstance(item, dict) else None
        if not isinstance(kind, str):
            continue
        if kind.endswith("_call_output"):
            if item.get("call_id") not in calls:
                call = item.get("call_id")
                return f"No tool call found for function call output with call_id {call}."
            answered.add(item.get("call_id"))
        elif kind.endswith("_call") and "call_id" in item:
            calls.add(item["call_id"])
    missing = calls - answered
    if missing:
        return f"No tool output found for function call {sorted(map(str, missing))[0]}."
    return None


def _gemini_pairs(contents: list[Any]) -> str | None:
    for number, content in enumerate(contents):
        parts = content.get("parts") if isinstance(content, dict) else None
        calls = sum(isinstance(p, dict) and "functionCall" in p for p in parts or ())
        answers = any(isinstance(p, dict) and "functionResponse" in p for p in parts or ())
        previous = contents[number - 1] if number else {}
        before = previous.get("parts") if isinstance(previous, dict) else None
        if answers and not any(isinstance(p, dict) and "functionCall" in p for p in before or ()):
            return (
                "Please ensure that function response turn comes immediately after a function "
                "call turn."
            )
        if not calls:
            continue
        following = contents[number + 1] if number + 1 < len(contents) else {}
        responses = sum(
            isinstance(p, dict) and "functionResponse" in p for p in following.get("parts") or ()
        )
        if responses and responses < calls:
            return (
                "Please ensure that the number of function response parts is equal to the number "
                "of function call parts of the function call turn."
            )
        if not responses and number + 1 < len(contents):
            return (
                "Please ensure that function call turn comes immediately after a user turn or "
                "after a function response turn."
            )
    return None
