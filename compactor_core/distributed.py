"""Batches beyond one process pool: chunks of inputs streamed to a Dask cluster (or local pool).

The inputs come from a lazy listing; they are cut into chunks (``CHUNK_FILES`` files, or fewer
when they add up to ``CHUNK_BYTES``) and at most ``window`` chunks are in flight at once, so the
client's memory stays flat however long the listing is. Each chunk is one task; its reports come
back as soon as it is done and are yielded in the order chunks finish.

A worker that dies mid-task loses nothing: the scheduler gives its tasks to another worker, and
doing a chunk twice is harmless, since every output is written whole (an object in one request,
a local file by atomic rename) and an input whose output is already current is skipped.

Dask is imported only here, only when a batch runs on it (the ``dask`` extra).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures import wait as wait_for_any
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from .batch import BatchSettings, FileReport, Target, process
from .corpus_stats import Tally
from .errors import ConfigError, CtxpackError, OutputError
from .estimate import estimate
from .formats import parse
from .providers.base import Summarizer
from .providers.registry import ProviderSettings, build_provider
from .remote import ObjectTarget, process_object
from .storage import read

CHUNK_FILES = 32
CHUNK_BYTES = 4 * 1024 * 1024
Item = TypeVar("Item")
Result = TypeVar("Result")
AnyTarget = Target | ObjectTarget


class ClusterError(OutputError):
    """The cluster could not finish a task (its workers kept dying, or it went away)."""


# --- cutting the work up -------------------------------------------------------------------------


def chunks(items: Iterable[AnyTarget], files: int = CHUNK_FILES) -> Iterator[list[AnyTarget]]:
    """The items in chunks of ``files``, cut early once a chunk holds ``CHUNK_BYTES``."""
    chunk: list[AnyTarget] = []
    size = 0
    for item in items:
        chunk.append(item)
        size += item.size if isinstance(item, ObjectTarget) else 0
        if len(chunk) >= files or size >= CHUNK_BYTES:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


# --- what a worker does --------------------------------------------------------------------------


def compact_chunk(
    chunk: Sequence[AnyTarget], settings: BatchSettings, provider: ProviderSettings, key: str
) -> list[FileReport]:
    """Compact each input of a chunk (the task a worker runs)."""
    summarizer = _provider(settings, provider)
    return [
        process_object(target, settings, summarizer, key)
        if isinstance(target, ObjectTarget)
        else process(target, settings, summarizer)
        for target in chunk
    ]


def estimate_chunk(chunk: Sequence[AnyTarget], bareagent: bool) -> tuple[Tally, list[CtxpackError]]:
    """The token tally of a chunk's inputs, and the errors of those that could not be read."""
    tally, errors = Tally(), []
    for target in chunk:
        name = target.name if isinstance(target, ObjectTarget) else str(target.path)
        try:
            conversation = parse(read(name), target.label)
        except CtxpackError as error:
            errors.append(error)
            continue
        tally.add(target.label, estimate(conversation.messages, conversation.system, bareagent))
    return tally, errors


_providers: dict[ProviderSettings, Summarizer] = {}
_providers_lock = threading.Lock()


def _provider(settings: BatchSettings, provider: ProviderSettings) -> Summarizer | None:
    """One provider per worker process and settings, shared by its tasks (and HTTP pool)."""
    if settings.dry_run or settings.job.command == "micro":
        return None
    with _providers_lock:
        if provider not in _providers:
            _providers[provider] = build_provider(provider)
        return _providers[provider]


# --- streaming chunks through a pool -------------------------------------------------------------


@dataclass(frozen=True)
class Pool:
    """Where tasks run: how to submit one, wait for any, and cancel what is left."""

    submit: Callable[..., Any]
    wait: Callable[[set[Any]], tuple[set[Any], set[Any]]]
    cancel: Callable[[set[Any]], None]
    window: int  # tasks in flight at most


def stream(
    pool: Pool,
    function: Callable[..., Result],
    work: Iterable[Item],
    arguments: tuple[Any, ...],
    stop: threading.Event | None = None,
) -> Iterator[Result]:
    """``function(item, *arguments)`` for every item, results as they finish.

    Once ``stop`` is set no further item is submitted; those in flight finish and are yielded.
    Closing the iteration early cancels what is in flight.
    """
    stop = stop or threading.Event()
    items = iter(work)
    pending: set[Any] = set()
    try:
        while True:
            while len(pending) < pool.window and not stop.is_set():
                item = next(items, None)
                if item is None:
                    break
                pending.add(pool.submit(function, item, *arguments))
            if not pending:
                return
            done, pending = pool.wait(pending)
            for future in done:
                yield _result(future)
    finally:
        if pending:
            pool.cancel(pending)


def _result(future: Any) -> Any:
    try:
        return future.result()
    except CtxpackError:
        raise
    except Exception as error:  # a worker that kept dying (KilledWorker), a lost scheduler
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ClusterError(f"the cluster could not finish a task: {reason}") from None


@contextmanager
def local_pool(workers: int, threads: bool = False) -> Iterator[Pool]:
    """Worker processes on this machine (threads when the work waits on a model)."""
    executor: Executor = (ThreadPoolExecutor if threads else ProcessPoolExecutor)(workers)
    with executor:
        yield Pool(
            executor.submit,
            lambda pending: _waited(wait_for_any(pending, return_when=FIRST_COMPLETED)),
            lambda pending: [future.cancel() for future in pending] and None,
            window=max(2, workers * 2),
        )


def _waited(result: Any) -> tuple[set[Any], set[Any]]:
    return set(result.done), set(result.not_done)


@contextmanager
def dask_pool(scheduler: str | None, workers: int) -> Iterator[Pool]:
    """The Dask cluster at ``scheduler``, or a local one of ``workers`` processes."""
    try:
        from distributed import Client, LocalCluster, wait
    except ImportError:
        raise ConfigError(
            "--engine dask needs the dask extra: pip install 'ctxpack[dask]'"
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
        import logging

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
