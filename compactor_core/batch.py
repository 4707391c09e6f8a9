"""Batch work: many files and folders, in parallel, each one replaced atomically.

The CPU-bound work (parsing, micro compaction, the built-in summarizer) runs in ``workers``
processes. When a model writes the summaries (a network or command provider), the time goes into
waiting for it, so files are handled by ``max_concurrency`` threads of one process instead,
sharing one provider (and its HTTP connection pool): a slow remote model is never serialized.

Each file is handled exactly as the single-file command would handle it (``pipeline.run``), then
written with ``files.replace_file`` (in place) or atomically into the output directory.

Decisions (also in the README): folders are walked with ``recursive``; hidden folders (``.git``,
``.transcripts``), the snapshot folder and the output folder are skipped, and so are hidden files
(``.name.json``) unless a ``--glob`` pattern starts with a dot, as in a shell; symbolic links to
folders are not followed (no cycles), a file reached twice (through a link) is done once.
"""

from __future__ import annotations

import fnmatch
import os
import signal
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import (
    Executor,
    Future,
    ProcessPoolExecutor,
    ThreadPoolExecutor,
    as_completed,
)
from concurrent.futures.process import BrokenProcessPool
from contextlib import closing, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from .agents.in_place import SessionSettings, process_session
from .agents.registry import MESSAGES
from .atomic import atomic_write, fsync_directory, remove_stale_temp_files
from .errors import CtxpackError, IsADirectory, OutputError, ProviderError, WorkerDied
from .files import InPlace, SourceFile, check_writable, replace_file
from .formats import Conversation, dump, parse
from .pipeline import Context, Job, Outcome, preview, run
from .providers.base import Summarizer
from .providers.registry import ProviderSettings, build_provider
from .snapshots import Details, session_id_for_file
from .status import Status

DEFAULT_GLOBS = ("*.json", "*.jsonl")
CHUNK_FILES = 16  # files a worker process takes at a time ...
CHUNK_BYTES = 256 * 1024  # ... but not more than this much of them, unless one file is bigger
Result = TypeVar("Result")


@dataclass(frozen=True)
class Target:
    """One file to do: where it is, how reports name it, and where its result goes."""

    path: Path
    label: str
    destination: Path | None = None  # None: in place


@dataclass(frozen=True)
class BatchSettings:
    job: Job
    writing: InPlace  # pretty, backup, snapshots
    dry_run: bool = False
    sessions: SessionSettings = field(default_factory=SessionSettings)  # agents' session files


@dataclass(frozen=True)
class FileReport:
    """What became of one file; small, so it crosses back from a worker process cheaply."""

    label: str
    changed: bool = False
    error: CtxpackError | None = None  # the file failed: unreadable, invalid, not writable
    summary: Status = Status.NOT_RUN
    summary_error: ProviderError | None = None
    summary_cut_off: ProviderError | None = None  # kept, though it stopped at max_tokens
    over_threshold: bool = False
    truncated: int = 0
    tokens_before: int | None = None
    tokens_after: int | None = None
    written: str | None = None  # the folder a file was written into (its fsync may wait)
    warning: str | None = None  # done, but something beside it went wrong (an agent's index)
    skipped: bool = False  # its output was already current (a re-run on object storage)

    @classmethod
    def of(cls, label: str, outcome: Outcome, written: Path | None = None) -> FileReport:
        return cls(
            label,
            changed=outcome.changed,
            summary=outcome.full,
            summary_error=outcome.error,
            summary_cut_off=outcome.cut_off,
            over_threshold=outcome.over_threshold,
            truncated=outcome.micro.truncated,
            tokens_before=outcome.tokens_before,
            tokens_after=outcome.tokens_after,
            written=str(written) if written else None,
        )


# --- finding the files ---------------------------------------------------------------------------


def find_targets(
    paths: Sequence[str],
    recursive: bool,
    globs: Sequence[str] = DEFAULT_GLOBS,
    output_dir: Path | None = None,
    skip: Sequence[Path] = (),
) -> list[Target]:
    """The files named, and the matching files in the folders named (with ``recursive``).

    Two inputs whose results would land on the same file of ``output_dir`` (``a/x.json`` and
    ``b/x.json`` named directly), or an input that would be its own output, are refused before
    anything is done.
    """
    skipped = {os.path.realpath(path) for path in (*skip, *([output_dir] if output_dir else []))}
    targets: list[Target] = []
    seen: set[str] = set()
    claimed: dict[str, str] = {}  # destination -> the input whose result goes there
    for name in paths:
        path = Path(name)
        if path.is_dir():
            if not recursive:
                raise IsADirectory(f"{name}: is a directory")
            found = _walk(path, globs, skipped)
        else:
            found = [(path, Path(path.name))]
        for file, relative in found:
            real = os.path.realpath(file)
            if real in seen:
                continue
            seen.add(real)
            destination = output_dir / relative if output_dir else None
            if destination is not None:
                _claim(claimed, destination, file, real)
            targets.append(Target(file, str(file), destination))
    return targets


