"""Inputs, outputs and snapshots at URLs (``s3://``, ``gs://``, ``memory://``, …) through fsspec.

fsspec (and s3fs for ``s3://``) come with the ``s3`` and ``dask`` extras and are imported only when
a URL is used. Credentials and endpoints are never parameters here: each filesystem finds them
the standard way (for S3: ``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, profiles, instance roles),
so they cannot end up in a command line, a log or an error message.

Every failure becomes the error a local file would give, with the same one-line wording (``URL:
no such file``, ``URL: cannot read: Permission denied``, …), so the exit statuses are the same too.
An object is always written whole, in one request: a reader (or a re-run) sees the old object or
the new one, never part of one.

Local paths given where a URL could be (an input, ``--output-dir``) go through fsspec's local
filesystem for reading and listing and through ``atomic.atomic_write`` for writing.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import Any

from ..conversation.formats import Conversation, dump, dumps
from ..disk.atomic import atomic_write
from ..errors import ConfigError, CtxpackError, InputUnreadable, IsADirectory, OutputError
from ..snapshots.base import (
    META_SUFFIX,
    NO_DETAILS,
    ORIGINAL,
    RESULT,
    STAMP_FORMAT,
    Details,
    Keeping,
    Kept,
    Snapshot,
    check_session_id,
)
from ..snapshots.local_store import SnapshotStore
from ..snapshots.locations import snapshot_location
from .urls import is_url, join

_EXTRAS = {"s3": "s3", "s3a": "s3", "gs": "gcs (gcsfs)", "gcs": "gcs (gcsfs)"}


@dataclass(frozen=True)
class ObjectInfo:
    """One object of a listing: where it is, how big, and which version of it."""

    name: str  # URL, or local path
    size: int
    version: str  # ETag or version id: what a re-run compares to know the input is the same


def filesystem(name: str) -> tuple[Any, str]:
    """The fsspec filesystem that holds ``name``, and the path of ``name`` in it."""
    try:
        from fsspec.core import url_to_fs
    except ImportError:
        raise ConfigError(
            f"{name}: URLs need the s3 or dask extra: pip install 'ctxpack[s3]'"
        ) from None
    try:
        return url_to_fs(name)
    except ImportError:
        scheme = name.split("://", 1)[0]
        extra = _EXTRAS.get(scheme, f"the fsspec package for {scheme}://")
        raise ConfigError(f"{name}: install {extra} to use {scheme}:// URLs") from None
    except ValueError as error:
        raise ConfigError(f"{name}: {error}") from None


@contextmanager
def translated(name: str, writing: bool = False) -> Iterator[None]:
    """Turn whatever a filesystem raises into the one-line error a local file would give."""
    error_type = OutputError if writing else InputUnreadable
    verb = "write" if writing else "read"
    try:
        yield
    except CtxpackError:
        raise
    except FileNotFoundError:
        missing = "cannot write: no such bucket or folder" if writing else "no such file"
        raise error_type(f"{name}: {missing}") from None
    except IsADirectoryError:
        raise IsADirectory(f"{name}: is a directory") from None
    except PermissionError:
        raise error_type(f"{name}: cannot {verb}: Permission denied") from None
    except Exception as error:  # any filesystem's own errors: botocore's, aiohttp's, …
        raise error_type(f"{name}: cannot {verb}: {_reason(error)}") from None


def _reason(error: BaseException) -> str:
    """A short reason that names no credential: botocore's messages never include keys."""
    kind = type(error).__name__
    if kind in ("NoCredentialsError", "PartialCredentialsError"):
        return "no credentials (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE)"
    text = getattr(error, "strerror", None) or str(error) or kind
    return text.splitlines()[0]


def _version(info: Mapping[str, Any]) -> str:
    for key in ("ETag", "etag", "VersionId", "generation", "md5Hash"):
        if info.get(key):
            return str(info[key]).strip('"')
    return f"{info.get('size')}-{info.get('mtime') or info.get('LastModified') or ''}"


