"""An agent's session as a document: a session file (indexed, never held whole), or a session its
agent keeps in one JSON document or in a database (``StoreDocument``: read whole, its records seen
as a session file's lines).

``documents.open_document`` comes here only for an input that may be an agent's (not a JSON array
of messages): ``read_session`` tells which agent's, from the content or as ``--format`` says.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from ..compaction.estimate import HEURISTIC, Counter, breakdown
from ..session_files.index import index_session, load_view, view_tokens
from ..session_files.registry import detect, detect_stored
from ..session_files.write import UNCHANGED, session_chunks
from .document_base import BaseDocument, stale_share
from .written import Written

if TYPE_CHECKING:
    from datetime import datetime

    from ..compaction.outcome import Outcome
    from ..conversation.tool_rules import Rules
    from ..session_files.base import AgentFormat
    from ..session_files.compact import SessionSubject, StoredSubject, Surroundings
    from ..session_files.index import SessionIndex
    from ..session_files.rescue import Repairs
    from ..session_files.stores import SessionStore
    from ..settings import RunSettings
    from ..snapshots.base import Details
    from .origins import Origin


def read_session(handle: BinaryIO, origin: Origin, format_name: str) -> SessionDocument | None:
    """The agent's session that ``handle`` holds; None if it is no agent's (then it is a
    conversation of messages)."""
    label = origin.label
    stored = detect_stored(handle, format_name, label)
    if stored is not None:
        store = stored.open_store(handle, label, origin.session)
        kind = DatabaseDocument if store.rewrites_itself else StoreDocument
        return kind(store, stored, origin)
    agent_format = detect(handle, format_name, label)
    return None if agent_format is None else SessionDocument(handle, agent_format, origin)


class SessionDocument(BaseDocument):
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
            if done is not None:  # indexed again: what it had, it has again
                measure = measure or done.measured
                rules = rules if rules is not None else _touch_rules(done)
            self._index = index_session(
                self.handle, self.format, self.label, measure=measure, rules=rules
            )
        return self._index

    def tokens(self, counter: Counter = HEURISTIC, compat: bool = False) -> int:
        return view_tokens(self.handle, self.index(), counter)

    def breakdown(self, counter: Counter = HEURISTIC, compat: bool = False) -> dict[str, Any]:
        """The view's breakdown, and the file's make-up (``estimate --json``)."""
        index = self.index()
        view = load_view(self.handle, index)
        return {
            **breakdown(view, counter=counter),
            "stale": stale_share(view, counter),
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
        from ..session_files.compact import Surroundings  # with full compaction: 14 ms
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


def _indexed_for(index: SessionIndex, measure: bool, rules: Rules | None) -> bool:
    """Whether the index has what is asked: the records' estimates, the calls' touches by
    these rules."""
    return (index.measured or not measure) and (rules is None or _touch_rules(index) == rules)


def _touch_rules(index: SessionIndex) -> Rules | None:
    touches = index.infos.touches
    return touches.rules if touches is not None else None
