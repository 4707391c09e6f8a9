"""Where a document was read from, and so how its result is written back over it (in place).

A source, once opened, gives its ``Origin``: standard input was read from memory (it cannot be
written in place), a local file from its real path through a descriptor (its status then is
what a rewrite checks against), an object from its URL at a version (its ETag). Each origin
knows what writing over its input takes: a local file is checked (writable, not in use by its
agent) and replaced, its original kept; an object is rewritten once nobody replaced it meanwhile,
its original saved first (both in ``in_place.py``, loaded only then). A document that changes
itself (a database) says so itself (``documents.DatabaseDocument``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import UsageError

if TYPE_CHECKING:
    from ..compaction.outcome import Outcome
    from ..compaction.pipeline import Subject
    from ..settings import RunSettings
    from .in_place import Document
    from .written import Written


def file_version(status: os.stat_result) -> str:
    """A local file's version, as an output made from it records it."""
    return f"{status.st_size}-{status.st_mtime_ns}"


@dataclass(frozen=True)
class InMemory:
    """Bytes already read, such as standard input: nothing to write back over."""

    label: str
    version: str = ""
    path: None = None  # no file: a summary names none, snapshots record none
    session: None = None
    mode: None = None  # an output made from it gets the mode of a new file

    def check_in_place(self, document: Document, run: RunSettings) -> None:
        raise self._refused()

    def write_back(
        self, document: Document, subject: Subject, outcome: Outcome, run: RunSettings, *how: Any
    ) -> Written:
        raise self._refused()

    def _refused(self) -> UsageError:
        return UsageError(f"{self.label}: only a file or an object can be compacted in place")


@dataclass(frozen=True)
class OpenedFile:
    """A local file, opened by its real path (links resolved): ``descriptor`` stays open while
    the document is read, so the inode read is the one replaced or kept."""

    label: str
    path: str
    status: os.stat_result  # when it was opened: what a rewrite in place checks against
    descriptor: int
    session: str | None = None  # one session of a database file (``FILE#SESSION``)

    @property
    def version(self) -> str:
        return file_version(self.status)

    @property
    def mode(self) -> int:
        """Its permission bits, which a file mirroring it in an output folder gets."""
        return self.status.st_mode & 0o7777

    def check_in_place(self, document: Document, run: RunSettings) -> None:
        """Refuse a read-only file, and a session file its agent is using (SPEC §8.4)."""
        from .in_place import check_file

        check_file(self, document, run)

    def write_back(
        self,
        document: Document,
        subject: Subject,
        outcome: Outcome,
        run: RunSettings,
        sync: bool,
        settings_key: str,
    ) -> Written:
        """Replace the file by its result, the original kept (``disk.replace``)."""
        from .in_place import replace_file

        return replace_file(self, document, subject, outcome, run, sync)


@dataclass(frozen=True)
class ReadObject:
    """An object at a URL, read at ``version`` (its ETag, when known)."""

    label: str
    url: str
    version: str = ""
    path: None = None
    session: None = None
    mode: None = None

    def check_in_place(self, document: Document, run: RunSettings) -> None:
        pass  # nothing to check before it is read: its version is checked before the write

    def write_back(
        self,
        document: Document,
        subject: Subject,
        outcome: Outcome,
        run: RunSettings,
        sync: bool,
        settings_key: str,
    ) -> Written:
        """Save the original, then rewrite the object if nobody replaced it meanwhile."""
        from .in_place import rewrite_object

        return rewrite_object(self, document, subject, outcome, run, settings_key)


Origin = InMemory | OpenedFile | ReadObject
