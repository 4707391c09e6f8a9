"""One session file through one command: to a stream, into an output folder, or in place.

In place (SPEC §8.4): a session its agent is using is skipped (``SessionInUse``) unless forced;
the original is kept by a hard link to its inode (``SnapshotStore.keep_original``), and the new
version, written as a stream beside it, replaces it by a rename, but only if the file is still
exactly as it was read (size, mtime, inode) and, unless forced, nobody opened it for writing
meanwhile. Otherwise it is left alone and the run says so.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from ..atomic import atomic_write_chunks
from ..errors import OutputError, SessionInUse
from ..files import InPlace
from ..pipeline import Job
from ..providers.base import Summarizer
from ..snapshots import Details, session_id_for_file
from .base import AgentFormat
from .compact import SessionOutcome, Surroundings, run_session
from .in_use import DEFAULT_MIN_IDLE, in_use, writer_of
from .records import open_file
from .registry import detect
from .session import Session, index_session
from .write import session_chunks

if TYPE_CHECKING:  # batch imports this module when it meets a session file
    from ..batch import BatchSettings, FileReport


@dataclass(frozen=True)
class SessionSettings:
    """How agent session files are told apart and treated (plain data: crosses to workers)."""

    format: str = "auto"  # --format
    min_idle: float = DEFAULT_MIN_IDLE  # seconds a session must be unchanged to be rewritten
    force: bool = False  # rewrite a session even while it is in use
    now: datetime | None = None  # the time of the run (None: the clock, when asked)
    proc: Path = field(default_factory=lambda: Path("/proc"))

    def time(self) -> datetime:
        return self.now or datetime.now(UTC)


@dataclass(frozen=True)
class Done:
    """What was done to one session file."""

    session: Session
    outcome: SessionOutcome
    written: Path | None = None  # the folder written into, if anything was
    warning: str | None = None  # the agent's own index of the session could not be updated


def transform(
    handle: BinaryIO,
    agent_format: AgentFormat,
    label: str,
    job: Job,
    settings: SessionSettings,
    provider: Summarizer | None,
    dry_run: bool = False,
    path: Path | None = None,
) -> tuple[Session, SessionOutcome]:
    """Pass 1 and the decisions; nothing is written."""
    measure = job.measure or job.command != "micro"
    session = index_session(handle, agent_format, label, measure=measure)
    around = Surroundings(provider, settings.time(), path, dry_run=dry_run)
    return session, run_session(handle, session, job, around)


def in_place(
    handle: BinaryIO,
    agent_format: AgentFormat,
    label: str,
    job: Job,
    settings: SessionSettings,
    writing: InPlace,
    provider: Summarizer | None,
    dry_run: bool = False,
    sync_directory: bool = True,
) -> Done:
    """Rewrite the session file ``handle`` was opened on, if the command changes it."""
    path = Path(os.path.realpath(handle.name))
    before = os.fstat(handle.fileno())
    _check_writable(before, label)
    if not dry_run and not settings.force:
        reason = in_use(path, settings.time().timestamp(), settings.min_idle, settings.proc)
        if reason:
            raise SessionInUse(f"{label}: in use by its agent ({reason}): skipped, see --force")
    session, outcome = transform(
        handle, agent_format, label, job, settings, provider, dry_run, path
    )
    if dry_run or not outcome.changed:
        return Done(session, outcome)
    # the view's count by the command's counter (--tokenizer), None if micro alone measured none
    tokens = outcome.tokens_before
    details = Details(shape=agent_format.name, messages=len(session.view), tokens=tokens)
    with _kept(writing, path, details) as kept, _backup(writing, path, label):
        if (kept.st_size, kept.st_mtime_ns, kept.st_ino) != (
            before.st_size,
            before.st_mtime_ns,
            before.st_ino,
        ):
            raise _changed(label)

        def still_as_read() -> None:
            now = os.stat(path)
            if (now.st_size, now.st_mtime_ns, now.st_ino, now.st_ctime_ns) != (
                kept.st_size,
                kept.st_mtime_ns,
                kept.st_ino,
                kept.st_ctime_ns,
            ):
                raise _changed(label)
            if not settings.force and writer_of(now.st_dev, now.st_ino, settings.proc):
                raise SessionInUse(f"{label}: opened for writing while being compacted, left as is")

        chunks = session_chunks(handle, session, outcome)
        written = atomic_write_chunks(
            path, chunks, sync_directory=sync_directory, check=still_as_read
        )
    return Done(session, outcome, written, agent_format.after_replace(path))


def to_file(
    handle: BinaryIO,
    destination: Path,
    session: Session,
    outcome: SessionOutcome,
    sync_directory: bool = True,
) -> Path:
    """Write the result (or, unchanged, the file as it is) atomically to ``destination``."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    mode = os.fstat(handle.fileno()).st_mode & 0o7777
    chunks = session_chunks(handle, session, outcome)
    return atomic_write_chunks(destination, chunks, mode, sync_directory)


