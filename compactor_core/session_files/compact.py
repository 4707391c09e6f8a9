"""Micro, full and auto compaction of a session file, decided from its index (SPEC §8.3).

Micro: the view's tool-result turns are found by the core's rule (``tools.tool_result_turns``)
over a skeleton of the view made from the index; every record holding tool results outside the
newest ``keep_recent`` of them (before the latest compaction and in sidechains too) is changed by
the core's own micro compaction, and the UI copies of those outputs shrink with them.

Full: the view's messages (old results already markers, so they take little memory) go to the
core's full compaction; its summary and the pending turn it set aside become the records the
format appends. The file's lines before them stay as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

from ..estimate import HEURISTIC, estimate, estimate_quarters, quarters_to_tokens
from ..formats import Message
from ..full import FullResult, PendingTurn
from ..micro import is_marker, micro_compact
from ..old_images import mark_images
from ..settings import Settings
from ..tokenizers import counter as counter_named
from ..tools import UNKNOWN_TOOL, tool_result_turns
from .base import Compaction, Record, ToolResult
from .index import (
    SessionIndex,
    load_view,
    pick,
    piece_images,
    piece_quarters,
    read_record,
    result_holders,
    view_tokens,
)
from .rescue import NO_REPAIRS, Repairs


@dataclass(frozen=True)
class OldImages:
    """``--images``: the records whose images get the marker, but for the parts kept whole."""

    records: frozenset[int] = frozenset()
    kept_parts: dict[int, frozenset[int]] = field(default_factory=dict)


@dataclass(frozen=True)
class MicroPlan:
    records: frozenset[int]  # records whose tool results get the marker
    outputs: dict[Any, str]  # call id -> tool name of every output that gets the marker
    copies: frozenset[int]  # other records holding UI copies of those outputs
    results: int  # tool results that get the marker
    # records of ``records`` that also hold parts of the newest turns: those parts stay whole
    # (one record may hold a whole history, as Gemini CLI's checkpoints do)
    kept_parts: dict[int, frozenset[int]] = field(default_factory=dict)
    images: OldImages = field(default_factory=OldImages)

    def touches(self, index: int) -> bool:
        return index in self.records or index in self.copies or index in self.images.records

    def touches_view(self, session: SessionIndex) -> bool:
        return any(self.touches(index) for index in session.view_records)


def plan_micro(session: SessionIndex, settings: Settings) -> MicroPlan:
    infos = session.infos
    skeleton = [
        {
            "role": infos[message.records[0]].role,
            "content": [
                {"type": "tool_result", "tool_use_id": result.call_id}
                for index, part in message.pieces()
                for result in infos[index].results
                if part is None or result.part == part
            ],
        }
        for message in session.view
    ]
    turns = tool_result_turns(skeleton)
    keep = max(settings.keep_recent, 0)
    kept_turns = turns[len(turns) - keep :] if keep else []
    kept = {
        piece for turn in kept_turns for number in turn for piece in session.view[number].pieces()
    }
    whole, kept_parts = _wholly_or_partly(kept)
    kept_calls = {
        result.call_id
        for index, part in kept
        for result in infos[index].results
        if part is None or result.part == part
    }

    def old(index: int, result: ToolResult) -> bool:
        return index not in whole and result.part not in kept_parts.get(index, ())

    records: set[int] = set()
    outputs: dict[Any, str] = {}
    marked = 0
    for index, info in enumerate(infos):
        for result in info.results:
            tool = session.names.get(result.call_id, UNKNOWN_TOOL)
            if old(index, result) and _gets_marker(result, tool, settings):
                records.add(index)
                marked += 1
                if isinstance(result.call_id, str) and result.call_id not in kept_calls:
                    outputs[result.call_id] = tool
    copies = frozenset(
        index
        for index, info in enumerate(infos)
        if info.copies and index not in whole and any(call in outputs for call in info.copies)
    )
    partly = {index: frozenset(parts) for index, parts in kept_parts.items() if index in records}
    images = plan_images(session, settings.keep_recent) if settings.images else OldImages()
    return MicroPlan(frozenset(records), outputs, copies, marked, partly, images)


def plan_images(session: SessionIndex, keep_recent: int) -> OldImages:
    """The images of every record but those of the newest ``keep_recent`` view messages that
    hold images (old_images.py), before the latest compaction and in sidechains too."""
    infos = session.infos
    holders = [
        message
        for message in session.view
        if any(piece_images(infos[index], part) for index, part in message.pieces())
    ]
    kept_messages = holders[len(holders) - keep_recent :] if keep_recent > 0 else []
    kept = {piece for message in kept_messages for piece in message.pieces()}
    whole, kept_parts = _wholly_or_partly(kept)
    records = {
        index
        for index, info in enumerate(infos)
        if index not in whole
        and any(
            count and part not in kept_parts.get(index, ())
            for part, count in enumerate(info.part_images or (info.images,))
        )
    }
    partly = {index: frozenset(parts) for index, parts in kept_parts.items() if index in records}
    return OldImages(frozenset(records), partly)


def _wholly_or_partly(kept: set[tuple[int, int | None]]) -> tuple[set[int], dict[int, set[int]]]:
    """The records kept whole, and the parts kept of the others, from kept (record, part)s."""
    whole = {index for index, part in kept if part is None}
    kept_parts: dict[int, set[int]] = {}
    for index, part in kept:
        if part is not None and index not in whole:
            kept_parts.setdefault(index, set()).add(part)
    return whole, kept_parts


def _gets_marker(result: ToolResult, tool: str, settings: Settings) -> bool:
    """The conditions of SPEC §2 for one result of an old turn (the core applies them again)."""
    if result.is_marker or tool in settings.exclude_tools:
        return False
    return result.chars >= settings.min_chars


class MicroChange:
    """The change pass 2 makes to a record the plan touches (a call returns whether it changed
    it): old results become markers, then old images, then the UI copies shrink."""

    def __init__(self, session: SessionIndex, plan: MicroPlan, settings: Settings) -> None:
        self.session = session
        self.plan = plan
        # The plan chose the records; within one, every result the rules allow gets the marker,
        # by the default profile's rules (a session file is never a BareAgent conversation).
        self.every_result = replace(settings, keep_recent=0, compat=False, images=False)

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
        candidates = [m for part, m in enumerate(messages) if part not in kept]
        holders = list(result_holders(candidates))
        before = [is_marker(holder.get("content")) for _, holder in holders]
        calls = {call_id for call_id, _ in holders if isinstance(call_id, str)}
        asked = {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": call_id, "name": session.names.get(call_id)}
                for call_id in calls
                if call_id in session.names
            ],
        }
        compacted = micro_compact([asked, *candidates], self.every_result)[0][1:]
        truncated = {
            call_id: session.names.get(call_id, UNKNOWN_TOOL)
            for (call_id, holder), was in zip(result_holders(compacted), before, strict=True)
            if not was and is_marker(holder.get("content"))
        }
        for message, now in zip(candidates, compacted, strict=True):
            if now is not message:  # the format's messages may be the record's own dicts
                message.clear()
                message.update(now)
        if truncated:
            agent_format.store(record, messages, truncated)
        return bool(truncated)

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


def view_tokens_after(
    handle: BinaryIO,
    session: SessionIndex,
    touches: Callable[[int], bool],
    change: Callable[[int, Record], bool],
) -> int:
    """The view's estimate once ``change`` is made to the records it ``touches`` (the changed
    view records read again)."""
    quarters = session.view_quarters
    for index, part in session.view_pieces:
        if touches(index):
            info = session.infos[index]
            record = read_record(handle, info, session.source)
            change(index, record)
            now = estimate_quarters(pick(session.format.messages(record), part))
            quarters += now - piece_quarters(info, part)
    return quarters_to_tokens(quarters)


# --- one file through one command ----------------------------------------------------------------


@dataclass(frozen=True)
class Rewrite:
    """What pass 2 does to a session file: the records to change (and how), the records to add.

    Only ``rescue`` inserts records after a line or leaves lines out (compaction never does)."""

    change: Callable[[int, Record], bool] | None = None
    touched: frozenset[int] = frozenset()  # the records ``change`` may change
    append: tuple[Record, ...] = ()
    insert: dict[int, tuple[Record, ...]] = field(default_factory=dict)  # after the line
    dropped: frozenset[int] = frozenset()  # lines left out

    @property
    def changes_anything(self) -> bool:
        return bool(self.touched or self.append or self.insert or self.dropped)


UNCHANGED = Rewrite()


@dataclass(frozen=True)
class Surroundings:
    """What the records a full compaction appends are stamped with."""

    now: datetime | None = None  # the time of the new records (UTC)
    path: Path | None = None  # the session file, named in the summary record
    new_id: Callable[[], str] | None = None  # fresh record ids (uuid4 by default)


class SessionSubject:
    """A session file as ``pipeline.decide`` sees it: its view, read from the file on demand.

    Micro compaction is planned from the index; the records it touches are changed as they are
    read (for an estimate, for the summary) and as they are written. A summary becomes records the
    format appends. Nothing is written here: ``rewrite`` says what pass 2 must do.
    """

    def __init__(
        self,
        handle: BinaryIO,
        index: SessionIndex,
        settings: Settings,
        around: Surroundings = Surroundings(),
        repairs: Repairs = NO_REPAIRS,
    ) -> None:
        self.handle = handle
        self.index = index
        self.measured = index.measured
        self.around = around
        self.counter = counter_named(settings.tokenizer)
        self.plan = plan_micro(index, settings)
        self.change = MicroChange(index, self.plan, settings)
        self.micro_done = False
        self.repairs = repairs  # rescue's, made before micro's (``repair``)
        self.repaired = False
        self.appended: tuple[Record, ...] = ()
        self.summary: str | None = None
        self._input_tokens: int | None = None

    # --- what decide asks ---

    def tokens(self) -> int:
        if self.appended:  # after a summary the view is what was appended
            return self._appended_tokens(self.appended)
        if not any(self._touches(index) for index in self.index.view_records):
            return self.input_tokens()
        if self.counter is HEURISTIC:
            return view_tokens_after(self.handle, self.index, self._touches, self._changed)
        return view_tokens(self.handle, self.index, self.counter, self._changed)

    def repair(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Make ``rescue``'s repairs part of the result; what they are, and what is left."""
        self.repaired = True
        return self.repairs.done, self.repairs.left

    def micro(self) -> tuple[int, int]:
        self.micro_done = True
        return self.plan.results, self._images_marked()

    def history(self) -> list[Message]:
        # old results as markers already: they take little memory
        return load_view(self.handle, self.index, self._repaired_then_micro)

    def take_summary(self, compacted: FullResult) -> int:
        if compacted.summary is None:
            raise ValueError("a compacted result without its summary")
        self.summary = compacted.summary
        self.appended = self._compaction(compacted.summary, compacted.messages, compacted.pending)
        return self.tokens()

    def tokens_without_summary(self, pending: PendingTurn, lang: str) -> int:
        return self._appended_tokens(self._compaction("", [], pending))

    def for_the_cache(self, provider: Any, keeper: Any, dry_run: bool) -> None:
        """None: a session file keeps the every-turn rules. Its agent resumes it after being
        idle, when the provider's cache has expired anyway, so nothing is saved by waiting."""
        return None

    # --- what the writer needs ---

    def input_tokens(self) -> int:
        if self._input_tokens is None:
            self._input_tokens = view_tokens(self.handle, self.index, self.counter)
        return self._input_tokens

    def rewrite(self) -> Rewrite:
        plan, repairs = self.plan, self.repairs if self.repaired else NO_REPAIRS
        touched = (
            plan.records | plan.copies | plan.images.records if self.micro_done else frozenset()
        )
        touched |= repairs.touched
        if not touched and not self.appended and not repairs.insert and not repairs.dropped:
            return UNCHANGED
        return Rewrite(self._changed, touched, self.appended, repairs.insert, repairs.dropped)

    # --- inside ---

    def _images_marked(self) -> int:
        """The images that get a marker, counted on the records (an image inside a result that
        gets the marker goes with it, and is not counted)."""
        marked = 0
        for index in sorted(self.plan.images.records):
            record = read_record(self.handle, self.index.infos[index], self.index.source)
            self.change.results(index, record)
            marked += self.change.images(index, record)
        return marked

    def _touches(self, index: int) -> bool:
        """Whether the result's record differs from the input's (so far)."""
        repaired = self.repaired and index in self.repairs.edits
        return repaired or (self.micro_done and self.plan.touches(index))

    def _changed(self, index: int, record: Record) -> bool:
        """The record as the result holds it (so far): repaired, then micro-compacted."""
        changed = self.repaired and self.repairs.change(index, record)
        if self.micro_done and self.plan.touches(index):
            changed = self.change(index, record) or changed
        return changed

    def _repaired_then_micro(self, index: int, record: Record) -> None:
        """What the summary is made of: the repaired view as micro compaction leaves it."""
        if self.repaired:
            self.repairs.change(index, record)
        if self.plan.touches(index):
            self.change(index, record)

    def _appended_tokens(self, records: tuple[Record, ...]) -> int:
        agent_format = self.index.format
        messages = [message for record in records for message in agent_format.messages(record)]
        return estimate(messages, counter=self.counter)

    def _compaction(
        self, summary: str, messages: list[Message], pending: PendingTurn
    ) -> tuple[Record, ...]:
        index, handle = self.index, self.handle
        pending_records = [
            (read_record(handle, index.infos[number], index.source), part)
            for view_number in pending.indexes
            for number, part in index.view[view_number].pieces()
        ]
        last = index.view[-1].records[-1] if index.view else None
        compaction = Compaction(
            summary=summary,
            messages=messages,
            view=index.view,
            pending=pending_records,
            last=read_record(handle, index.infos[last], index.source) if last is not None else None,
            infos=index.infos,
            tokens_before=self.input_tokens(),
            now=self.around.now or datetime.now().astimezone(),
            path=self.around.path,
            new_id=self.around.new_id,
        )
        return tuple(index.format.compaction_records(compaction))
