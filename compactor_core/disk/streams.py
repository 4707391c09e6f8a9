"""Writing every byte to an open descriptor: standard output, a pipe, a file being written.

What a filter's run needs to write its result, and nothing more: a plain ``estimate`` or
``micro`` to stdout loads this, not the atomic writes of files (``atomic.py``).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable

from ..errors import OutputError

WRITE_BUFFER = 1 << 20  # bytes gathered per write system call


def write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    """Write every byte of ``data``: ``os.write`` may write fewer (a pipe, a nearly full disk),
    or none yet (a full non-blocking pipe: then it waits until the pipe takes more).

    Raises the OSError of the failing write (BrokenPipeError on a closed pipe).
    """
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:  # a non-blocking pipe (set so by whoever started us) is full
            import select  # only then, not at every start

            select.select([], [fd], [])
            continue
        if written <= 0:  # never seen, but looping on it forever would hang the run
            raise OSError(errno.EIO, "the system wrote nothing")
        view = view[written:]


def write_chunks(fd: int, chunks: Iterable[bytes], label: str) -> None:
    """Write every chunk to ``fd``, gathered into writes of about WRITE_BUFFER bytes.

    Many small chunks (one record each) cost one system call per WRITE_BUFFER, a big chunk is
    written without a copy. A failed write becomes an OutputError naming ``label``.
    """
    pending = bytearray()
    for chunk in chunks:
        if not pending and len(chunk) >= WRITE_BUFFER:
            _write_or_fail(fd, chunk, label)
            continue
        pending += chunk
        if len(pending) >= WRITE_BUFFER:
            _write_or_fail(fd, pending, label)
            pending.clear()
    if pending:
        _write_or_fail(fd, pending, label)


def _write_or_fail(fd: int, data: bytes | bytearray, label: str) -> None:
    try:
        write_all(fd, data)
    except BrokenPipeError:
        raise  # a reader that went away is not a failure to report (exit 141)
    except OSError as error:
        raise OutputError(f"{label}: cannot write: {error.strerror or error}") from None
