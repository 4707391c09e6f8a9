"""Snapshots: what ctxpack keeps of every input it changes (SPEC §5, issue 9).

The snapshot folder (``--snapshot-dir``, default ``.transcripts``) holds, per snapshot::

    {session_id}_{stamp}.{kind}.{ext}         the data
    {session_id}_{stamp}.{kind}.{ext}.meta    one JSON object saying what it is (``Snapshot``)

- ``stamp`` is the local time, ``YYYY-MM-DDTHH-MM-SS-ffffff``. A name is claimed with ``link()``,
  which fails if it exists: nothing is ever overwritten, and two processes in the same
  microsecond both succeed (the second takes the next microsecond).
- ``kind`` is ``original`` (the input before compaction, byte for byte: BOM, formatting, envelope
  keys, every record of an agent's session file), ``result`` (the compacted conversation, one
  message per line) or ``replaced`` (a file as ``restore`` found it before putting an original
  back, so that a restore loses nothing either).
- ``ext`` is ``json`` for a JSON array or request envelope, ``jsonl`` for everything else.
- An in-place file's original is the file itself: its inode is hard-linked here and then the
  caller's atomic rename gives the path a new inode, so even hundreds of megabytes are kept
  without a copy. Where linking fails (another filesystem, a filesystem without hard links, a
  file of another user) the file is copied.
- Files are 0600 (a linked original keeps the mode it had until the rename, then becomes 0600),
  a new directory 0700: snapshots may hold secrets from tool output.
- ``{session_id}_{stamp}.jsonl`` without a kind is a snapshot of an earlier version (the messages
  only); it is listed with kind ``unknown``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path, PurePath
from typing import Any, Protocol

import orjson

from . import defaults
from .atomic import _remove, atomic_write, fsync_directory, write_temp
from .errors import InputError, InputUnreadable, OutputError, UsageError
from .formats import Message, dumps

DEFAULT_DIRECTORY = defaults.SNAPSHOT_DIR
DEFAULT_SESSION = defaults.SESSION_ID
ORIGINAL, RESULT, REPLACED, UNKNOWN = "original", "result", "replaced", "unknown"
META_SUFFIX = ".meta"
READ_CHUNK = 1 << 20
_SESSION_ID = re.compile(r"[A-Za-z0-9._:@+-]{1,128}")
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9._:@+-]")
_FILE_NAME = re.compile(
    r"(?P<session>.+)_(?P<stamp>\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{6})"
    r"(?:\.(?P<kind>original|result|replaced))?\.(?P<ext>jsonl?)"
)
STAMP_FORMAT = "%Y-%m-%dT%H-%M-%S-%f"
_PATH_HASH_LENGTH = 8  # hex digits of the path's hash in a file's session id


def check_session_id(session_id: str) -> str:
    """Return ``session_id`` if it is allowed; refuse it (never rewrite it) otherwise."""
    if _SESSION_ID.fullmatch(session_id) and not session_id.startswith("."):
        return session_id
    raise UsageError(
        f"invalid session id {session_id!r}: use 1-128 of A-Z a-z 0-9 . _ : @ + -, "
        "not starting with '.'"
    )


def session_id_for_file(path: Path) -> str:
    """The session id of an in-place file: its name, and a short hash of its absolute path.

    ``projA/session.json`` and ``projB/session.json`` get ids of their own
    (``session-1f2e3d4c``), stable from run to run and readable in a listing. Symbolic links
    are resolved, so a file has the same id whichever link it is reached through.
    """
    real = os.path.realpath(path)
    return _session_id(Path(real).stem, os.fsencode(real))


def session_id_for_url(url: str) -> str:
    """The session id of an object: its name, and a short hash of its whole URL."""
    return _session_id(PurePath(url.rstrip("/").rsplit("/", 1)[-1]).stem, url.encode())


def _session_id(stem: str, where: bytes) -> str:
    digest = hashlib.sha256(where).hexdigest()[:_PATH_HASH_LENGTH]
    cleaned = _NOT_ALLOWED.sub("-", stem)[: 127 - _PATH_HASH_LENGTH]
    if cleaned.startswith("."):
        cleaned = "-" + cleaned[1:]
    return f"{cleaned or DEFAULT_SESSION}-{digest}"


@dataclass(frozen=True)
class Details:
    """What the caller knows of a snapshot's conversation, for ``restore --list``."""

    shape: str = "jsonl"  # array | envelope | jsonl | an agent's format: decides the extension
    messages: int | None = None
    tokens: int | None = None


