"""Replacing a local file safely: original kept first, nobody else's change overwritten, a rename.

Every rewrite of a user's file goes through ``replace`` — compaction in place and ``restore``
alike, for a conversation of messages and an agent's session file:

1. a file with no write permission bit is refused (decided by the mode, even for root);
2. the new version is written beside it, given the old file's owner, group, mode and extended
   attributes (ACLs among them; refused if they cannot be kept), and fsynced;
3. ``--backup``: the original is kept beside the file, as a hard link to its inode (after the
   rename the link holds the original alone), a copy where links fail; a planted link at the
   backup's name is replaced, never written through;
4. the original is kept in the snapshot store (``snapshot_store``: a link to the very inode
   read, or a copy of the bytes read);
5. the file must still be what was read (size, mtime, inode); otherwise it is left alone;
6. ``commit``: the last check, the rename, and, for a session file, the lines its agent wrote
   into the old inode at that moment moved onto the new one.

A failure before the rename leaves the file as it was, and removes the backup and snapshot made
for it. Decisions (also in the README): a file whose result equals its input is not rewritten,
so its mtime stays; a symbolic link is followed (the file it points to is replaced, the link
stays a link).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import CtxpackError, OutputError, SessionInUse
from ..snapshots.base import (
    NO_DETAILS,
    ORIGINAL,
    Details,
    Keeping,
    Kept,
    Rewritten,
    Snapshots,
    session_id_for_file,
)
from ..text import counted
from .atomic import TEMP_SUFFIX, NewFile, clean_up_once, fsync_directory
from .commit import Committed, FileState, Guard, commit
from .metadata import Metadata


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
    # a session file: a change meanwhile is its agent's (SessionInUse), no process may hold it
    # open for writing at the rename (the function says which one does, from /proc), and what
    # its agent appends at that moment is moved onto the new file (``commit``)
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


@dataclass(frozen=True)
class Replaced:
    """What a replacement did besides the rename."""

    folder: str  # the file's folder (its fsync may wait: ``sync=False``)
    snapshot: str | None = None  # where the original was kept
    copied: str | None = None  # why the original was copied rather than linked
    linked: bool = False  # the snapshot is the old inode itself (what reaches it late too)
    moved: int = 0  # bytes the agent appended at the moment of the rename, moved on
    lines: int = 0  # lines among them
    still_writing: int | None = None  # a process that kept writing into the old file
    overwritten: bool = False  # the old file was rewritten at the rename, not appended to

    @property
    def note(self) -> str | None:
        """What the user should hear of, if anything."""
        notes = []
        if self.moved:
            notes.append(
                f"{counted(self.lines, 'line')} ({self.moved} bytes) its agent wrote at the "
                "moment of the rewrite: moved onto the new version"
            )
        kept = f"in {self.snapshot}" if self.linked else "nowhere"
        if self.overwritten:
            notes.append(
                "the old version was rewritten, not appended to, at the moment of the rewrite: "
                f"what it holds now was not moved (it is {kept})"
            )
        if self.still_writing is not None:
            notes.append(
                f"process {self.still_writing} kept writing into the old version: its later "
                f"lines are {kept}"
            )
        return "; ".join(notes) or None


def replace(
    path: Path,
    opened: int,
    read: FileState,
    chunks: Iterable[bytes],
    how: Replacement,
    sync: bool = True,
) -> Replaced:
    """Replace the file at ``path`` (its real path), open as ``opened`` since it was read (its
    state then: ``read``), by ``chunks``; see the module's docstring for the steps."""
    directory = path.parent
    clean_up_once(directory)
    new = NewFile.write(directory, path.name, chunks, how.label, Metadata.of(opened))
    renamed = False
    try:
        _unchanged(path, read, how)  # its ctime too: the links made next change it
        planned = Rewritten(new.size, new.digest.hexdigest())
        with (
            _backup(path, opened, read.size, how) as linked,
            _kept(path, opened, read, how, planned, linked) as kept,
        ):
            if not read.same_file(kept.state):  # changed meanwhile
                raise how.changed()

            def mark() -> None:
                nonlocal renamed
                renamed = True
                if kept.record is not None:
                    kept.record.replaced = True

            guard = Guard(how.label, kept.state, how.changed, how.writer, how.doing)
            done = commit(path, new, opened, read.size, guard, mark)
            if kept.record is not None:
                if done.still_writing is None and not done.overwritten:  # cut off again: only
                    kept.record.moved = done.moved  # the lines moved, nothing else, are there
                kept.record.rewritten = _rewritten(new)
    finally:
        if renamed:
            new.close()
        else:
            new.discard()
    if sync:
        fsync_directory(directory)
    return _replaced(directory, kept.record, done)


