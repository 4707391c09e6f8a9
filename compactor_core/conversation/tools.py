"""Where tool calls and tool results live in a conversation, in both wire styles.

Anthropic style: ``tool_use`` blocks (``id``, ``name``) in an assistant message, answered by
``tool_result`` blocks (``tool_use_id``) in a later message's content list. OpenAI style: an
assistant message's ``tool_calls[]`` (``id``, ``function.name``), answered by ``role: "tool"``
messages (``tool_call_id``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from .formats import Message

UNKNOWN_TOOL = "unknown"


def blocks(message: Message) -> list[Any]:
    """The message's content list, or an empty list when the content is a string or null."""
    content = message.get("content")
    return content if isinstance(content, list) else []


def is_block(value: Any, block_type: str) -> bool:
    return isinstance(value, dict) and value.get("type") == block_type


def tool_calls(message: Message) -> Iterator[tuple[Any, str]]:
    """Every tool call a message makes, as ``(id, name)``, in both styles."""
    for block in blocks(message):
        if is_block(block, "tool_use"):
            yield block.get("id"), tool_name(block.get("name"))
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        yield call.get("id"), tool_name(function.get("name"))


def tool_result_ids(message: Message) -> Iterator[Any]:
    """The call ids that the tool results in this message answer, in both styles."""
    if message.get("role") == "tool":
        yield message.get("tool_call_id")
    for block in blocks(message):
        if is_block(block, "tool_result"):
            yield block.get("tool_use_id")


def result_holders(messages: Iterable[Message]) -> Iterator[tuple[Any, dict[str, Any]]]:
    """Each dict whose ``content`` is a tool result, with the call id it answers."""
    for message in messages:
        if message.get("role") == "tool":
            yield message.get("tool_call_id"), message
        for block in blocks(message):
            if is_block(block, "tool_result"):
                yield block.get("tool_use_id"), block


def tool_name(value: Any) -> str:
    """A call's tool name, or ``unknown`` when it is not a string."""
    return value if isinstance(value, str) else UNKNOWN_TOOL


class ToolNames(dict[str, str]):
    """Tool call id -> tool name. Only string ids are recorded, so ``get`` answers any other id
    (a number, or an unhashable list or object in malformed input) with the default."""

    # an id was named again with another name: a later message changed what an earlier result
    # answers, so what was found of a prefix of the conversation may not hold for all of it
    renamed = False

    # dict.get, not super().get, here and in ``name``: these run for every call and result
    def get(self, call_id: Any, default: Any = None) -> Any:  # type: ignore[override]
        return dict.get(self, call_id, default) if isinstance(call_id, str) else default

    def name(self, call_id: str, name: str) -> None:
        """Record the call's tool; the last one wins."""
        if dict.get(self, call_id, name) != name:
            self.renamed = True
        self[call_id] = name

    def copy(self) -> ToolNames:  # type: ignore[override]
        """One that goes on from here on its own."""
        copied = ToolNames(self)
        copied.renamed = self.renamed
        return copied


def tool_names(messages: list[Message], before: ToolNames | None = None) -> ToolNames:
    """Map each tool call id to its tool's name; a repeated id: the last one wins. ``before``:
    the names of the messages before these, gone on from (in a new map)."""
    names = before.copy() if before is not None else ToolNames()
    for message in messages:  # tool_calls' walk, without a generator for each message
        for block in blocks(message):
            if isinstance(block, dict) and block.get("type") == "tool_use":
                call_id = block.get("id")
                if isinstance(call_id, str):
                    names.name(call_id, tool_name(block.get("name")))
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            name = tool_name(function.get("name"))
            if isinstance(call.get("id"), str):
                names.name(call["id"], name)
    return names


def has_tool_result_block(message: Message) -> bool:
    content = message.get("content")
    if not isinstance(content, list):
        return False
    # a loop, not any() over is_block(): this runs over every message, several times a request
    for block in content:  # noqa: SIM110 (any() makes a generator per message)
        if isinstance(block, dict) and block.get("type") == "tool_result":
            return True
    return False


def tool_result_turns(messages: list[Message]) -> list[list[int]]:
    """Indexes of the messages of each tool-result turn, oldest first.

    A turn is a message holding a ``tool_result`` block (any role), or a maximal run of
    consecutive ``role: "tool"`` messages.
    """
    turns: list[list[int]] = []
    in_tool_run = False
    for index, message in enumerate(messages):
        if message.get("role") == "tool":
            if in_tool_run:
                turns[-1].append(index)
            else:
                turns.append([index])
            in_tool_run = True
            continue
        in_tool_run = False
        if has_tool_result_block(message):
            turns.append([index])
    return turns
