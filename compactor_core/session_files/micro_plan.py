"""Micro compaction of a session file, planned from its index (SPEC §8.3), and carried out on
each record pass 2 reads.

The view's tool-result turns are found by the core's rule (``tools.tool_result_turns``) on what
the index knows of each view message; every record holding tool results outside the newest
``keep_recent`` of them (before the latest compaction and in sidechains too) is changed by the
core's own micro compaction, and the UI copies of those outputs shrink with them.

Stale results go first, by the conversations' rule (stale.py, on the view): a stale result's
marker names what superseded it, and of the newest turns, kept whole, the results a later one
repeats are replaced too (``--age-only``: by age alone, as before). With ``--images`` the
images of every record but those of the newest ``keep_recent`` view messages that hold images
become their markers too (old_images.py).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..compaction.handles import replaced_originals
from ..compaction.micro import is_marker, mark_all_but, worth_a_marker
from ..compaction.old_images import mark_images
from ..compaction.staleness import NONE, Answer, Staleness, superseded_by
from ..conversation.tools import UNKNOWN_TOOL, result_holders
from ..settings import Settings
from .base import Record
from .index import SessionIndex
from .keys import KeyMap, LineSet, key
from .stale import CallTouches, Superseded, with_subjects
from .table import RecordTable

Pieces = set[tuple[int, int | None]]  # (record, part) of view messages; part None: all of it


@dataclass(frozen=True)
class OldImages:
    """``--images``: the records whose images get the marker, but for the parts kept whole."""

    records: LineSet = field(default_factory=LineSet)
    kept_parts: dict[int, frozenset[int]] = field(default_factory=dict)


@dataclass(frozen=True)
class MicroPlan:
    records: LineSet  # records whose tool results get the marker
    outputs: MarkedOutputs  # call id -> tool name of every output that gets the marker
    copies: LineSet  # other records holding UI copies of those outputs
    results: int  # tool results that get the marker
    # records of ``records`` that also hold parts of the newest turns: those parts stay whole
    # (one record may hold a whole history, as Gemini CLI's checkpoints do)
    kept_parts: dict[int, frozenset[int]] = field(default_factory=dict)
    images: OldImages = field(default_factory=OldImages)
    stale: Superseded = field(default_factory=dict)  # the view's stale results, by call key

    def touches(self, index: int) -> bool:
        return index in self.records or index in self.copies or index in self.images.records

    @property
    def touched(self) -> LineSet:
        return self.records | self.copies | self.images.records


class MarkedOutputs:
    """The outputs that get the marker: call id (or its key) -> the tool's name, for the
    formats' ``shrink_copies`` (``get``), in a ``KeyMap`` (millions of outputs, a few MB)."""

    def __init__(self, session: SessionIndex) -> None:
        self._session = session
        self._marked = KeyMap("B")

    def add(self, call: int) -> None:
        self._marked[call] = 1

    def __contains__(self, call: Any) -> bool:
        return isinstance(call, int | str) and key(call) in self._marked

    def get(self, call: Any, default: Any = None) -> Any:
        return self._session.tool(call, UNKNOWN_TOOL) if call in self else default


