"""What an agent sent its model, read from the recorded request independently of ctxpack.

Both agents' requests become one shape, Anthropic-style messages: Claude Code's ``messages`` as
they are; Codex's Responses ``input`` items converted (a run of ``function_call`` items is one
assistant message of ``tool_use`` blocks, a run of ``function_call_output`` items one user
message of ``tool_result`` blocks, ``developer`` messages are system messages).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers import run

MARKER = re.compile(r"\[truncated: (?P<tool>.+) result, (?P<chars>\d+) chars\]")
_CALL_ITEMS = ("function_call", "custom_tool_call", "local_shell_call")
_OUTPUT_ITEMS = ("function_call_output", "custom_tool_call_output")


@dataclass(frozen=True)
class Conversation:
    messages: list[dict[str, Any]]
    size: int  # bytes of the conversation as the agent sent it (messages / input, JSON)
    compactions: tuple[str, ...] = ()  # Codex: the encrypted compaction items it sent

    @property
    def calls(self) -> dict[str, str]:
        """Call id -> tool name, over every assistant message."""
        return {
            block["id"]: block.get("name", "")
            for block in self._blocks("tool_use")
            if isinstance(block.get("id"), str)
        }

    @property
    def results(self) -> dict[str, Any]:
        """Call id -> the tool result's content as sent."""
        return {
            block.get("tool_use_id"): block.get("content") for block in self._blocks("tool_result")
        }

    def result_turns(self) -> list[list[str]]:
        """The call ids answered by each tool-result turn (a message with results), in order."""
        return [
            [block.get("tool_use_id") for block in _content(message) if _is(block, "tool_result")]
            for message in self.messages
            if any(_is(block, "tool_result") for block in _content(message))
        ]

    def user_texts(self) -> list[str]:
        """The text of every user message and text block, in order (the last: the prompt)."""
        texts: list[str] = []
        for message in self.messages:
            if message.get("role") != "user":
                continue
            if isinstance(message.get("content"), str):
                texts.append(message["content"])
            texts += [b["text"] for b in _content(message) if _is(b, "text") and "text" in b]
        return texts

    def markers(self) -> dict[str, re.Match[str]]:
        """Call id -> the marker its result became, for every result that is one."""
        found = {}
        for call_id, content in self.results.items():
            match = MARKER.fullmatch(text_of(content))
            if match:
                found[call_id] = match
        return found

    def pairing_problems(self) -> list[str]:
        """Results without their call, and calls without their result (in order of the view)."""
        problems: list[str] = []
        calls = self.calls
        results = self.results
        problems += [f"tool result {i} has no call" for i in results if i not in calls]
        problems += [f"call {i} has no result" for i in calls if i not in results]
        return problems

    def estimate(self, scratch: Path) -> int:
        """ctxpack's own estimate of these messages (the heuristic, via the real executable)."""
        path = scratch / "request-messages.json"
        path.write_text(json.dumps(self.messages))
        done = run("estimate", "--json", path)
        assert done.returncode == 0, done.stderr.decode()
        return json.loads(done.stdout)["tokens"]

    def _blocks(self, kind: str) -> list[dict[str, Any]]:
        return [
            block for message in self.messages for block in _content(message) if _is(block, kind)
        ]


def claude_conversation(body: dict[str, Any]) -> Conversation:
    messages = body["messages"]
    return Conversation(messages, len(json.dumps(messages, ensure_ascii=False).encode()))


def codex_conversation(body: dict[str, Any]) -> Conversation:
    items = body["input"]
    messages: list[dict[str, Any]] = []
    for item in items:
        role, block = _as_block(item)
        if block is None:
            continue
        if messages and messages[-1]["role"] == role and block["type"] != "text":
            messages[-1]["content"].append(block)
        else:
            messages.append({"role": role, "content": [block]})
    compactions = tuple(
        item["encrypted_content"] for item in items if item.get("type") == "compaction"
    )
    return Conversation(messages, len(json.dumps(items, ensure_ascii=False).encode()), compactions)


