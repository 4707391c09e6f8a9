"""``rescue`` on an agent's session file: the repairs, planned from its index (issue 26).

The repairs work on what every format gives the framework (its records' infos, the view, the
records' messages), so a format gets them once it says how its records are re-linked, lose a
result or gain an answer (``AgentFormat.relink``, ``drop_result``, ``answer_calls``):

- a record whose parent no record has is re-linked to the record before it in the file (what
  the chain held before a line was lost), so the resumed view is whole again;
- a result whose call is not in the view is dropped (its record too, if nothing else is left;
  the records that followed it follow its parent);
- a call with no result is answered with an error result, as the agent writes a failed call's;
- an image beyond the APIs' limits becomes its marker; a record over 16 MiB has its tool
  results shortened to micro's markers;
- the characters the agent's reader takes for line breaks are escaped.

The plan is made here; nothing is written: the subject's ``rewrite`` hands it to pass 2. What a
format cannot repair is said (``Repairs.left``): the file then still will not open.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import BinaryIO

from ..images import size_text
from ..repairs import ANSWERED, NO_RESULT, RECORD_BYTES, fix_images, shorten_results, side_limit
from ..tools import UNKNOWN_TOOL
from .base import Answer, Record, RecordInfo
from .index import BLANK, SessionIndex, piece_images, read_record, result_holders
from .pairs import unpaired

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

    @property
    def touched(self) -> frozenset[int]:
        return frozenset(self.edits)

    def change(self, index: int, record: Record) -> bool:
        for edit in self.edits.get(index, ()):
            edit(record)
        return index in self.edits


NO_REPAIRS = Repairs()


class _Plan:
    """The repairs as they are found, and the index as they leave it (the view made again)."""

    def __init__(self, handle: BinaryIO, session: SessionIndex, now: datetime | None) -> None:
        self.handle = handle
        self.format = session.format
        self.source = session.source
        self.infos = [replace(info) for info in session.infos]  # the view follows the repairs
        self.stamp = _stamp(now or datetime.now(UTC))
        self.edits: dict[int, list[Edit]] = {}
        self.insert: dict[int, tuple[Record, ...]] = {}
        self.dropped: set[int] = set()
        self.done: list[str] = []
        self.left: list[str] = []

    def line(self, index: int) -> int:
        return self.infos[index].line

    def read(self, index: int) -> Record:
        record = read_record(self.handle, self.infos[index], self.source)
        for edit in self.edits.get(index, ()):
            edit(record)
        return record

    def edit(self, index: int, edit: Edit) -> None:
        self.edits.setdefault(index, []).append(edit)

    def index(self, session: SessionIndex) -> SessionIndex:
        return replace(session, infos=self.infos, view=self.format.view(self.infos))

    def repairs(self) -> Repairs:
        edits = {index: tuple(edits) for index, edits in self.edits.items()}
        return Repairs(
            edits, self.insert, frozenset(self.dropped), tuple(self.done), tuple(self.left)
        )


def plan_rescue(
    handle: BinaryIO, session: SessionIndex, window: int, now: datetime | None = None
) -> tuple[SessionIndex, Repairs]:
    """The repairs ``session`` needs, and its index as they leave it."""
    plan = _Plan(handle, session, now)
    _relink(plan)
    session = plan.index(session)
    _pairs(plan, session)
    session = plan.index(session)
    _images(plan, session)
    _oversized(plan, session, window)
    _line_breaks(plan, session)
    return plan.index(session), plan.repairs()


def _relink(plan: _Plan) -> None:
    """Main-thread records whose parent no record has follow the record before them."""
    infos = plan.infos
    ids = {info.id for info in infos if info.id is not None}
    before: RecordInfo | None = None  # the latest main-thread record with an id so far
    for index, info in enumerate(infos):
        if info.parent is not None and info.parent not in ids and not info.side:
            parent = before.id if before is not None else None
            plan.edit(index, lambda record, parent=parent: plan.format.relink(record, parent))
            to = f"line {before.line}" if before is not None else "nothing (a root now)"
            plan.done.append(
                f"line {info.line}: parent {info.parent} is in no record: follows {to}"
            )
            info.parent = parent
        if info.id is not None and not info.side:
            before = info


def _pairs(plan: _Plan, session: SessionIndex) -> None:
    calls: dict[int, list[tuple[object, str]]] = {}
    for found in unpaired(session):
        if found.is_call:
            calls.setdefault(found.index, []).append((found.call_id, found.tool))
        else:
            _drop_result(plan, found.index, found.call_id)
    for index, waiting in calls.items():
        _answer(plan, index, tuple(waiting))


def _drop_result(plan: _Plan, index: int, call_id: object) -> None:
    what = f"line {plan.line(index)}: result of {call_id} without its call"
    kept = plan.format.drop_result(plan.read(index), call_id)
    if kept is None:
        plan.left.append(f"{what}: {plan.format.name} records cannot lose a result")
        return
    if kept:
        plan.edit(index, lambda record: plan.format.drop_result(record, call_id))
        plan.done.append(f"{what}: dropped")
        return
    dropped = plan.infos[index]
    plan.dropped.add(index)
    plan.done.append(f"{what}: its record dropped")
    for child, info in enumerate(plan.infos):
        if dropped.id is not None and info.parent == dropped.id:
            parent = dropped.parent
            plan.edit(child, lambda record, parent=parent: plan.format.relink(record, parent))
            info.parent = parent
    plan.infos[index] = RecordInfo(dropped.line, dropped.offset, dropped.length, BLANK)


def _answer(plan: _Plan, index: int, calls: tuple[tuple[object, str], ...]) -> None:
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
    else:  # answered in the call's own record
        plan.edit(index, lambda record: plan.format.answer_calls(replace(answer, record=record)))
    plan.done.append(f"{what}: {ANSWERED}")


def _images(plan: _Plan, session: SessionIndex) -> None:
    """Images beyond the limits, in every record that holds some (the view's count decides the
    side limit: more than 20 in the request, 2000 px)."""
    in_view = sum(piece_images(session.infos[i], part) for i, part in session.view_pieces)
    side = side_limit(in_view)
    for index, info in enumerate(session.infos):
        if not info.images:
            continue
        record = plan.read(index)
        lines = fix_images(plan.format.messages(record), side)
        if not lines:
            continue
        plan.edit(index, lambda record: _store_images(plan, record, side))
        plan.done += [f"line {info.line}: {line}" for line in lines]


def _store_images(plan: _Plan, record: Record, side: int) -> None:
    messages = plan.format.messages(record)
    if fix_images(messages, side):
        plan.format.store(record, messages, {})


def _oversized(plan: _Plan, session: SessionIndex, window: int) -> None:
    """A record over 16 MiB, or alone over the window: its tool results become markers, and
    the UI copies of them shrink."""
    shortened: dict[object, str] = {}
    for index, info in enumerate(session.infos):
        if info.length <= RECORD_BYTES and info.quarters // 4 <= window:
            continue
        size = f"line {info.line} ({size_text(info.length)})"
        record = plan.read(index)
        lines = shorten_results(plan.format.messages(record), session.names)
        if not lines:
            if info.role is not None:
                plan.left.append(f"{size}: too big, and holds no tool result to shorten")
            continue
        for call_id, _ in result_holders(plan.format.messages(plan.read(index))):
            shortened[call_id] = session.names.get(call_id, UNKNOWN_TOOL)
        plan.edit(index, lambda record: _store_shortened(plan, record, session))
        plan.done += [f"{size}: {line}" for line in lines]
    for index, info in enumerate(session.infos):
        if any(call_id in shortened for call_id in info.copies):
            plan.edit(index, lambda record: plan.format.shrink_copies(record, shortened))


def _store_shortened(plan: _Plan, record: Record, session: SessionIndex) -> None:
    messages = plan.format.messages(record)
    truncated = {
        call_id: session.names.get(call_id, UNKNOWN_TOOL) for call_id, _ in result_holders(messages)
    }
    shorten_results(messages, session.names)
    plan.format.store(record, messages, truncated)


def _line_breaks(plan: _Plan, session: SessionIndex) -> None:
    """Lines holding a raw character the agent's reader splits on: written again, escaped."""
    breaks = [character.encode() for character in plan.format.line_breaks]
    if not breaks:
        return
    for index, info in enumerate(session.infos):
        if index in plan.dropped or info.kind == BLANK:
            continue
        plan.handle.seek(info.offset)
        data = plan.handle.read(info.length)
        found = [b.decode() for b in breaks if b in data]
        if found:
            plan.edit(index, _unchanged)
            names = ", ".join(f"U+{ord(character):04X}" for character in found)
            plan.done.append(f"line {info.line}: raw {names} (a line break to the agent): escaped")


def _unchanged(record: Record) -> None:
    """A record written again as it is (the writer escapes its line breaks)."""


def _stamp(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"
