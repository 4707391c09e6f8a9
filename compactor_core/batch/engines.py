"""Many inputs at once: in this process, in local worker processes or threads, or on Dask.

``run_all`` does every target through ``process.process`` and yields each report as soon as its
input is done. Where the work runs is decided here, once:

- a model writes the summaries (a network or command provider): the time goes into waiting for
  it, so inputs are done by ``max_concurrency`` threads sharing one provider (and its HTTP
  connection pool): a slow remote model is never serialized;
- otherwise the work is CPU-bound: ``jobs`` worker processes, each taking a chunk of inputs at a
  time (one task per file would cost the parent about as much as a small file's compaction);
- ``Engine(kind="dask")``: chunks go to a Dask cluster (``scheduler``, or a local cluster of
  ``jobs`` processes); a worker that dies mid-task loses nothing, since doing a chunk twice is
  harmless (every output is written whole and a current output is skipped).

Chunks are streamed: at most a window of them is in flight, so the memory stays flat however long
a lazy listing is. Once ``stop`` is set (``--fail-fast``), nothing more is started and what is in
flight is finished and reported. Local folders written into are fsynced once each, at the end,
not once per file: that halves the journal commits a batch waits for, and a crash before then
can only bring a file back to its old version, which a re-run redoes.

Dask is imported only here, only when a batch runs on it (the ``dask`` extra).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures import wait as wait_for_any
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from .. import defaults
from ..compaction.corpus_stats import Tally
from ..compaction.outcome import Report
from ..compaction.pipeline import summarizer_of
from ..disk.atomic import fsync_directory
from ..ends.documents import open_document
from ..errors import ClusterError, ConfigError, CtxpackError, InternalError, WorkerDied
from ..process import Target, process
from ..providers.base import Summarizer
from ..providers.catalog import ProviderSettings
from ..providers.registry import Deferred
from ..settings import RunSettings
from .orphans import die_with_parent

CHUNK_FILES = 16  # inputs a task takes at a time ...
CHUNK_BYTES = 256 * 1024  # ... but not more than this much of them, unless one is bigger
DASK_CHUNK_FILES = 32  # a task on a cluster costs more to send: bigger chunks
DASK_CHUNK_BYTES = 4 * 1024 * 1024
Item = TypeVar("Item")
Result = TypeVar("Result")


@dataclass(frozen=True)
class Engine:
    """Where a batch runs."""

    kind: str = "local"  # local | dask
    jobs: int | None = None  # worker processes (None: the number of cores)
    max_concurrency: int = defaults.MAX_CONCURRENCY  # inputs in flight when a model summarizes
    scheduler: str | None = None  # a running Dask cluster (kind "dask")

    @property
    def workers(self) -> int:
        return self.jobs or os.cpu_count() or 1


def run_all(
    targets: Iterable[Target],
    run: RunSettings,
    engine: Engine = Engine(),
    stop: threading.Event | None = None,
) -> Iterator[Report]:
    """Every target's report, as each is done (see the module's docstring)."""
    stop = stop or threading.Event()
    if engine.kind == "dask":
        chunks = cluster_chunks(targets)
        with dask_pool(engine.scheduler, engine.workers) as pool:
            for reports in stream(pool, do_chunk, chunks, (run, True), stop):
                yield from reports
        return
    written: set[str] = set()
    try:
        for report in _local(targets, run, engine, stop):
            if report.written:
                written.add(report.written)
            yield report
    finally:
        for directory in sorted(written):
            fsync_directory(Path(directory))


def _local(
    targets: Iterable[Target], run: RunSettings, engine: Engine, stop: threading.Event
) -> Iterator[Report]:
    if _waits_on_model(run):
        summarizer = summarizer_of(run)
        with local_pool(engine.max_concurrency, threads=True) as pool:
            work = ((target,) for target in targets)  # one input a task
            arguments = (run, summarizer)
            for reports in stream(pool, _do_with, work, arguments, stop):
                yield from reports
        return
    many = not isinstance(targets, Sequence) or len(targets) > 1
    if engine.workers > 1 and many:
        chunks = local_chunks(targets, engine.workers)
        with local_pool(engine.workers) as pool:
            yield from _reported(stream(pool, do_chunk, chunks, (run, False), stop))
        return
    summarizer = summarizer_of(run)
    for target in targets:
        if stop.is_set():
            return
        yield _done(target, run, lambda: summarizer, sync=False)


def _waits_on_model(run: RunSettings) -> bool:
    """Whether a model writes the summaries (a network or command provider), so that the time
    goes into waiting for it."""
    provider = run.provider
    return run.needs_provider and provider is not None and provider.name != "extractive"


def estimate_all(
    targets: Iterable[Target], format_name: str, compat: bool, engine: Engine = Engine()
) -> Iterator[tuple[Tally, list[CtxpackError]]]:
    """The token tallies of the targets, a chunk at a time, where the engine runs
    (``estimate --summary``)."""
    chunks = cluster_chunks(targets)
    pool = (
        dask_pool(engine.scheduler, engine.workers)
        if engine.kind == "dask"
        else local_pool(engine.workers)
    )
    with pool as where:
        for result in stream(where, estimate_chunk, chunks, (format_name, compat)):
            if isinstance(result, _Died):
                raise WorkerDied("a worker process died unexpectedly: run the estimate again")
            yield result


def _reported(results: Iterator[list[Report] | _Died]) -> Iterator[Report]:
    """The reports of every chunk; once a worker process died (SIGKILL, out of memory,
    ``os._exit``) the pool is broken, and every input not yet reported fails, each named."""
    for result in results:
        if isinstance(result, _Died):
            yield from result.reports()
        else:
            yield from result


# --- what a task does ----------------------------------------------------------------------------


def do_chunk(chunk: Sequence[Target], run: RunSettings, sync: bool) -> list[Report]:
    """Do each input of a chunk (the task a worker process or a Dask worker runs)."""
    return [_done(target, run, lambda: _provider(run), sync) for target in chunk]


def _do_with(chunk: Sequence[Target], run: RunSettings, provider: Summarizer) -> list[Report]:
    """Do each input with a provider already built (threads share it)."""
    return [_done(target, run, lambda: provider, sync=False) for target in chunk]


def _done(
    target: Target, run: RunSettings, provider: Callable[[], Summarizer | None], sync: bool
) -> Report:
    """The report of ``target``. What ``process`` does not report is an exception nobody
    expected: a bug, told as this input's failure (``InternalError``), so that the batch goes on
    and the engine's own failures (``ClusterError``) stay apart from it."""
    try:
        return process(target, run, provider(), sync)
    except Exception as error:
        return Report(target.label, error=InternalError.of(error, target.label))


