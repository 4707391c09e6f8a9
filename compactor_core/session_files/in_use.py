"""Whether an agent is using a session file right now (SPEC §8.4): then it is never rewritten.

A file is in use when it changed less than ``min_idle`` seconds ago, or when another process
holds it open for writing. The second is read from Linux's ``/proc``: every ``/proc/PID/fd/N``
link that points to the file, and the ``flags`` line of ``/proc/PID/fdinfo/N`` says whether it
was opened for writing. Where there is no ``/proc`` only the first test is made. Processes of
other users cannot be looked at without privileges; their agents are seen by the idle time.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from .. import defaults

DEFAULT_MIN_IDLE = defaults.MIN_IDLE
_WRITE_MODES = (os.O_WRONLY, os.O_RDWR)


def in_use(
    path: Path, now: float, min_idle: float = DEFAULT_MIN_IDLE, proc: Path = Path("/proc")
) -> str | None:
    """Why the file is in use (one clause for a message), or None when it is idle."""
    status = os.stat(path)
    idle = now - status.st_mtime
    if idle < min_idle:
        return f"changed {max(idle, 0):.0f}s ago, less than --min-idle {min_idle:g}s"
    writer = writer_of(status.st_dev, status.st_ino, proc)
    if writer is not None:
        return f"open for writing by process {writer}"
    return None


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
