"""Snapshots: what ctxpack keeps of every input it changes (SPEC §5, issues 9, 21 and 22).

A snapshot store (a local folder: ``snapshot_store.SnapshotStore``; a URL:
``storage.ObjectSnapshotStore``) holds, per snapshot::

    {session_id}_{stamp}.{kind}.{ext}         the data
    {session_id}_{stamp}.{kind}.{ext}.meta    one JSON object saying what it is (``Snapshot``)

- ``stamp`` is the local time, ``YYYY-MM-DDTHH-MM-SS-ffffff``. A name is claimed with a hard
  link, which fails if it exists: nothing is ever overwritten, and two processes in the same
  microsecond both succeed (the second takes the next microsecond).
- ``kind`` is ``original`` (the input before compaction, byte for byte: BOM, formatting,
  envelope keys, every record of an agent's session file), ``result`` (the compacted
  conversation in the input's shape: an array, an envelope with all its fields, or JSONL) or
  ``replaced`` (a file as ``restore`` found it before putting an original back, so that a
  restore loses nothing either).
- ``ext`` is ``json`` for a JSON array or request envelope, ``jsonl`` for everything else.
- The ``.meta`` of a file's original (or replaced) snapshot also says what ctxpack left at the
  file (``rewritten``: its size, hash, inode and mtime just after the rewrite): so a later run
  knows the file's last change was ctxpack's own (not its agent's), and ``restore`` knows which
  lines were added after the run.
- ``{session_id}_{stamp}.jsonl`` without a kind is a snapshot of an earlier version (the messages
  only); it is listed with kind ``unknown``.

This module holds the names and records, light enough for every run; the stores do the rest.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePath
from typing import Any, Protocol

from .. import defaults
from ..conversation.formats import Conversation
from ..errors import UsageError

DEFAULT_SESSION = defaults.SESSION_ID
ORIGINAL, RESULT, REPLACED, UNKNOWN = "original", "result", "replaced", "unknown"
META_SUFFIX = ".meta"
_SESSION_ID = re.compile(r"[A-Za-z0-9._:@+-]{1,128}")
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9._:@+-]")
FILE_NAME = re.compile(
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


def session_id_for_file(path: str | os.PathLike[str]) -> str:
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


def extension_of(shape: str) -> str:
    return "json" if shape in ("array", "envelope") else "jsonl"


def stamp_of(moment: datetime) -> str:
    return moment.strftime(STAMP_FORMAT)


@dataclass(frozen=True)
class Details:
    """What the caller knows of a snapshot's conversation, for ``restore --list``."""

    shape: str = "jsonl"  # array | envelope | jsonl | an agent's format: decides the extension
    messages: int | None = None
    tokens: int | None = None


NO_DETAILS = Details()


@dataclass(frozen=True)
class Rewritten:
    """What ctxpack left at a file when it rewrote it: its size and hash, and the inode and
    modification time it had then (the file is ctxpack's own as long as they have not changed)."""

    size: int
    sha256: str
    inode: int | None = None
    mtime_ns: int | None = None

    def is_now(self, status: os.stat_result) -> bool:
        """Whether ``status`` (the file's now) is still exactly what ctxpack left."""
        now = (status.st_size, status.st_ino, status.st_mtime_ns)
        return now == (self.size, self.inode, self.mtime_ns)

    def as_dict(self) -> dict[str, Any]:
        return {
            "size": self.size,
            "sha256": self.sha256,
            "inode": self.inode,
            "mtime_ns": self.mtime_ns,
        }

    @classmethod
    def of(cls, value: Any) -> Rewritten | None:
        if not isinstance(value, dict):
            return None
        size, sha256 = value.get("size"), value.get("sha256")
        if not isinstance(size, int) or not isinstance(sha256, str):
            return None
        inode, mtime_ns = value.get("inode"), value.get("mtime_ns")
        return cls(
            size,
            sha256,
            inode if isinstance(inode, int) else None,
            mtime_ns if isinstance(mtime_ns, int) else None,
        )


