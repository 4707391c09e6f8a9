"""Rewriting files in place, safely: snapshot first, optional backup, atomic replace.

Decisions (also in the README):
- a file whose result equals its input is not rewritten, so its mtime stays;
- a symbolic link is followed: the file it points to is rewritten and the link stays a link;
- a file with no write permission bit is refused, not silently replaced;
- a file that changed on disk after it was read is left alone and reported, so a concurrent writer's
  work is never overwritten by a result computed from the older text.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from .atomic import atomic_write
from .errors import OutputError, reading
from .formats import Conversation, dump
from .snapshots import NO_DETAILS, ORIGINAL, Details, SnapshotStore, session_id_for_file


@dataclass(frozen=True)
class SourceFile:
    """A file as it was read: its bytes and what its status said then."""

    path: Path  # the real file, symbolic links resolved
    data: bytes
    mtime_ns: int
    size: int
    mode: int
    inode: int = 0
    ctime_ns: int = 0  # changes on every write, even one that puts the old mtime back

    @classmethod
    def read(cls, path: Path) -> SourceFile:
        with reading(str(path)):
            real = Path(path).resolve(strict=True)
            with open(real, "rb") as handle:
                status = os.fstat(handle.fileno())
                if stat.S_ISDIR(status.st_mode):
                    raise IsADirectoryError(21, "is a directory")
                data = handle.read()
        return cls(
            real,
            data,
            status.st_mtime_ns,
            status.st_size,
            status.st_mode,
            status.st_ino,
            status.st_ctime_ns,
        )

    def unchanged_on_disk(self) -> bool:
        """Whether the file is still the one that was read: not rewritten, not replaced."""
        try:
            now = os.stat(self.path)
        except OSError:
            return False
        then = (self.mtime_ns, self.size, self.inode, self.ctime_ns)
        return (now.st_mtime_ns, now.st_size, now.st_ino, now.st_ctime_ns) == then


@dataclass(frozen=True)
class InPlace:
    """How a file is rewritten."""

    pretty: bool = False
    backup_suffix: str | None = None
    snapshots: SnapshotStore | None = None  # None: --no-transcript


def check_writable(source: SourceFile, label: str) -> None:
    """Refuse a file without any write permission bit (decided by the mode, even for root)."""
    if not source.mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        raise OutputError(f"{label}: file is read-only, left as is: make it writable to compact it")


def replace_file(
    source: SourceFile,
    result: Conversation,
    settings: InPlace,
    label: str,
    sync_directory: bool = True,
    *,
    details: Details = NO_DETAILS,
) -> Path:
    """Write ``result`` over ``source``; the original goes to a snapshot (and backup) first.

    ``details`` describe the original for the snapshot's listing. Returns the folder written
    into; see ``atomic_write`` for ``sync_directory``. The snapshot and the backup are always
    durable before the file is replaced. Whether the file changed on disk is checked last, once
    the new version is ready to be renamed over it, so the window for a concurrent writer is as
    short as it can be.
    """
    check_writable(source, label)
    with original_kept(source, settings.snapshots, label, details) as kept:
        if settings.backup_suffix:
            backup = source.path.with_name(source.path.name + settings.backup_suffix)
            atomic_write(backup, source.data, new_file_mode=source.mode & 0o7777)

        data = dump(result, settings.pretty)
        check = still_as_read(kept, label)
        return atomic_write(source.path, data, sync_directory=sync_directory, check=check)


def still_as_read(source: SourceFile, label: str, doing: str = "compacted") -> Callable[[], None]:
    """The check before the rename: a file another program changed meanwhile is left alone."""

    def check() -> None:
        if not source.unchanged_on_disk():
            raise OutputError(f"{label}: file changed while it was being {doing}, left as is")

    return check


@contextlib.contextmanager
def original_kept(
    source: SourceFile,
    snapshots: SnapshotStore | None,
    label: str,
    details: Details = NO_DETAILS,
    kind: str = ORIGINAL,
    doing: str = "compacted",
) -> Iterator[SourceFile]:
    """Keep ``source`` in ``snapshots`` while the block replaces it (see ``keep_original``).

    Yields the file as it must still be just before the rename: keeping it by a hard link
    changes its ctime, nothing else. With no store (``--no-transcript``) it yields ``source``.
    """
    if snapshots is None:
        yield source
        return
    session_id = session_id_for_file(source.path)
    digest = hashlib.sha256(source.data).hexdigest()
    with snapshots.keep_original(source.path, session_id, details, digest, kind) as now:
        kept = replace(source, ctime_ns=now.st_ctime_ns)
        still_as_read(kept, label, doing)()  # the file may have changed before the link
        yield kept
