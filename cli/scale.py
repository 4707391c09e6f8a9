"""Batches over URLs or on a Dask cluster: the CLI side of ``compactor_core.distributed``.

Decisions (also in the README, "Beyond one machine"):
- Any URL among the inputs, ``--output-dir`` or ``--transcript-dir``, or ``--engine dask`` /
  ``--scheduler``, makes the batch a listed one: inputs are listed as they are done, in chunks,
  and the summary line counts what was listed. Otherwise the local batch runs as before.
- On a cluster, local paths (inputs, outputs, the snapshot folder) are made absolute and must be
  visible to every worker (a shared filesystem); a URL always is.
- ``--scheduler`` names a running cluster; ``--engine dask`` alone starts a local one with ``-j``
  worker processes, for trying it out.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from compactor_core.batch import (
    BatchSettings,
    FileReport,
    Target,
    clean_up_after_killed_runs,
    find_targets,
)
from compactor_core.storage import is_url

if TYPE_CHECKING:
    from compactor_core.distributed import AnyTarget, Pool
    from compactor_core.providers.registry import ProviderSettings

    from .transform import Output


def wanted(names: Sequence[str], out: Output) -> bool:
    """Whether this batch is for ``distributed``: URLs, or a Dask engine, are involved."""
    snapshot_dir = getattr(out.snapshots, "directory", None)
    urls = any(is_url(name) for name in (*names, out.output_dir or "", snapshot_dir or ""))
    return urls or on_dask(out.engine, out.scheduler)


def on_dask(engine: str | None, scheduler: str | None) -> bool:
    if scheduler is not None and engine == "local":
        raise click.UsageError("cannot use --scheduler with --engine local")
    return engine == "dask" or scheduler is not None


def reports(
    names: Sequence[str],
    settings: BatchSettings,
    provider: ProviderSettings,
    out: Output,
    stop: threading.Event,
) -> Iterator[FileReport]:
    """Every input's report, as the chunks of the listing come back from the workers."""
    from compactor_core.distributed import chunks, compact_chunk, stream
    from compactor_core.remote import settings_key

    skip = [str(out.snapshots.directory)] if out.snapshots else []
    targets = targets_of(names, out.recursive, out.globs, out.output_dir, skip, out.dry_run)
    settings = _absolute(settings)
    waits_on_model = not out.dry_run and settings.job.command != "micro"
    threads = waits_on_model and provider.name != "extractive"
    key = settings_key(settings, provider)
    workers = out.max_concurrency if threads else out.jobs
    with pool(out.engine, out.scheduler, workers, threads) as where:
        arguments = (settings, provider, key)
        for chunk_reports in stream(where, compact_chunk, chunks(targets), arguments, stop):
            yield from chunk_reports


def targets_of(
    names: Sequence[str],
    recursive: bool,
    globs: Sequence[str],
    output_dir: str | None = None,
    skip: Sequence[str] = (),
    dry_run: bool = True,
) -> Iterator[AnyTarget]:
    """The inputs, listed lazily where URLs are involved; local ones as the local batch finds them.

    Local paths are made absolute, so a worker in another folder (or on another machine with the
    same shared filesystem) finds them.
    """
    from compactor_core.remote import iter_targets

    if any(is_url(name) for name in (*names, output_dir or "")):
        yield from iter_targets(names, recursive, globs, output_dir, skip)
        return
    local_skip = [Path(path) for path in skip if not is_url(path)]
    found = find_targets(
        names, recursive, globs, Path(output_dir) if output_dir else None, local_skip
    )
    if not dry_run:
        clean_up_after_killed_runs(found, local_skip)
    for target in found:
        destination = target.destination.absolute() if target.destination else None
        yield Target(target.path.absolute(), target.label, destination)


def _absolute(settings: BatchSettings) -> BatchSettings:
    """The settings with a local snapshot folder made absolute, for workers elsewhere."""
    snapshots = settings.writing.snapshots
    if snapshots is None or is_url(str(snapshots.directory)):
        return settings
    local = replace(snapshots, directory=Path(snapshots.directory).absolute())
    return replace(settings, writing=replace(settings.writing, snapshots=local))


def pool(
    engine: str | None, scheduler: str | None, workers: int | None, threads: bool = False
) -> AbstractContextManager[Pool]:
    """Where the chunks run: the Dask cluster, a local one, or this machine's process pool."""
    from compactor_core.distributed import dask_pool, local_pool

    count = workers or os.cpu_count() or 1
    if on_dask(engine, scheduler):
        return dask_pool(scheduler, count)
    return local_pool(count, threads)
