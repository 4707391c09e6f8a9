"""Gemini's ``Content`` (a role and its ``parts``), as Gemini CLI and Qwen Code store it.

A part is ``{"text"}`` (``"thought": true`` for a thought), ``{"functionCall": {id, name,
args}}``, ``{"functionResponse": {id, name, response}}``, or data (``inlineData``,
``fileData``, …). In the core's shape each part is one block, in order: text, ``tool_use``,
``tool_result``, the ``inlineData`` part itself (an image, which the core reads and may replace
in place), or an opaque ``data`` block, so a changed block finds its part again.

A function response's content is what the model reads: its ``response`` when that is one string
under one key (``{"output": "…"}``, ``{"error": "…"}``), the ``response`` object otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...compaction.micro import is_marker
from ...conversation.formats import Message

# What Gemini CLI (and Qwen Code) have the model say after a compression's summary.
ACKNOWLEDGEMENT = "Got it. Thanks for the additional context!"
Part = Any
Setter = Callable[[str], None]  # puts a marker back where a function response's content was
MODEL = "model"


def as_message(role: str, parts: list[Part]) -> Message:
    """``parts`` as one message of the core: role ``assistant`` for the model, else ``user``."""
    return {
        "role": "assistant" if role == MODEL else "user",
        "content": [_block(part) for part in parts],
    }


def response_setter(part: Part) -> Setter | None:
    """How to put a marker in place of this part's function response, if it is one."""
    response = _function_response(part)
    if response is None:
        return None

    def put(marker: str) -> None:
        before = response.get("response")
        key = next(iter(before)) if _single_text(before) else "output"
        response["response"] = {key: marker}

    return put


def put_back(setters: list[Setter | None], message: Message) -> bool:
    """Put each marker of ``message`` (made from the parts the setters belong to) back in its
    part; whether anything changed."""
    changed = False
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    for setter, block in zip(setters, blocks, strict=False):
        if setter is None or not isinstance(block, dict) or block.get("type") != "tool_result":
            continue
        if is_marker(block.get("content")):
            setter(block["content"])
            changed = True
    return changed


def parts_of(content: Any) -> list[Part]:
    """A stored content as a list of parts (a string is one text part), as Gemini reads it."""
    if isinstance(content, list):
        return [{"text": part} if isinstance(part, str) else part for part in content]
    if isinstance(content, str):
        return [{"text": content}]
    return [] if content is None else [content]


def text_of(parts: list[Part]) -> str:
    return "".join(part["text"] for part in parts if _is_text(part))


def _block(part: Part) -> dict[str, Any]:
    if not isinstance(part, dict):
        return {"type": "data"}
    call = part.get("functionCall")
    if isinstance(call, dict):
        return {
            "type": "tool_use",
            "id": call.get("id"),
            "name": call.get("name"),
            "input": call.get("args"),
        }
    response = _function_response(part)
    if response is not None:
        return {
            "type": "tool_result",
            "tool_use_id": response.get("id"),
            "content": _response_content(response.get("response")),
        }
    if _is_text(part):
        return {"type": "text", "text": part["text"]}
    if isinstance(part.get("inlineData"), dict):
        return part  # the part itself: the core reads an image part as it is
    return {"type": "data"}


def _function_response(part: Part) -> dict[str, Any] | None:
    if not isinstance(part, dict):
        return None
    response = part.get("functionResponse")
    return response if isinstance(response, dict) else None


def _response_content(response: Any) -> Any:
    if _single_text(response):
        return next(iter(response.values()))
    return response


def _single_text(response: Any) -> bool:
    return (
        isinstance(response, dict)
        and len(response) == 1
        and isinstance(next(iter(response.values())), str)
    )


def _is_text(part: Part) -> bool:
    return isinstance(part, dict) and isinstance(part.get("text"), str)