def _as_block(item: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    kind = item.get("type")
    if kind in _CALL_ITEMS:
        arguments = item.get("arguments") or item.get("input") or item.get("action")
        block = {"type": "tool_use", "id": item.get("call_id"), "name": item.get("name", kind)}
        return "assistant", {**block, "input": arguments}
    if kind in _OUTPUT_ITEMS:
        return "user", {
            "type": "tool_result",
            "tool_use_id": item.get("call_id"),
            "content": item.get("output"),
        }
    if kind == "message":
        text = "".join(
            part.get("text", "") for part in item.get("content") or () if isinstance(part, dict)
        )
        role = "system" if item.get("role") == "developer" else item.get("role", "user")
        return role, {"type": "text", "text": text}
    return "system", None  # reasoning, tool lists, settings: not conversation


def outline(messages: list[dict[str, Any]]) -> list[tuple[str, tuple[tuple[str, Any], ...]]]:
    """What decides a conversation's shape, to compare a view with what an agent sent: each
    message's role and its texts, calls and results, in order. Left out: system messages and the
    system reminders Claude Code adds to user messages (its own context, not the session's)."""
    shape = []
    for message in messages:
        if message.get("role") == "system":
            continue
        content = message.get("content")
        parts: list[tuple[str, Any]] = []
        for block in [{"type": "text", "text": content}] if isinstance(content, str) else content:
            if _is(block, "text") and not block["text"].startswith("<system-reminder>"):
                parts.append(("text", block["text"]))
            elif _is(block, "tool_use"):
                parts.append(("call", block["id"]))
            elif _is(block, "tool_result"):
                parts.append(("result", block["tool_use_id"]))
        shape.append((message["role"], tuple(parts)))
    return shape


def text_of(content: Any) -> str:
    """A tool result's text: the string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return json.dumps(content)


def _content(message: dict[str, Any]) -> list[Any]:
    content = message.get("content")
    return content if isinstance(content, list) else []


def _is(block: Any, kind: str) -> bool:
    return isinstance(block, dict) and block.get("type") == kind


def chat_conversation(body: dict[str, Any]) -> Conversation:
    """OpenAI Chat Completions ``messages``: a call is a ``tool_use`` block of the assistant's
    message, a run of ``tool`` messages one user message of ``tool_result`` blocks. The size is
    that of the history: every message but the system prompt."""
    messages: list[dict[str, Any]] = []
    history = [m for m in body["messages"] if m.get("role") not in ("system", "developer")]
    for message in body["messages"]:
        role = message.get("role")
        if role == "tool":
            block = {
                "type": "tool_result",
                "tool_use_id": message.get("tool_call_id"),
                "content": _tool_text(message.get("content")),
            }
            if messages and messages[-1]["role"] == "user" and _all_results(messages[-1]):
                messages[-1]["content"].append(block)
            else:
                messages.append({"role": "user", "content": [block]})
            continue
        blocks = _text_blocks(message.get("content"))
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            blocks.append(
                {
                    "type": "tool_use",
                    "id": call.get("id"),
                    "name": function.get("name", ""),
                    "input": function.get("arguments"),
                }
            )
        messages.append({"role": "system" if role == "developer" else role, "content": blocks})
    return Conversation(messages, _size(history))


def gemini_conversation(body: dict[str, Any]) -> Conversation:
    """Gemini ``contents``: ``functionCall`` parts are ``tool_use`` blocks, ``functionResponse``
    parts ``tool_result`` blocks. Gemini CLI sends the responses without their ids: the n-th
    response of a name answers the n-th call of that name in the model turn before (counting
    round again, since it sends every response twice)."""
    messages: list[dict[str, Any]] = []
    last_calls: dict[str, list[Any]] = {}  # name -> ids, of the latest model turn
    for content in body["contents"]:
        role = "assistant" if content.get("role") == "model" else "user"
        blocks: list[dict[str, Any]] = []
        answered: dict[str, int] = {}
        for part in content.get("parts") or ():
            if "functionCall" in part:
                call = part["functionCall"]
                block = {"type": "tool_use", "id": call.get("id"), "name": call.get("name")}
                blocks.append({**block, "input": call.get("args")})
            elif "functionResponse" in part:
                response = part["functionResponse"]
                name, call_id = response.get("name"), response.get("id")
                ids = last_calls.get(name) or [None]
                if call_id is None:
                    call_id = ids[answered.get(name, 0) % len(ids)]
                    answered[name] = answered.get(name, 0) + 1
                block = {"type": "tool_result", "tool_use_id": call_id}
                blocks.append({**block, "content": function_output(response)})
            elif isinstance(part.get("text"), str):
                blocks.append({"type": "text", "text": part["text"]})
        if role == "assistant" and any(_is(block, "tool_use") for block in blocks):
            last_calls = {}
            for block in blocks:
                if _is(block, "tool_use"):
                    last_calls.setdefault(block["name"], []).append(block["id"])
        messages.append({"role": role, "content": blocks})
    return Conversation(messages, _size(body["contents"]))


def function_output(response: dict[str, Any]) -> Any:
    """What ctxpack counts of a function response: its one string, or the response object."""
    value = response.get("response")
    if isinstance(value, dict) and len(value) == 1 and isinstance(next(iter(value.values())), str):
        return next(iter(value.values()))
    return value


def _tool_text(content: Any) -> Any:
    """A tool message's content as the model reads it: text parts (Qwen Code sends a list of
    them) are their text."""
    if isinstance(content, list) and all(_is(part, "text") for part in content):
        return "".join(part.get("text", "") for part in content)
    return content


def _text_blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if isinstance(content, list):
        return [
            {"type": "text", "text": part.get("text", "")}
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        ]
    return []


def _all_results(message: dict[str, Any]) -> bool:
    return all(_is(block, "tool_result") for block in _content(message))


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False).encode())
