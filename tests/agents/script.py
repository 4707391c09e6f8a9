"""What the scripted model says: a reply is some text, optionally thinking, and tool calls.

A reply with calls ends the model's turn with "call these tools" (several calls are parallel
calls, all in one reply); the real agent runs them, records them in its session file, and asks
again with the results. A reply without calls ends the agent's turn.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]
    namespace: str = ""  # Responses API: the namespace tool the called one is in (Codex's MCP)


@dataclass(frozen=True)
class Reply:
    text: str = ""
    calls: tuple[ToolCall, ...] = ()
    thinking: str = ""  # Claude Code only: a thinking block with a (made-up) signature
    compaction: str = ""  # Codex only: the encrypted item of a remote compaction


DONE = Reply(text="Done.")
SIDE = Reply(text="Report work")  # a title, a memory note: whatever an agent asks on the side
SUMMARY = "The user is building a report; the logs were read and the numbers counted."


@dataclass
class Script:
    """The replies still to give, in order; once they run out, every request gets ``default``.

    A request in which the agent asks for a summary of the conversation (its own compaction) is
    answered with ``summary`` instead, and takes nothing from the list. The agents that speak Chat
    Completions or Gemini's API are told to compact by a phrase of their own compaction prompt
    (``compaction_phrase``), and answered with ``summary`` wrapped in what they parse
    (``summary_format``, with ``{summary}`` in it).
    """

    replies: list[Reply] = field(default_factory=list)
    default: Reply = DONE
    summary: str = SUMMARY
    side_reply: Reply = SIDE
    compaction_phrase: str = ""
    summary_format: str = "{summary}"
    # a reply that depends on the request (a model that answers what it is sent), before the list
    reacting: Callable[[Any], Reply | None] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def extend(self, replies: Iterable[Reply]) -> None:
        with self._lock:
            self.replies.extend(replies)

    def is_compaction(self, body: object) -> bool:
        return bool(self.compaction_phrase) and self.compaction_phrase in json.dumps(body)

    def summary_text(self) -> str:
        return self.summary_format.format(summary=self.summary)

    def next_reply(self, body: Any = None) -> Reply:
        reacted = self.reacting(body) if self.reacting is not None else None
        if reacted is not None:
            return reacted
        with self._lock:
            return self.replies.pop(0) if self.replies else self.default


def new_id(prefix: str) -> str:
    """A fresh id for a message or a call, unique across runs (sessions outlive a server)."""
    return f"{prefix}{uuid.uuid4().hex[:24]}"