NO_DETAILS = Details()


class Snapshots(Protocol):
    """Where ctxpack keeps what it changes: a local folder (``SnapshotStore``) or a URL
    (``storage.ObjectSnapshotStore``). Every writer uses only these three methods."""

    @property
    def location(self) -> str:
        """The folder or URL, as messages name it."""

    def save_original(
        self,
        session_id: str,
        data: bytes,
        details: Details,
        source: Path | None = None,
        kind: str = ORIGINAL,
    ) -> PurePath:
        """Keep an input exactly as it was read (``kind`` REPLACED: what a restore replaced)."""

    def save_result(
        self,
        session_id: str,
        messages: list[Message],
        details: Details = NO_DETAILS,
        source: Path | None = None,
    ) -> PurePath:
        """Keep a compacted conversation, one message per line."""

    def keep_original(
        self,
        file: Path,
        session_id: str,
        details: Details = NO_DETAILS,
        sha256: str | None = None,
        kind: str = ORIGINAL,
    ) -> AbstractContextManager[os.stat_result]:
        """Keep ``file`` as it is now while the block replaces it by a rename; yield its
        status after keeping it (a hard link changes its ctime). If the block raises, nothing
        was replaced: the snapshot is removed again."""


@dataclass(frozen=True)
class Snapshot:
    """One snapshot: where its data is and what its ``.meta`` file says."""

    path: Path
    session_id: str
    stamp: str
    kind: str  # original | result | replaced | unknown
    source: str | None = None  # the absolute path it came from; None: standard input
    time: str | None = None  # ISO 8601, with the UTC offset
    size: int | None = None
    sha256: str | None = None
    mode: int | None = None  # the permission bits of the source file
    messages: int | None = None
    tokens: int | None = None
    shape: str | None = None

    @property
    def moment(self) -> datetime:
        return datetime.strptime(self.stamp, STAMP_FORMAT)

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "session": self.session_id,
            "time": self.time or self.moment.isoformat(),
            "kind": self.kind,
            "source": self.source,
            "size": self.size,
            "sha256": self.sha256,
            "messages": self.messages,
            "tokens": self.tokens,
            "shape": self.shape,
        }

    def read(self) -> bytes:
        """The data, checked against the size and hash it was saved with."""
        try:
            data = self.path.read_bytes()
        except OSError as error:
            raise InputUnreadable(f"{self.path}: cannot read: {error.strerror}") from None
        if self.sha256 is not None and hashlib.sha256(data).hexdigest() != self.sha256:
            raise InputError(f"{self.path}: snapshot changed since it was taken, not used")
        return data


