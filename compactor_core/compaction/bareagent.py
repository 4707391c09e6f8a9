"""The BareAgent profile (``--compat bareagent``): the reference's own rules, blind spots included.

The reference knows one wire style. Its tool names come only from ``tool_use`` blocks, and both
ids and names go through Python's ``str()`` (a numeric id still matches, a ``null`` name reads
``None``); its tool-result turns are only the messages holding ``tool_result`` blocks, so OpenAI
``role: "tool"`` messages are never truncated and ``tool_calls`` are never shown to the model. A
non-string content is measured and shown as ``json.dumps(..., ensure_ascii=False)``, ``null``
included (``"null"``, 4 characters), and a missing one as the empty string.

The default profile (tools.py, serialize.py) keeps the extensions; only this module says how the
reference differs, so ``micro``, ``estimate`` and ``full`` ask it when ``compat`` is on.
"""

from __future__ import annotations

import json
from typing import Any

from ..conversation.formats import Message
from ..conversation.tools import UNKNOWN_TOOL


def stringify(value: Any) -> str:
    """A string as it is, anything else as JSON with non-ASCII unescaped (``None`` is ``null``)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def tool_names(messages: list[Message]) -> dict[str, str]:
    """``str(id) -> str(name)`` of every ``tool_use`` block; an empty id is not recorded."""
    names: dict[str, str] = {}
    for message in messages:
        for block in _blocks(message):
            if isinstance(block, dict) and block.get("type") == "tool_use":
                call_id = str(block.get("id", ""))
                if call_id:
                    names[call_id] = str(block.get("name", UNKNOWN_TOOL))
    return names


def result_tool(block: dict[str, Any], names: dict[str, str]) -> str:
    return names.get(str(block.get("tool_use_id", "")), UNKNOWN_TOOL)


def tool_result_turns(messages: list[Message]) -> list[list[int]]:
    """Each message holding a ``tool_result`` block is a turn of its own; nothing else is."""
    return [[index] for index, message in enumerate(messages) if tool_results(message)]


def tool_results(message: Message) -> list[dict[str, Any]]:
    return [
        block
        for block in _blocks(message)
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]


def _blocks(message: Message) -> list[Any]:
    content = message.get("content")
    return content if isinstance(content, list) else []


# --- serialization, for the summarizing model ----------------------------------------------------


def serialize(messages: list[Message]) -> str:
    """The reference's text rendering; tool names come from ``messages`` themselves."""
    names = tool_names(messages)
    lines: list[str] = []
    for message in messages:
        lines.append(f"[{message.get('role', 'unknown')}]")
        lines.append(_content(message.get("content"), names))
        lines.append("")
    return "\n".join(lines).strip()


def _content(content: Any, names: dict[str, str]) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part for part in (_block(block, names) for block in content) if part)
    return stringify(content)


def _block(block: Any, names: dict[str, str]) -> str:
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return stringify(block)
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "tool_use":
        return f"[tool_use:{block.get('name', UNKNOWN_TOOL)}] {stringify(block.get('input', {}))}"
    if kind == "tool_result":
        return f"[tool_result:{result_tool(block, names)}] {stringify(block.get('content', ''))}"
    if "content" in block:
        return _content(block.get("content"), names)
    if "text" in block:
        return str(block.get("text", ""))
    return stringify(block)
