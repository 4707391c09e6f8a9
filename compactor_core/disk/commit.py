"""The moment a file is replaced: the last check, the rename, and the lines that came late.

An agent appends to its session file by opening it, writing a line and closing it. A rename gives
the path a new inode, but a line written by a process that opened the path just before the
rename lands in the old inode (now the snapshot's), and would be lost to the session (issue
22.2). So, for a session file (``guarded``):

1. A write lease is taken on the new file, and a read lease on the old one (``leases``). The
   read lease is refused while any process has the old file open for writing: the file is in
   use, and left as is. Where there are no leases, ``/proc`` is asked instead.
2. The last check: the file is still exactly what was kept (size, mtime, inode, ctime), and
   nobody started to open it for writing meanwhile (under the lease they are held back by the
   kernel, so that shows as a break): otherwise the file is left as is.
3. The rename.
4. What the old inode gained after the bytes that were read is moved onto the end of the new
   file, until nobody holds the old file open for writing and it stops growing. Writers held
   back by the old file's lease are let in one after the other and followed; whoever opens the
   new file meanwhile is held back by its lease, so the moved lines come first, in their order.

Only what was read is kept as the original: the snapshot's size and hash are of those bytes.
Lines move only while the end of what was read is still there (an agent that rewrote the old
file instead of appending to it is reported, and nothing more is moved).

What is left (README): a process that resolved the old path before the rename but opens it only
after the last look (a few microseconds of kernel time, stretched only by a process stopped in
exactly that place) would still write into the old file. A process that keeps writing into the
old file longer than ``FOLLOW_LIMIT`` is reported, and its later lines stay in the snapshot.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import CtxpackError, OutputError, SessionInUse
from .leases import READ, WRITE, Lease

if TYPE_CHECKING:
    from .atomic import NewFile

FOLLOW_LIMIT = 10.0  # seconds a late writer of the old file is followed
POLL = 0.001  # seconds between looks while a late writer still has the old file open
SETTLE = 0.02  # how long the old file must stay unopened, once a late writer was let in
TAIL = 4096  # bytes at the end of what was read that must still be there for lines to move


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


@dataclass(frozen=True)
class Guard:
    """What the commit must make sure of: the file as it was kept, and, for a session file, who
    writes to it (``writer``: the process holding a file open for writing, from ``/proc``)."""

    label: str
    expected: FileState
    changed: Callable[[], CtxpackError]  # the error when the file changed before the rename
    writer: Callable[[int, int], int | None] | None = None  # None: not a session file
    doing: str = "compacted"


@dataclass(frozen=True)
class Committed:
    moved: int = 0  # bytes that reached the old file after the rename, moved onto the new one
    lines: int = 0  # line endings among them
    still_writing: int | None = None  # a process that went on writing the old file regardless
    overwritten: bool = False  # the old file was rewritten, not appended to: nothing more moved


def commit(
    path: Path, new: NewFile, old: int, read_size: int, guard: Guard, renamed: Callable[[], None]
) -> Committed:
    """Rename ``new`` over ``path``, whose old inode is open as ``old`` and was read up to
    ``read_size``; ``renamed`` is told at once after the rename."""
    if guard.writer is None:
        _last_check(path, guard, None)
        _rename(new, path, guard.label)
        renamed()
        return Committed()
    new_lease = _take(new.fd, WRITE, guard, old)
    try:
        old_lease = _take(old, READ, guard, old)
        try:
            _last_check(path, guard, old_lease)
            _rename(new, path, guard.label)
            renamed()
            committed = _follow(old, new, read_size, old_lease, guard)
            _fsync(new, guard.label)
            return committed
        finally:
            if old_lease is not None:
                old_lease.release()
    finally:
        if new_lease is not None:
            new_lease.release()


def held_open(label: str, pid: int | None, doing: str = "compacted") -> SessionInUse:
    """The error for a session file that another process holds open for writing."""
    who = f"process {pid}" if pid is not None else "another process"
    return SessionInUse(
        f"{label}: open for writing by {who}: not {doing}, not even with force=True (that process "
        "would go on writing into the old version); quit the agent or wait until it closes the "
        "file, then run again"
    )


def _take(fd: int, kind: int, guard: Guard, old: int) -> Lease | None:
    try:
        return Lease.take(fd, kind)
    except BlockingIOError:
        status = os.fstat(old)
        assert guard.writer is not None
        pid = guard.writer(status.st_dev, status.st_ino)
        raise held_open(guard.label, pid, guard.doing) from None


def _last_check(path: Path, guard: Guard, lease: Lease | None) -> None:
    try:
        now = os.stat(path)
    except OSError:
        raise guard.changed() from None
    if FileState.of(now) != guard.expected:
        raise guard.changed()
    if lease is not None:
        if lease.broken():  # a writer waits to be let in: it finds the file as it was
            raise guard.changed()
    elif guard.writer is not None:
        pid = guard.writer(now.st_dev, now.st_ino)
        if pid is not None:
            raise held_open(guard.label, pid, guard.doing)


def _rename(new: NewFile, path: Path, label: str) -> None:
    try:
        os.replace(new.path, path)
    except OSError as error:
        raise OutputError(f"{label}: cannot write: {error.strerror or error}") from None


def _follow(old: int, new: NewFile, copied: int, lease: Lease | None, guard: Guard) -> Committed:
    """Move what the old inode gains past ``copied`` onto ``new``, until it is quiet: under a
    lease never broken, at once; once a writer was let in (or without a lease), when nobody has
    had it open for writing for ``SETTLE`` seconds."""
    start, deadline = copied, time.monotonic() + FOLLOW_LIMIT
    let_in = lease is None  # whether someone may have opened it since the rename
    quiet_since: float | None = None
    lines = 0
    tail = os.pread(old, min(TAIL, start), start - min(TAIL, start))  # what was read, its end
    while True:
        size = os.fstat(old).st_size
        if size > copied:
            if os.pread(old, len(tail), start - len(tail)) != tail:  # rewritten, not appended
                return Committed(copied - start, lines, overwritten=True)
            late = os.pread(old, size - copied, copied)
            new.append(late, guard.label)
            copied, quiet_since, lines = copied + len(late), None, lines + late.count(b"\n")
            continue
        if lease is not None and lease.broken():  # someone is held back: let them in
            lease.release()
            let_in = True
        quiet = _nobody_writes(old, lease, guard)
        now = time.monotonic()
        if quiet and not let_in:
            return Committed(copied - start, lines)
        if not quiet:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = now
        elif now - quiet_since >= SETTLE:
            return Committed(copied - start, lines)
        if now > deadline:
            status = os.fstat(old)
            assert guard.writer is not None
            pid = guard.writer(status.st_dev, status.st_ino)
            return Committed(copied - start, lines, pid)
        time.sleep(POLL)


def _nobody_writes(old: int, lease: Lease | None, guard: Guard) -> bool:
    """Whether no process has the old file open for writing (under a lease again, if so)."""
    if lease is not None:
        return lease.retake()
    status = os.fstat(old)
    assert guard.writer is not None
    return guard.writer(status.st_dev, status.st_ino) is None


def _fsync(new: NewFile, label: str) -> None:
    try:
        os.fsync(new.fd)
    except OSError as error:
        raise OutputError(f"{label}: cannot write: {error.strerror or error}") from None
