"""The history as text for the summarizing model to read, not raw JSON (SPEC §3.6).

[user]
请读取配置

[assistant]
[tool_use:read_file] {"file_path": "config.toml"}

[user]
[tool_result:read_file] 1: [provider]
"""

from __future__ import annotations

from typing import Any

from ..conversation.formats import Message
from ..conversation.tools import UNKNOWN_TOOL, tool_name, tool_names
from .estimate import json_text


def serialize(messages: list[Message], names: dict[Any, str] | None = None) -> str:
    """Render messages for the model; ``names`` maps call ids to tool names."""
    names = tool_names(messages) if names is None else names
    lines: list[str] = []
    for message in messages:
        lines.append(f"[{message.get('role')}]")
        lines.append(_message_body(message, names))
        lines.append("")
    return "\n".join(lines).strip()


def _message_body(message: Message, names: dict[Any, str]) -> str:
    content = message.get("content")
    if message.get("role") == "tool":
        tool = names.get(message.get("tool_call_id"), UNKNOWN_TOOL)
        return f"[tool_result:{tool}] {_result_text(content)}"
    if isinstance(content, list):
        rendered = [_block(block, names) for block in content]
        lines = [line for line in rendered if line]
    else:
        lines = [_as_text(content)] if content is not None else []
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        name = tool_name(function.get("name"))
        lines.append(f"[tool_use:{name}] {_as_text(function.get('arguments'))}")
    return "\n".join(lines)


def _block(block: Any, names: dict[Any, str]) -> str:
    if not isinstance(block, dict):
        return _as_text(block)
    kind = block.get("type")
    if kind == "text":
        return _as_text(block.get("text"))
    if kind == "tool_use":
        return f"[tool_use:{tool_name(block.get('name'))}] {json_text(block.get('input'))}"
    if kind == "tool_result":
        tool = names.get(block.get("tool_use_id"), UNKNOWN_TOOL)
        return f"[tool_result:{tool}] {_result_text(block.get('content'))}"
    if block.get("content") is not None:
        return _as_text(block["content"])
    if block.get("text") is not None:
        return _as_text(block["text"])
    return json_text(block)


def _result_text(content: Any) -> str:
    """A tool result's content: a string as is, anything else (``null`` too) as JSON."""
    return content if isinstance(content, str) else json_text(content)


def _as_text(value: Any) -> str:
    """A string as is, ``null`` as nothing, anything else as JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json_text(value)
