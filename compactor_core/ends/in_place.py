"""Writing a result back over its input: a local file replaced, its original kept
(``disk.replace``), or an object rewritten once nobody replaced it meanwhile, its original saved
first.

The origins (``origins.py``) say which applies; this module is what it takes, and is imported only
when a run is in place: a filter's run, on every agent turn, never loads the replacing, the
guards of a session in use, nor hashes.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..disk.replace import FileState, Replacement, check_writable, replace
from ..errors import OutputError, SessionInUse
from ..session_files.in_use import refuse_in_use, writer_check
from ..snapshots.base import session_id_for_url
from .written import NOTHING_WRITTEN, Written, record

if TYPE_CHECKING:
    from ..compaction.outcome import Outcome
    from ..compaction.pipeline import Subject
    from ..settings import RunSettings
    from ..snapshots.base import Details, Snapshots


class Document(Protocol):
    """What writing in place asks of the document read (``documents.py`` has each kind)."""

    guarded: bool  # an agent may be writing it: never rewritten while in use
    in_memory: bool  # held whole in memory

    def busy(self, rules: RunSettings) -> str | None: ...

    def details(self, tokens: int | None) -> Details: ...

    def input_chunks(self) -> Iterator[bytes]: ...

    def after_replace(self, path: Path) -> str | None: ...


class ReplacedFile(Protocol):
    """A local file to be replaced, as it was opened (``origins.OpenedFile``)."""

    label: str
    path: str
    status: os.stat_result  # when it was opened: what a rewrite checks against
    descriptor: int


class RewrittenObject(Protocol):
    """An object to be rewritten, as it was read (``origins.ReadObject``)."""

    url: str
    version: str


def check_file(file: ReplacedFile, document: Document, run: RunSettings) -> None:
    """Refuse a read-only file, and a session file its agent is using (SPEC §8.4)."""
    check_writable(file.status, file.label)
    if run.dry_run:
        return
    if document.guarded:
        path = Path(file.path)
        rewritten = lambda: _rewritten_by_us(run.snapshots, path, file.status)  # noqa: E731
        refuse_in_use(file.label, file.status, run, rewritten)
    busy = document.busy(run)  # the agent's own signs: Cline's status, OpenCode's
    if busy:
        raise SessionInUse(f"{file.label}: in use by its agent ({busy}): skipped, see force=True")


def replace_file(
    file: ReplacedFile,
    document: Document,
    subject: Subject,
    outcome: Outcome,
    run: RunSettings,
    sync: bool,
) -> Written:
    """Replace the file by its result, the original kept (``disk.replace``)."""
    how = Replacement(
        file.label,
        run.snapshots,
        document.details(outcome.tokens_before),
        _sha256(document),
        run.backup_suffix,
        writer=writer_check(run.proc) if document.guarded else None,
    )
    path = Path(file.path)
    chunks = subject.result_chunks(run.pretty)
    replaced = replace(path, file.descriptor, FileState.of(file.status), chunks, how, sync)
    notes = [note for note in (document.after_replace(path), replaced.note) if note]
    return Written(replaced.folder, "; ".join(notes) or None, replaced.copied)


def rewrite_object(
    read: RewrittenObject,
    document: Document,
    subject: Subject,
    outcome: Outcome,
    run: RunSettings,
    settings_key: str,
) -> Written:
    """Save the original, then rewrite the object if nobody replaced it meanwhile."""
    from . import object_store as storage  # fsspec's side: only for an object

    name, data = read.url, b"".join(document.input_chunks())
    snapshots = run.snapshots
    if snapshots is not None:
        details = document.details(outcome.tokens_before)
        snapshots.save_original(session_id_for_url(name), data, details)
    if run.backup_suffix:
        storage.write(name + run.backup_suffix, data)
    if storage.stat(name).version != read.version:
        raise OutputError(f"{name}: file changed while it was being compacted, left as is")
    result = b"".join(subject.result_chunks(run.pretty))
    storage.write(name, result, record(read.version, settings_key, outcome))
    return NOTHING_WRITTEN


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
    return hashlib.sha256(b"".join(document.input_chunks())).hexdigest()
