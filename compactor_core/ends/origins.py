"""Where a document was read from, and so how its result is written back over it (in place).

A source, once opened, gives its ``Origin``: standard input was read from memory (it cannot be
written in place), a local file from its real path through a descriptor (its status then is
what a rewrite checks against), an object from its URL at a version (its ETag). Each origin
knows what writing over its input takes: a local file is checked (writable, not in use by its
agent) and replaced, its original kept (``disk.replace``); an object is rewritten once nobody
replaced it meanwhile, its original saved first. A document that changes itself (a database)
says so itself (``documents.DatabaseDocument``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from ..errors import OutputError, SessionInUse, UsageError

if TYPE_CHECKING:  # pathlib too: a filter's input does not need it
    from pathlib import Path

    from ..compaction.outcome import Outcome
    from ..compaction.pipeline import Subject
    from ..settings import RunSettings
    from ..snapshots.base import Details, Snapshots


class Document(Protocol):
    """What an origin asks of the document read from it (``documents.py`` has each kind)."""

    guarded: bool  # an agent may be writing it: never rewritten while in use
    in_memory: bool  # held whole in memory

    def busy(self, rules: RunSettings) -> str | None: ...

    def details(self, tokens: int | None) -> Details: ...

    def input_chunks(self) -> Iterator[bytes]: ...

    def after_replace(self, path: Path) -> str | None: ...


class Written(NamedTuple):
    folder: str | None = None  # the folder a file was written into, for its fsync
    warning: str | None = None  # the agent's own index of the session could not be updated, …
    copied: str | None = None  # why the original was copied into the snapshots, not linked


NOTHING_WRITTEN = Written()
# What an object written by a batch records of its making (S3 metadata): a re-run skips it.
SOURCE, SETTINGS, TOKENS = "ctxpack-source", "ctxpack-settings", "ctxpack-tokens"


def file_version(status: os.stat_result) -> str:
    """A local file's version, as an output made from it records it."""
    return f"{status.st_size}-{status.st_mtime_ns}"


def record(source_version: str, settings_key: str, outcome: Outcome) -> dict[str, str]:
    """What an object records of its making: the input's version, the settings, the tokens."""
    tokens = f"{outcome.tokens_before} {outcome.tokens_after}"
    return {SOURCE: source_version, SETTINGS: settings_key, TOKENS: tokens}


@dataclass(frozen=True)
class InMemory:
    """Bytes already read, such as standard input: nothing to write back over."""

    label: str
    version: str = ""
    path: None = None  # no file: a summary names none, snapshots record none
    session: None = None
    mode: None = None  # an output made from it gets the mode of a new file

    def check_in_place(self, document: Document, run: RunSettings) -> None:
        raise UsageError(f"{self.label}: only a file or an object can be compacted in place")

    def write_back(
        self, document: Document, subject: Subject, outcome: Outcome, run: RunSettings, *how: Any
    ) -> Written:
        self.check_in_place(document, run)  # refused
        return NOTHING_WRITTEN


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
        from pathlib import Path

        from ..disk.replace import check_writable

        check_writable(self.status, self.label)
        if run.dry_run:
            return
        if document.guarded:
            from ..session_files.in_use import refuse_in_use

            path = Path(self.path)
            rewritten = lambda: _rewritten_by_us(run.snapshots, path, self.status)  # noqa: E731
            refuse_in_use(self.label, self.status, run, rewritten)
        busy = document.busy(run)  # the agent's own signs: Cline's status, OpenCode's
        if busy:
            raise SessionInUse(
                f"{self.label}: in use by its agent ({busy}): skipped, see force=True"
            )

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
        from pathlib import Path

        from ..disk.replace import FileState, Replacement, replace
        from ..session_files.in_use import writer_check

        how = Replacement(
            self.label,
            run.snapshots,
            document.details(outcome.tokens_before),
            _sha256(document),
            run.backup_suffix,
            writer=writer_check(run.proc) if document.guarded else None,
        )
        path = Path(self.path)
        chunks = subject.result_chunks(run.pretty)
        replaced = replace(path, self.descriptor, FileState.of(self.status), chunks, how, sync)
        notes = [note for note in (document.after_replace(path), replaced.note) if note]
        return Written(replaced.folder, "; ".join(notes) or None, replaced.copied)


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
        from ..snapshots.base import session_id_for_url
        from . import object_store as storage

        name, data = self.url, b"".join(document.input_chunks())
        snapshots = run.snapshots
        if snapshots is not None:
            details = document.details(outcome.tokens_before)
            snapshots.save_original(session_id_for_url(name), data, details)
        if run.backup_suffix:
            storage.write(name + run.backup_suffix, data)
        if storage.stat(name).version != self.version:
            raise OutputError(f"{name}: file changed while it was being compacted, left as is")
        result = b"".join(subject.result_chunks(run.pretty))
        storage.write(name, result, record(self.version, settings_key, outcome))
        return NOTHING_WRITTEN


Origin = InMemory | OpenedFile | ReadObject


def _rewritten_by_us(snapshots: Snapshots | None, path: Path, status: os.stat_result) -> bool:
    """Whether the file's last change was ctxpack's own rewrite, as its snapshot recorded it."""
    if snapshots is None:
        return False
    last = snapshots.last_rewrite(path)
    return last is not None and last.rewritten is not None and last.rewritten.is_now(status)


def _sha256(document: Document) -> str | None:
    """The hash of the bytes read, for a document held in memory (a session file's is made
    from its snapshot)."""
    if not document.in_memory:
        return None
    import hashlib  # only when a file is written, not by every filter

    return hashlib.sha256(b"".join(document.input_chunks())).hexdigest()
