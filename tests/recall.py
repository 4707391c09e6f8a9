"""Future-reference recall (issue 23): a measure of a summary that needs no judge.

Take a real session that holds a compaction the agent made itself. The *span* is what the agent
summarized (what it saw before its summary), the *continuation* what came after, up to its next
compaction. The identifiers that matter are those of the span that the continuation uses again:
file paths, ``snake_case`` (and ``SCREAMING_CASE``), ``camelCase`` and ``PascalCase`` names, read
from every text of the messages (the user's and the assistant's words, thinking, tool inputs and
tool results). A summary's recall is the share of them it names verbatim (a relative path counts
as named inside the absolute one). The agent's own summary is measured the same way, so ctxpack's
summary of the same span can be set beside it.

This is an oracle: it reads the messages with its own small code, not compactor_core's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from helpers import corpus_files

Message = dict[str, Any]

PATH = re.compile(r"(?<![\w/.~-])(?:[\w.~-]*[A-Za-z0-9_]/)+[\w.-]*[A-Za-z0-9_]")
# A word with one slash (``and/or``, ``main/master``) is no path unless it looks like one.
PATH_LIKE = re.compile(r"^(?:[/~.]|[^/]*/[^/]*/)|\.[A-Za-z]\w*$")
SNAKE = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b")
CAMEL = re.compile(r"\b[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+\b")
PASCAL = re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b")
MIN_CHARS = 4  # shorter names (``a_b``, ``iD``) are noise, not names worth remembering
# How Claude Code frames the summary it writes when it compacts (two versions of the wording).
FRAMING = re.compile(
    r"This session is being continued from a previous conversation[^\n]*\n"
    r"|\nIf you need specific details from before compaction.*\Z",
    re.S,
)
CONTINUED = "This session is being continued from a previous conversation"


def identifiers(text: str) -> set[str]:
    """Paths and names in ``text``: what a resuming agent may need again."""
    found = {
        path
        for path in (match.group(0).rstrip(".") for match in PATH.finditer(text))
        if PATH_LIKE.search(path)
    }
    for pattern in (SNAKE, CAMEL, PASCAL):
        found.update(match.group(0) for match in pattern.finditer(text))
    return {name for name in found if len(name) >= MIN_CHARS and not name.startswith("//")}


def texts(messages: list[Message]) -> list[str]:
    """Every text of the messages, in both styles: contents, thinking, tool inputs and results."""
    found: list[str] = []
    for message in messages:
        found.extend(_content_texts(message.get("content")))
        for call in message.get("tool_calls") or ():
            arguments = (call.get("function") or {}).get("arguments")
            try:
                found.extend(_strings(json.loads(arguments)))
            except (TypeError, ValueError):
                found.extend(_strings(arguments))
    return found


def _strings(value: Any) -> list[str]:
    """The strings among a tool input's values, at any depth (its keys are the tool's schema)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    return [text for item in value for text in _strings(item)] if isinstance(value, list) else []


def _content_texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    found: list[str] = []
    for block in content if isinstance(content, list) else ():
        if isinstance(block, str):
            found.append(block)
        elif not isinstance(block, dict):
            continue
        elif block.get("type") == "text":
            found.append(str(block.get("text", "")))
        elif block.get("type") == "thinking":
            found.append(str(block.get("thinking", "")))
        elif block.get("type") == "tool_use":
            found.extend(_strings(block.get("input")))
        elif block.get("type") == "tool_result":
            found.extend(_content_texts(block.get("content")))
    return found


def named(summary: str, wanted: set[str]) -> set[str]:
    return {name for name in wanted if name in summary}