def estimate_chunk(
    chunk: Sequence[Target], format_name: str, compat: bool
) -> tuple[Tally, list[CtxpackError]]:
    """The token tally of a chunk's inputs, and the errors of those that could not be read."""
    tally, errors = Tally(), []
    for target in chunk:
        try:
            with open_document(target.source, format_name) as document:
                tally.add(target.label, document.tokens(compat=compat))
        except CtxpackError as error:
            errors.append(error)
        except Exception as error:  # a bug: told as this input's, as ``_done`` tells it
            errors.append(InternalError.of(error, target.label))
    return tally, errors


_providers: dict[ProviderSettings, Summarizer] = {}
_providers_lock = threading.Lock()


def _provider(run: RunSettings) -> Summarizer | None:
    """One provider per worker process and settings, shared by its tasks (and HTTP pool), built
    once a summary is asked of it."""
    if run.provider is None or not run.needs_provider:
        return None
    with _providers_lock:
        if run.provider not in _providers:
            _providers[run.provider] = Deferred(run.provider)
        return _providers[run.provider]


# --- cutting the work up -------------------------------------------------------------------------


def local_chunks(targets: Iterable[Target], workers: int) -> Iterator[list[Target]]:
    """Small chunks for local worker processes: at least four per worker when the number of
    targets is known, so the work stays balanced and a stop is heard soon."""
    files = CHUNK_FILES
    if isinstance(targets, Sequence):
        files = max(1, min(CHUNK_FILES, len(targets) // (workers * 4)))
    return _chunks(targets, files, CHUNK_BYTES)


def cluster_chunks(targets: Iterable[Target]) -> Iterator[list[Target]]:
    """Bigger chunks for a cluster, whose tasks cost more to send; also for estimates."""
    return _chunks(targets, DASK_CHUNK_FILES, DASK_CHUNK_BYTES)


def _chunks(targets: Iterable[Target], files: int, most_bytes: int) -> Iterator[list[Target]]:
    """The targets in chunks of ``files``, cut early once a chunk holds ``most_bytes``."""
    chunk: list[Target] = []
    size = 0
    for target in targets:
        chunk.append(target)
        size += target.source.known_size()
        if len(chunk) >= files or size >= most_bytes:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


# --- streaming tasks through a pool --------------------------------------------------------------


@dataclass(frozen=True)
class Pool:
    """Where tasks run: how to submit one, wait for any, and cancel what is left."""

    submit: Callable[..., Any]
    wait: Callable[[set[Any]], tuple[set[Any], set[Any]]]
    cancel: Callable[[set[Any]], None]
    window: int  # tasks in flight at most


@dataclass(frozen=True)
class _Died:
    """A chunk whose worker process died, and the chunks never sent once the pool broke."""

    chunks: tuple[Sequence[Target], ...]

    def reports(self) -> Iterator[Report]:
        for chunk in self.chunks:
            for target in chunk:
                error = WorkerDied(
                    f"{target.label}: not done: a worker process died unexpectedly "
                    "(the file is whole; run the batch again)"
                )
                yield Report(target.label, error=error, written=_folder_of(target))


def _folder_of(target: Target) -> str | None:
    """A local file's folder: its worker may have replaced it before it died."""
    return target.destination.folder or target.source.folder


def stream(
    pool: Pool,
    function: Callable[..., Result],
    work: Iterable[Item],
    arguments: tuple[Any, ...],
    stop: threading.Event | None = None,
) -> Iterator[Result | _Died]:
    """``function(item, *arguments)`` for every item, results as they finish.

    Once ``stop`` is set no further item is submitted; those in flight finish and are yielded.
    Closing the iteration early cancels what is in flight.
    """
    stop = stop or threading.Event()
    items = iter(work)
    pending: dict[Any, Item] = {}
    try:
        while True:
            while len(pending) < pool.window and not stop.is_set():
                item = next(items, None)
                if item is None:
                    break
                pending[pool.submit(function, item, *arguments)] = item
            if not pending:
                return
            done, _ = pool.wait(set(pending))
            for future in done:
                item = pending.pop(future)
                try:
                    yield _result(future)
                except BrokenProcessPool:
                    rest = [pending.pop(other) for other in list(pending)]
                    yield _Died((item, *rest, *items))  # type: ignore[arg-type]
                    return
    finally:
        if pending:
            pool.cancel(set(pending))


def _result(future: Any) -> Any:
    """A task's result. Its own failures are in its reports (``_done``): what is raised here is
    the engine's (a worker killed again and again, a lost scheduler, a timeout)."""
    try:
        return future.result()
    except (CtxpackError, BrokenProcessPool):
        raise
    except Exception as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ClusterError(f"the cluster could not finish a task: {reason}") from None


def _start_worker(parent: int) -> None:
    """What each local worker process does first: Ctrl-C is the parent's to handle (it stops the
    batch, not each worker), and the worker dies with its parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(parent)


@contextmanager
def local_pool(workers: int, threads: bool = False) -> Iterator[Pool]:
    """Worker processes on this machine (threads when the work waits on a model)."""
    executor: Executor = (
        ThreadPoolExecutor(max(1, workers))
        if threads
        else ProcessPoolExecutor(workers, initializer=_start_worker, initargs=(os.getpid(),))
    )
    try:
        yield Pool(
            executor.submit,
            lambda pending: _waited(wait_for_any(pending, return_when=FIRST_COMPLETED)),
            lambda pending: [future.cancel() for future in pending] and None,
            window=max(2, workers * 2),
        )
    finally:  # stopped, closed or interrupted: what has not started does not start
        executor.shutdown(wait=True, cancel_futures=True)


def _waited(result: Any) -> tuple[set[Any], set[Any]]:
    return set(result.done), set(result.not_done)


@contextmanager
def dask_pool(scheduler: str | None, workers: int) -> Iterator[Pool]:
    """The Dask cluster at ``scheduler``, or a local one of ``workers`` processes."""
    try:
        from distributed import Client, LocalCluster, wait
    except ImportError:
        raise ConfigError(
            "Engine(kind='dask') needs the dask extra: pip install 'ctxpack[dask]'"
        ) from None
    with _client(Client, LocalCluster, scheduler, workers) as client:
        threads = sum(client.nthreads().values()) or workers
        yield Pool(
            lambda function, *args: client.submit(function, *args, pure=False),
            lambda pending: _waited(wait(list(pending), return_when="FIRST_COMPLETED")),
            lambda pending: client.cancel(list(pending)),
            window=max(4, threads * 2),
        )


@contextmanager
def _client(client_type: Any, cluster_type: Any, scheduler: str | None, workers: int) -> Any:
    if scheduler is None:
        cluster = cluster_type(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        )
        with cluster, client_type(cluster) as client:
            yield client
        return
    try:
        client = client_type(scheduler, timeout="10s")
    except (OSError, TimeoutError, ValueError) as error:
        raise ConfigError(f"{scheduler}: cannot reach the Dask scheduler: {error}") from None
    with client:
        yield client