def _check_writable(status: os.stat_result, label: str) -> None:
    if not status.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        raise OutputError(f"{label}: file is read-only, left as is: make it writable to compact it")


def _changed(label: str) -> SessionInUse:
    return SessionInUse(
        f"{label}: changed while being compacted (its agent wrote to it), left as is"
    )


@contextlib.contextmanager
def _kept(writing: InPlace, path: Path, details: Details) -> Iterator[os.stat_result]:
    if writing.snapshots is None:  # --no-transcript
        yield os.stat(path)
        return
    with writing.snapshots.keep_original(path, session_id_for_file(path), details) as status:
        yield status


@contextlib.contextmanager
def _backup(writing: InPlace, path: Path, label: str) -> Iterator[None]:
    """``--backup SUFFIX``: the original beside the file, as a hard link to its old inode (once
    the file is replaced, the link holds the original alone), a copy where links fail."""
    if not writing.backup_suffix:
        yield
        return
    backup = path.with_name(path.name + writing.backup_suffix)
    temp = path.with_name(f".{backup.name}.{os.getpid()}.ctxpack-tmp")
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        os.link(path, temp)
        os.replace(temp, backup)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        with open(path, "rb") as source:
            atomic_write_chunks(backup, iter(lambda: source.read(1 << 20), b""))
    try:
        yield
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(backup)  # nothing was replaced: the backup would be the live file
        raise


def process_session(
    path: Path,
    label: str,
    destination: Path | None,
    settings: BatchSettings,
    provider: Summarizer | None,
    sync_directory: bool = True,
) -> FileReport | None:
    """One file of a batch, if it is an agent's session (None: it is a conversation of
    messages, for the caller to do)."""
    with open_file(path, label) as handle:
        agent_format = detect(handle, settings.sessions.format, label)
        if agent_format is None:
            return None
        job, sessions = settings.job, settings.sessions
        if destination is None:
            done = in_place(
                handle,
                agent_format,
                label,
                job,
                sessions,
                settings.writing,
                provider,
                settings.dry_run,
                sync_directory,
            )
        else:
            session, outcome = transform(
                handle, agent_format, label, job, sessions, provider, settings.dry_run
            )
            written = None
            if not settings.dry_run:
                written = to_file(handle, destination, session, outcome, sync_directory)
            done = Done(session, outcome, written)
    return replace(report(label, done.outcome, done.written), warning=done.warning)


def report(label: str, outcome: SessionOutcome, written: Path | None = None) -> FileReport:
    from ..batch import FileReport

    return FileReport(
        label,
        changed=outcome.changed,
        summary=outcome.full,
        summary_error=outcome.error,
        over_threshold=outcome.over_threshold,
        truncated=outcome.truncated,
        tokens_before=outcome.tokens_before,
        tokens_after=outcome.tokens_after,
        written=str(written) if written else None,
    )
