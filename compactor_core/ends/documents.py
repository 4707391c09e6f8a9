"""An input as ctxpack reads it: a conversation of messages, or an agent's session.

``open_document`` reads a source and tells which it is (SPEC §8.1: from the content, or as
``--format`` says). Every kind answers the same questions, so every command treats them alike:
their estimate, their breakdown, the ``Subject`` a command is decided on (``pipeline.decide``),
who keeps its snapshots, and how its result is written over it in place. Each is built whole,
from what was read and where (its ``origin``). A session file is indexed, never held whole; a
conversation of messages is parsed in memory; a session an agent keeps in one JSON document or
in a database (``StoreDocument``) is read whole, its records seen as a session file's lines.

A JSON array (the commonest input, piped on every agent turn) is told without looking for an
agent's format at all: the session machinery is imported only for a file that may be one.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, BinaryIO

from .. import defaults
from ..compaction.estimate import HEURISTIC, Counter, breakdown, estimate
from ..conversation.formats import UTF8_BOM, Conversation, parse
from .origins import Origin, Written
from .sources import Source

if TYPE_CHECKING:
    from datetime import datetime
    from pathlib import Path

    from ..compaction.outcome import Outcome
    from ..compaction.pipeline import MessagesSubject, SnapshotKeeper, Subject
    from ..conversation.tool_rules import Rules
    from ..session_files.base import AgentFormat
    from ..session_files.compact import SessionSubject, StoredSubject, Surroundings
    from ..session_files.index import SessionIndex
    from ..session_files.rescue import Repairs
    from ..session_files.stores import SessionStore
    from ..settings import RunSettings
    from ..snapshots.base import Details, Snapshots

MESSAGES, AUTO = defaults.MESSAGES_FORMAT, defaults.AUTO_FORMAT
_SNIFF_BYTES = 4096


class _Document:
    """What every kind of document has: where it was read from, and what it does by default."""

    guarded = False  # an agent may be writing it: never rewritten while in use (SPEC §8.4)
    in_memory = False  # held whole in memory: its result is compared and hashed whole

    def __init__(self, origin: Origin) -> None:
        self.origin = origin
        self.label = origin.label

    def busy(self, rules: RunSettings) -> str | None:
        """Why its agent is using it now, by the agent's own signs (beyond the file's)."""
        return None

    def check_in_place(self, run: RunSettings) -> None:
        """Refuse to be written over where it may not be (``InPlace.prepare``)."""
        self.origin.check_in_place(self, run)

    def write_in_place(
        self, subject: Subject, outcome: Outcome, run: RunSettings, sync: bool, settings_key: str
    ) -> Written:
        """Write the result over the input, where it was read from (``InPlace.write``)."""
        return self.origin.write_back(self, subject, outcome, run, sync, settings_key)

    def snapshot_keeper(
        self, snapshots: Snapshots, session_id: str, run: RunSettings, keeps_input: bool
    ) -> SnapshotKeeper | None:
        """Who keeps the input and the result in ``snapshots`` when a summary replaces the
        history (SPEC §3.3); None by default: a session file's summary is appended to it, so
        its result is the file itself, and its original is kept when the file is replaced."""
        return None

    def after_replace(self, path: Path) -> str | None:
        """What the input's agent needs once its file was replaced; a warning line, if any."""
        return None


