"""Replacing a local file safely: original kept first, nobody else's change overwritten, a rename.

Every rewrite of a user's file goes through ``replacing`` — compaction in place and ``restore``
alike, for a conversation of messages and an agent's session file:

1. a file with no write permission bit is refused (decided by the mode, even for root);
2. ``--backup``: the original is kept beside the file, as a hard link to its inode (after the
   rename the link holds the original alone), a copy where links fail;
3. the original is kept in the snapshot store (a hard link where the filesystem allows it);
4. the file must still be what was read (size, mtime, inode); otherwise it is left alone;
5. the new version is written beside it and, just before the rename, checked again (its ctime
   too, which every write changes, even one that puts the old mtime back; and, for a session
   file, that no process opened it for writing meanwhile).

A failure at any step leaves the file as it was, and removes the backup and snapshot made for it.
Decisions (also in the README): a file whose result equals its input is not rewritten, so its
mtime stays; a symbolic link is followed (the file it points to is replaced, the link stays a
link).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .atomic import TEMP_SUFFIX, write_temp
from .errors import CtxpackError, OutputError, SessionInUse
from .snapshots import NO_DETAILS, ORIGINAL, Details, Snapshots, session_id_for_file


@dataclass(frozen=True)
class FileState:
    """What a file's status said at one moment: what a later check compares with."""

    size: int
    mtime_ns: int
    inode: int
    ctime_ns: int  # changes on every write and on every new hard link

    @classmethod
    def of(cls, status: os.stat_result) -> FileState:
        return cls(status.st_size, status.st_mtime_ns, status.st_ino, status.st_ctime_ns)

    def same_file(self, other: FileState) -> bool:
        """Not rewritten, not replaced (a new hard link to it does not count)."""
        return (self.size, self.mtime_ns, self.inode) == (other.size, other.mtime_ns, other.inode)


def check_writable(status: os.stat_result, label: str) -> None:
    """Refuse a file without any write permission bit (decided by the mode, even for root)."""
    if not status.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        raise OutputError(f"{label}: file is read-only, left as is: make it writable to compact it")


@dataclass(frozen=True)
class Replacement:
    """How one file is replaced: what is kept of it, and what must not have happened to it."""

    label: str
    snapshots: Snapshots | None = None  # None: no snapshot (--no-snapshot)
    details: Details = NO_DETAILS  # what the snapshot's listing says of the original
    sha256: str | None = None  # of the bytes read, when known
    backup_suffix: str | None = None
    kind: str = ORIGINAL  # ORIGINAL when compacting, REPLACED when restoring
    doing: str = "compacted"  # for the message if someone changed the file meanwhile
    # a session file: a change meanwhile is its agent's (SessionInUse), and no process may
    # hold it open for writing at the rename (the function says which one does)
    writer: Callable[[int, int], int | None] | None = None

    def changed(self) -> CtxpackError:
        if self.writer is not None:
            return SessionInUse(
                f"{self.label}: changed while being {self.doing} (its agent wrote to it), "
                "left as is"
            )
        return OutputError(
            f"{self.label}: file changed while it was being {self.doing}, left as is"
        )


@contextlib.contextmanager
def replacing(path: Path, read: FileState, how: Replacement) -> Iterator[Callable[[], None]]:
    """Keep ``path`` (backup, snapshot) while the block replaces it by a rename.

    ``read`` is the file's state when it was read. Yields the check to run just before the
    rename (``atomic_write_chunks(..., check=...)``).
    """
    with _backup(path, how.backup_suffix), _kept(path, how) as kept:
        linked = how.backup_suffix or how.snapshots is not None  # a new link changes the ctime
        if not (read.same_file(kept) if linked else read == kept):  # changed before it was kept
            raise how.changed()

        def still_as_kept() -> None:
            try:
                now = os.stat(path)
            except OSError:
                raise how.changed() from None
            if FileState.of(now) != kept:
                raise how.changed()
            if how.writer is not None and how.writer(now.st_dev, now.st_ino):
                raise SessionInUse(
                    f"{how.label}: opened for writing while being {how.doing}, left as is"
                )

        yield still_as_kept


@contextlib.contextmanager
def _kept(path: Path, how: Replacement) -> Iterator[FileState]:
    """The file's state once it is kept in the snapshot store (a link changes its ctime)."""
    if how.snapshots is None:
        try:
            yield FileState.of(os.stat(path))
        except FileNotFoundError:
            raise how.changed() from None
        return
    session_id = session_id_for_file(path)
    with how.snapshots.keep_original(path, session_id, how.details, how.sha256, how.kind) as now:
        yield FileState.of(now)


@contextlib.contextmanager
def _backup(path: Path, suffix: str | None) -> Iterator[None]:
    """``--backup SUFFIX``: the original as ``FILE+SUFFIX``, a hard link to its inode (a copy
    where links fail). It replaces whatever has that name, a symbolic link included, and never
    writes through one. Removed again if the file is not replaced."""
    if not suffix:
        yield
        return
    backup = path.with_name(path.name + suffix)
    temp = path.with_name(f".{backup.name}.{os.getpid()}{TEMP_SUFFIX}")
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        os.link(path, temp)
    except OSError:
        temp = _copy_of(path)
    try:
        os.replace(temp, backup)
    except OSError as error:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise OutputError(f"{backup}: cannot write backup: {error.strerror or error}") from None
    try:
        yield
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(backup)  # nothing was replaced: the backup would be the live file
        raise


def _copy_of(path: Path) -> Path:
    """A fsynced copy of ``path`` beside it, with its permission bits, under a temporary name."""
    mode = stat.S_IMODE(os.stat(path).st_mode)
    with open(path, "rb") as source:
        return write_temp(path.parent, path.name, iter(lambda: source.read(1 << 20), b""), mode)
