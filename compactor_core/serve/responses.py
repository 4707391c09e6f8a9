"""OpenAI Responses ``input`` items as the core's messages, and the policy's result as items again.

The core reads Anthropic-shaped messages, and ``response_items`` reads the items as it does for
Codex's rollouts (``agents/codex.py``): a call is a ``tool_use`` block and its output a
``tool_result`` block. Consecutive assistant-side items (a reply's messages, its reasoning, its
parallel calls) are one assistant message, and consecutive outputs one user message: a turn of
parallel calls is one tool-result turn, and a reasoning item stays with the call that must
follow it. ``developer`` and ``system`` messages, and the context Codex sends as user messages
(``<environment_context>``, AGENTS.md), are system messages: never summarized.

Every message remembers the items it was made of (under ``ITEMS``, a key only the core's side
sees). The way back takes those items exactly as they came, except an output the policy turned
into a marker (only its ``output`` changes, and only where a string is a valid output); messages
the policy wrote itself (a summary, its acknowledgement) become message items. Items the policy
does not own — reasoning and its ``encrypted_content``, server-side tool calls, item references,
types not known today — come back identical.
"""

from __future__ import annotations

from typing import Any

from ..agents.wire.response_items import has_text, is_call, is_context, is_output, texts, tool_use
from ..conversation.formats import Message, json_type
from ..errors import InputError

ITEMS = "ctxpack_items"  # the input indexes a message was made of
_SYSTEM_ROLES = frozenset({"developer", "system"})
_GROUPED = frozenset({"assistant", "results"})  # sides whose consecutive items are one message


def to_messages(items: list[Any], source: str) -> list[Message]:
    """The core's messages for ``items``; InputError if an item is not an object."""
    messages: list[Message] = []
    last_side = None
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise InputError(
                f"{source}: input[{index}]: an item must be an object, got {json_type(item)}"
            )
        side = _side(item)
        blocks = _blocks(item)
        if side in _GROUPED and side == last_side:
            messages[-1]["content"].extend(blocks)
            messages[-1][ITEMS].append(index)
        else:
            messages.append({"role": _ROLES[side], "content": blocks, ITEMS: [index]})
        last_side = side
    return messages


def to_items(messages: list[Message], items: list[Any]) -> list[Any]:
    """The input items for the policy's ``messages``, made from the original ``items``."""
    result: list[Any] = []
    for message in messages:
        indexes = message.get(ITEMS)
        if indexes is None:
            result.append(_new_item(message))
        elif all(is_output(items[index]) for index in indexes):
            blocks = message["content"]
            result.extend(_output(items[i], b) for i, b in zip(indexes, blocks, strict=True))
        else:
            result.extend(items[index] for index in indexes)
    return result


# --- items -------------------------------------------------------------------------------------


_ROLES = {"assistant": "assistant", "results": "user", "user": "user", "system": "system"}


def _side(item: dict[str, Any]) -> str:
    """Who an item speaks for: "assistant", "results" (call outputs), "user" or "system"."""
    if _is_message(item):
        role = item.get("role")
        if role in _SYSTEM_ROLES or is_context(item):
            return "system"
        return "user" if role == "user" else "assistant"
    return "results" if is_output(item) else "assistant"


def _is_message(item: dict[str, Any]) -> bool:
    # a message may leave out its type (the API's "easy input message")
    return item.get("type", "message") == "message" and isinstance(item.get("role"), str)


# --- items as blocks ---------------------------------------------------------------------------


def _blocks(item: dict[str, Any]) -> list[dict[str, Any]]:
    """The blocks of the core's message an item is: one per item, but for a message's parts."""
    kind = item.get("type")
    if _is_message(item):
        return _message_blocks(item.get("content"))
    if is_output(item):
        output = item.get("output")
        return [{"type": "tool_result", "tool_use_id": item["call_id"], "content": output}]
    if is_call(item):
        return [tool_use(item)]
    if kind == "reasoning":
        return [{"type": "reasoning", "text": "\n".join(texts(item.get("summary")))}]
    return [{"type": kind if isinstance(kind, str) else "item"}]  # counted as nothing


def _message_blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        return []
    return [
        {"type": "text", "text": part["text"]} if has_text(part) else {"type": "part"}
        for part in content
        if isinstance(part, dict)
    ]


# --- blocks as items ---------------------------------------------------------------------------


def _output(item: dict[str, Any], block: dict[str, Any]) -> dict[str, Any]:
    """The output item, with the policy's content if it changed and a string may stand there."""
    content, output = block.get("content"), item.get("output")
    if content is output or content == output or not isinstance(output, str | list):
        return item  # a screenshot or another object: a marker would not be a valid output
    return {**item, "output": content}


def _new_item(message: Message) -> dict[str, Any]:
    """A message the policy wrote (a summary, its acknowledgement) as a message item."""
    role = message.get("role")
    part = "output_text" if role == "assistant" else "input_text"
    parts = [{"type": part, "text": text} for text in texts(message.get("content"))]
    return {"type": "message", "role": "developer" if role == "system" else role, "content": parts}