def _unchanged(path: Path, read: FileState, how: Replacement) -> None:
    try:
        now = FileState.of(os.stat(path))
    except OSError:
        raise how.changed() from None
    if now != read:
        raise how.changed()


def _rewritten(new: NewFile) -> Rewritten:
    status = os.fstat(new.fd)
    return Rewritten(new.size, new.digest.hexdigest(), status.st_ino, status.st_mtime_ns)


def _replaced(directory: Path, record: Kept | None, done: Committed) -> Replaced:
    late = (done.moved, done.lines, done.still_writing, done.overwritten)
    if record is None:
        return Replaced(str(directory), None, None, False, *late)
    return Replaced(str(directory), str(record.path), record.copied, record.linked, *late)


@dataclass
class _Kept:
    state: FileState  # the file's, once kept (a new link changes its ctime)
    record: Kept | None  # None: no snapshot


@contextlib.contextmanager
def _kept(
    path: Path, opened: int, read: FileState, how: Replacement, planned: Rewritten, own: int
) -> Iterator[_Kept]:
    """The file's state once it is kept in the snapshot store; ``own``: the hard links to it
    ctxpack made (a backup), which may share the snapshot's inode."""
    if how.snapshots is None:
        try:
            yield _Kept(FileState.of(os.stat(path)), None)
        except FileNotFoundError:
            raise how.changed() from None
        return
    backup = 1 if how.backup_suffix else 0  # its link may share the snapshot's inode
    keeping = Keeping(session_id_for_file(path), how.details, how.sha256, how.kind, planned, backup)
    with how.snapshots.keep_original(path, opened, read.size, keeping) as record:
        yield _Kept(FileState.of(record.status), record)


@contextlib.contextmanager
def _backup(path: Path, opened: int, size: int, how: Replacement) -> Iterator[int]:
    """``--backup SUFFIX``: the original as ``FILE+SUFFIX``, a hard link to the inode read (a
    copy of the bytes read where links fail); yields the number of links it made. It replaces
    whatever has that name, a symbolic link included, and never writes through one. Removed
    again if the file is not replaced."""
    if not how.backup_suffix:
        yield 0
        return
    backup = path.with_name(path.name + how.backup_suffix)
    linked = _linked_beside(path, opened)
    temp = linked or _copied_beside(path, opened, size, how.label)
    try:
        os.replace(temp, backup)
    except OSError as error:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise OutputError(f"{backup}: cannot write backup: {error.strerror or error}") from None
    try:
        yield 1 if linked else 0
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(backup)  # nothing was replaced: the backup would be the live file
        raise


def _linked_beside(path: Path, opened: int) -> Path | None:
    """A new name beside ``path`` for the inode open as ``opened``; None if it cannot link."""
    try:
        folder = os.open(path.parent, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        for _ in range(100):
            temp = f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}{TEMP_SUFFIX}"
            try:  # linkat: the very inode read, and a new name that is never followed
                os.link(f"/proc/self/fd/{opened}", temp, dst_dir_fd=folder, follow_symlinks=True)
            except FileExistsError:
                continue
            except OSError:
                return None
            return path.with_name(temp)
        return None
    finally:
        os.close(folder)


def _copied_beside(path: Path, opened: int, size: int, label: str) -> Path:
    """A fsynced copy of the first ``size`` bytes of ``opened`` beside ``path``, with its
    owner, mode and attributes, under a temporary name."""
    blocks = (os.pread(opened, min(1 << 20, size - at), at) for at in range(0, size, 1 << 20))
    new = NewFile.write(path.parent, path.name, blocks, label, Metadata.of(opened))
    new.close()
    return new.path
