"""One input, one path: open it, see its conversation, decide, write the result.

Standard input, a local file, an object at a URL; to a stream, a file, an object or in place; a
conversation of messages or an agent's session file; in this process, a batch worker or a Dask
worker: every input goes through ``process`` and comes back as a ``Report``. Every failure of the
input is part of its report, so a batch goes on with the next one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from .compaction.outcome import Report
from .compaction.pipeline import SnapshotKeeper, decide
from .ends.destinations import Destination, InPlace
from .ends.documents import Document, MessagesDocument, open_document
from .ends.sources import LocalFile, RemoteObject, Source
from .errors import CtxpackError
from .settings import RunSettings

if TYPE_CHECKING:
    from .providers.base import Summarizer


@dataclass(frozen=True)
class Target:
    """One input and where its result goes; plain data, so it crosses to a worker."""

    source: Source
    destination: Destination
    session_id: str | None = None  # snapshots' session id; None: made from the file's name

    @property
    def label(self) -> str:
        return self.source.label


def process(
    target: Target,
    run: RunSettings,
    provider: Summarizer | None = None,
    sync_directory: bool = True,
) -> Report:
    """Do ``run.command`` on one input and write its result where the target says.

    With ``sync_directory=False`` the rename of a written file is made durable by the caller
    (a batch fsyncs each folder once, at its end; see ``atomic.atomic_write``).
    """
    try:
        return _process(target, run, provider, sync_directory)
    except CtxpackError as error:
        return Report(target.label, error=error)


def _process(
    target: Target, run: RunSettings, provider: Summarizer | None, sync_directory: bool
) -> Report:
    source, destination = _with_version(target.source), target.destination
    skipped = destination.current(source)
    if skipped is not None:
        return replace(skipped, label=target.label)
    with open_document(source, run.format) as document:
        destination.prepare(document, run)
        # a session file compacted in place still holds every record: its summary names it
        named = document.path if isinstance(destination, InPlace) else None
        subject = document.subject(run, run.time(), named)
        keeper = _keeper(document, target, run)
        outcome = decide(run, subject, provider, keeper)
        if run.dry_run:
            return Report.of(target.label, outcome)
        written = destination.write(document, subject, outcome, run, sync_directory)
    return Report.of(
        target.label,
        outcome,
        written=written.folder,
        warning=written.warning,
        copied=written.copied,
    )


def _with_version(source: Source) -> Source:
    """An object named directly (not listed) is asked for its version first: a re-run compares
    it, and an in-place write checks that nobody replaced the object meanwhile."""
    if isinstance(source, RemoteObject) and not source.version:
        from .ends.object_store import stat

        return replace(source, version=stat(source.url).version)
    return source


def _keeper(document: Document, target: Target, run: RunSettings) -> SnapshotKeeper | None:
    """Who keeps a conversation's input and result when a summary replaces its history.

    A file changed in place keeps its original when it is replaced (a link to its old inode), so
    only the result is saved here; any other input is saved as it was read, before the model is
    asked (SPEC §3.3). A session file's summary is appended to it: its result is the file itself.
    """
    snapshots = run.snapshots
    if snapshots is None or not isinstance(document, MessagesDocument):
        return None
    original = None if target.destination.keeps_input else document.data
    return SnapshotKeeper(
        snapshots,
        target.session_id or _session_id(target.source),
        document.conversation,
        run.settings,
        original,
        Path(document.path) if document.path else None,
    )


def _session_id(source: Source) -> str:
    from .snapshots.base import session_id_for_file, session_id_for_url

    if isinstance(source, LocalFile):
        return session_id_for_file(Path(source.path))
    if isinstance(source, RemoteObject):
        return session_id_for_url(source.url)
    from .defaults import SESSION_ID

    return SESSION_ID