class MessagesDocument(_Document):
    """A conversation of messages (SPEC §6): an array, a request envelope, or JSONL."""

    in_memory = True

    def __init__(self, data: bytes, origin: Origin) -> None:
        super().__init__(origin)
        self.data = data
        self._conversation: Conversation | None = None

    @property
    def conversation(self) -> Conversation:
        """The parsed conversation; InputError naming the place if it is not a valid one."""
        if self._conversation is None:
            self._conversation = parse(self.data, self.label)
        return self._conversation

    @property
    def shape(self) -> str:
        return self.conversation.shape

    def tokens(self, counter: Counter = HEURISTIC, compat: bool = False) -> int:
        conversation = self.conversation
        return estimate(conversation.messages, conversation.system, compat, counter)

    def breakdown(self, counter: Counter = HEURISTIC, compat: bool = False) -> dict[str, Any]:
        conversation = self.conversation
        return {
            **breakdown(conversation.messages, conversation.system, compat, counter),
            "stale": _stale_report(conversation.messages, counter),
        }

    def subject(
        self, run: RunSettings, now: datetime | None = None, path: str | None = None
    ) -> MessagesSubject:
        from ..compaction.pipeline import (
            MessagesSubject,  # not for an estimate: it needs no pipeline
        )

        return MessagesSubject(self.conversation, run.settings)

    def details(self, tokens: int | None) -> Details:
        from ..snapshots.base import Details

        return Details(self.shape, len(self.conversation.messages), tokens)

    def input_chunks(self) -> Iterator[bytes]:
        """The input exactly as it was read."""
        yield self.data

    def snapshot_keeper(
        self, snapshots: Snapshots, session_id: str, run: RunSettings, keeps_input: bool
    ) -> SnapshotKeeper:
        """Its input (unless the destination keeps it: in place, the original is linked when
        the file is replaced) is kept as it was read before the model is asked, its result
        after (SPEC §3.3)."""
        from pathlib import Path

        from ..compaction.pipeline import SnapshotKeeper

        original = None if keeps_input else self.data
        path = Path(self.origin.path) if self.origin.path else None
        return SnapshotKeeper(
            snapshots, session_id, self.conversation, run.settings, original, path
        )


class SessionDocument(_Document):
    """An agent's session file (SPEC §8), open for reading: indexed when first needed."""

    guarded = True

    def __init__(self, handle: BinaryIO, agent_format: AgentFormat, origin: Origin) -> None:
        super().__init__(origin)
        self.handle = handle
        self.format = agent_format
        self._index: SessionIndex | None = None

    @property
    def shape(self) -> str:
        return self.format.name

    def index(self, measure: bool = True, rules: Rules | None = None) -> SessionIndex:
        """Pass 1 over the file; without ``measure`` the records' estimates are skipped (a micro
        compaction whose figures nobody asked for runs at nearly the speed of reading); with
        ``rules`` (the tool rules) what each call touched is kept, for stale results."""
        done = self._index
        if done is None or not _indexed_for(done, measure, rules):
            from ..session_files.index import index_session

            if done is not None:  # indexed again: what it had, it has again
                measure = measure or done.measured
                rules = rules if rules is not None else _touch_rules(done)
            self._index = index_session(
                self.handle, self.format, self.label, measure=measure, rules=rules
            )
        return self._index

    def tokens(self, counter: Counter = HEURISTIC, compat: bool = False) -> int:
        from ..session_files.index import view_tokens

        return view_tokens(self.handle, self.index(), counter)

    def breakdown(self, counter: Counter = HEURISTIC, compat: bool = False) -> dict[str, Any]:
        """The view's breakdown, and the file's make-up (``estimate --json``)."""
        from ..session_files.index import load_view

        index = self.index()
        view = load_view(self.handle, index)
        return {
            **breakdown(view, counter=counter),
            "stale": _stale_report(view, counter),
            "format": self.format.name,
            "bytes": index.size,
            "records": index.records(),
            "lines": len(index.infos),
            "bytes_by_type": index.bytes_by_kind(),
        }

    def subject(
        self, run: RunSettings, now: datetime | None = None, path: str | None = None
    ) -> SessionSubject:
        """What ``run`` is decided on; ``now`` and ``path`` (the file the summary's records
        name) stamp what a full compaction appends."""
        from pathlib import Path

        from ..session_files.compact import Surroundings
        from ..session_files.rescue import NO_REPAIRS, plan_rescue

        # the images' marker needs each record's images, counted with its estimate
        measure = run.measure or run.may_summarize or run.settings.images
        index = self.index(measure, run.settings.touch_rules)
        around = Surroundings(now, Path(path) if path else None)
        repairs = NO_REPAIRS
        if run.command == "rescue":
            index, repairs = plan_rescue(self.handle, index, run.settings.threshold, now)
        return self._subject(index, run, around, repairs)

    def _subject(
        self, index: SessionIndex, run: RunSettings, around: Surroundings, repairs: Repairs
    ) -> SessionSubject:
        from ..session_files.compact import SessionSubject

        return SessionSubject(self.handle, index, run.settings, around, repairs)

    def details(self, tokens: int | None) -> Details:
        from ..snapshots.base import Details

        return Details(self.format.name, len(self.index(measure=False).view), tokens)

    def input_chunks(self) -> Iterator[bytes]:
        from ..session_files.write import UNCHANGED, session_chunks

        return session_chunks(self.handle, self.index(measure=False), UNCHANGED)

    def after_replace(self, path: Path) -> str | None:
        """Keep the agent's own index of the session right, now that its file was replaced."""
        return self.format.after_replace(path)


