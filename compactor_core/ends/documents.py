"""An input as ctxpack reads it: a conversation of messages, or an agent's session.

``open_document`` reads a source and tells which it is (SPEC §8.1: from the content, or as
``--format`` says). Every kind answers the same questions, so every command treats them alike:
their estimate, their breakdown, the ``Subject`` a command is decided on (``pipeline.decide``),
who keeps its snapshots, and how its result is written over it in place. Each is built whole,
from what was read and where (its ``origin``). A session file is indexed, never held whole; a
conversation of messages is parsed in memory; a session an agent keeps in one JSON document or
in a database (``StoreDocument``) is read whole, its records seen as a session file's lines
(those kinds are in ``session_documents.py``).

A JSON array (the commonest input, piped on every agent turn) is told without looking for an
agent's format at all: the session machinery is imported only for a file that may be one.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, BinaryIO, TypeAlias

from .. import defaults
from ..compaction.estimate import HEURISTIC, Counter, breakdown, estimate
from ..conversation.formats import UTF8_BOM, Conversation, parse
from .document_base import BaseDocument, stale_share
from .sources import Source

if TYPE_CHECKING:
    from datetime import datetime

    from ..compaction.pipeline import MessagesSubject, SnapshotKeeper
    from ..settings import RunSettings
    from ..snapshots.base import Details
    from .origins import Origin
    from .session_documents import SessionDocument

MESSAGES, AUTO = defaults.MESSAGES_FORMAT, defaults.AUTO_FORMAT
_SNIFF_BYTES = 4096


class MessagesDocument(BaseDocument):
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
            "stale": stale_share(conversation.messages, counter),
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
        self, session_id: str, run: RunSettings, keeps_input: bool
    ) -> SnapshotKeeper | None:
        """Its input (unless the destination keeps it: in place, the original is linked when
        the file is replaced) is kept in the run's snapshot store as it was read before the
        model is asked, its result after (SPEC §3.3); no one keeps them without a store."""
        if run.snapshots is None:
            return None
        from pathlib import Path

        from ..compaction.pipeline import SnapshotKeeper

        original = None if keeps_input else self.data
        path = Path(self.origin.path) if self.origin.path else None
        return SnapshotKeeper(
            run.snapshots, session_id, self.conversation, run.settings, original, path
        )


Document: TypeAlias = "MessagesDocument | SessionDocument"


@contextlib.contextmanager
def open_document(source: Source, format_name: str = AUTO) -> Iterator[Document]:
    """The source as a document, built whole from what it read and where (its ``origin``: for a
    local file, the real file, its status when opened, and the descriptor); a session file
    stays open while the block runs."""
    with source.open() as handle:
        yield _read(handle, source.opened(handle), format_name)


def _read(handle: BinaryIO, origin: Origin, format_name: str) -> Document:
    if format_name == MESSAGES or (format_name == AUTO and _is_an_array(handle)):
        return MessagesDocument(handle.read(), origin)
    from .session_documents import read_session  # the agents' formats: not for an array

    session = read_session(handle, origin, format_name)
    return session if session is not None else MessagesDocument(handle.read(), origin)


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
