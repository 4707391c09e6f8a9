"""File leases (Linux ``fcntl(F_SETLEASE)``): the kernel's own word on who opens a file.

- A **read lease** on the file being replaced can only be taken while no process holds it open
  for writing: the exact test of "in use", for every process of every user, at the moment it
  matters. While it is held, a process that opens the file for writing is held back by the
  kernel and the lease shows a break (``broken``): nobody starts writing into the old file
  between ctxpack's last check and its rename without ctxpack knowing it.
- A **write lease** on the new file, taken before it is renamed into place, holds back whoever
  opens it until ctxpack has moved the old file's late lines onto it: theirs come after.

A break is signalled with SIGURG (ignored unless a program asks for it), not the default SIGIO,
which would end the process. The kernel ends a lease itself after
``/proc/sys/fs/lease-break-time`` (45 s) if it is not given up; ctxpack gives it up within
milliseconds. Where there are no leases (another system, a file system without them, someone
else's file without CAP_LEASE) ``take`` returns None, and the caller looks at ``/proc`` instead.
"""

from __future__ import annotations

import errno
import fcntl
import signal

_SET = getattr(fcntl, "F_SETLEASE", None)
_GET = getattr(fcntl, "F_GETLEASE", None)
_SETSIG = getattr(fcntl, "F_SETSIG", None)
READ, WRITE, NONE = fcntl.F_RDLCK, fcntl.F_WRLCK, fcntl.F_UNLCK
# Leases cannot be had here: the call is not there, the file system or the file does not allow.
_UNAVAILABLE = (errno.EINVAL, errno.ENOSYS, errno.EACCES, errno.EPERM, errno.ENOTSUP)


class Lease:
    """A lease held on an open file (``READ`` or ``WRITE``)."""

    def __init__(self, fd: int, kind: int) -> None:
        self.fd = fd
        self.kind = kind
        self.held = True

    @classmethod
    def take(cls, fd: int, kind: int) -> Lease | None:
        """The lease, or None where leases are not available. Raises BlockingIOError when the
        file is open for writing (a read lease) or open at all (a write lease) elsewhere."""
        if _SET is None or _SETSIG is None:
            return None
        try:
            fcntl.fcntl(fd, _SETSIG, signal.SIGURG)
            fcntl.fcntl(fd, _SET, kind)
        except BlockingIOError:
            raise
        except OSError as error:
            if error.errno in _UNAVAILABLE:
                return None
            raise
        return cls(fd, kind)

    def broken(self) -> bool:
        """Whether someone is being held back: the file is being opened (for writing, under a
        read lease) and waits for the lease to be given up."""
        return self.held and fcntl.fcntl(self.fd, _GET) != self.kind

    def release(self) -> None:
        if self.held:
            self.held = False
            fcntl.fcntl(self.fd, _SET, NONE)

    def retake(self) -> bool:
        """Take the lease again; False while the file is still open for writing elsewhere."""
        if self.held:
            return True
        try:
            fcntl.fcntl(self.fd, _SET, self.kind)
        except BlockingIOError:
            return False
        self.held = True
        return True
