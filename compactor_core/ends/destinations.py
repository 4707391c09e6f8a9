"""Where a result goes: a stream, a file, an object at a URL, or back over the input (in place).

Each destination answers the same questions for any document (a conversation of messages or an
agent's session file), so that one path (``process.process``) serves every input:

- ``current``: is its result already there? (an output object records what it was made from);
- ``prepare``: may the input be used at all? (in place: writable, not in use by its agent);
- ``keeps_input``: does it keep the input itself? (in place it does: the original is linked into
  the snapshot store when the file is replaced, so nothing is saved before the model is asked);
- ``write``: write the result; return the folder written into (its fsync may wait) and a warning;
- ``output_name`` and ``folder``: the file or object written, and a local file's folder.

In place, the document itself knows how it is written over where it was read (``origins``).

Decisions (also in the README): a stream and ``-o`` get the result written anew (a filter's
output, ``--pretty`` applies); a file of an output folder mirrors its input: unchanged, it is the
input byte for byte, with the input's permission bits, and it is not rewritten if it already
holds that; in place, an unchanged file is not touched at all.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..compaction.outcome import Outcome, Report
from ..compaction.pipeline import Subject
from ..errors import OutputError, UsageError
from ..settings import RunSettings
from .documents import Document
from .sources import Source
from .written import NOTHING_WRITTEN, SETTINGS, SOURCE, TOKENS, Written, record

if TYPE_CHECKING:
    from pathlib import Path  # in annotations only: pathlib takes 4 ms to import


class _Elsewhere:
    """What a destination that writes the result somewhere new does by default: the input is
    not kept, nothing is current already, nothing to check before the run, no file named."""

    keeps_input = False
    output_name: str | None = None  # the file or object the result is written to
    folder: str | None = None  # the local folder it is written into

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
        self.write_chunks(subject.result_chunks(run.pretty))
        return NOTHING_WRITTEN


@dataclass(frozen=True)
class ToFile(_Elsewhere):
    """A local file: ``-o FILE`` (the result written anew), or a file of an output folder
    (``mirror``: see the module's decisions)."""

    path: Path
    mirror: bool = False

    @property
    def output_name(self) -> str:
        return str(self.path)

    @property
    def folder(self) -> str:
        return os.path.dirname(os.path.realpath(self.path))

    def write(
        self, document: Document, subject: Subject, outcome: Outcome, run: RunSettings, sync: bool
    ) -> Written:
        # here: the atomic writes' module (pathlib, hashlib: 8 ms of start-up) is only for a file
        from ..disk.atomic import NEW_FILE_MODE, atomic_write_chunks

        if not self.mirror:
            chunks = subject.result_chunks(run.pretty)
            return Written(str(atomic_write_chunks(self.path, chunks, sync_directory=sync)))
        chunks = _mirrored(document, subject, outcome, run)
        if document.in_memory:
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
        mode = document.origin.mode
        return Written(str(atomic_write_chunks(self.path, chunks, mode or NEW_FILE_MODE, sync)))


@dataclass(frozen=True)
class ToObject(_Elsewhere):
    """An object at a URL: ``-o URL``, or an object under an output URL (``mirror``), which
    records the input's version and the settings' key, so a re-run skips it when current."""

    url: str
    mirror: bool = False
    settings_key: str = ""

    @property
    def output_name(self) -> str:
        return self.url

    def current(self, source: Source) -> Report | None:
        if not self.mirror:
            return None
        return _current(self.url, self.settings_key, source.current_version())

    def write(
        self, document: Document, subject: Subject, outcome: Outcome, run: RunSettings, sync: bool
    ) -> Written:
        from . import object_store as storage

        if not self.mirror:
            storage.write(self.url, b"".join(subject.result_chunks(run.pretty)))
            return NOTHING_WRITTEN
        data = b"".join(_mirrored(document, subject, outcome, run))
        storage.write(self.url, data, record(document.origin.version, self.settings_key, outcome))
        return NOTHING_WRITTEN


@dataclass(frozen=True)
class InPlace:
    """Back over the input: a local file (SPEC §6, §8.4) or an object at a URL. How is the
    document's to say (``Document.check_in_place`` and ``write_in_place``)."""

    settings_key: str = ""  # an object rewritten in place records it, so a re-run skips it
    keeps_input = True
    output_name = None  # the input itself
    folder = None  # the input's

    def current(self, source: Source) -> Report | None:
        """An object rewritten in place records what made it: a re-run skips it."""
        return None if source.url is None else _current(source.url, self.settings_key, None)

    def prepare(self, document: Document, run: RunSettings) -> None:
        document.check_in_place(run)

    def write(
        self, document: Document, subject: Subject, outcome: Outcome, run: RunSettings, sync: bool
    ) -> Written:
        if not outcome.changed:
            return NOTHING_WRITTEN
        return document.write_in_place(subject, outcome, run, sync, self.settings_key)


Destination = ToStream | ToFile | ToObject | InPlace


def _mirrored(
    document: Document, subject: Subject, outcome: Outcome, run: RunSettings
) -> Iterable[bytes]:
    if outcome.changed:
        return subject.result_chunks(run.pretty)
    return document.input_chunks()


def _holds(path: Path, data: bytes) -> bool:
    try:
        return path.stat().st_size == len(data) and path.read_bytes() == data
    except OSError:
        return False


# --- objects: what an output records of its making -----------------------------------------------


def _current(name: str, key: str, source_version: str | None) -> Report | None:
    """The report of a skipped input, if the output at ``name`` is current; None if it must be
    done. ``source_version`` None: the output is the input itself (in place)."""
    from . import object_store as storage

    made = storage.metadata(name)
    if made.get(SETTINGS) != key:
        return None
    if source_version is not None and made.get(SOURCE) != source_version:
        return None  # the input changed since its output was made
    before, _, after = made.get(TOKENS, "").partition(" ")
    outcome = Outcome(
        tokens_before=int(before) if before.isdigit() else None,
        tokens_after=int(after) if after.isdigit() else None,
    )
    return Report(name, outcome, skipped=True)
