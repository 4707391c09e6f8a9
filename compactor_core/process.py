"""One input, one path: open it, see its conversation, decide, write the result.

Standard input, a local file, an object at a URL; to a stream, a file, an object or in place; a
conversation of messages or an agent's session file; in this process, a batch worker or a Dask
worker: every input goes through ``process`` and comes back as a ``Report``. Every failure of the
input is part of its report, so a batch goes on with the next one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from .compaction.outcome import Report
from .compaction.pipeline import decide
from .ends.destinations import Destination
from .ends.documents import open_document
from .ends.sources import Source
from .errors import CtxpackError
from .settings import RunSettings

if TYPE_CHECKING:
    from .providers.base import Summarizer


@dataclass(frozen=True)
class Target:
    """One input and where its result goes; plain data, so it crosses to a worker."""

    source: Source
    destination: Destination

    @property
    def label(self) -> str:
        return self.source.label


def process(
    target: Target,
    run: RunSettings,
    provider: Summarizer | None = None,
    sync_directory: bool = True,
) -> Report:
    """Do ``run.command`` on one input and write its result where the target says. Its
    summaries are written by ``provider``, else by the one ``run.provider`` names.

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
    source, destination = target.source.with_version(), target.destination
    skipped = destination.current(source)
    if skipped is not None:
        return replace(skipped, label=target.label)
    with open_document(source, run.format) as document:
        destination.prepare(document, run)
        # in place (the destination keeps the input), a session file still holds every record:
        # its summary names it
        named = document.origin.path if destination.keeps_input else None
        subject = document.subject(run, run.time(), named)
        # who keeps the input and the result when a summary replaces the history
        session = run.session_id or source.session_id()
        keeper = document.snapshot_keeper(session, run, destination.keeps_input)
        outcome = decide(run, subject, provider, keeper)
        if run.dry_run:
            return Report.of(target.label, outcome)
        written = destination.write(document, subject, outcome, run, sync_directory)
        if run.originals is not None:
            run.originals.keep(subject.originals())
    return Report.of(
        target.label,
        outcome,
        written=written.folder,
        warning=written.warning,
        copied=written.copied,
    )
