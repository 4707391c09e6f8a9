"""Whether an agent is using a session file right now (SPEC §8.4): then it is never rewritten.

A file is in use when it changed less than ``min_idle`` seconds ago (unless that change was
ctxpack's own rewrite), or when another process holds it open for writing. The second is read
from Linux's ``/proc``: every ``/proc/PID/fd/N`` link that points to the file, and the ``flags``
line of ``/proc/PID/fdinfo/N`` says whether it was opened for writing. Where there is no
``/proc`` only the first test is made. Processes of other users cannot be looked at without
privileges; their agents are seen by the idle time (and, when the file is replaced, by a lease:
``commit``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from .. import defaults
from ..disk.commit import held_open
from ..errors import SessionInUse

if TYPE_CHECKING:
    from ..settings import RunSettings

DEFAULT_MIN_IDLE = defaults.MIN_IDLE
_WRITE_MODES = (os.O_WRONLY, os.O_RDWR)


def in_use(
    path: Path, now: float, min_idle: float = DEFAULT_MIN_IDLE, proc: Path = Path("/proc")
) -> str | None:
    """Why the file is in use (one clause for a message), or None when it is idle."""
    status = os.stat(path)
    idle = now - status.st_mtime
    if idle < min_idle:
        return f"changed {max(idle, 0):.0f}s ago, less than min_idle={min_idle:g}s"
    writer = writer_of(status.st_dev, status.st_ino, proc)
    if writer is not None:
        return f"open for writing by process {writer}"
    return None


def refuse_in_use(
    label: str,
    status: os.stat_result,
    rules: RunSettings,
    rewritten_by_us: Callable[[], bool],
    doing: str = "compacted",
) -> None:
    """Raise SessionInUse if the file (whose status is ``status``) may not be rewritten now.

    Another process holding it open for writing always stops it, ``--force`` or not: that
    process would go on writing into the old version. A change within ``--min-idle`` stops it
    unless ``rules.force``, or unless ``rewritten_by_us()`` says the change was ctxpack's own.
    """
    pid = writer_of(status.st_dev, status.st_ino, Path(rules.proc))
    if pid is not None:
        raise held_open(label, pid, doing)
    if rules.force:
        return
    idle = rules.time().timestamp() - status.st_mtime
    if idle < rules.min_idle and not rewritten_by_us():
        raise SessionInUse(
            f"{label}: in use by its agent (changed {max(idle, 0):.0f}s ago, less than "
            f"min_idle={rules.min_idle:g}s): skipped, see force=True"
        )


def writer_check(proc: str) -> Callable[[int, int], int | None]:
    """Which process holds a file open for writing, by its device and inode (``writer_of``)."""
    return lambda device, inode: writer_of(device, inode, Path(proc))


def writer_of(device: int, inode: int, proc: Path = Path("/proc")) -> int | None:
    """The id of another process that has the file open for writing, if any."""
    return next(writers_of(device, inode, proc), None)


def writers_of(device: int, inode: int, proc: Path = Path("/proc")) -> Iterator[int]:
    """The ids of the other processes that have the file open for writing."""
    try:
        pids = [entry for entry in os.listdir(proc) if entry.isdigit()]
    except OSError:
        return
    me = os.getpid()
    for pid in pids:
        if int(pid) == me:
            continue
        fd_dir = proc / pid / "fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:  # gone, or not ours to look at
            continue
        for fd in fds:
            try:
                status = os.stat(fd_dir / fd)
            except OSError:
                continue
            if (status.st_dev, status.st_ino) == (device, inode) and _writable(proc, pid, fd):
                yield int(pid)
                break


def _writable(proc: Path, pid: str, fd: str) -> bool:
    try:
        info = (proc / pid / "fdinfo" / fd).read_text()
    except OSError:
        return True  # it is open and we cannot tell how: assume the worst
    for line in info.splitlines():
        if line.startswith("flags:"):
            flags = int(line.split()[1], 8)
            return flags & os.O_ACCMODE in _WRITE_MODES
    return True