def _info(name: str, fs: Any, path: str) -> ObjectInfo:
    fs.invalidate_cache(path)
    info = fs.info(path)
    return ObjectInfo(name, int(info.get("size") or 0), _version(info))


# --- reading and listing -------------------------------------------------------------------------


def read(name: str) -> bytes:
    """The bytes of one object."""
    with translated(name):
        fs, path = filesystem(name)
        return fs.cat_file(path)


def stat(name: str) -> ObjectInfo:
    with translated(name):
        fs, path = filesystem(name)
        return _info(name, fs, path)


def kind(name: str) -> str:
    """``"directory"`` (a folder or key prefix) or ``"file"``; raise as a missing file would."""
    with translated(name):
        fs, path = filesystem(name)
        if name.endswith("/") or fs.isdir(path):
            if not fs.exists(path):
                raise FileNotFoundError(name)
            return "directory"
        if not fs.exists(path):
            raise FileNotFoundError(name)
        return "file"


def walk(root: str) -> Iterator[tuple[str, ObjectInfo]]:
    """Every object under ``root`` as (key relative to root, info), a page at a time.

    S3 prefixes are listed through s3fs's paging iterator, a page (1,000 keys) per request and
    nothing kept: a prefix of millions of keys never sits in memory (fsspec's ``find`` would hold
    the whole listing, and cache it). Other filesystems are walked a folder at a time.
    """
    fs, path = filesystem(root)
    base = path.rstrip("/")
    with translated(root):
        entries = _pages(fs, base) if hasattr(fs, "_iterdir") else _folders(fs, base)
        for entry in entries:
            key = entry["name"].rstrip("/")
            if entry.get("type") == "directory" or not key.startswith(base + "/"):
                continue
            relative = key[len(base) + 1 :]
            yield (
                relative,
                ObjectInfo(join(root, relative), int(entry.get("size") or 0), _version(entry)),
            )


def _pages(fs: Any, base: str) -> Iterator[dict[str, Any]]:
    """s3fs's own paging listing (``ListObjectsV2``), driven from this thread a page at a time."""
    from fsspec.asyn import sync

    bucket, _, prefix = base.partition("/")
    pages = fs._iterdir(bucket, delimiter="", prefix=prefix + "/" if prefix else "")
    while True:
        try:
            entry = sync(fs.loop, pages.__anext__)
        except StopAsyncIteration:
            return
        yield entry


def _folders(fs: Any, base: str) -> Iterator[dict[str, Any]]:
    for _folder, _subfolders, files in fs.walk(base, detail=True):
        yield from files.values()


# --- writing -------------------------------------------------------------------------------------


def write(name: str | Path, data: bytes, metadata: Mapping[str, str] | None = None) -> None:
    """Write ``data`` to ``name`` whole or not at all; ``metadata`` is kept with an S3 object."""
    if not is_url(name):
        with translated(str(name), writing=True):
            Path(name).parent.mkdir(parents=True, exist_ok=True)
        atomic_write(Path(name), data)
        return
    name = str(name)
    with translated(name, writing=True):
        fs, path = filesystem(name)
        extra = {"Metadata": dict(metadata)} if metadata and _keeps_metadata(fs) else {}
        fs.pipe_file(path, data, **extra)
        fs.invalidate_cache(path)


def metadata(name: str) -> dict[str, str]:
    """The metadata ``write`` kept with an object; empty where the store keeps none."""
    if not is_url(name):
        return {}
    with translated(name):
        fs, path = filesystem(name)
        if not _keeps_metadata(fs):
            return {}
        try:
            return dict(fs.metadata(path, refresh=True))
        except FileNotFoundError:
            return {}


def _keeps_metadata(fs: Any) -> bool:
    return "s3" in (fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,))


