"""OpenAI Responses API items, as Codex's rollouts keep them and the API's requests send them.

A call (``function_call``, ``custom_tool_call``, ``local_shell_call``: any ``*_call`` with a
``call_id``) is answered by its output (``*_call_output``, the same ``call_id``). A message holds
its text in parts (``input_text``, ``output_text``) or as a string. Codex sends its own context
as user messages that open with one of ``CONTEXT_OPENINGS``. Read by ``agents/codex.py`` (the
rollouts) and ``serve/responses.py`` (the requests), each into the core's messages.
"""

from __future__ import annotations

from typing import Any

# User messages Codex writes itself, sent again after a compaction: context, not requests.
CONTEXT_OPENINGS = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions")
LOCAL_SHELL = "local_shell"


def call_id(item: dict[str, Any]) -> str | None:
    """The id pairing a call with its output; an old ``local_shell_call`` has only ``id``."""
    for key in ("call_id", "id") if item.get("type") == "local_shell_call" else ("call_id",):
        if isinstance(item.get(key), str):
            return item[key]
    return None


def is_call(item: dict[str, Any]) -> bool:
    kind = item.get("type")
    return isinstance(kind, str) and kind.endswith("_call") and call_id(item) is not None


def is_output(item: dict[str, Any]) -> bool:
    kind = item.get("type")
    paired = isinstance(item.get("call_id"), str)
    return isinstance(kind, str) and kind.endswith("_output") and paired


def texts(content: Any) -> list[str]:
    """The texts of a message's content (a string, or parts) or of a reasoning summary."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [part["text"] for part in content if isinstance(part, dict) and has_text(part)]


def has_text(part: dict[str, Any]) -> bool:
    return isinstance(part.get("text"), str)


def is_context(item: dict[str, Any]) -> bool:
    """A user message that Codex wrote: its environment, the user's instructions, AGENTS.md."""
    found = texts(item.get("content"))
    return item.get("role") == "user" and bool(found) and found[0].startswith(CONTEXT_OPENINGS)


def tool_use(item: dict[str, Any]) -> dict[str, Any]:
    """A call item as the core's ``tool_use`` block: its id, its tool's name, its arguments."""
    kind = item["type"]
    if kind == "local_shell_call":
        name, arguments = LOCAL_SHELL, item.get("action")
    elif kind == "function_call":
        name, arguments = item.get("name"), item.get("arguments")
    else:
        name, arguments = item.get("name"), item.get("input", item.get("arguments"))
    name = name if isinstance(name, str) else kind.removesuffix("_call")
    return {"type": "tool_use", "id": call_id(item), "name": name, "input": arguments}
