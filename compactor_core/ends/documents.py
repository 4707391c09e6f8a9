"""An input as ctxpack reads it: a conversation of messages, or an agent's session.

``open_document`` reads a source and tells which it is (SPEC §8.1: from the content, or as
``--format`` says). Every kind answers the same questions, so every command treats them alike:
their estimate, their breakdown, the ``Subject`` a command is decided on (``pipeline.decide``),
and the bytes of the result, as a stream. A session file is indexed, never held whole; a
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
from ..conversation.formats import UTF8_BOM, Conversation, dump, parse
from .sources import LocalFile, RemoteObject, Source

if TYPE_CHECKING:
    from datetime import datetime
    from pathlib import Path

    from ..compaction.pipeline import MessagesSubject, Subject
    from ..session_files.base import AgentFormat
    from ..session_files.compact import SessionSubject
    from ..session_files.index import SessionIndex
    from ..session_files.stores import SessionStore
    from ..settings import RunSettings
    from ..snapshots.base import Details

MESSAGES, AUTO = defaults.MESSAGES_FORMAT, defaults.AUTO_FORMAT
_SNIFF_BYTES = 4096


class _Read:
    """Where a document came from, when it is a local file (set by ``open_document``)."""

    path: str | None = None  # the real file, symbolic links resolved
    status: os.stat_result | None = None  # its status when it was opened
    opened: int | None = None  # its descriptor, open while the document is: the inode read
    version: str = ""  # which version of the input it is (an object's ETag), if known
    rewrites_itself = False  # changed in place by itself (a database), not replaced by a file

    def busy(self, rules: RunSettings) -> str | None:
        """Why its agent is using it now, by the agent's own signs (beyond the file's)."""
        return None

    def write_in_place(self, subject: Subject, tokens: int | None, run: RunSettings) -> str | None:
        """Change itself in place (where ``rewrites_itself``); a warning line, if any."""
        raise NotImplementedError(f"{type(self).__name__} is replaced, it does not rewrite itself")


class MessagesDocument(_Read):
    """A conversation of messages (SPEC §6): an array, a request envelope, or JSONL."""

    guarded = False  # no agent is writing it: the in-use rules are for session files

    def __init__(self, data: bytes, label: str) -> None:
        self.data = data
        self.label = label
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
        return breakdown(conversation.messages, conversation.system, compat, counter)

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

    def result_chunks(self, subject: Subject, pretty: bool = False) -> Iterator[bytes]:
        """The result, written anew (a filter's output: ``--pretty`` applies)."""
        yield dump(subject.result, pretty)  # type: ignore[attr-defined]

    def input_chunks(self) -> Iterator[bytes]:
        """The input exactly as it was read."""
        yield self.data

    def after_replace(self, path: Path) -> str | None:
        return None


class SessionDocument(_Read):
    """An agent's session file (SPEC §8), open for reading: indexed when first needed."""

    guarded = True  # its agent may be writing it: never rewritten while in use (SPEC §8.4)

    def __init__(self, handle: BinaryIO, agent_format: AgentFormat, label: str) -> None:
        self.handle = handle
        self.format = agent_format
        self.label = label
        self._index: SessionIndex | None = None

    @property
    def shape(self) -> str:
        return self.format.name

    def index(self, measure: bool = True) -> SessionIndex:
        """Pass 1 over the file; without ``measure`` the records' estimates are skipped (a micro
        compaction whose figures nobody asked for runs at nearly the speed of reading)."""
        if self._index is None or (measure and not self._index.measured):
            from ..session_files.index import index_session

            self._index = index_session(self.handle, self.format, self.label, measure=measure)
        return self._index

    def tokens(self, counter: Counter = HEURISTIC, compat: bool = False) -> int:
        from ..session_files.index import view_tokens

        return view_tokens(self.handle, self.index(), counter)

    def breakdown(self, counter: Counter = HEURISTIC, compat: bool = False) -> dict[str, Any]:
        """The view's breakdown, and the file's make-up (``estimate --json``)."""
        from ..session_files.index import load_view

        index = self.index()
        return {
            **breakdown(load_view(self.handle, index), counter=counter),
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

        from ..session_files.compact import SessionSubject, Surroundings

        # the images' marker needs each record's images, counted with its estimate
        index = self.index(measure=run.measure or run.may_summarize or run.settings.images)
        around = Surroundings(now, Path(path) if path else None)
        if run.command != "rescue":
            return SessionSubject(self.handle, index, run.settings, around)
        from ..session_files.rescue import plan_rescue

        index, repairs = plan_rescue(self.handle, index, run.settings.threshold, now)
        return SessionSubject(self.handle, index, run.settings, around, repairs)

    def details(self, tokens: int | None) -> Details:
        from ..snapshots.base import Details

        return Details(self.format.name, len(self.index(measure=False).view), tokens)

    def result_chunks(self, subject: Subject, pretty: bool = False) -> Iterator[bytes]:
        from ..session_files.compact import SessionSubject
        from ..session_files.write import session_chunks

        assert isinstance(subject, SessionSubject)
        return session_chunks(self.handle, subject.index, subject.rewrite())

    def input_chunks(self) -> Iterator[bytes]:
        from ..session_files.write import UNCHANGED, session_chunks

        return session_chunks(self.handle, self.index(measure=False), UNCHANGED)

    def after_replace(self, path: Path) -> str | None:
        """Keep the agent's own index of the session right, now that its file was replaced."""
        return self.format.after_replace(path)


class StoreDocument(SessionDocument):
    """A session kept in one JSON document (Cline) or in a database (OpenCode).

    Its store reads the session's records, and they are indexed as the lines of a session file
    held in memory, so every command does to it what it does to a session file. The result goes
    back through the store: a document is written anew (and replaced as any file is); a
    database changes itself in one transaction (``write_in_place``).
    """

    def __init__(self, store: SessionStore, agent_format: AgentFormat, label: str) -> None:
        super().__init__(store.lines(), agent_format, label)
        self.store = store

    @property
    def rewrites_itself(self) -> bool:  # type: ignore[override]
        return self.store.rewrites_itself

    @property
    def guarded(self) -> bool:  # type: ignore[override]
        """A document is guarded as any session file; a database by its own rules (``busy``):
        its file's idle time is any session's, and another ctxpack may hold it a moment."""
        return not self.store.rewrites_itself

    def result_chunks(self, subject: Subject, pretty: bool = False) -> Iterator[bytes]:
        return self.store.result(self._result(subject))

    def input_chunks(self) -> Iterator[bytes]:
        return self.store.original()

    def write_in_place(self, subject: Subject, tokens: int | None, run: RunSettings) -> str | None:
        """Change the store itself, its original kept first; a warning line, if any."""
        return self.store.write_in_place(self._result(subject), run, self.details(tokens))

    def busy(self, rules: RunSettings) -> str | None:
        return self.store.busy(rules)

    def _result(self, subject: Subject):  # -> stores.Result
        from ..session_files.compact import SessionSubject
        from ..session_files.stores import rewritten

        assert isinstance(subject, SessionSubject)
        return rewritten(self.handle, subject.index, subject.rewrite(), self.store.records)


Document = MessagesDocument | SessionDocument


@contextlib.contextmanager
def open_document(source: Source, format_name: str = AUTO) -> Iterator[Document]:
    """The source as a document; a session file stays open while the block runs.

    A local file's document knows the file it was read from (``path``, links resolved) and its
    status when it was opened (``status``): what a rewrite in place checks against.
    """
    with source.open() as handle:
        session = source.session if isinstance(source, LocalFile) else None
        document = _read(handle, source.label, format_name, session)
        if isinstance(source, LocalFile):
            document.path = handle.name
            document.opened = handle.fileno()
            document.status = status = os.fstat(handle.fileno())
            document.version = file_version(status)
        elif isinstance(source, RemoteObject):
            document.version = source.version
        yield document


def file_version(status: os.stat_result) -> str:
    """A local file's version, as an output made from it records it."""
    return f"{status.st_size}-{status.st_mtime_ns}"


def _read(handle: BinaryIO, label: str, format_name: str, session: str | None) -> Document:
    if format_name == MESSAGES or (format_name == AUTO and _is_an_array(handle)):
        return MessagesDocument(handle.read(), label)
    from ..session_files.registry import detect, detect_stored

    stored = detect_stored(handle, format_name, label)
    if stored is not None:
        return StoreDocument(stored.open_store(handle, label, session), stored, label)
    agent_format = detect(handle, format_name, label)
    if agent_format is None:
        return MessagesDocument(handle.read(), label)
    return SessionDocument(handle, agent_format, label)


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