def create(name: str, data: bytes) -> bool:
    """Write a new object at ``name``; False (nothing written) if one is there already."""
    with translated(name, writing=True):
        fs, path = filesystem(name)
        if fs.exists(path):
            return False
        fs.pipe_file(path, data)
        return True


# --- snapshots -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ObjectSnapshotStore:
    """Snapshots under a URL, named and described as in a local folder (``snapshots.py``).

    An existing snapshot is never overwritten: a name that is taken moves on by a microsecond, as
    for local files. (Object stores have no exclusive create that every one of them honours, so
    two writers of one session id in the same microsecond could still meet; session ids of a
    batch come from distinct file names.) Objects are private to the bucket's owner by default,
    which stands for the 0600 of local snapshots. A local file kept here is copied: an object
    cannot be a hard link.
    """

    directory: str
    clock: Callable[[], datetime] = datetime.now

    @property
    def location(self) -> str:
        return self.directory

    def save_original(
        self,
        session_id: str,
        data: bytes,
        details: Details,
        source: Path | None = None,
        kind: str = ORIGINAL,
    ) -> PurePosixPath:
        return self._save(session_id, kind, data, details, source)

    def save_result(
        self,
        session_id: str,
        result: Conversation,
        details: Details = NO_DETAILS,
        source: Path | None = None,
    ) -> PurePosixPath:
        details = Details(result.shape, len(result.messages), details.tokens)
        return self._save(session_id, RESULT, dump(result), details, source)

    @contextmanager
    def keep_original(self, file: Path, opened: int, size: int, how: Keeping) -> Iterator[Kept]:
        """A copy of the first ``size`` bytes of the open file (an object is never a link)."""
        with translated(str(file)):
            data = os.pread(opened, size, 0)
        name = self._save(how.session_id, how.kind, data, how.details, file)
        kept = Kept(os.stat(file), name, linked=False)
        try:
            yield kept
        except BaseException:
            if not kept.replaced:
                remove(str(name))
                remove(str(name) + META_SUFFIX)
            raise

    def last_rewrite(self, file: Path) -> Snapshot | None:
        """Not recorded at URLs: a file rewritten with its snapshot kept there is in use for
        ``--min-idle`` like any other recent change."""
        return None

    def _save(
        self, session_id: str, kind: str, data: bytes, details: Details, source: Path | None
    ) -> PurePosixPath:
        check_session_id(session_id)
        extension = "json" if details.shape in ("array", "envelope") else "jsonl"
        moment = self.clock()
        while True:
            stamp = moment.strftime(STAMP_FORMAT)
            name = join(self.directory, f"{session_id}_{stamp}.{kind}.{extension}")
            try:
                if create(name, data):
                    break
            except OutputError as error:
                raise OutputError(f"{self.directory}: cannot write snapshot: {error}") from None
            moment += timedelta(microseconds=1)
        meta = {
            "session": session_id,
            "kind": kind,
            "time": moment.astimezone().isoformat(),
            "source": str(source) if source is not None else None,
            "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
            "messages": details.messages,
            "tokens": details.tokens,
            "shape": details.shape,
        }
        write(name + META_SUFFIX, dumps(meta) + b"\n")
        return PurePosixPath(name)


def remove(name: str) -> None:
    """Delete an object, if it is there."""
    with translated(name, writing=True):
        fs, path = filesystem(name)
        if fs.exists(path):
            fs.rm(path)


def snapshot_store(location: str) -> SnapshotStore | ObjectSnapshotStore:
    """The snapshot store at ``location``: a local folder or a URL."""
    return ObjectSnapshotStore(location) if is_url(location) else SnapshotStore(Path(location))


def run_snapshot_store(
    given: str | None, bareagent: bool, state_home: str | None, home: str | None
) -> SnapshotStore | ObjectSnapshotStore:
    """The store a run keeps its snapshots in (``snapshots.locations.snapshot_location``)."""
    return snapshot_store(snapshot_location(given, bareagent, state_home, home))
