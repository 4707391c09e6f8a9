"""Where a result goes: a stream, a file, an object at a URL, or back over the input (in place).

Each destination answers the same four questions for any document (a conversation of messages
or an agent's session file), so that one path (``process.process``) serves every input:

- ``current``: is its result already there? (an output object records what it was made from);
- ``prepare``: may the input be used at all? (in place: writable, not in use by its agent);
- ``keeps_input``: does it keep the input itself? (in place it does: the original is linked into
  the snapshot store when the file is replaced, so nothing is saved before the model is asked);
- ``write``: write the result; return the folder written into (its fsync may wait) and a warning.

Decisions (also in the README): a stream and ``-o`` get the result written anew (a filter's
output, ``--pretty`` applies); a file of an output folder mirrors its input: unchanged, it is the
input byte for byte, with the input's permission bits, and it is not rewritten if it already
holds that; in place, an unchanged file is not touched at all.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ..compaction.outcome import Outcome, Report
from ..compaction.pipeline import Subject
from ..disk.atomic import NEW_FILE_MODE, atomic_write_chunks
from ..errors import OutputError, SessionInUse, UsageError, reading
from ..settings import RunSettings
from .documents import Document, MessagesDocument, file_version
from .sources import LocalFile, RemoteObject, Source

if TYPE_CHECKING:
    from ..providers.catalog import ProviderSettings
    from ..snapshots.base import Snapshots


class Written(NamedTuple):
    folder: str | None = None  # the folder a file was written into, for its fsync
    warning: str | None = None  # the agent's own index of the session could not be updated, …
    copied: str | None = None  # why the original was copied into the snapshots, not linked


NOTHING_WRITTEN = Written()
# What an object written by a batch records of its making (S3 metadata): a re-run skips it.
SOURCE, SETTINGS, TOKENS = "ctxpack-source", "ctxpack-settings", "ctxpack-tokens"


class _Elsewhere:
    """What a destination that writes the result somewhere new does by default: the input is
    not kept, nothing is current already, nothing to check before the run."""

    keeps_input = False

    def current(self, source: Source) -> Report | None:
        return None

    def prepare(self, document: Document, run: RunSettings) -> None:
        pass


@dataclass(frozen=True)
class ToStream(_Elsewhere):
    """Standard output, or any stream: ``write`` takes the result's chunks (the front end's).

    ``terminal``: the stream is a terminal (the front end knows), where an agent's session file,
    thousands of lines of JSON, is nobody's wish: the user forgot ``--in-place``, and is told.
    """

    write_chunks: Callable[[Iterable[bytes]], None]
    terminal: bool = False

    def prepare(self, document: Document, run: RunSettings) -> None:
        if self.terminal and document.guarded:
            raise UsageError(
                f"{document.label}: an agent's session file is not written to a terminal: compact "
                "it in place (the original is kept), or give output=FILE"
            )

    def write(
        self, document: Document, subject: Subject, outcome: Outcome, run: RunSettings, sync: bool
    ) -> Written:
        self.write_chunks(document.result_chunks(subject, run.pretty))
        return NOTHING_WRITTEN


@dataclass(frozen=True)
class ToFile(_Elsewhere):
    """A local file: ``-o FILE`` (the result written anew), or a file of an output folder
    (``mirror``: see the module's decisions)."""

    path: Path
    mirror: bool = False

    def write(
        self, document: Document, subject: Subject, outcome: Outcome, run: RunSettings, sync: bool
    ) -> Written:
        if not self.mirror:
            chunks = document.result_chunks(subject, run.pretty)
            return Written(str(atomic_write_chunks(self.path, chunks, sync_directory=sync)))
        chunks = _mirrored(document, subject, outcome, run)
        if isinstance(document, MessagesDocument):
            data = b"".join(chunks)
            if _holds(self.path, data):
                return NOTHING_WRITTEN  # a re-run: the result is already there
            chunks = iter((data,))
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except FileExistsError as error:  # a file where its folder must be
            raise OutputError(f"{self.path}: cannot write: {error.filename} is a file") from None
        except OSError as error:
            raise OutputError(f"{self.path}: cannot write: {error.strerror or error}") from None
        mode = document.status.st_mode & 0o7777 if document.status else NEW_FILE_MODE
        return Written(str(atomic_write_chunks(self.path, chunks, mode, sync)))


@dataclass(frozen=True)
class ToObject(_Elsewhere):
    """An object at a URL: ``-o URL``, or an object under an output URL (``mirror``), which
    records the input's version and the settings' key, so a re-run skips it when current."""

    url: str
    mirror: bool = False
    settings_key: str = ""

    def current(self, source: Source) -> Report | None:
        if not self.mirror:
            return None
        return _current(self.url, self.settings_key, _version(source))

    def write(
        self, document: Document, subject: Subject, outcome: Outcome, run: RunSettings, sync: bool
    ) -> Written:
        from . import object_store as storage

        if not self.mirror:
            storage.write(self.url, b"".join(document.result_chunks(subject, run.pretty)))
            return NOTHING_WRITTEN
        data = b"".join(_mirrored(document, subject, outcome, run))
        storage.write(self.url, data, _record(document.version, self.settings_key, outcome))
        return NOTHING_WRITTEN


@dataclass(frozen=True)
class InPlace:
    """Back over the input: a local file (SPEC §6, §8.4) or an object at a URL."""

    settings_key: str = ""  # an object rewritten in place records it, so a re-run skips it
    keeps_input = True

    def current(self, source: Source) -> Report | None:
        if isinstance(source, RemoteObject):
            return _current(source.url, self.settings_key, None)
        return None

    def prepare(self, document: Document, run: RunSettings) -> None:
        if document.status is None:  # an object: nothing more to check before it is read
            return
        from ..disk.replace import check_writable

        check_writable(document.status, document.label)
        if document.guarded and not run.dry_run:
            from ..session_files.in_use import refuse_in_use

            path = Path(document.path or "")
            refuse_in_use(
                document.label,
                document.status,
                run,
                lambda: _rewritten_by_us(run.snapshots, path, document.status),
            )
        if not run.dry_run:
            busy = document.busy(run)  # the agent's own signs: Cline's status, OpenCode's
            if busy:
                raise SessionInUse(
                    f"{document.label}: in use by its agent ({busy}): skipped, see force=True"
                )

    def write(
        self, document: Document, subject: Subject, outcome: Outcome, run: RunSettings, sync: bool
    ) -> Written:
        if not outcome.changed:
            return NOTHING_WRITTEN
        if document.path is None:
            return self._write_object(document, subject, outcome, run)
        if document.rewrites_itself:  # a database: changed by one transaction, not a rename
            return Written(warning=document.write_in_place(subject, outcome.tokens_before, run))
        return _replace_local(document, subject, outcome, run, sync)

    def _write_object(
        self, document: Document, subject: Subject, outcome: Outcome, run: RunSettings
    ) -> Written:
        from ..snapshots.base import session_id_for_url
        from . import object_store as storage

        name, data = document.label, b"".join(document.input_chunks())
        version = document.version
        snapshots = run.snapshots
        if snapshots is not None:
            details = document.details(outcome.tokens_before)
            snapshots.save_original(session_id_for_url(name), data, details)
        if run.backup_suffix:
            storage.write(name + run.backup_suffix, data)
        if storage.stat(name).version != version:
            raise OutputError(f"{name}: file changed while it was being compacted, left as is")
        result = b"".join(document.result_chunks(subject, run.pretty))
        storage.write(name, result, _record(version, self.settings_key, outcome))
        return NOTHING_WRITTEN


Destination = ToStream | ToFile | ToObject | InPlace


def _replace_local(
    document: Document, subject: Subject, outcome: Outcome, run: RunSettings, sync: bool
) -> Written:
    """Replace a local file by its result, the original kept (``files.replace``)."""
    from ..disk.replace import FileState, Replacement, replace
    from ..session_files.in_use import writer_check

    assert document.path is not None and document.status is not None
    assert document.opened is not None
    how = Replacement(
        document.label,
        run.snapshots,
        document.details(outcome.tokens_before),
        _sha256(document),
        run.backup_suffix,
        writer=writer_check(run.proc) if document.guarded else None,
    )
    path = Path(document.path)
    chunks = document.result_chunks(subject, run.pretty)
    replaced = replace(path, document.opened, FileState.of(document.status), chunks, how, sync)
    notes = [note for note in (document.after_replace(path), replaced.note) if note]
    return Written(replaced.folder, "; ".join(notes) or None, replaced.copied)


def _rewritten_by_us(snapshots: Snapshots | None, path: Path, status: os.stat_result) -> bool:
    """Whether the file's last change was ctxpack's own rewrite, as its snapshot recorded it."""
    if snapshots is None:
        return False
    last = snapshots.last_rewrite(path)
    return last is not None and last.rewritten is not None and last.rewritten.is_now(status)


def _sha256(document: Document) -> str | None:
    """The hash of the bytes read, for a document held in memory (a session file's is made
    from its snapshot)."""
    if isinstance(document, MessagesDocument):
        return hashlib.sha256(document.data).hexdigest()
    return None


def _mirrored(
    document: Document, subject: Subject, outcome: Outcome, run: RunSettings
) -> Iterable[bytes]:
    if outcome.changed:
        return document.result_chunks(subject, run.pretty)
    return document.input_chunks()


def _holds(path: Path, data: bytes) -> bool:
    try:
        return path.stat().st_size == len(data) and path.read_bytes() == data
    except OSError:
        return False


# --- objects: what an output records of its making -----------------------------------------------


def _version(source: Source) -> str:
    """The version of an input, as the document read from it will tell it (``file_version``)."""
    if isinstance(source, RemoteObject):
        return source.version
    if isinstance(source, LocalFile):
        with reading(source.label):
            return file_version(os.stat(source.path))
    return ""


def _current(name: str, key: str, source_version: str | None) -> Report | None:
    """The report of a skipped input, if the output at ``name`` is current; None if it must be
    done. ``source_version`` None: the output is the input itself (in place)."""
    from . import object_store as storage

    record = storage.metadata(name)
    if record.get(SETTINGS) != key:
        return None
    if source_version is not None and record.get(SOURCE) != source_version:
        return None  # the input changed since its output was made
    before, _, after = record.get(TOKENS, "").partition(" ")
    outcome = Outcome(
        tokens_before=int(before) if before.isdigit() else None,
        tokens_after=int(after) if after.isdigit() else None,
    )
    return Report(name, outcome, skipped=True)


def settings_key(run: RunSettings, provider: ProviderSettings) -> str:
    """What decides the bytes of a result: ctxpack's version, the job, the layout, the provider
    (never its key)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        release = version("ctxpack")
    except PackageNotFoundError:
        release = "unknown"
    who = (provider.name, provider.model, provider.base_url, provider.command)
    text = repr((release, run.command, run.settings, run.pretty, who))
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _record(source_version: str, key: str, outcome: Outcome) -> dict[str, str]:
    tokens = f"{outcome.tokens_before} {outcome.tokens_after}"
    return {SOURCE: source_version, SETTINGS: key, TOKENS: tokens}
