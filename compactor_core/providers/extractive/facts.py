"""What the summary is made of, gathered in one pass over the history."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any

from ...compaction.micro import is_marker
from ...conversation.boilerplate import ACKNOWLEDGEMENTS, refusal, user_texts
from ...conversation.formats import Message
from ...conversation.prompts import SUMMARY_PREFIX
from ...conversation.tools import UNKNOWN_TOOL, blocks, is_block
from .calls import Call

# How a user's turn that corrects the assistant begins ("nah, roll back", "不对").
CORRECTION = re.compile(
    r"(?i)^(no\b|nope\b|nah\b|not\s|actually\b|wait\b|stop\b|don't\b|do not\b|instead\b|"
    r"that's (not|wrong)\b|wrong\b|rather\b|revert\b|roll ?back\b|undo\b|technically\b)"
    r"|^(不对|不是|不要|别|错了|其实|等等|算了|回滚|撤销|改成|应该)"
)
THINKING_BLOCKS = ("thinking", "reasoning")


@dataclass(frozen=True)
class Request:
    """What the user wrote in one turn."""

    text: str
    message: int  # the index of its message
    # The assistant's last words before it, when it corrects them ("nah, let's roll back").
    correcting: str | None = None
    refusing: bool = False  # it says why the user refused the call just before it

    @property
    def is_plain(self) -> bool:
        """A request of its own, neither a correction nor a refusal's reason."""
        return self.correcting is None and not self.refusing


@dataclass
class Facts:
    requests: list[Request] = field(default_factory=list)  # oldest first
    calls: list[Call] = field(default_factory=list)
    results: list[tuple[str, str, bool]] = field(default_factory=list)  # (tool, text, is_error)
    replies: list[tuple[int, str]] = field(default_factory=list)  # (message, assistant's text)
    thoughts: list[str] = field(default_factory=list)  # thinking: for names, never quoted
    # Earlier summaries, oldest first: ctxpack's own (a rolling compaction) and those a harness
    # sent as user turns (Claude Code's, Codex's, or ctxpack's inside an agent's framing).
    summaries: list[str] = field(default_factory=list)

    @property
    def texts(self) -> list[str]:
        return [text for _, text in self.replies]


def gather(messages: list[Message], outputs: dict[str, str] | None = None) -> Facts:
    """The facts of ``messages``; ``outputs`` are the tool results before micro compaction, by
    call id, so that old commands still tell how they ended."""
    facts = Facts()
    history = _History(facts, outputs or {})
    for index, message in enumerate(messages):
        role = message.get("role")
        if index == 0 and role == "user" and text_of(message).startswith(SUMMARY_PREFIX):
            facts.summaries.append(text_of(message)[len(SUMMARY_PREFIX) :])
            continue
        answered = []
        if role == "tool":
            content = message.get("content")
            answered.append(history.answer(message.get("tool_call_id"), content, False, False))
        for block in blocks(message):
            if is_block(block, "tool_use"):
                arguments = _arguments(block.get("input"))
                history.call(index, block.get("id"), block.get("name"), arguments)
            elif is_block(block, "tool_result"):
                error, flagged = bool(block.get("is_error")), "is_error" in block
                content = block.get("content")
                answered.append(history.answer(block.get("tool_use_id"), content, error, flagged))
            elif isinstance(block, dict) and block.get("type") in THINKING_BLOCKS:
                thought = block.get("thinking", block.get("text"))
                facts.thoughts.extend([thought] if isinstance(thought, str) else [])
        for tool_call in message.get("tool_calls") or ():
            function = tool_call.get("function") or {}
            arguments = _arguments(function.get("arguments"))
            history.call(index, tool_call.get("id"), function.get("name"), arguments)
        refused = [call for call in answered if call is not None and call.refused == ""]
        for call in answered:
            if call is not None:
                history.update(call)
        if role == "user":
            _user_turn(facts, history, index, message, refused)
        elif role == "assistant" and text_of(message).strip() not in ("", *ACKNOWLEDGEMENTS):
            facts.replies.append((index, text_of(message).strip()))
    return facts


def _user_turn(
    facts: Facts, history: _History, index: int, message: Message, refused: list[Call]
) -> None:
    """The user's words in a message; those after a call refused without words say why."""
    for text in user_texts(message):
        if text.earlier_summary:
            facts.summaries.append(text.earlier_summary)
        if not text.written:
            continue
        for call in refused:
            history.update(replace(call, refused=text.written))
        correcting = None
        if CORRECTION.match(text.written) and facts.replies and not refused:
            correcting = facts.replies[-1][1]
        facts.requests.append(Request(text.written, index, correcting, bool(refused)))
        refused = []


class _History:
    """The calls made so far, by id, to pair each result with its call."""

    def __init__(self, facts: Facts, outputs: dict[str, str]) -> None:
        self.facts, self.outputs = facts, outputs
        self.by_id: dict[Any, Call] = {}

    def call(self, index: int, call_id: Any, name: Any, arguments: Any) -> None:
        name = name if isinstance(name, str) else UNKNOWN_TOOL
        call = Call(len(self.facts.calls), call_id, name, arguments, message=index)
        self.facts.calls.append(call)
        if isinstance(call_id, str):
            self.by_id[call_id] = call

    def answer(self, call_id: Any, content: Any, is_error: bool, flagged: bool) -> Call | None:
        """The call ``content`` answers, with its result (as it was before micro compaction,
        when known); None when no call made here has that id."""
        call = self.by_id.get(call_id) if isinstance(call_id, str) else None
        text = content_text(content)
        self.facts.results.append((call.name if call else UNKNOWN_TOOL, text, is_error))
        if call is None:
            return None
        original = self.outputs.get(call_id)
        if is_marker(text) and isinstance(original, str):
            text = original
        return replace(
            call,
            answered=True,
            result=text,
            is_error=is_error,
            flagged=flagged,
            refused=refusal(text),
        )

    def update(self, call: Call) -> None:
        self.facts.calls[call.position] = self.by_id[call.call_id] = call


def tool_outputs(messages: list[Message]) -> dict[str, str]:
    """The text of each tool result in ``messages``, by the id of the call it answers."""
    outputs = {}
    for message in messages:
        if message.get("role") == "tool":
            outputs[message.get("tool_call_id")] = text_of(message)
        for block in blocks(message):
            if is_block(block, "tool_result"):
                outputs[block.get("tool_use_id")] = content_text(block.get("content"))
    return {call_id: text for call_id, text in outputs.items() if isinstance(call_id, str)}


def _arguments(arguments: Any) -> Any:
    """A call's input: JSON text (OpenAI's and Codex's arguments) parsed, anything else as is
    (the raw text of Codex's ``apply_patch``)."""
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments


def content_text(content: Any) -> str:
    """The readable text of a content: a string, or the text blocks of a list (Codex's
    ``input_text`` and ``output_text`` too)."""
    if isinstance(content, str):
        return content
    parts = []
    for block in content if isinstance(content, list) else ():
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") in ("text", "input_text", "output_text"):
            parts.extend([block["text"]] if isinstance(block.get("text"), str) else [])
    return "\n".join(parts)


def text_of(message: Message) -> str:
    return content_text(message.get("content"))
