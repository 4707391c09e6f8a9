"""Micro, full and auto compaction of a session file, decided from its index (SPEC §8.3).

Micro: the view's tool-result turns are found by the core's rule (``tools.tool_result_turns``)
on what the index knows of each view message; every record holding tool results outside the
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
from ..micro import is_marker, micro_compact, worth_a_marker
from ..settings import Settings
from ..tokenizers import counter as counter_named
from ..tools import UNKNOWN_TOOL
from .base import Compaction, Record
from .index import SessionIndex, load_view, pick, read_record, view_tokens
from .keys import KeyMap, LineSet, key
from .table import RecordTable, result_holders


@dataclass(frozen=True)
class MicroPlan:
    records: LineSet  # records whose tool results get the marker
    outputs: MarkedOutputs  # call id -> tool name of every output that gets the marker
    copies: LineSet  # other records holding UI copies of those outputs
    results: int  # tool results that get the marker
    # records of ``records`` that also hold parts of the newest turns: those parts stay whole
    # (one record may hold a whole history, as Gemini CLI's checkpoints do)
    kept_parts: dict[int, frozenset[int]] = field(default_factory=dict)

    def touches(self, index: int) -> bool:
        return index in self.records or index in self.copies

    def touches_view(self, session: SessionIndex) -> bool:
        return any(self.touches(index) for index in session.view_records)


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


def plan_micro(session: SessionIndex, settings: Settings) -> MicroPlan:
    infos = session.infos
    settings = replace(settings, compat=False)  # a session file is never a BareAgent conversation
    kept = _newest_result_turns(session, max(settings.keep_recent, 0))
    whole = {index for index, part in kept if part is None}
    kept_parts: dict[int, set[int]] = {}
    for index, part in kept:
        if part is not None and index not in whole:
            kept_parts.setdefault(index, set()).add(part)
    kept_calls = {
        result.call_id
        for index, part in kept
        for result in infos.results(index)
        if part is None or result.part == part
    }
    records, outputs, results = LineSet(len(infos)), MarkedOutputs(session), 0
    for index, call, chars, mark in infos.result_rows():
        if index in whole or mark & 1 or mark >> 1 in kept_parts.get(index, ()):
            continue  # kept whole, or a marker already
        if worth_a_marker(session.tool(call, UNKNOWN_TOOL), chars, settings):
            records.add(index)
            results += 1
            if call not in kept_calls:
                outputs.add(call)
    copies = LineSet(len(infos))
    for index, call in infos.copy_rows():
        if index not in whole and call in outputs:
            copies.add(index)
    partly = {index: frozenset(parts) for index, parts in kept_parts.items() if index in records}
    return MicroPlan(records, outputs, copies, results, partly)


def _newest_result_turns(session: SessionIndex, keep: int) -> set[tuple[int, int | None]]:
    """The pieces (record, part) of the view's newest ``keep`` tool-result turns (SPEC §2, by
    the core's rule: ``tools.tool_result_turns``, on what the index knows of each message)."""
    if not keep:
        return set()
    infos, view = session.infos, session.view
    turns: list[int] = []  # the view messages that open a turn, oldest first
    in_tool_run = False
    for number, message in enumerate(view):
        if infos.role(message.records[0]) == "tool":
            if not in_tool_run:
                turns.append(number)
            in_tool_run = True
            continue
        in_tool_run = False
        if any(_holds_results(infos, index, part) for index, part in message.pieces()):
            turns.append(number)
    if not turns:
        return set()
    first = turns[-min(keep, len(turns))]  # its messages, and those after it (none holds one)
    return {piece for number in range(first, len(view)) for piece in view[number].pieces()}


def _holds_results(infos: RecordTable, index: int, part: int | None) -> bool:
    if not infos.has_results(index):
        return False
    return part is None or any(result.part == part for result in infos.results(index))


