"""A batch in one call: what files, folders and URLs stand for, checked, then done by an engine.

``start_batch`` lists the inputs (``targets.find_targets``: local ones are all listed and checked
before anything is done, a URL prefix is listed as it goes), removes what runs killed midway
left beside the local files (not in a dry run: it deletes nothing), and returns the ``Batch``:
how many inputs it has, and their reports as each is done (``engines.run_all``).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from ..compaction.outcome import Report
from ..process import Target
from ..providers.catalog import ProviderSettings
from ..release import release
from ..settings import RunSettings
from .engines import Engine, run_all
from .targets import DEFAULT_GLOBS, Listing, clean_up_after_killed_runs, find_targets


@dataclass(frozen=True)
class Batch:
    """The inputs of a batch, and how they are done."""

    targets: list[Target] | Iterator[Target]
    run: RunSettings
    engine: Engine

    @property
    def total(self) -> int | None:
        """How many inputs; None while a prefix at a URL is listed as the batch goes."""
        return len(self.targets) if isinstance(self.targets, list) else None

    def reports(self, stop: threading.Event | None = None) -> Iterator[Report]:
        """Every input's report, as each is done. The tokens before and after are counted
        whenever the batch is more than one input, for its summary, even if ``run`` did not
        ask; once ``stop`` is set nothing more is started."""
        run = replace(self.run, measure=self.run.measure or self.total != 1)
        return run_all(self.targets, run, self.engine, stop)


def start_batch(
    names: Sequence[str],
    run: RunSettings,
    engine: Engine,
    *,
    recursive: bool = False,
    globs: Sequence[str] = DEFAULT_GLOBS,
    output_dir: str | None = None,
) -> Batch:
    """The batch over ``names`` (files, folders with ``recursive``, URLs), each result written
    in place or, with ``output_dir``, to its mirror there. The snapshot store's folder is never
    an input. ``globs`` empty: the default ones. Each input's snapshots are kept under its own
    name: ``run.session_id`` names one conversation's, not a batch's."""
    run = replace(run, session_id=None)
    skip = [run.snapshots.location] if run.snapshots is not None else []
    listing = Listing(names, recursive, tuple(globs) or DEFAULT_GLOBS, output_dir, skip)
    if not listing.local:  # an object written records the settings that made it
        listing = replace(listing, settings_key=settings_key(run))
    targets = find_targets(listing)
    if isinstance(targets, list) and not run.dry_run:  # a dry run writes (and deletes) nothing
        clean_up_after_killed_runs(targets, skip)
    return Batch(targets, run, engine)


def settings_key(run: RunSettings) -> str:
    """What decides the bytes of a result, which an object written records: ctxpack's version,
    the job, the layout, the provider (never its key)."""
    provider = run.provider or ProviderSettings()
    who = (provider.name, provider.model, provider.base_url, provider.command)
    text = repr((release(), run.command, run.settings, run.pretty, who))
    return hashlib.sha256(text.encode()).hexdigest()[:20]