@dataclass(frozen=True)
class SnapshotStore:
    """Snapshots in one directory; ``clock`` gives the local time for new names."""

    directory: Path
    clock: Callable[[], datetime] = datetime.now

    @property
    def location(self) -> str:
        return str(self.directory)

    # --- saving ----------------------------------------------------------------------------------

    def save_original(
        self,
        session_id: str,
        data: bytes,
        details: Details,
        source: Path | None = None,
        kind: str = ORIGINAL,
    ) -> Path:
        """Keep an input exactly as it was read (standard input, a file not changed in place, a
        session's rows in a database; ``kind`` REPLACED: what a restore replaced)."""
        return self._save(session_id, kind, [data], details, source)

    def save_result(
        self,
        session_id: str,
        messages: list[Message],
        details: Details = NO_DETAILS,
        source: Path | None = None,
    ) -> Path:
        """Keep a compacted conversation, one message per line."""
        lines = (dumps(message) + b"\n" for message in messages)
        details = Details("jsonl", len(messages), details.tokens)
        return self._save(session_id, RESULT, lines, details, source)

    @contextlib.contextmanager
    def keep_original(
        self,
        file: Path,
        session_id: str,
        details: Details = NO_DETAILS,
        sha256: str | None = None,
        kind: str = ORIGINAL,
    ) -> Iterator[os.stat_result]:
        """Keep ``file`` as it is now while the block replaces it; yield its status after.

        The block must replace the file by a rename (``atomic_write``): the snapshot is a hard
        link to the file's inode where the filesystem allows it, and writing into the file
        itself would change the snapshot too. Linking changes the file's ctime, so the status
        yielded (taken after the link) is what a check for concurrent writers compares with.
        If the block raises, nothing was replaced: the snapshot is removed again.
        """
        check_session_id(session_id)
        self._make_directory()
        try:
            path = self._link_or_copy(Path(file), session_id, kind, details)
        except OSError as error:
            raise self._cannot_write(error) from None
        try:
            try:
                status = os.stat(file)  # after the link, which changed its ctime
            except OSError as error:
                raise InputUnreadable(f"{file}: cannot read: {error.strerror}") from None
            self._write_meta(path, session_id, kind, details, file, status.st_mode, sha256)
            yield status
        except BaseException:
            self.remove(path)
            raise
        with contextlib.suppress(OSError):  # the old inode is the snapshot's alone now
            os.chmod(path, 0o600)

    def _save(
        self,
        session_id: str,
        kind: str,
        chunks: Iterable[bytes],
        details: Details,
        source: Path | None = None,
    ) -> Path:
        check_session_id(session_id)
        self._make_directory()
        digest = hashlib.sha256()
        hashed = (_hashing(chunk, digest) for chunk in chunks)
        temp = write_temp(self.directory, session_id, hashed, 0o600, self._label)
        try:
            path = self._claim(temp, session_id, kind, details.shape)
        except OSError as error:
            raise self._cannot_write(error) from None
        finally:
            _remove(temp)
        try:
            self._write_meta(path, session_id, kind, details, source, None, digest.hexdigest())
        except BaseException:
            self.remove(path)
            raise
        return path

    def _make_directory(self) -> None:
        try:
            if not self.directory.is_dir():
                self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as error:
            raise self._cannot_write(error) from None

    @property
    def _label(self) -> str:
        return f"{self.directory}: snapshot"

    def _cannot_write(self, error: OSError) -> OutputError:
        return OutputError(f"{self._label}: cannot write: {error.strerror or error}")

    def _link_or_copy(self, file: Path, session_id: str, kind: str, details: Details) -> Path:
        real = Path(os.path.realpath(file))
        if stat.S_ISREG(os.stat(real).st_mode):
            try:
                path = self._claim(real, session_id, kind, details.shape)
            except OSError:  # another filesystem, no hard links, someone else's file: copy
                pass
            else:
                _fsync_file(path)  # the agent that wrote it may never have
                return path
        temp = write_temp(self.directory, session_id, _chunks_of(real), 0o600, self._label)
        try:
            return self._claim(temp, session_id, kind, details.shape)
        finally:
            _remove(temp)

    def _claim(self, data: Path, session_id: str, kind: str, shape: str) -> Path:
        """Link ``data`` under the first free name from the current moment on."""
        extension = "json" if shape in ("array", "envelope") else "jsonl"
        moment = self.clock()
        while True:
            name = f"{session_id}_{moment.strftime(STAMP_FORMAT)}.{kind}.{extension}"
            try:
                os.link(data, self.directory / name)
            except FileExistsError:
                moment += timedelta(microseconds=1)
                continue
            return self.directory / name

    def _write_meta(
        self,
        path: Path,
        session_id: str,
        kind: str,
        details: Details,
        source: Path | None,
        mode: int | None,
        sha256: str | None,
    ) -> None:
        """Write the ``.meta`` file, then make both names durable."""
        try:
            size = os.stat(path).st_size
        except OSError as error:
            raise self._cannot_write(error) from None
        stamp = _FILE_NAME.fullmatch(path.name)["stamp"]  # type: ignore[index]
        meta = {
            "session": session_id,
            "kind": kind,
            "time": datetime.strptime(stamp, STAMP_FORMAT).astimezone().isoformat(),
            "source": os.path.realpath(source) if source is not None else None,
            "size": size,
            "sha256": sha256 or _sha256_of(path),
            "mode": stat.S_IMODE(mode) if mode is not None else None,
            "messages": details.messages,
            "tokens": details.tokens,
            "shape": details.shape,
        }
        meta_path = path.with_name(path.name + META_SUFFIX)
        atomic_write(meta_path, dumps(meta) + b"\n", 0o600, sync_directory=False)
        fsync_directory(self.directory)

    # --- finding ---------------------------------------------------------------------------------

    def snapshots(self, session_id: str | None = None) -> list[Snapshot]:
        """Every snapshot in the directory (of one session), newest first."""
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return []
        except OSError as error:
            raise InputUnreadable(f"{self.directory}: {error.strerror}") from None
        found = [
            self._snapshot(match)
            for match in map(_FILE_NAME.fullmatch, names)
            if match and (session_id is None or match["session"] == session_id)
        ]
        return sorted(
            found, key=lambda snapshot: (snapshot.stamp, snapshot.path.name), reverse=True
        )

    def _snapshot(self, match: re.Match[str]) -> Snapshot:
        path = self.directory / match.string
        meta = _read_meta(path.with_name(match.string + META_SUFFIX))
        return Snapshot(
            path,
            match["session"],
            match["stamp"],
            match["kind"] or UNKNOWN,
            **{key: meta.get(key) for key in _META_FIELDS},
        )

    def select(
        self, session_id: str | None = None, kind: str | None = None, source: Path | None = None
    ) -> list[Snapshot]:
        """The snapshots of a session, of a kind, of a source file; newest first."""
        if session_id is not None:
            check_session_id(session_id)
        real = None
        if source is not None:  # its snapshots are all under its own session id
            real = os.path.realpath(source)
            session_id = session_id or session_id_for_file(source)
        return [
            snapshot
            for snapshot in self.snapshots(session_id)
            if (kind is None or snapshot.kind == kind) and (real is None or snapshot.source == real)
        ]

    def remove(self, snapshot: Snapshot | Path) -> None:
        path = snapshot.path if isinstance(snapshot, Snapshot) else snapshot
        for name in (path, path.with_name(path.name + META_SUFFIX)):
            try:
                _remove(name)
            except OSError as error:
                raise OutputError(f"{name}: cannot remove: {error.strerror}") from None


_META_FIELDS = ("source", "time", "size", "sha256", "mode", "messages", "tokens", "shape")


def _read_meta(path: Path) -> dict[str, Any]:
    """A snapshot's metadata; empty if it is missing or unreadable (the data still counts)."""
    try:
        meta = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return meta if isinstance(meta, dict) else {}


def _hashing(chunk: bytes, digest: Any) -> bytes:
    digest.update(chunk)
    return chunk


def _chunks_of(path: Path) -> Iterator[bytes]:
    try:
        with open(path, "rb") as handle:
            while chunk := handle.read(READ_CHUNK):
                yield chunk
    except OSError as error:
        raise InputUnreadable(f"{path}: cannot read: {error.strerror}") from None


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    for chunk in _chunks_of(path):
        digest.update(chunk)
    return digest.hexdigest()


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