def plan_micro(
    session: SessionIndex, settings: Settings, read: Callable[[int], Record] | None = None
) -> MicroPlan:
    """The plan; ``read`` reads a record again (by its line index), for the subjects the
    superseded markers name (None: by age alone)."""
    infos, keep = session.infos, max(settings.keep_recent, 0)
    read_back = read if settings.stale_first else None  # None: by age alone
    turns = _result_turns(session) if keep or read_back else []
    stale = stale_results(session, turns, read_back) if read_back else {}
    settings = replace(settings, compat=False)  # a session file is never a BareAgent conversation
    kept = _newest_result_turns(session, turns, keep)
    whole, kept_parts = _wholly_or_partly(kept)
    kept_calls = {
        result.call_id
        for index, part in kept
        for result in infos.results(index)
        if part is None or result.part == part
    }
    records, outputs, results = LineSet(len(infos)), MarkedOutputs(session), 0
    for index, call, chars, mark in infos.result_rows():
        if mark & 1:
            continue  # a marker already
        newest = index in whole or mark >> 1 in kept_parts.get(index, ())
        found = stale.get(call)
        if newest and not (found and found.repeat):
            continue  # kept whole: only a result a later one repeats goes (staleness.py)
        text = found.marker() if found else None
        if worth_a_marker(session.tool(call, UNKNOWN_TOOL), chars, settings, text):
            records.add(index)
            results += 1
            if newest or call not in kept_calls:
                outputs.add(call)
    copies, repeated = LineSet(len(infos)), {call for call, found in stale.items() if found.repeat}
    for index, call in infos.copy_rows():
        if call in outputs and (index not in whole or call in repeated):
            copies.add(index)
    partly = {index: frozenset(parts) for index, parts in kept_parts.items() if index in records}
    for index in whole:  # a record of the newest turns that holds a duplicate
        if index in records:
            partly[index] = frozenset(result.part for result in infos.results(index))
    images = plan_images(session, settings.keep_recent) if settings.images else OldImages()
    return MicroPlan(records, outputs, copies, results, partly, images, stale)


def stale_results(
    session: SessionIndex, turns: list[int], read: Callable[[int], Record]
) -> Superseded:
    """The view's stale results with the subjects their markers name (stale.py), when the
    index kept what the calls touched."""
    touches = session.infos.touches
    if touches is None:
        return {}
    found = superseded_by(_answers(session, touches, turns))  # subjects not yet filled in
    return with_subjects(found, touches, session.format, read) if found else {}


def _answers(session: SessionIndex, touches: CallTouches, turns: Sequence[int]) -> Iterator[Answer]:
    """The view's results whose calls touched something, as staleness sees them; ``turns``: the
    view messages that open a tool-result turn, in order."""
    infos = session.infos
    for number, message in enumerate(session.view):
        turn = max(bisect_right(turns, number) - 1, 0)
        for index, part in message.pieces():
            for result in infos.results(index):
                touched = touches.of(result.call_id) if part in (None, result.part) else ()
                if touched and touches.met_again(touched):
                    tool = session.tool(result.call_id, UNKNOWN_TOOL)
                    error = touches.is_error(result.call_id)
                    yield Answer(result.call_id, tool, touched, turn, number, error)


def plan_images(session: SessionIndex, keep_recent: int) -> OldImages:
    """The images of every record but those of the newest ``keep_recent`` view messages that
    hold images (old_images.py), before the latest compaction and in sidechains too."""
    infos = session.infos
    holders = [
        message
        for message in session.view
        if any(infos.piece_images(index, part) for index, part in message.pieces())
    ]
    kept_messages = holders[len(holders) - keep_recent :] if keep_recent > 0 else []
    whole, kept_parts = _wholly_or_partly(
        {piece for message in kept_messages for piece in message.pieces()}
    )
    records = LineSet(len(infos))
    for index in infos.image_lines():
        parts = infos.part_images(index) or (infos.images(index),)
        old = (count for part, count in enumerate(parts) if part not in kept_parts.get(index, ()))
        if index not in whole and any(old):
            records.add(index)
    partly = {index: frozenset(parts) for index, parts in kept_parts.items() if index in records}
    return OldImages(records, partly)


def _wholly_or_partly(kept: Pieces) -> tuple[set[int], dict[int, set[int]]]:
    """The records kept whole, and the parts kept of the others, from the kept pieces."""
    whole = {index for index, part in kept if part is None}
    kept_parts: dict[int, set[int]] = {}
    for index, part in kept:
        if part is not None and index not in whole:
            kept_parts.setdefault(index, set()).add(part)
    return whole, kept_parts


