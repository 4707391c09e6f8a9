"""Micro, full and auto compaction of a session file: what ``pipeline.decide`` works on.

Micro is planned from the index (micro_plan.py); the records it touches are changed as they are
read and as they are written. Full: the view's messages (old results already markers, so they
take little memory) go to the core's full compaction; its summary and the pending turn it set
aside become the records the format appends. The file's lines before them stay as they are.
``rescue``'s repairs (rescue.py) come before micro's changes, in the same pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

from ..compaction.estimate import HEURISTIC, estimate, estimate_quarters, quarters_to_tokens
from ..compaction.full import FullResult, PendingTurn
from ..compaction.tokenizers import counter as counter_named
from ..conversation.formats import Message
from ..settings import Settings
from .base import Compaction, Record
from .index import SessionIndex, load_view, pick, read_record, view_tokens
from .keys import LineSet
from .micro_plan import MicroChange, plan_micro
from .rescue import NO_REPAIRS, Repairs
from .stores import Result, SessionStore, rewritten
from .write import UNCHANGED, Rewrite, session_chunks


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
            record = read_record(handle, session.infos, index, session.source)
            change(index, record)
            now = estimate_quarters(pick(session.format.messages(record), part))
            quarters += now - session.infos.piece_quarters(index, part)
    return quarters_to_tokens(quarters)


# --- one file through one command ----------------------------------------------------------------


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
        self.plan = plan_micro(index, settings, self._read)
        self.change = MicroChange(index, self.plan, settings)
        self.micro_done = False
        self.repairs = repairs  # rescue's, made before micro's (``repair``)
        self.repaired = False
        self.appended: tuple[Record, ...] = ()
        self.kept: tuple[Record, ...] = ()  # records the compaction keeps where they are
        self.summary: str | None = None
        self._input_tokens: int | None = None

    # --- what decide asks ---

    def tokens(self) -> int:
        if self.appended:  # after a summary the view is what was appended, and what it keeps
            return self._appended_tokens((*self.appended, *self.kept))
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
        compaction = self._compaction(compacted.summary, compacted.messages, compacted.pending)
        self.appended = tuple(self.index.format.compaction_records(compaction))
        self.kept = tuple(self.index.format.kept_in_place(compaction))
        return self.tokens()

    def tokens_without_summary(self, pending: PendingTurn) -> int:
        compaction = self._compaction("", [], pending)
        agent_format = self.index.format
        return self._appended_tokens(
            (*agent_format.compaction_records(compaction), *agent_format.kept_in_place(compaction))
        )

    def for_the_cache(self, provider: Any, keeper: Any, dry_run: bool) -> None:
        """None: a session file keeps the every-turn rules. Its agent resumes it after being
        idle, when the provider's cache has expired anyway, so nothing is saved by waiting."""
        return None

    # --- what the writer needs ---

    def originals(self) -> list[Any]:
        return self.change.originals

    def result_chunks(self, pretty: bool = False) -> Iterator[bytes]:
        """The new file: its lines as they were, those changed changed, the records appended."""
        return session_chunks(self.handle, self.index, self.rewrite())

    def input_tokens(self) -> int:
        if self._input_tokens is None:
            self._input_tokens = view_tokens(self.handle, self.index, self.counter)
        return self._input_tokens

    def rewrite(self) -> Rewrite:
        repairs = self.repairs if self.repaired else NO_REPAIRS
        touched = self.plan.touched if self.micro_done else LineSet()
        if repairs.edits:
            touched = touched | repairs.touched(len(self.index.infos))
        if not len(touched) and not self.appended and not repairs.insert and not repairs.dropped:
            return UNCHANGED
        return Rewrite(self._changed, touched, self.appended, repairs.insert, repairs.dropped)

    # --- inside ---

    def _images_marked(self) -> int:
        """The images that get a marker, counted on the records (an image inside a result that
        gets the marker goes with it, and is not counted)."""
        marked = 0
        for index in self.plan.images.records:
            record = read_record(self.handle, self.index.infos, index, self.index.source)
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

    def _read(self, number: int) -> Record:
        """A record read again from the input, as pass 1 indexed it."""
        return read_record(self.handle, self.index.infos, number, self.index.source)

    def _appended_tokens(self, records: tuple[Record, ...]) -> int:
        agent_format = self.index.format
        messages = [message for record in records for message in agent_format.messages(record)]
        return estimate(messages, counter=self.counter)

    def _compaction(
        self, summary: str, messages: list[Message], pending: PendingTurn
    ) -> Compaction:
        index, handle = self.index, self.handle
        pending_records = [
            (read_record(handle, index.infos, number, index.source), part)
            for view_number in pending.indexes
            for number, part in index.view[view_number].pieces()
        ]
        last = index.view[-1].records[-1] if index.view else None
        return Compaction(
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
            read=self._read,
        )


class StoredSubject(SessionSubject):
    """A session kept in a document or a database (stores.py), as ``decide`` sees it: the same
    as a session file's; its result goes back through its store."""

    def __init__(self, store: SessionStore, *subject: Any) -> None:
        super().__init__(*subject)
        self.store = store

    def result_chunks(self, pretty: bool = False) -> Iterator[bytes]:
        return self.store.result(self.stored_result())

    def stored_result(self) -> Result:
        """The session's records once the command is done (what a database writes in place)."""
        return rewritten(self.handle, self.index, self.rewrite(), self.store.records)
