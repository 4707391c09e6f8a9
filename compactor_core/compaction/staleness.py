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
  of the turns that age: that changes what a batch takes first, never when the prompt changes;
- an agent's session file is decided by the same rule (``superseded_by``) from its index, which
  keeps what each call touched as keys, not the calls' inputs (``session_files/stale.py``).

A marker must read the same request after request (a cached prefix): it names the first later
result that made its result stale, which stays the first however the conversation grows; and a
result marked before it went stale keeps its truncation marker (``Staleness.of``'s ``before``).
"""

from __future__ import annotations

import copy
from collections.abc import Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

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
    ToolTouches,
    touch_table,
)
from ..conversation.tools import (
    UNKNOWN_TOOL,
    ToolNames,
    blocks,
    is_block,
    result_holders,
    tool_name,
)
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


class Supersession(NamedTuple):
    """How a result went stale: the later result that made it so (a tuple: one is made for
    each stale result, most results of long sessions, and a frozen dataclass takes three times
    as long to make)."""

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


class Touched(Protocol):
    """What staleness reads of a touch: ``Touch`` itself, or a session file's index of one
    (``session_files/stale.py``), whose subject and part are keys of the texts (0: no part)."""

    @property
    def kind(self) -> str: ...
    @property
    def domain(self) -> str: ...
    @property
    def subject(self) -> Hashable: ...
    @property
    def part(self) -> Hashable: ...


class Answer(NamedTuple):
    """One tool result, as staleness sees it: what its call touched, and where it stands (a
    tuple, like ``Supersession``: one is made for every result that touched something)."""

    call_id: Any  # a conversation's call id; a session file's key of one
    tool: str
    touched: Sequence[Touched]  # none repeated, in the call's order
    turn: int  # its tool-result turn
    at: int  # the index of the message holding it
    error: bool = False  # an error supersedes nothing (it may still be superseded)
    shown: str = ""  # its first subject as a marker shows it ("" : filled in by the caller)


@dataclass(slots=True)
class _Result:
    """A result not yet wholly superseded: how much of what its call touched still is."""

    answer: Answer
    left: int
    repeat: bool = True


def analyse(messages: list[Message], rules: Rules = ()) -> Staleness:
    """Every stale result of the conversation, by the built-in rules and ``rules``."""
    analysis = Analysis(rules)
    analysis.read(messages)
    return analysis.staleness()


class Analysis:
    """The analysis of a conversation read so far, message after message: what a conversation
    that goes on from it needs is kept, so that it can be taken up from a ``copy`` (serve).

    On its way it finds what micro compaction marks by (``micro.Layout``): the tool-result
    turns, as ``tools.tool_result_turns``, and each call's tool, as ``tools.tool_names``; so
    that a conversation is walked once for all three (a walk of a long session's messages
    costs as much as a third of its analysis)."""

    def __init__(self, rules: Rules = ()) -> None:
        self.table = touch_table(rules)
        # call id -> its tool, what a call of it touches (None: nothing), its input
        self.calls: dict[str, tuple[str, ToolTouches | None, Any]] = {}
        self.names = ToolNames()
        self.turns: list[list[int]] = []  # the indexes of each tool-result turn's messages
        self.superseding = Superseding()
        self.count = 0  # messages read
        self.in_tool_run = False

    def read(self, messages: list[Message]) -> None:
        """Read on: ``messages`` follow those read so far."""
        for message in messages:
            self._read(message)

    def staleness(self) -> Staleness:
        return Staleness(dict(self.superseding.superseded))

    def copy(self) -> Analysis:
        """An analysis that goes on from here on its own."""
        copied = copy.copy(self)
        copied.calls = dict(self.calls)
        copied.names = self.names.copy()
        # the last turn may go on (a run of tool messages); the others are never changed
        copied.turns = [*self.turns[:-1], list(self.turns[-1])] if self.turns else []
        copied.superseding = self.superseding.copy()
        return copied

    def _read(self, message: Message) -> None:
        """The message's calls, then each of its results whose call (made before it) touched
        something, as an ``Answer`` for the rule. The blocks are looked at once (this runs on
        every message): what ``calls_of`` and ``result_holders`` find, in their order."""
        index = self.count
        self.count += 1
        tool_message = message.get("role") == "tool"
        results = [(message.get("tool_call_id"), message)] if tool_message else []
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "tool_use" and isinstance(block.get("id"), str):
                self._call(block["id"], tool_name(block.get("name")), block.get("input"))
            elif kind == "tool_result":
                results.append((block.get("tool_use_id"), block))
        if message.get("tool_calls"):
            self._openai_calls(message)
        if not results:  # no tool message, no result blocks: no tool-result turn
            self.in_tool_run = False
            return
        turn = self._turn(index, tool_message)
        for call_id, holder in results:
            call = self.calls.get(call_id) if isinstance(call_id, str) else None
            if call is not None and call[1] is not None:
                self._answer(call_id, call, holder, turn, index)

    def _call(self, call_id: str, tool: str, arguments: Any) -> None:
        """A call, kept for its result: what a call of its tool touches is looked up once
        here (the last call of an id wins)."""
        self.names.name(call_id, tool)
        self.calls[call_id] = (tool, self.table.get(tool), arguments)

    def _openai_calls(self, message: Message) -> None:
        """The message's calls in OpenAI's style (``tool_calls``); one without a function is
        named all the same (``tools.tool_names``), but has no input to touch anything by."""
        for call in message["tool_calls"]:
            call_id = call.get("id") if isinstance(call, dict) else None
            if not isinstance(call_id, str):
                continue
            function = call.get("function")
            if isinstance(function, dict):
                self._call(call_id, tool_name(function.get("name")), function.get("arguments"))
            else:
                self.names.name(call_id, UNKNOWN_TOOL)

    def _answer(
        self,
        call_id: str,
        call: tuple[str, ToolTouches | None, Any],
        holder: dict[str, Any],
        turn: int,
        index: int,
    ) -> None:
        tool, touching, arguments = call
        touched = touching(arguments)
        if touched:
            error = holder.get("is_error") is True
            answer = Answer(call_id, tool, touched, turn, index, error, touched[0].shown)
            self.superseding.add(answer)

    def _turn(self, index: int, tool_message: bool) -> int:
        """The position of the tool-result turn of a message that holds results, as
        ``tools.tool_result_turns`` numbers them: a run of tool messages is one turn, and so
        is a message with result blocks."""
        if tool_message and self.in_tool_run:
            self.turns[-1].append(index)
        else:
            self.turns.append([index])
        self.in_tool_run = tool_message
        return len(self.turns) - 1


class Superseding:
    """The rule, answer after answer: what is still current of each thing touched, and the
    results gone stale so far."""

    def __init__(self) -> None:
        self.current: dict[tuple[str, Hashable], list[tuple[_Result, Touched]]] = {}
        self.superseded: dict[Any, Supersession] = {}

    def add(self, answer: Answer) -> None:
        """The next result, in the conversation's order. Under each thing it touched, it first
        supersedes what it makes stale (not itself: a call may touch one file twice), then is
        current there."""
        result = _Result(answer, len(answer.touched))
        for touch in answer.touched:
            key = (touch.domain, touch.subject)
            earlier = self.current.get(key)
            if earlier is None:  # the first touch of it: nothing to supersede
                self.current[key] = [(result, touch)]
                continue
            if not answer.error:  # an error shows nothing new
                earlier = self.current[key] = self._supersede(earlier, touch, answer)
            earlier.append((result, touch))

    def _supersede(
        self, earlier: list[tuple[_Result, Touched]], later: Touched, by: Answer
    ) -> list[tuple[_Result, Touched]]:
        """What is still current under ``later``'s subject once it is there; the results it
        completes the staleness of go to ``superseded``."""
        kept = []
        for pair in earlier:
            result, touch = pair
            # the same result again (Gemini CLI's history holds each twice) is no later one
            if result.answer.call_id == by.call_id or not supersedes(later, touch):
                kept.append(pair)
                continue
            result.left -= 1
            result.repeat = result.repeat and later.kind == touch.kind and later.kind in REPEATABLE
            if result.left == 0:
                stale = result.answer
                self.superseded[stale.call_id] = Supersession(
                    stale.tool,
                    stale.shown,
                    VERBS[later.kind],
                    by.turn - stale.turn,
                    by.at,
                    result.repeat,
                )
        return kept

    def copy(self) -> Superseding:
        """One that goes on from here on its own (a result is under each thing it touched:
        one copy of it for all)."""
        copied = Superseding()
        copied.superseded = dict(self.superseded)
        results: dict[int, _Result] = {}

        def own(result: _Result) -> _Result:
            copied = results.get(id(result))
            if copied is None:  # made directly: ``dataclasses.replace`` takes 5 times as long
                copied = results[id(result)] = _Result(result.answer, result.left, result.repeat)
            return copied

        copied.current = {
            subject: [(own(result), touch) for result, touch in pairs]
            for subject, pairs in self.current.items()
        }
        return copied


def superseded_by(answers: Iterable[Answer]) -> dict[Any, Supersession]:
    """The stale results among ``answers`` (in the conversation's order), by their call ids:
    the rule every caller shares (conversations here, session files from their index)."""
    superseding = Superseding()
    for answer in answers:
        superseding.add(answer)
    return superseding.superseded


def supersedes(later: Touched, earlier: Touched) -> bool:
    """Whether ``later`` (of the same domain and subject) makes what ``earlier`` showed stale."""
    if later.domain != FILE:
        return later.part == earlier.part  # a search's whole input; "" for the others
    if later.kind in (WRITE, PATCH):
        return True  # the file changed
    whole = not later.part  # "" (or a session file's 0): the whole file
    return whole or (earlier.kind == READ and later.part == earlier.part)


def calls_of(message: Message) -> Iterator[tuple[str, str, Any]]:
    """Each call of the message with a string id: (id, tool name, its input), both styles."""
    for block in blocks(message):
        if is_block(block, "tool_use") and isinstance(block.get("id"), str):
            yield block["id"], tool_name(block.get("name")), block.get("input")
    yield from _function_calls(message)


def _function_calls(message: Message) -> Iterator[tuple[str, str, Any]]:
    """The message's calls in OpenAI's style (``tool_calls``)."""
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