class StoreDocument(SessionDocument):
    """A session kept in one JSON document (Cline): replaced as any session file is.

    Its store reads the session's records, and they are indexed as the lines of a session file
    held in memory, so every command does to it what it does to a session file. The result goes
    back through the store (``StoredSubject``): the document written anew.
    """

    def __init__(self, store: SessionStore, agent_format: AgentFormat, origin: Origin) -> None:
        super().__init__(store.lines(), agent_format, origin)
        self.store = store

    def _subject(
        self, index: SessionIndex, run: RunSettings, around: Surroundings, repairs: Repairs
    ) -> StoredSubject:
        from ..session_files.compact import StoredSubject

        return StoredSubject(self.store, self.handle, index, run.settings, around, repairs)

    def input_chunks(self) -> Iterator[bytes]:
        return self.store.original()

    def busy(self, rules: RunSettings) -> str | None:
        return self.store.busy(rules)


class DatabaseDocument(StoreDocument):
    """A session kept in a database (OpenCode), which changes itself in one transaction.

    It is guarded by its own rules (``busy``), not by the file's: the database's idle time is
    any of its sessions', and another ctxpack may hold it a moment.
    """

    guarded = False

    def write_in_place(
        self,
        subject: StoredSubject,  # type: ignore[override]  (the subject it made: ``_subject``)
        outcome: Outcome,
        run: RunSettings,
        sync: bool,
        settings_key: str,
    ) -> Written:
        """Change the database itself, the session's original rows kept first."""
        details = self.details(outcome.tokens_before)
        return Written(warning=self.store.write_in_place(subject.stored_result(), run, details))


Document = MessagesDocument | SessionDocument


@contextlib.contextmanager
def open_document(source: Source, format_name: str = AUTO) -> Iterator[Document]:
    """The source as a document, built whole from what it read and where (its ``origin``: for a
    local file, the real file, its status when opened, and the descriptor); a session file
    stays open while the block runs."""
    with source.open() as handle:
        yield _read(handle, source.opened(handle), format_name)


def _read(handle: BinaryIO, origin: Origin, format_name: str) -> Document:
    label = origin.label
    if format_name == MESSAGES or (format_name == AUTO and _is_an_array(handle)):
        return MessagesDocument(handle.read(), origin)
    from ..session_files.registry import detect, detect_stored

    stored = detect_stored(handle, format_name, label)
    if stored is not None:
        store = stored.open_store(handle, label, origin.session)
        kind = DatabaseDocument if store.rewrites_itself else StoreDocument
        return kind(store, stored, origin)
    agent_format = detect(handle, format_name, label)
    if agent_format is None:
        return MessagesDocument(handle.read(), origin)
    return SessionDocument(handle, agent_format, origin)


def _is_an_array(handle: BinaryIO) -> bool:
    """A JSON array of messages, told without reading its (possibly only, huge) line.

    A file's first bytes are read beside its buffer (``pread``): reading them through it, then
    seeking back, makes the read of the whole file that follows copy it once more (40 ms of
    55 MB)."""
    try:
        start = os.pread(handle.fileno(), _SNIFF_BYTES, 0)
    except (AttributeError, OSError, io.UnsupportedOperation):  # in memory: no descriptor
        start = handle.read(_SNIFF_BYTES)
        handle.seek(0)
    return start.removeprefix(UTF8_BOM).lstrip().startswith(b"[")


def _indexed_for(index: SessionIndex, measure: bool, rules: Rules | None) -> bool:
    """Whether the index has what is asked: the records' estimates, the calls' touches by
    these rules."""
    return (index.measured or not measure) and (rules is None or _touch_rules(index) == rules)


def _touch_rules(index: SessionIndex) -> Rules | None:
    touches = index.infos.touches
    return touches.rules if touches is not None else None


def _stale_report(messages: list[Any], counter: Counter) -> dict[str, Any]:
    """``estimate --json``'s stale share (staleness.py, imported here: plain ``estimate``, run on
    every turn, never needs its rules and classes, ~6 ms to import)."""
    from ..compaction.staleness import stale_report

    return stale_report(messages, counter=counter)
