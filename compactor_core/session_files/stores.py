"""Sessions an agent keeps elsewhere than in a JSONL file: one JSON document, or a database.

Cline writes each session as one JSON document (``<id>.messages.json``), OpenCode keeps every
session of its user as rows of one SQLite database. Their formats are ``StoredFormat``s: an
``AgentFormat`` (the records' view, messages, changes and compaction, as for any agent) that also
opens its store. The store gives the session's records; the framework reads them as the lines
of a session file held in memory (``SessionStore.lines``), so the index, the view, micro and full
compaction and ``check`` are the same code for every agent. What differs is where the result
goes: a document is written anew, as a file is (the original kept by a hard link, ``restore``
puts it back byte for byte); a database changes itself, in one transaction
(``rewrites_itself``), keeping the session's original rows in the snapshot store first.

An input names a session of a database as ``FILE#SESSION`` (``opencode.db#ses_…``); the
database itself stands for all of its sessions, each done and reported on its own.
"""

from __future__ import annotations

import io
import os
from abc import abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, ClassVar

from ..conversation.formats import dumps
from ..disk.database_names import SQLITE_HEADER
from ..errors import UsageError
from .base import AgentFormat, Record
from .index import read_record

if TYPE_CHECKING:
    from ..settings import RunSettings
    from ..snapshots.base import Details
    from .index import SessionIndex
    from .write import Rewrite

DOCUMENT, DATABASE = "document", "database"


@dataclass(frozen=True)
class Result:
    """A session after a command: its records (changed ones changed) and the records appended."""

    records: list[Record]
    changed: frozenset[int]  # positions (in ``records``) of the records that changed
    appended: tuple[Record, ...]


class SessionStore:
    """One session of a stored format, open for reading: its records, and where a result goes.

    A subclass reads ``records`` when it is made; ``result`` (a document) or ``write_in_place``
    (a database) puts a ``Result`` back.
    """

    rewrites_itself: ClassVar[bool] = False  # True: changed in place by a transaction
    records: list[Record]
    label: str

    def lines(self) -> BinaryIO:
        """The records as JSONL, one a line: what the session framework indexes and reads."""
        return io.BytesIO(b"".join(dumps(record) + b"\n" for record in self.records))

    def result(self, result: Result) -> Iterator[bytes]:
        """The bytes of the session's new file."""
        raise UsageError(
            f"{self.label}: a session in a database is changed in place only: use output=None"
        )

    def original(self) -> Iterator[bytes]:
        """The bytes of the session's file as it was read."""
        raise UsageError(
            f"{self.label}: a session in a database is changed in place only: use output=None"
        )

    def write_in_place(self, result: Result, run: RunSettings, details: Details) -> str | None:
        """Change the store itself, its original (``details`` of it) kept first in
        ``run.snapshots`` and beside it with ``run.backup_suffix``; a warning line, if any.
        Only where ``rewrites_itself``."""
        raise NotImplementedError

    def busy(self, rules: RunSettings) -> str | None:
        """Why the agent is using the session now (its own signs, beyond the file's idle time
        and writers, which every session file is checked for); None when it is not, or when
        ``rules.force`` overrides the sign. Raises SessionInUse where nothing overrides it."""
        return None


class StoredFormat(AgentFormat):
    """A format whose sessions are kept in a document or a database rather than in lines."""

    kept_as: ClassVar[str]  # DOCUMENT or DATABASE
    store_type: ClassVar[type[SessionStore]]  # what ``open_store`` opens

    def claims(self, record: Any) -> bool:
        return False  # never a line of a JSONL file

    def claims_document(self, value: Any) -> bool:
        """Whether this parsed JSON document is one of this format's sessions."""
        return False

    @abstractmethod
    def open_store(self, handle: BinaryIO, label: str, session: str | None) -> SessionStore:
        """The session in the open file (``session``: which one, in a database)."""

    def sessions_in(self, path: Path) -> list[str]:
        """The sessions a database holds, oldest first (a document holds one: [])."""
        return []


def rewritten(
    handle: BinaryIO, index: SessionIndex, rewrite: Rewrite, records: Sequence[Record]
) -> Result:
    """The session's records once ``rewrite`` is done (what pass 2 writes for a session file)."""
    new = list(records)
    changed = set()
    if rewrite.change is not None:
        for position in sorted(rewrite.touched):
            record = read_record(handle, index.infos, position, index.source)
            if rewrite.change(position, record):
                new[position] = record
                changed.add(position)
    return Result(new, frozenset(changed), rewrite.append)


def is_database(handle: BinaryIO) -> bool:
    return peek(handle, len(SQLITE_HEADER)) == SQLITE_HEADER


def peek(handle: BinaryIO, size: int) -> bytes:
    """The first ``size`` bytes, read beside the file's buffer where it has a descriptor (read
    through it, then sought back, the whole read that follows would copy the file once more)."""
    try:
        return os.pread(handle.fileno(), size, 0)
    except (AttributeError, OSError, io.UnsupportedOperation):  # in memory: no descriptor
        start = handle.read(size)
        handle.seek(0)
        return start