def _claim(claimed: dict[str, str], destination: Path, file: Path, real: str) -> None:
    key = os.path.realpath(destination)
    if key == real:
        raise OutputError(f"{file}: its output would overwrite it: use --in-place instead")
    if key in claimed:
        raise OutputError(
            f"{destination}: would hold the results of both {claimed[key]} and {file}: "
            "compact them into different output folders"
        )
    claimed[key] = str(file)


def _walk(root: Path, globs: Sequence[str], skipped: set[str]) -> list[tuple[Path, Path]]:
    """Matching files under ``root``; hidden files and folders only if a pattern asks for them."""
    found = []
    for directory, subdirectories, names in os.walk(root):
        subdirectories[:] = sorted(
            sub
            for sub in subdirectories
            if not sub.startswith(".")
            and os.path.realpath(os.path.join(directory, sub)) not in skipped
        )
        for name in sorted(names):
            if any(_matches(name, pattern) for pattern in globs):
                file = Path(directory) / name
                found.append((file, file.relative_to(root)))
    return found


def _matches(name: str, pattern: str) -> bool:
    """Like a shell glob: ``*.json`` does not match ``.hidden.json``, ``.*.json`` does."""
    if name.startswith(".") and not pattern.startswith("."):
        return False
    return fnmatch.fnmatch(name, pattern)


def clean_up_after_killed_runs(targets: Sequence[Target], extra: Sequence[Path] = ()) -> int:
    """Remove temporary files that runs killed midway left beside these files."""
    directories = {target.path.parent for target in targets} | set(extra)
    directories |= {target.destination.parent for target in targets if target.destination}
    return sum(remove_stale_temp_files(directory) for directory in directories)


# --- doing one file ------------------------------------------------------------------------------


def process(
    target: Target,
    settings: BatchSettings,
    provider: Summarizer | None,
    sync_directory: bool = True,
) -> FileReport:
    """Compact one file and write the result; every failure becomes part of the report.

    With ``sync_directory=False`` the rename of a written file is made durable by the caller
    (``run_batch`` does each folder once, at the end), see ``atomic.atomic_write``.
    """
    try:
        if settings.sessions.format != MESSAGES:  # perhaps an agent's session file (SPEC §8)
            session = process_session(
                target.path, target.label, target.destination, settings, provider, sync_directory
            )
            if session is not None:
                return session
        source = SourceFile.read(target.path)
        conversation = parse(source.data, target.label)
        if target.destination is None:  # before any snapshot or model call is spent on it
            check_writable(source, target.label)
        if settings.dry_run:
            return FileReport.of(target.label, preview(settings.job, conversation))
        snapshots = settings.writing.snapshots
        context = Context(provider, snapshots, session_id_for_file(target.path), source=target.path)
        outcome = run(settings.job, conversation, context)  # leaves ``conversation`` as it was
        written = _write(target, source, conversation, outcome, settings.writing, sync_directory)
        return FileReport.of(target.label, outcome, written)
    except CtxpackError as error:
        return FileReport(target.label, error=error)


def _write(
    target: Target,
    source: SourceFile,
    original: Conversation,
    outcome: Outcome,
    writing: InPlace,
    sync_directory: bool,
) -> Path | None:
    """Write the result where it goes; return the folder written into, if anything was."""
    if target.destination is None:
        if not outcome.changed:
            return None
        details = Details(original.shape, len(original.messages), outcome.tokens_before)
        return replace_file(
            source, outcome.conversation, writing, target.label, sync_directory, details=details
        )
    data = dump(outcome.conversation, writing.pretty) if outcome.changed else source.data
    if _holds(target.destination, data):
        return None  # a re-run: the result is already there
    target.destination.parent.mkdir(parents=True, exist_ok=True)
    mode = source.mode & 0o7777
    return atomic_write(target.destination, data, mode, sync_directory)


def _holds(path: Path, data: bytes) -> bool:
    try:
        return path.stat().st_size == len(data) and path.read_bytes() == data
    except OSError:
        return False


# --- doing many ----------------------------------------------------------------------------------


def run_batch(
    targets: Sequence[Target],
    settings: BatchSettings,
    provider_settings: ProviderSettings,
    workers: int = 1,
    max_concurrency: int = 8,
    stop: threading.Event | None = None,
) -> Iterator[FileReport]:
    """Process every target; yield each report as soon as its file is done.

    Once ``stop`` is set (``--fail-fast``), no further file is started; the files in progress
    finish and are reported. Closing the iteration early also starts nothing more, but drops the
    reports still to come (an interruption). The folders written into are fsynced once each at
    the end, not once per file: that halves the journal commits a batch waits for, and a crash
    before then can only bring files back to their old version, which a re-run redoes.
    """
    stop = stop or threading.Event()
    written: set[str] = set()
    reported = 0
    try:
        with closing(
            _reports(targets, settings, provider_settings, workers, max_concurrency, stop)
        ) as reports:
            for report in reports:
                reported += 1
                if report.written:
                    written.add(report.written)
                yield report
    finally:
        if reported < len(targets):  # stopped early: files in progress were written unreported
            written.update(_folder_of(target) for target in targets)
        for directory in sorted(written):
            fsync_directory(Path(directory))


