"""Stale tool results: those a later result of the conversation has made stale (issue 35).

A result is stale once everything its call touched was touched again by a later call whose
result is there (and is not an error): a file read again (the whole file, or the same part of
it) or written after it was read; the same command run again; the same folder listed again; the
same search made again. What each tool touches is data (``conversation/tool_rules.py``).

Stale results are replaced before any result that is still the latest of its kind:

- micro compaction gives a stale result among the old turns a marker that names what
  superseded it, ``[superseded: Read src/app.py, read again 4 turns later]``; and of the newest
  ``keep_recent`` turns, which otherwise stay whole, it replaces the stale results that a later
  result *repeats* (read again, run again, listed again, searched again): the later one is
  there, whole, so the earlier one is a duplicate, not context. A read made stale by an edit
  stays whole among the newest turns: the agent may still need it for its next edit;
- the cache-aware batches (cache_plan.py) take those duplicates as soon as they go stale, ahead
  of the turns that age: that changes what a batch takes first, never when the prompt changes.

A marker must read the same request after request (a cached prefix): it names the first later
result that made its result stale, which stays the first however the conversation grows; and a
result marked before it went stale keeps its truncation marker (``Staleness.of``'s ``before``).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from ..conversation.formats import Message
from ..conversation.tool_rules import (
    FILE,
    LIST,
    PATCH,
    READ,
    RUN,
    SEARCH,
    WRITE,
    Rules,
    Touch,
    rules_table,
    touches,
)
from ..conversation.tools import blocks, has_tool_result_block, is_block, result_holders, tool_name
from .estimate import HEURISTIC, Counter, message_units, units_to_tokens

SUPERSEDED_PREFIX = "[superseded:"
VERBS = {
    READ: "read again",
    WRITE: "edited",
    PATCH: "edited",
    LIST: "listed again",
    RUN: "run again",
    SEARCH: "searched again",
}
REPEATABLE = (READ, LIST, RUN, SEARCH)  # kinds whose later call shows the same thing anew


@dataclass(frozen=True)
class Supersession:
    """How a result went stale: the later result that made it so."""

    tool: str  # the stale result's tool
    subject: str  # what its call read, ran, listed or searched, as a marker shows it
    verb: str  # what the later call did: "read again", "edited", "run again", ...
    turns: int  # tool-result turns from the stale result to the later one
    at: int  # the index of the message holding the later result
    repeat: bool  # the later call did the same again (a duplicate), not an edit

    def marker(self, handle: str = "") -> str:
        """``[superseded: Read src/app.py, read again 4 turns later]``, with ``; recall H``
        when the original is kept (``recall.py``)."""
        if self.turns == 0:
            later = "later in the same turn"
        else:
            later = f"{self.turns} turn{'s' if self.turns != 1 else ''} later"
        recall = f"; recall {handle}" if handle else ""
        return f"[superseded: {self.tool} {self.subject}, {self.verb} {later}{recall}]"


@dataclass(frozen=True)
class Staleness:
    """The stale results of a conversation, by the call id they answer."""

    superseded: dict[str, Supersession] = field(default_factory=dict)

    def of(self, call_id: Any, before: int | None = None) -> Supersession | None:
        """How the result of ``call_id`` went stale, if it had by the request that held
        ``messages[:before]`` (None: by the whole conversation)."""
        found = self.superseded.get(call_id) if isinstance(call_id, str) else None
        if found is None or (before is not None and found.at >= before):
            return None
        return found

    def duplicates(self, before: int | None = None) -> dict[str, Supersession]:
        """The stale results a later one repeats, by the request before ``before``."""
        return {
            call: found
            for call, found in self.superseded.items()
            if found.repeat and (before is None or found.at < before)
        }


NONE = Staleness()


@dataclass
class _Result:
    """A result not yet wholly superseded: what its call touched, and how much of it still is."""

    call_id: str
    tool: str
    touched: list[Touch]
    turn: int
    left: int
    repeat: bool = True


def analyse(messages: list[Message], rules: Rules = ()) -> Staleness:
    """Every stale result of the conversation, by the built-in rules and ``rules``."""
    analysis = Analysis(rules)
    analysis.read(messages)
    return analysis.staleness()


class Analysis:
    """The analysis of a conversation read so far, message after message: what a conversation
    that goes on from it needs is kept, so that it can be taken up from a ``copy``."""

    def __init__(self, rules: Rules = ()) -> None:
        self.table = rules_table(rules)
        self.calls: dict[str, tuple[str, Any]] = {}
        self.current: dict[tuple[str, str], list[tuple[_Result, Touch]]] = {}
        self.superseded: dict[str, Supersession] = {}
        self.count = 0  # messages read
        self.turns = 0  # tool-result turns begun (tools.tool_result_turns)
        self.in_tool_run = False

    def read(self, messages: list[Message]) -> None:
        """Read on: ``messages`` follow those read so far."""
        for message in messages:
            self._read(message)

    def staleness(self) -> Staleness:
        return Staleness(dict(self.superseded))

    def copy(self) -> Analysis:
        """An analysis that goes on from here on its own."""
        copied = copy.copy(self)
        copied.calls = dict(self.calls)
        copied.superseded = dict(self.superseded)
        results: dict[int, _Result] = {}  # a result is under each subject it touched: one copy

        def own(result: _Result) -> _Result:
            if id(result) not in results:
                results[id(result)] = replace(result)
            return results[id(result)]

        copied.current = {
            subject: [(own(result), touch) for result, touch in pairs]
            for subject, pairs in self.current.items()
        }
        return copied

    def _read(self, message: Message) -> None:
        index = self.count
        self.count += 1
        turn = self._turn(message)
        for call_id, name, arguments in _calls(message):
            self.calls[call_id] = (name, arguments)
        for call_id, holder in _results(message):
            if call_id not in self.calls:
                continue
            tool, arguments = self.calls[call_id]
            touched = list(dict.fromkeys(touches(tool, arguments, self.table)))
            if not touched:
                continue
            if holder.get("is_error") is not True:
                for touch in touched:
                    for done in _supersede(self.current, touch, index, turn):
                        self.superseded[done[0]] = done[1]
            result = _Result(call_id, tool, touched, turn, len(touched))
            for touch in touched:
                self.current.setdefault((touch.domain, touch.subject), []).append((result, touch))

    def _turn(self, message: Message) -> int:
        """The position of the message's tool-result turn (0 if it is none), as
        ``tools.tool_result_turns`` numbers them."""
        if message.get("role") == "tool":
            if not self.in_tool_run:
                self.turns += 1
            self.in_tool_run = True
            return self.turns - 1
        self.in_tool_run = False
        if not has_tool_result_block(message):
            return 0
        self.turns += 1
        return self.turns - 1


def _supersede(
    current: dict[tuple[str, str], list[tuple[_Result, Touch]]],
    later: Touch,
    index: int,
    turn: int,
) -> Iterator[tuple[str, Supersession]]:
    """The results the later touch completes the staleness of; what it supersedes leaves
    ``current``."""
    key = (later.domain, later.subject)
    kept = []
    for result, earlier in current.get(key, ()):
        if not supersedes(later, earlier):
            kept.append((result, earlier))
            continue
        result.left -= 1
        result.repeat = result.repeat and later.kind == earlier.kind and later.kind in REPEATABLE
        if result.left == 0:
            subject = result.touched[0].shown
            verb = VERBS[later.kind]
            yield (
                result.call_id,
                Supersession(result.tool, subject, verb, turn - result.turn, index, result.repeat),
            )
    current[key] = kept


def supersedes(later: Touch, earlier: Touch) -> bool:
    """Whether ``later`` (of the same domain and subject) makes what ``earlier`` showed stale."""
    if later.domain != FILE:
        return later.part == earlier.part  # a search's whole input; "" for the others
    if later.kind in (WRITE, PATCH):
        return True  # the file changed
    whole = later.part == ""
    return whole or (earlier.kind == READ and later.part == earlier.part)


def _calls(message: Message) -> Iterator[tuple[str, str, Any]]:
    """Each call of the message with a string id: (id, tool name, its input), both styles."""
    for block in blocks(message):
        if is_block(block, "tool_use") and isinstance(block.get("id"), str):
            yield block["id"], tool_name(block.get("name")), block.get("input")
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and isinstance(call.get("id"), str):
            yield call["id"], tool_name(function.get("name")), function.get("arguments")


def _results(message: Message) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each tool result of the message with a string call id, and what holds its content."""
    return ((call, holder) for call, holder in result_holders([message]) if isinstance(call, str))


# --- how much of a conversation is stale (``estimate --json``) ---------------------------------


def stale_report(
    messages: list[Message], rules: Rules = (), counter: Counter = HEURISTIC
) -> dict[str, Any]:
    """The tool results, the stale ones, and the stale share of the results' tokens."""
    staleness = analyse(messages, rules)
    total = stale = count = stale_count = 0
    for message in messages:
        for call_id, holder in _results(message):
            units = message_units({"content": holder.get("content")}, counter)
            count += 1
            total += units
            if staleness.of(call_id) is not None:
                stale_count += 1
                stale += units
    return {
        "results": count,
        "stale_results": stale_count,
        "result_tokens": units_to_tokens(total, counter),
        "stale_tokens": units_to_tokens(stale, counter),
        "share": round(stale / total, 3) if total else 0.0,
    }
