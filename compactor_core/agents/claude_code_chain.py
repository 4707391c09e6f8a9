"""How Claude Code's resume walks a session's chain: the records it sends, found from the index.

The chain runs back from the last conversation record of the main thread (sidechains are a
subagent's) through ``parentUuid``, and stops at the latest ``compact_boundary``. Where a parent
is missing (or already on the chain), Claude Code goes on from the latest record of the same
thread written at most 5 s before (``GAP_WINDOW_MS``); past a longer gap the chain ends there.

A boundary of today's Claude Code keeps the most recent messages from before it whole
(``compactMetadata.preservedMessages``, or ``preservedSegment``: the walk from its tail back to its
head). On resume (2.1.328's ``relink``) those records are chained one after the other behind the
anchor (the summary); a record whose parent is the anchor follows the last of them instead; the
records from before the boundary that are not kept are dropped, and a message whose parent was one
of them follows the last kept record too. ``Relinks`` makes that walk here.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from dataclasses import dataclass

from ..session_files.base import Record
from ..session_files.keys import NONE
from ..session_files.table import MISSING, NO_PARENT, RecordTable

CONVERSATION = ("user", "assistant")
BOUNDARY = "system:compact_boundary"
# The record types Claude Code chains by parentUuid (its loader's "message" types): the records a
# parent link can name, and those its resume walks through.
CHAIN_TYPES = frozenset({"user", "assistant", "system", "attachment", "progress"})
# How far back in time Claude Code 2.1.328 looks for the record a missing parent stood for.
GAP_WINDOW_MS = 5000
REPLY_SPAN = 4096  # lines after which a reply still open is forgotten (its records come together)
_NOT_A_STEP = "system:file_snapshot"  # never where a gap leads


@dataclass(frozen=True, slots=True)
class Boundary:
    """A compaction boundary's tag: its time, and what it keeps whole from before it: the
    anchor's id and the kept records' ids (``preservedMessages``), or only the first and last of
    them (``preservedSegment``, walked through the parents)."""

    time: int | None
    anchor: str | None = None
    kept: tuple[str, ...] = ()
    segment: tuple[str, str] | None = None  # (head, tail), when there is no list

    @property
    def keeps(self) -> bool:
        return self.anchor is not None


def boundary_tag(record: Record, time: int | None) -> Boundary:
    metadata = record.get("compactMetadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    listed, segment = metadata.get("preservedMessages"), metadata.get("preservedSegment")
    if isinstance(listed, dict):
        anchor, uuids = listed.get("anchorUuid"), listed.get("uuids")
        if isinstance(anchor, str) and isinstance(uuids, list) and uuids:
            if all(isinstance(uuid, str) for uuid in uuids):
                return Boundary(time, anchor, tuple(uuids))
            return Boundary(time)  # a list Claude Code cannot read: it keeps nothing
    if isinstance(segment, dict):
        head, anchor, tail = (segment.get(k) for k in ("headUuid", "anchorUuid", "tailUuid"))
        if isinstance(head, str) and isinstance(anchor, str) and isinstance(tail, str):
            return Boundary(time, anchor, segment=(head, tail))
    return Boundary(time)


def time_of(infos: RecordTable, index: int) -> int | None:
    tag = infos.tag(index)
    return tag.time if isinstance(tag, Boundary) else tag


def chained(infos: RecordTable, index: int) -> bool:
    """Whether a parent link can name the record (the types Claude Code chains, with a uuid)."""
    return infos.id(index) != NONE and infos.kind(index).partition(":")[0] in CHAIN_TYPES


def chain(infos: RecordTable) -> array:
    """Indexes of the chain back from the last main-thread conversation record, oldest first."""
    leaf = next(
        (
            index
            for index in range(len(infos) - 1, -1, -1)
            if infos.kind(index) in CONVERSATION and not infos.side(index)
        ),
        None,
    )
    relinks = Relinks.of(infos)
    if leaf is not None and leaf == relinks.anchor:  # nothing after the summary yet
        leaf = relinks.kept[-1]
    walked = array("i")
    seen = bytearray(len(infos))
    gaps = Gaps(infos, relinks)
    index = leaf
    while index is not None and not seen[index]:
        seen[index] = 1
        if infos.kind(index) == BOUNDARY:
            break
        walked.append(index)
        parent = relinks.parent(index)
        if parent == NO_PARENT:
            break
        if parent == MISSING or seen[parent] or not chained(infos, parent):
            parent = gaps.across(index, seen)
        index = parent if parent >= 0 else None
    walked.reverse()
    return walked


class Relinks:
    """The parents Claude Code's resume gives the records around the latest boundary, when it
    keeps records from before it (see the module's docstring); without one, the file's own."""

    def __init__(self, infos: RecordTable, boundary: int = -1, kept: list[int] | None = None):
        self.infos = infos
        self.boundary = boundary
        self.kept = kept or []
        self._kept = set(self.kept)
        self.anchor = infos.find(infos.tag(boundary).anchor) if self.kept else None
        self._parents = dict(zip(self.kept, [self.anchor, *self.kept[:-1]], strict=False))

    @classmethod
    def of(cls, infos: RecordTable) -> Relinks:
        boundary = next(
            (n for n in range(len(infos) - 1, -1, -1) if infos.kind(n) == BOUNDARY), None
        )
        tag = infos.tag(boundary) if boundary is not None else None
        if boundary is None or not isinstance(tag, Boundary) or not tag.keeps:
            return cls(infos)
        kept = _kept_records(infos, tag)
        if not kept or infos.find(tag.anchor) is None:
            return cls(infos)
        return cls(infos, boundary, kept)

    def dropped(self, index: int) -> bool:
        """Whether the resume drops the record: from before the boundary, and not kept."""
        return 0 <= index < self.boundary and index not in self._kept

    def parent(self, index: int) -> int:
        if not self.kept:
            return self.infos.parent_at(index)
        relinked = self._parents.get(index)
        if relinked is not None:
            return relinked
        parent = self.infos.parent_at(index)
        if parent == self.anchor:
            return self.kept[-1]
        if self.dropped(parent):
            return self.kept[-1] if self.infos.kind(index) in CONVERSATION else MISSING
        return parent


def _kept_records(infos: RecordTable, tag: Boundary) -> list[int] | None:
    """The kept records' lines in the boundary's order; None when one is missing (or the
    segment's walk does not reach its head): Claude Code then keeps nothing."""
    if tag.kept:
        found = [infos.find(uuid) for uuid in tag.kept]
        return None if None in found else found  # type: ignore[return-value]
    if tag.segment is None:
        return None
    head, tail = (infos.find(uuid) for uuid in tag.segment)
    walked: list[int] = []
    index = tail
    while index is not None and index >= 0 and index not in walked:
        walked.append(index)
        if index == head:
            return walked[::-1]
        index = infos.parent_at(index)
    return None


class Gaps:
    """Where Claude Code's resume goes on from a record whose parent is missing, or already on
    the chain: to the latest record of the same thread (main or side) written at most
    ``GAP_WINDOW_MS`` before it and not on the chain yet (nor dropped by the latest boundary);
    of records written at the same moment, the first in the file. -1 past a longer gap: the
    chain ends there. (Claude Code 2.1.328's chain walk, measured with the real agent on
    sessions with records taken out.)

    Records' times mostly grow line by line: the ones that can be the answer lie between the
    first line whose running maximum reaches the window and the last whose running minimum
    (from the end) is before the record's time; only those are looked at.
    """

    def __init__(self, infos: RecordTable, relinks: Relinks | None = None) -> None:
        self.infos = infos
        self.relinks = relinks or Relinks(infos)
        self._bounds: tuple[array, array] | None = None

    def across(self, index: int, seen: bytearray) -> int:
        infos = self.infos
        time = time_of(infos, index)
        if time is None:
            return -1
        highest, lowest = self._bounds or self._running_bounds()
        side = infos.side(index)
        best, best_time = -1, None
        for candidate in range(bisect_left(highest, time - GAP_WINDOW_MS), len(infos)):
            if lowest[candidate] > time:  # none from here on is early enough
                break
            when = time_of(infos, candidate)
            if when is None or when > time or seen[candidate] or not self._step(candidate, side):
                continue
            if best_time is None or when > best_time:  # the first of equal times stays
                best, best_time = candidate, when
        return best if best_time is not None and time - best_time <= GAP_WINDOW_MS else -1

    def _step(self, index: int, side: bool) -> bool:
        infos = self.infos
        return (
            chained(infos, index)
            and infos.side(index) == side
            and infos.kind(index) != _NOT_A_STEP
            and not self.relinks.dropped(index)
        )

    def _running_bounds(self) -> tuple[array, array]:
        """Each line's running maximum of times from the start, and minimum from the end."""
        infos, never = self.infos, 2**62
        highest, lowest = array("q"), array("q", [never]) * len(infos)
        top = -never
        for index in range(len(infos)):
            when = time_of(infos, index)
            top = max(top, when) if when is not None else top
            highest.append(top)
        bottom = never
        for index in range(len(infos) - 1, -1, -1):
            when = time_of(infos, index)
            bottom = min(bottom, when) if when is not None else bottom
            lowest[index] = bottom
        self._bounds = (highest, lowest)
        return self._bounds


def whole_replies(infos: RecordTable, walked: array) -> array:
    """The chain with every record of each reply on it and every result of those records.

    Claude Code writes each block of one API reply as its own assistant record (sharing
    ``message.id``) and the result of each parallel call as a child of the record that made the
    call, so the chain runs through only some of them. Resume puts the whole reply and all its
    results back; so does the view: the reply's records, then their results, in file order.
    """
    start = min(walked, default=len(infos))
    # only from where the chain starts: a copy of a reply made by an older ctxpack (the pending
    # turn, copied after the summary) shares its message.id with the original before the boundary
    groups = _Groups(infos, start)
    placed = bytearray(len(infos))
    view = array("i")
    for index in walked:
        if placed[index]:
            continue
        if infos.kind(index) != "assistant" or infos.turn(index) == NONE:
            view.append(index)
            placed[index] = 1
            continue
        reply = [record for record in groups.reply(infos, index) if not placed[record]] or [index]
        answers = sorted(
            result for record in reply for result in groups.results(record) if not placed[result]
        )
        for record in (*reply, *answers):
            view.append(record)
            placed[record] = 1
    return view


class _Groups:
    """The main thread's records from ``start`` on grouped as resume groups them: the records of
    one reply (one turn of the table: sharing ``message.id``, written together), and the results
    of each call's record. Linked lines in arrays, 12 bytes a line, however many groups."""

    def __init__(self, infos: RecordTable, start: int) -> None:
        span = len(infos) - start
        self._start = start
        self._next = array("i", [-1]) * span  # the reply's next record
        self._first_result = array("i", [-1]) * span  # a record's first result's line
        self._next_result = array("i", [-1]) * span
        last_of_reply: dict[int, int] = {}  # the line that opened a reply -> its latest record
        for index in range(start, len(infos)):
            if infos.side(index):
                continue
            kind, at = infos.kind(index), index - start
            if kind == "assistant" and infos.turn(index) != NONE:
                last = last_of_reply.get(infos.turn(index))
                if last is not None:
                    self._next[last - start] = index
                last_of_reply[infos.turn(index)] = index
            elif kind == "user" and infos.has_results(index) and infos.parent_at(index) >= start:
                parent = infos.parent_at(index) - start
                self._next_result[at] = self._first_result[parent]
                self._first_result[parent] = index
            if at % REPLY_SPAN == REPLY_SPAN - 1:  # forget the replies that ended long ago
                last_of_reply = {t: i for t, i in last_of_reply.items() if i > index - REPLY_SPAN}

    def reply(self, infos: RecordTable, index: int) -> list[int]:
        """The records of the reply ``index`` is one of, from the first one of it the chain
        reaches (the line that opened its turn, or the first after the start)."""
        records, record = [], max(infos.turn(index) - 1, self._start)
        while record >= 0 and (infos.turn(record) != infos.turn(index) or infos.side(record)):
            record += 1  # the turn opened before the start: its first record after it
            if record >= index:
                record = index
                break
        while record >= 0:
            records.append(record)
            record = self._next[record - self._start]
        return records

    def results(self, index: int) -> list[int]:
        found, result = [], self._first_result[index - self._start]
        while result >= 0:
            found.append(result)
            result = self._next_result[result - self._start]
        return found