def _folder_of(target: Target) -> str:
    return os.path.dirname(os.path.realpath(target.destination or target.path))


def _reports(
    targets: Sequence[Target],
    settings: BatchSettings,
    provider_settings: ProviderSettings,
    workers: int,
    max_concurrency: int,
    stop: threading.Event,
) -> Iterator[FileReport]:
    needs_provider = not settings.dry_run and settings.job.command != "micro"
    if needs_provider and provider_settings.name != "extractive":  # waits on a model
        provider = build_provider(provider_settings)
        with ThreadPoolExecutor(max_workers=max(1, max_concurrency)) as threads:
            futures = [
                threads.submit(process, target, settings, provider, False) for target in targets
            ]
            for future in _as_completed(futures, threads, stop):
                yield future.result()
    elif workers > 1 and len(targets) > 1:
        with ProcessPoolExecutor(
            max_workers=workers, initializer=_start_worker, initargs=(settings, provider_settings)
        ) as processes:
            chunks = {
                processes.submit(_process_chunk_in_worker, chunk): chunk
                for chunk in _chunks(targets, workers)
            }
            for future in _as_completed(list(chunks), processes, stop):
                yield from _chunk_reports(future, chunks[future])
    else:
        provider = build_provider(provider_settings) if needs_provider else None
        for target in targets:
            if stop.is_set():
                return
            yield process(target, settings, provider, sync_directory=False)


def _chunks(targets: Sequence[Target], workers: int) -> list[list[Target]]:
    """The targets in small groups, one task each for the worker processes.

    One task per file costs the parent about as much as a small file's compaction (futures,
    pickling, wake-ups) and competes with the workers for the cores. A group is small enough
    (at most CHUNK_FILES files and, but for one big file, CHUNK_BYTES) that the work stays
    balanced and a stop is heard soon, and there are at least four groups per worker.
    """
    most = max(1, min(CHUNK_FILES, len(targets) // (workers * 4)))
    chunks: list[list[Target]] = []
    chunk: list[Target] = []
    size = 0
    for target in targets:
        with suppress(OSError):  # a missing file: its worker reports it
            size += os.stat(target.path).st_size
        chunk.append(target)
        if len(chunk) >= most or size >= CHUNK_BYTES:
            chunks.append(chunk)
            chunk, size = [], 0
    if chunk:
        chunks.append(chunk)
    return chunks


def _as_completed(
    futures: list[Future[Result]], executor: Executor, stop: threading.Event
) -> Iterator[Future[Result]]:
    """The futures as they are done; once ``stop`` is set, only those already in progress."""
    reported: set[Future[Result]] = set()
    try:
        for future in as_completed(futures):
            reported.add(future)
            yield future
            if stop.is_set():
                break
    finally:  # stopped, closed or interrupted: what has not started does not start
        executor.shutdown(wait=True, cancel_futures=True)
    for future in futures:  # stopped: what was in progress has finished, report it
        if future not in reported and not future.cancelled():
            yield future


def _chunk_reports(future: Future[list[FileReport]], chunk: Sequence[Target]) -> list[FileReport]:
    """A chunk's reports; if a worker process died (SIGKILL, out of memory, ``os._exit``) the
    pool is broken and every chunk not yet reported fails, each of its files named.

    Such a file is whole (old, or new if its worker got that far: every write is a rename), so
    its folder is fsynced at the end like any folder written into.
    """
    try:
        return future.result()
    except BrokenProcessPool:
        return [
            FileReport(
                target.label,
                error=WorkerDied(
                    f"{target.label}: not done: a worker process died unexpectedly "
                    "(the file is whole; run the batch again)"
                ),
                written=_folder_of(target),
            )
            for target in chunk
        ]


_worker_settings: BatchSettings | None = None
_worker_provider: Summarizer | None = None


def _start_worker(settings: BatchSettings, provider_settings: ProviderSettings) -> None:
    global _worker_settings, _worker_provider
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops the batch, not each worker
    _worker_settings = settings
    needs_provider = not settings.dry_run and settings.job.command != "micro"
    _worker_provider = build_provider(provider_settings) if needs_provider else None


def _process_chunk_in_worker(chunk: Sequence[Target]) -> list[FileReport]:
    return [_process_in_worker(target) for target in chunk]


def _process_in_worker(target: Target) -> FileReport:
    if _worker_settings is None:
        raise RuntimeError("batch worker used before it was started")
    return process(target, _worker_settings, _worker_provider, sync_directory=False)
