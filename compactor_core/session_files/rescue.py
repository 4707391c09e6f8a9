"""``rescue`` on an agent's session file: the repairs, planned from its index (issue 26).

The repairs work on what every format gives the framework (its records' index, the view, the
records' messages), so a format gets them once it says how its records are re-linked, lose a
result or gain an answer (``AgentFormat.relink``, ``drop_result``, ``answer_calls``):

- a record the resume reads whose parent no record has is re-linked to the record the agent's
  own resume would go on from (``AgentFormat.resume_parent``), or else to the record before it
  in the file, so that the resumed view is whole and stays so;
- a result whose call is not in the view is dropped (its record too, if nothing else is left;
  the records that followed it follow its parent);
- a call with no result is answered with an error result, as the agent writes a failed call's;
- an image beyond the APIs' limits becomes its marker; a record over 16 MiB, or alone over the
  window, has its tool results shortened to micro's markers;
- the characters the agent's reader takes for line breaks are escaped;
- a torn last line is left out (the agents' readers skip it; the snapshot keeps it).

The plan is made here; nothing is written: the subject's ``rewrite`` hands it to pass 2. What a
format cannot repair is said (``Repairs.left``): the file then still will not open.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, BinaryIO

from ..compaction.repairs import (
    ANSWERED,
    NO_RESULT,
    RECORD_BYTES,
    fix_images,
    shorten_results,
    side_limit,
)
from ..conversation.images import size_text
from ..conversation.tools import UNKNOWN_TOOL, result_holders
from .base import Answer, Record, RecordInfo
from .check import Speller
from .index import BLANK, INVALID, SessionIndex, read_record
from .keys import NONE, LineSet, key
from .pairs import unpaired
from .table import MISSING, NO_PARENT

Edit = Callable[[Record], object]


@dataclass(frozen=True)
class Repairs:
    """What ``rescue`` does to a session file besides compacting it: the records it changes
    (each by its edits, in order), adds after a line, or leaves out; a line for each repair."""

    edits: dict[int, tuple[Edit, ...]] = field(default_factory=dict)
    insert: dict[int, tuple[Record, ...]] = field(default_factory=dict)
    dropped: frozenset[int] = frozenset()
    done: tuple[str, ...] = ()
    left: tuple[str, ...] = ()  # what could not be repaired

    def touched(self, lines: int) -> LineSet:
        touched = LineSet(lines)
        for index in sorted(self.edits):
            touched.add(index)
        return touched

    def change(self, index: int, record: Record) -> bool:
        for edit in self.edits.get(index, ()):
            edit(record)
        return index in self.edits


NO_REPAIRS = Repairs()


class _Plan:
    """The repairs as they are found, and the index as they leave it (the view made again)."""

    def __init__(self, handle: BinaryIO, session: SessionIndex, now: datetime | None) -> None:
        self.handle = handle
        self.session = session
        self.format = session.format
        self.spell = Speller(session, handle)
        self.stamp = _stamp(now or datetime.now(UTC))
        self.edits: dict[int, list[Edit]] = {}
        self.insert: dict[int, tuple[Record, ...]] = {}
        self.parents: dict[int, int] = {}  # line -> the line of its new parent (or NO_PARENT)
        self.dropped: set[int] = set()
        self.done: list[str] = []
        self.left: list[str] = []

    def line(self, index: int) -> int:
        return self.session.infos.line(index)

    def read(self, index: int) -> Record:
        """The record as the repairs so far leave it."""
        record = read_record(self.handle, self.session.infos, index, self.session.source)
        for edit in self.edits.get(index, ()):
            edit(record)
        return record

    def edit(self, index: int, edit: Edit) -> None:
        self.edits.setdefault(index, []).append(edit)

    def relink(self, index: int, parent: int) -> None:
        """Line ``index`` follows line ``parent`` (NO_PARENT: none) from now on."""
        spelled = self.spell(parent, self.session.infos.id(parent)) if parent >= 0 else None
        self.edit(index, lambda record: self.format.relink(record, spelled))
        self.parents[index] = parent

    def index(self) -> SessionIndex:
        """The index as the repairs so far leave it (the view made again)."""
        session = self.session
        if not self.parents and not self.dropped:
            return session
        infos = session.infos.patched(self.parents, self.dropped)
        return replace(session, infos=infos, view=self.format.view(infos))

    def repairs(self) -> Repairs:
        edits = {index: tuple(edits) for index, edits in self.edits.items()}
        dropped = frozenset(self.dropped)
        return Repairs(edits, self.insert, dropped, tuple(self.done), tuple(self.left))


def plan_rescue(
    handle: BinaryIO, session: SessionIndex, window: int, now: datetime | None = None
) -> tuple[SessionIndex, Repairs]:
    """The repairs ``session`` needs, and its index as they leave it."""
    plan = _Plan(handle, session, now)
    _torn_end(plan)
    _relink_all(plan)
    _pairs(plan, plan.index())
    _relink_all(plan)  # a dropped record's other children may now be where the resume goes
    session = plan.index()
    _images(plan, session)
    _oversized(plan, session, window)
    _line_breaks(plan, session)
    return session, plan.repairs()


def _torn_end(plan: _Plan) -> None:
    """A torn last line (the agent was stopped while writing it): left out, as the agents' own
    readers skip it; the snapshot keeps it."""
    session = plan.session
    last = len(session.infos) - 1
    if last >= 0 and session.infos.kind(last) == INVALID and not session.ends_with_newline:
        plan.dropped.add(last)
        plan.done.append(
            f"line {plan.line(last)}: torn last line (the agent stopped while writing it): "
            "left out, as the agent's own reader skips it; the snapshot keeps it"
        )


def _relink_all(plan: _Plan) -> None:
    """``_relink`` until the view it leaves has no gap: mending one gap lengthens the view the
    resume reads, which may reach an older one."""
    while True:
        mended = len(plan.parents)
        _relink(plan, plan.index())
        if len(plan.parents) == mended:
            return


def _relink(plan: _Plan, session: SessionIndex) -> None:
    """Records the resume reads whose parent no record has (a gap that cuts the view, or that
    the agent's resume crosses by a guess): re-linked where the agent's resume goes on from,
    else to the record before them (or made roots, if there is none)."""
    infos = session.infos
    resumed = set(session.format.resumed(infos, session.view))
    before = -1  # the latest main-thread record with an id so far
    for index in range(len(infos)):
        if infos.parent_at(index) == MISSING and index in resumed and not infos.side(index):
            guess = plan.format.resume_parent(infos, index)
            # only an earlier record: never the record itself or a later one (a loop)
            resumes_there = 0 <= guess < index
            parent = guess if resumes_there else before
            how = "where the agent's resume goes on" if resumes_there else "the record before it"
            to = f"line {infos.line(parent)} ({how})" if parent >= 0 else "nothing (a root)"
            gone = plan.spell(index, infos.parent_key(index))
            plan.relink(index, parent if parent >= 0 else NO_PARENT)
            plan.done.append(
                f"line {infos.line(index)}: parent {gone} is in no record: follows {to}"
            )
        if infos.id(index) != NONE and not infos.side(index) and index not in plan.dropped:
            before = index


def _pairs(plan: _Plan, session: SessionIndex) -> None:
    calls: dict[int, list[tuple[Any, str]]] = {}
    for found in unpaired(session):
        spelled = plan.spell(found.index, found.call)
        if found.is_call:
            calls.setdefault(found.index, []).append((spelled, found.tool))
        else:
            _drop_result(plan, session, found.index, spelled)
    for index, waiting in calls.items():
        _answer(plan, index, tuple(waiting))


def _drop_result(plan: _Plan, session: SessionIndex, index: int, call_id: Any) -> None:
    what = f"line {plan.line(index)}: result of {call_id} without its call"
    kept = plan.format.drop_result(plan.read(index), call_id)
    if kept is None:
        plan.left.append(f"{what}: {plan.format.name} records cannot lose a result")
        return
    if kept:
        plan.edit(index, lambda record: plan.format.drop_result(record, call_id))
        plan.done.append(f"{what}: dropped")
        return
    plan.dropped.add(index)
    plan.done.append(f"{what}: its record dropped")
    infos = session.infos
    # the links as the repairs so far leave them: a run of dropped results hands each child on
    # to the first parent that stays, never to a record that is gone
    parent = plan.parents.get(index, infos.parent_at(index))
    for child in range(index + 1, len(infos)):  # its children follow its parent
        if plan.parents.get(child, infos.parent_at(child)) == index:
            plan.relink(child, parent if parent >= 0 else NO_PARENT)


def _answer(plan: _Plan, index: int, calls: tuple[tuple[Any, str], ...]) -> None:
    record = plan.read(index)
    answer = Answer(record, calls, NO_RESULT, plan.stamp, lambda: str(uuid.uuid4()))
    added = plan.format.answer_calls(answer)
    names = ", ".join(f"{call_id} ({tool})" for call_id, tool in calls)
    what = f"line {plan.line(index)}: call {names} without a result"
    if added is None:
        plan.left.append(f"{what}: {plan.format.name} records cannot be answered")
        return
    if added:
        plan.insert[index] = (*plan.insert.get(index, ()), *added)
        if plan.format.chains_answers:
            _follow_answers(plan, index, added[-1])
    else:  # answered in the call's own record
        plan.edit(index, lambda record: plan.format.answer_calls(replace(answer, record=record)))
    plan.done.append(f"{what}: {ANSWERED}")


def _follow_answers(plan: _Plan, index: int, last: Record) -> None:
    """The records that followed the call's record follow its last answer, in the file (the
    index keeps them where they were: the answers are not in it)."""
    info = RecordInfo(0, 0, 0)
    plan.format.index(last, info)
    infos = plan.session.infos
    for child in range(index + 1, len(infos)):
        if plan.parents.get(child, infos.parent_at(child)) == index and not infos.side(child):
            plan.edit(child, lambda record: plan.format.relink(record, info.id))


def _images(plan: _Plan, session: SessionIndex) -> None:
    """Images beyond the limits, in every record that holds some (the view's count decides the
    side limit: more than 20 in the request, 2000 px)."""
    infos = session.infos
    side = side_limit(sum(infos.piece_images(i, part) for i, part in session.view_pieces))
    for index in infos.image_lines():
        lines = fix_images(plan.format.messages(plan.read(index)), side)
        if lines:
            plan.edit(index, lambda record: _store_images(plan, record, side))
            plan.done += [f"line {infos.line(index)}: {line}" for line in lines]


def _store_images(plan: _Plan, record: Record, side: int) -> None:
    messages = plan.format.messages(record)
    if fix_images(messages, side):
        plan.format.store(record, messages, {})


def _oversized(plan: _Plan, session: SessionIndex, window: int) -> None:
    """A record over 16 MiB, or alone over the window: its tool results become markers, and
    the UI copies of them shrink."""
    infos = session.infos
    shortened: dict[Any, str] = {}  # call id -> its tool, of every result shortened
    for index in range(len(infos)):
        if infos.length(index) <= RECORD_BYTES and infos.quarters(index) // 4 <= window:
            continue
        if infos.kind(index) in (BLANK, INVALID) or index in plan.dropped:
            continue
        size = f"line {infos.line(index)} ({size_text(infos.length(index))})"
        messages = plan.format.messages(plan.read(index))
        calls = [call_id for call_id, _ in result_holders(messages)]
        lines = shorten_results(messages, _Tools(session))
        if not lines:
            if infos.role(index) is not None:
                plan.left.append(f"{size}: too big, and holds no tool result to shorten")
            continue
        shortened |= {call_id: session.tool(call_id, UNKNOWN_TOOL) for call_id in calls}
        plan.edit(index, lambda record: _store_shortened(plan, record, session))
        plan.done += [f"{size}: {line}" for line in lines]
    keys = {key(call_id) for call_id in shortened}
    for index, call in infos.copy_rows():
        if call in keys:
            plan.edit(index, lambda record: plan.format.shrink_copies(record, shortened))


class _Tools:
    """The tool name of a call id, as ``shorten_results`` asks for it."""

    def __init__(self, session: SessionIndex) -> None:
        self.session = session

    def get(self, call_id: Any, default: Any = None) -> Any:
        return self.session.tool(call_id, default)


def _store_shortened(plan: _Plan, record: Record, session: SessionIndex) -> None:
    messages = plan.format.messages(record)
    truncated = {
        call_id: session.tool(call_id, UNKNOWN_TOOL) for call_id, _ in result_holders(messages)
    }
    shorten_results(messages, _Tools(session))
    plan.format.store(record, messages, truncated)


def _line_breaks(plan: _Plan, session: SessionIndex) -> None:
    """Lines holding a raw character the agent's reader splits on: written again, escaped."""
    breaks = [character.encode() for character in plan.format.line_breaks]
    if not breaks:
        return
    infos = session.infos
    for index in range(len(infos)):
        if index in plan.dropped or infos.kind(index) in (BLANK, INVALID):
            continue
        plan.handle.seek(infos.offset(index))
        data = plan.handle.read(infos.length(index))
        found = [b.decode() for b in breaks if b in data]
        if found:
            plan.edit(index, _unchanged)
            names = ", ".join(f"U+{ord(character):04X}" for character in found)
            plan.done.append(
                f"line {infos.line(index)}: raw {names} (a line break to the agent): escaped"
            )


def _unchanged(record: Record) -> None:
    """A record written again as it is (the writer escapes its line breaks)."""


def _stamp(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"