def micro_change(session: SessionIndex, plan: MicroPlan, settings: Settings):
    """The change pass 2 makes to record ``index`` (returns whether it changed it)."""
    agent_format = session.format
    # The plan chose the records; within one, every result the rules allow gets the marker, by
    # the default profile's rules (a session file is never a BareAgent conversation).
    every_result = replace(settings, keep_recent=0, compat=False)

    def change(index: int, record: Record) -> bool:
        changed = False
        if index in plan.records:
            messages = agent_format.messages(record)
            kept = plan.kept_parts.get(index, frozenset())
            candidates = [m for part, m in enumerate(messages) if part not in kept]
            holders = list(result_holders(candidates))
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
            compacted = micro_compact([asked, *candidates], every_result)[0][1:]
            truncated = {
                call_id: session.tool(call_id, UNKNOWN_TOOL)
                for (call_id, holder), was in zip(result_holders(compacted), before, strict=True)
                if not was and is_marker(holder.get("content"))
            }
            for message, now in zip(candidates, compacted, strict=True):
                if now is not message:  # the format's messages may be the record's own dicts
                    message.clear()
                    message.update(now)
            if truncated:
                agent_format.store(record, messages, truncated)
                changed = True
        if index in plan.copies:
            changed = agent_format.shrink_copies(record, plan.outputs) or changed
        return changed

    return change


def view_tokens_after(
    handle: BinaryIO, session: SessionIndex, plan: MicroPlan, change: Callable[[int, Record], bool]
) -> int:
    """The view's estimate once the plan is done (the changed view records read again)."""
    quarters = session.view_quarters
    for index, part in session.view_pieces:
        if plan.touches(index):
            record = read_record(handle, session.infos, index, session.source)
            change(index, record)
            now = estimate_quarters(pick(session.format.messages(record), part))
            quarters += now - session.infos.piece_quarters(index, part)
    return quarters_to_tokens(quarters)


# --- one file through one command ----------------------------------------------------------------


@dataclass(frozen=True)
class Rewrite:
    """What pass 2 does to a session file: the records to change (and how), the records to add."""

    change: Callable[[int, Record], bool] | None = None
    touched: LineSet = field(default_factory=LineSet)  # the records ``change`` may change
    append: tuple[Record, ...] = ()

    @property
    def changes_anything(self) -> bool:
        return bool(len(self.touched) or self.append)


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
    ) -> None:
        self.handle = handle
        self.index = index
        self.measured = index.measured
        self.around = around
        self.counter = counter_named(settings.tokenizer)
        self.plan = plan_micro(index, settings)
        self.change = micro_change(index, self.plan, settings)
        self.micro_done = False
        self.appended: tuple[Record, ...] = ()
        self.summary: str | None = None
        self._input_tokens: int | None = None

    # --- what decide asks ---

    def tokens(self) -> int:
        if self.appended:  # after a summary the view is what was appended
            return self._appended_tokens(self.appended)
        if not self.micro_done:
            return self.input_tokens()
        if not self.plan.touches_view(self.index):
            return self.input_tokens()
        if self.counter is HEURISTIC:
            return view_tokens_after(self.handle, self.index, self.plan, self.change)
        return view_tokens(self.handle, self.index, self.counter, self._micro_first)

    def micro(self) -> int:
        self.micro_done = True
        return self.plan.results

    def history(self) -> list[Message]:
        # old results as markers already: they take little memory
        return load_view(self.handle, self.index, self._micro_first)

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
        touched = self.plan.records | self.plan.copies if self.micro_done else LineSet()
        if not len(touched) and not self.appended:
            return UNCHANGED
        return Rewrite(self.change, touched, self.appended)

    # --- inside ---

    def _micro_first(self, index: int, record: Record) -> None:
        """``change`` for the records the plan touches: the view as micro compaction leaves it."""
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
            (read_record(handle, index.infos, number, index.source), part)
            for view_number in pending.indexes
            for number, part in index.view[view_number].pieces()
        ]
        last = index.view[-1].records[-1] if index.view else None
        compaction = Compaction(
            summary=summary,
            messages=messages,
            view=index.view,
            pending=pending_records,
            last=read_record(handle, index.infos, last, index.source) if last is not None else None,
            infos=index.infos,
            tokens_before=self.input_tokens(),
            now=self.around.now or datetime.now().astimezone(),
            path=self.around.path,
            new_id=self.around.new_id,
            read=lambda number: read_record(handle, index.infos, number, index.source),
        )
        return tuple(index.format.compaction_records(compaction))
