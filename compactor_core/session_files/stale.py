"""Stale results in a session file: the same rule as a conversation's, from pass 1's index
(issue 35; the rule is ``compaction/staleness.py``'s, the tools' data ``tool_rules.py``).

Pass 1 keeps, of each tool call, what staleness needs and no more: each thing it touched (a file
read or written, a command run, a folder listed, a search made) as a row of numbers — its call's
key, its kind, the keys (``keys.key``) of its subject and of the part read — and the keys of the
results that are errors; and how often each thing was touched. About 100 bytes a call that a
rule covers (29 a touch, the rest ``KeyMap`` entries): a session of millions of records keeps
no tool input in memory. Staleness then holds only the results whose
calls touched something another call touched too (the others can neither go stale nor make one).

The planner (micro_plan.py) puts the view's results, in the view's order with their tool-result
turns, through the core's ``superseded_by``; the text a marker shows of a stale result's subject
is read back from its call's record, for the stale results alone (``with_subjects``).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from typing import NamedTuple

from ..compaction.staleness import Supersession, calls_of
from ..conversation.formats import Message
from ..conversation.tool_rules import DOMAINS, KINDS, Rules, touch_table, touches
from .base import AgentFormat, Record
from .keys import KeyMap, key

Superseded = dict[int, Supersession]  # call key -> how its result went stale
_KIND_CODES = {kind: code for code, kind in enumerate(KINDS)}


class StoredTouch(NamedTuple):
    """A touch as pass 1 keeps it: its subject and part as keys (part 0: the whole file)."""

    kind: str
    domain: str
    subject: int
    part: int


class CallTouches:
    """What each call of a session file touched, by the rules it was indexed with (pass 1)."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        self.table = touch_table(rules)
        self._lines = array("i")  # the line of the call each row is a touch of
        self._calls = array("q")  # its key
        self._kinds = array("B")  # its kind's place in KINDS
        self._subjects = array("q")
        self._parts = array("q")
        self._first = KeyMap("l")  # call key -> its first row (a call's rows come together)
        self._errors = KeyMap("B")  # keys of the calls whose result is an error
        self._touched = KeyMap("B")  # of each thing touched: once (1), or more often (2)

    def add_calls(self, index: int, message: Message) -> None:
        """The touches of the calls ``message`` (of line ``index``) makes."""
        for call_id, tool, arguments in calls_of(message):
            touched = touches(tool, arguments, self.table)
            if not touched:
                continue
            call = key(call_id)
            self._first[call] = len(self._calls)
            for touch in touched:
                subject = key(touch.subject)
                self._lines.append(index)
                self._calls.append(call)
                self._kinds.append(_KIND_CODES[touch.kind])
                self._subjects.append(subject)
                self._parts.append(key(touch.part) if touch.part else 0)
                met = _meeting(touch.domain, subject)
                self._touched[met] = 2 if met in self._touched else 1

    def add_error(self, call: int) -> None:
        self._errors[call] = 1

    def of(self, call: int) -> list[StoredTouch]:
        """What the call of this key touched (none: nothing it can go stale by)."""
        row = self._first.get(call)
        touched = []
        while row is not None and row < len(self._calls) and self._calls[row] == call:
            kind = KINDS[self._kinds[row]]
            touched.append(StoredTouch(kind, DOMAINS[kind], self._subjects[row], self._parts[row]))
            row += 1
        return touched

    def met_again(self, touched: list[StoredTouch]) -> bool:
        """Whether another call touched any of these things too: else the result can neither
        go stale nor make one stale, and staleness need not hold it (memory)."""
        return any(self._touched.get(_meeting(t.domain, t.subject)) == 2 for t in touched)

    def is_error(self, call: int) -> bool:
        return call in self._errors

    def line(self, call: int) -> int:
        """The line of the call of this key (one that touched something)."""
        return self._lines[self._first.get(call)]


def _meeting(domain: str, subject: int) -> int:
    """The key of what touches meet on: their domain and subject (staleness.py)."""
    return hash((domain, subject)) or 1


def with_subjects(
    found: Superseded,
    calls: CallTouches,
    agent_format: AgentFormat,
    read: Callable[[int], Record],
) -> Superseded:
    """``found`` with the subject each marker shows, from the calls' records, read in order."""
    by_line: dict[int, list[int]] = {}
    for call in found:
        by_line.setdefault(calls.line(call), []).append(call)
    filled = {}
    for line in sorted(by_line):
        wanted = set(by_line[line])
        for message in agent_format.messages(read(line)):
            for call_id, tool, arguments in calls_of(message):
                call = key(call_id)
                if call in wanted and call not in filled:
                    shown = touches(tool, arguments, calls.table)[0].shown
                    filled[call] = found[call]._replace(subject=shown)
    return filled