def _result_turns(session: SessionIndex) -> list[int]:
    """The view messages that open a tool-result turn, oldest first (SPEC §2, by the core's
    rule: ``tools.tool_result_turns``, on what the index knows of each message)."""
    infos = session.infos
    turns: list[int] = []
    in_tool_run = False
    for number, message in enumerate(session.view):
        if infos.role(message.records[0]) == "tool":
            if not in_tool_run:
                turns.append(number)
            in_tool_run = True
            continue
        in_tool_run = False
        if any(_holds_results(infos, index, part) for index, part in message.pieces()):
            turns.append(number)
    return turns


def _newest_result_turns(session: SessionIndex, turns: list[int], keep: int) -> Pieces:
    """The pieces (record, part) of the view's newest ``keep`` tool-result turns."""
    if not keep or not turns:
        return set()
    view = session.view
    first = turns[-min(keep, len(turns))]  # its messages, and those after it (none holds one)
    return {piece for number in range(first, len(view)) for piece in view[number].pieces()}


def _holds_results(infos: RecordTable, index: int, part: int | None) -> bool:
    if not infos.has_results(index):
        return False
    return part is None or any(result.part == part for result in infos.results(index))


class MicroChange:
    """The change pass 2 makes to a record the plan touches (a call returns whether it changed
    it): old results become markers, then old images, then the UI copies shrink."""

    def __init__(self, session: SessionIndex, plan: MicroPlan, settings: Settings) -> None:
        self.session = session
        self.plan = plan
        # The plan chose the records; within one, every result the rules allow gets the marker,
        # by the default profile's rules (a session file is never a BareAgent conversation),
        # with the staleness the plan found (the index's, not the record's alone).
        self.every_result = replace(
            settings, keep_recent=0, compat=False, images=False, stale=False
        )
        self.originals: list[Any] = []  # what markers with a recall handle replaced (pass 2)

    def __call__(self, index: int, record: Record) -> bool:
        changed = self.results(index, record)
        changed = self.images(index, record) > 0 or changed
        if index in self.plan.copies:
            changed = self.session.format.shrink_copies(record, self.plan.outputs) or changed
        return changed

    def results(self, index: int, record: Record) -> bool:
        if index not in self.plan.records:
            return False
        session, agent_format = self.session, self.session.format
        messages = agent_format.messages(record)
        kept = self.plan.kept_parts.get(index, frozenset())
        holders = list(result_holders(messages))
        before = [is_marker(holder.get("content")) for _, holder in holders]
        calls = {call_id for call_id, _ in holders if isinstance(call_id, str)}
        asked = {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": call_id, "name": session.tool(call_id)}
                for call_id in calls
                if session.tool(call_id) is not None
            ],
        }
        stale = self._staleness(calls)
        newest = {part + 1 for part in kept}
        compacted = mark_all_but([asked, *messages], self.every_result, newest, stale)[0][1:]
        truncated = {
            call_id: session.tool(call_id, UNKNOWN_TOOL)
            for (call_id, holder), was in zip(result_holders(compacted), before, strict=True)
            if not was and is_marker(holder.get("content"))
        }
        if self.every_result.recall:
            self.originals += replaced_originals(messages, compacted)
        for message, now in zip(messages, compacted, strict=True):
            if now is not message:  # the format's messages may be the record's own dicts
                message.clear()
                message.update(now)
        if truncated:
            agent_format.store(record, messages, truncated)
        return bool(truncated)

    def _staleness(self, calls: set[str]) -> Staleness:
        """The plan's stale results among these calls, as the core's micro reads them."""
        stale = self.plan.stale
        if not stale:
            return NONE
        found = ((call, stale.get(key(call))) for call in calls)
        return Staleness({call: each for call, each in found if each is not None})

    def images(self, index: int, record: Record) -> int:
        """How many of the record's images became markers (``--images``)."""
        images = self.plan.images
        if index not in images.records:
            return 0
        messages = self.session.format.messages(record)
        kept = images.kept_parts.get(index, frozenset())
        marked = mark_images(m for part, m in enumerate(messages) if part not in kept)
        if marked:
            self.session.format.store(record, messages, {})
        return marked
