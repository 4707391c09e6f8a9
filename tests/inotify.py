"""The kernel's file notifications (Linux inotify), through ctypes: no dependency.

The concurrency tests start a writer that sleeps until the file system itself says ctxpack has
reached a given step (its temporary file created, its metadata set, a rename), and acts at once:
the worst moment, found by the kernel rather than by a guessed delay.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
import struct
from collections.abc import Iterator
from pathlib import Path

IN_MODIFY = 0x002
IN_ATTRIB = 0x004
IN_CLOSE_WRITE = 0x008
IN_OPEN = 0x020
IN_MOVED_FROM = 0x040
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_CLOEXEC = 0o2000000
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def available() -> bool:
    return hasattr(_libc, "inotify_init1")


class Watch:
    """An inotify instance watching one folder (or file) for the events of ``mask``."""

    def __init__(self, path: Path, mask: int) -> None:
        self.fd = _libc.inotify_init1(IN_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        if _libc.inotify_add_watch(self.fd, os.fsencode(path), mask) < 0:
            error = ctypes.get_errno()
            os.close(self.fd)
            raise OSError(error, f"inotify_add_watch {path}")

    def events(self, timeout: float) -> Iterator[tuple[int, str]]:
        """(mask, name) of each event, as they come, until ``timeout`` seconds pass quietly."""
        while select.select([self.fd], [], [], timeout)[0]:
            data = os.read(self.fd, 1 << 16)
            offset = 0
            while offset < len(data):
                _, mask, _, length = _EVENT.unpack_from(data, offset)
                offset += _EVENT.size
                name = data[offset : offset + length].rstrip(b"\0").decode(errors="replace")
                offset += length
                yield mask, name

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