@dataclass(frozen=True)
class Compaction:
    """One compaction the agent made in a session: what it summarized, what it wrote, what
    came after."""

    span: list[Message]  # what the agent summarized, as it saw it (a previous summary first)
    summary: str  # the agent's own summary, its framing removed
    continuation: list[Message]

    @property
    def wanted(self) -> set[str]:
        """The identifiers of the span that the continuation uses again."""
        later = set().union(*(identifiers(text) for text in texts(self.continuation)))
        return set().union(*(identifiers(text) for text in texts(self.span))) & later

    @property
    def wanted_paths(self) -> set[str]:
        return {name for name in self.wanted if "/" in name}


def summary_text(message: Message) -> str | None:
    """The agent's own summary in a user message, without the framing around it."""
    for text in _content_texts(message.get("content")) if message.get("role") == "user" else ():
        if text.startswith(CONTINUED):
            return FRAMING.sub("", text).strip()
    return None


def compactions(messages: list[Message]) -> list[Compaction]:
    """The agent's own compactions in a session converted to messages (tests/corpus), oldest
    first. The span of each is what the agent saw: the previous summary, if any, as the user
    message the agent got, then what came after it; its own summary ends the span."""
    places = [index for index, message in enumerate(messages) if summary_text(message)]
    found = []
    for number, place in enumerate(places):
        end = places[number + 1] if number + 1 < len(places) else len(messages)
        span = [*messages[:place], *_without_summary(messages[place])]
        if number:
            previous = places[number - 1]
            framed = {"role": "user", "content": _framed_summary(messages[previous])}
            span = [framed, *messages[previous + 1 : place], *_without_summary(messages[place])]
        found.append(
            Compaction(span, summary_text(messages[place]) or "", messages[place + 1 : end])
        )
    return found


def _framed_summary(message: Message) -> str:
    return next(text for text in _content_texts(message["content"]) if text.startswith(CONTINUED))


def _without_summary(message: Message) -> list[Message]:
    """What else the message that carries the summary holds (a tool result before it)."""
    content = message.get("content")
    if not isinstance(content, list):
        return []
    rest = [
        block
        for block in content
        if not (isinstance(block, dict) and str(block.get("text", "")).startswith(CONTINUED))
    ]
    return [{**message, "content": rest}] if rest else []


# --- the sessions and the figures ----------------------------------------------------------------


def sessions() -> dict[str, list[Message]]:
    """Every real session at hand that holds a compaction of the agent's own, by name."""
    found = {
        path.stem: json.loads(path.read_bytes())
        for path in corpus_files()
        if any(summary_text(message) for message in json.loads(path.read_bytes()))
    }
    return found


@dataclass(frozen=True)
class Recall:
    """ctxpack's summary of one compaction's span beside the agent's own."""

    name: str  # the session, and which of its compactions (#1 is the first)
    wanted: int  # identifiers of the span the continuation uses again
    agent_named: int
    agent_chars: int
    named: int
    chars: int
    paths: int  # of the wanted ones, the paths
    agent_paths_named: int
    paths_named: int
    summary: str

    @property
    def agent_share(self) -> float:
        return self.agent_named / self.wanted if self.wanted else 1.0

    @property
    def share(self) -> float:
        return self.named / self.wanted if self.wanted else 1.0


def measure(name: str, compaction: Compaction, summarize: Callable[[list[Message]], str]) -> Recall:
    """``summarize`` (ctxpack) on the span, measured beside the agent's own summary."""
    summary = summarize(compaction.span)
    wanted, paths = compaction.wanted, compaction.wanted_paths
    return Recall(
        name=name,
        wanted=len(wanted),
        agent_named=len(named(compaction.summary, wanted)),
        agent_chars=len(compaction.summary),
        named=len(named(summary, wanted)),
        chars=len(summary),
        paths=len(paths),
        agent_paths_named=len(named(compaction.summary, paths)),
        paths_named=len(named(summary, paths)),
        summary=summary,
    )


def measure_all(summarize: Callable[[list[Message]], str]) -> list[Recall]:
    return [
        measure(f"{name}#{number}", compaction, summarize)
        for name, messages in sessions().items()
        for number, compaction in enumerate(compactions(messages), 1)
    ]