@dataclass
class Kept:
    """A file kept in a store while the caller replaces it (``Snapshots.keep_original``)."""

    status: os.stat_result  # the file's, after it was kept (a new hard link changes the ctime)
    path: PurePath  # the snapshot
    linked: bool  # the snapshot is the file's own inode (a hard link), not a copy
    copied: str | None = None  # why a local file was copied rather than linked, for the user
    # set by the caller:
    replaced: bool = False  # the file was renamed over: the snapshot stays whatever happens
    rewritten: Rewritten | None = None  # what the file is now
    moved: int = 0  # bytes that reached the old file late and were moved onto the new one


class Snapshots(Protocol):
    """Where ctxpack keeps what it changes: a local folder or a URL. Every writer uses these."""

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
        result: Conversation,
        details: Details = NO_DETAILS,
        source: Path | None = None,
    ) -> PurePath:
        """Keep a compacted conversation, in its input's shape (an envelope keeps its model,
        system and every other field)."""

    def keep_original(
        self, file: Path, opened: int, size: int, how: Keeping
    ) -> AbstractContextManager[Kept]:
        """Keep the first ``size`` bytes of ``file`` (open as ``opened``, the very inode that
        was read) while the block replaces the file by a rename, which it marks in the ``Kept``
        it is given. If the block raises before that, the snapshot is removed again."""

    def last_rewrite(self, file: Path) -> Snapshot | None:
        """The newest snapshot that says what ctxpack left at ``file`` (``rewritten``)."""


@dataclass(frozen=True)
class Keeping:
    """What a kept file's snapshot says of it."""

    session_id: str
    details: Details = NO_DETAILS
    sha256: str | None = None  # of the bytes read, when the caller knows it
    kind: str = ORIGINAL
    rewritten: Rewritten | None = None  # what the file is to become (completed after the rename)
    own_links: int = 0  # hard links to the file ctxpack made itself (a backup), not the user's


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
    uid: int | None = None  # its owner and group
    gid: int | None = None
    messages: int | None = None
    tokens: int | None = None
    shape: str | None = None
    rewritten: Rewritten | None = None
    trusted: bool = False  # its .meta is the user's own regular file, with a size and hash
    reader: Any = field(default=None, compare=False, repr=False)  # the store that reads it

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
        return self.reader.read(self)

    def chunks(self) -> Iterator[bytes]:
        """The data a block at a time, checked as it is read (the last block raises if the
        hash does not match)."""
        return self.reader.chunks(self)


META_FIELDS = ("source", "time", "size", "sha256", "mode", "uid", "gid", "messages", "tokens")


def meta_record(
    session_id: str,
    kind: str,
    stamp: str,
    details: Details,
    source: Path | None,
    status: os.stat_result | None,
    size: int,
    sha256: str,
    rewritten: Rewritten | None = None,
) -> dict[str, Any]:
    """The ``.meta`` object of a snapshot; ``status``: of the source file, when there is one."""
    return {
        "session": session_id,
        "kind": kind,
        "time": datetime.strptime(stamp, STAMP_FORMAT).astimezone().isoformat(),
        "source": os.path.realpath(source) if source is not None else None,
        "size": size,
        "sha256": sha256,
        "mode": (status.st_mode & 0o7777) if status is not None else None,
        "uid": status.st_uid if status is not None else None,
        "gid": status.st_gid if status is not None else None,
        "messages": details.messages,
        "tokens": details.tokens,
        "shape": details.shape,
        "rewritten": rewritten.as_dict() if rewritten is not None else None,
    }


def snapshot_of(
    path: Path, match: re.Match[str], meta: dict[str, Any] | None, reader: Any
) -> Snapshot:
    """The snapshot named ``match`` at ``path``, as its ``.meta`` (None: none usable) says."""
    meta = meta or {}
    values = {key: meta.get(key) for key in META_FIELDS}
    trusted = isinstance(values["size"], int) and isinstance(values["sha256"], str)
    return Snapshot(
        path,
        match["session"],
        match["stamp"],
        match["kind"] or UNKNOWN,
        shape=meta.get("shape"),
        rewritten=Rewritten.of(meta.get("rewritten")),
        trusted=trusted,
        reader=reader,
        **values,
    )
