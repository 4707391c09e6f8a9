"""Atomic file writes: a reader sees the old file or the new one, never a mix.

Temporary files sit beside their target (same filesystem, so the rename is atomic) under a name
that ends in TEMP_SUFFIX, so a run that was killed midway can be cleaned up by the next one.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from .errors import OutputError

TEMP_SUFFIX = ".ctxpack-tmp"
NEW_FILE_MODE = 0o644


def write_temp(directory: Path, name: str, data: bytes, mode: int = 0o600) -> Path:
    """Write ``data`` to a new, fsynced temporary file in ``directory`` and return its path."""
    fd, temp = tempfile.mkstemp(prefix=f".{name}.", suffix=TEMP_SUFFIX, dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
    except BaseException:
        _remove(temp)
        raise
    return Path(temp)


def atomic_write(path: Path, data: bytes, new_file_mode: int = NEW_FILE_MODE) -> None:
    """Replace ``path`` with ``data`` atomically, keeping an existing file's permission bits."""
    path = Path(path)
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = new_file_mode
    except OSError as error:
        raise OutputError(f"{path}: cannot write: {error.strerror}") from None
    try:
        temp = write_temp(path.parent, path.name, data, mode)
        try:
            os.replace(temp, path)
        except BaseException:
            _remove(temp)
            raise
        fsync_directory(path.parent)
    except OSError as error:
        raise OutputError(f"{path}: cannot write: {error.strerror or error}") from None


def fsync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable (best effort: not every platform allows it)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _remove(path: str | Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
