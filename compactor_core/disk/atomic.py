"""Atomic file writes: a reader sees the old file or the new one, never a mix.

Temporary files sit beside their target (same filesystem, so the rename is atomic) under a name
``.{target}.{pid}.{random}.ctxpack-tmp``, so a run that was killed midway leaves nothing a reader
could mistake for data, and the next run can tell its leftovers (their process is gone) from the
temporary files of a run still going on.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import OutputError
from .streams import write_chunks

if TYPE_CHECKING:
    from .metadata import Metadata

TEMP_SUFFIX = ".ctxpack-tmp"
NEW_FILE_MODE = 0o644


def write_temp(
    directory: Path,
    name: str,
    chunks: Iterable[bytes],
    mode: int = 0o600,
    label: str = "",
    like: Metadata | None = None,
) -> Path:
    """Write ``chunks`` to a new, fsynced temporary file in ``directory`` and return its path;
    see ``NewFile.write``."""
    new = NewFile.write(directory, name, chunks, label, like, mode)
    new.close()
    return new.path


class NewFile:
    """A temporary file beside its target: written, fsynced, still open, until it is renamed
    over the target or discarded. ``size`` and ``digest`` (a sha256) are of what it holds."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self.fd = fd
        self.size = 0
        self.digest = hashlib.sha256()

    @classmethod
    def write(
        cls,
        directory: Path,
        name: str,
        chunks: Iterable[bytes],
        label: str = "",
        like: Metadata | None = None,
        mode: int = 0o600,
    ) -> NewFile:
        """Write ``chunks`` to a new temporary file in ``directory``, give it ``like``'s owner,
        mode and extended attributes (strictly: an OutputError if they cannot be kept), or else
        ``mode``, and fsync it. It is 0600 until then.

        An error of the writing becomes an OutputError naming ``label`` (the target by
        default); an error raised by the iterator itself (a source that cannot be read,
        invalid input) passes through as it is. Either way the temporary file is removed.
        """
        import tempfile  # 3 ms (random, shutil): only when a file is written

        label = label or str(Path(directory) / name)
        prefix = f".{name[:100]}.{os.getpid()}."  # short enough for any file-name limit
        try:
            fd, temp = tempfile.mkstemp(prefix=prefix, suffix=TEMP_SUFFIX, dir=directory)
        except OSError as error:
            raise OutputError(f"{label}: cannot write: {error.strerror or error}") from None
        new = cls(Path(temp), fd)
        try:
            write_chunks(fd, new._counted(chunks), label)
            if like is not None:
                like.apply(fd, label)
            _sync(fd, stat.S_IMODE(os.fstat(fd).st_mode) if like else mode, label)
        except BaseException:
            new.discard()
            raise
        return new

    def _counted(self, chunks: Iterable[bytes]) -> Iterator[bytes]:
        for chunk in chunks:
            self.size += len(chunk)
            self.digest.update(chunk)
            yield chunk

    def append(self, data: bytes, label: str) -> None:
        """Add ``data`` at the end (the file may have been renamed into place meanwhile)."""
        offset = self.size
        view = memoryview(data)
        try:
            while view:
                written = os.pwrite(self.fd, view, offset)
                offset += written
                view = view[written:]
        except OSError as error:
            raise OutputError(f"{label}: cannot write: {error.strerror or error}") from None
        self.size += len(data)
        self.digest.update(data)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def discard(self) -> None:
        """Close and remove it (not once it was renamed into place)."""
        self.close()
        _remove(self.path)


def _sync(fd: int, mode: int, label: str) -> None:
    try:
        os.fchmod(fd, mode)  # before the fsync, so the mode is as durable as the data
        os.fsync(fd)
    except OSError as error:
        raise OutputError(f"{label}: cannot write: {error.strerror or error}") from None


def atomic_write(
    path: Path,
    data: bytes,
    new_file_mode: int = NEW_FILE_MODE,
    sync_directory: bool = True,
    check: Callable[[], None] | None = None,
) -> Path:
    """Replace ``path`` with ``data`` atomically; see ``atomic_write_chunks``."""
    return atomic_write_chunks(path, (data,), new_file_mode, sync_directory, check)


def atomic_write_chunks(
    path: Path,
    chunks: Iterable[bytes],
    new_file_mode: int = NEW_FILE_MODE,
    sync_directory: bool = True,
    check: Callable[[], None] | None = None,
) -> Path:
    """Replace ``path`` with the concatenated ``chunks`` atomically, keeping its permission bits
    (and, where this process may, its owner, group and extended attributes).

    The chunks are written as they come (a file of any size is never whole in memory) to a
    temporary file beside the target, which is flushed and fsynced, then renamed over it; an
    exception from the iterator leaves the target as it was. A symbolic link is followed (the
    file it points to is replaced, the link stays), and what is not a regular file
    (``/dev/null``, a named pipe, a terminal) is written to directly: renaming over it would
    replace the device or pipe itself.

    Returns the folder the file is in. With ``sync_directory=False`` the rename is not made
    durable here: the caller must ``fsync_directory`` that folder before it reports success (a
    batch does each folder once at its end, not once per file). Until then a crash can only bring
    back the old file, never a mix: the new one was fsynced before the rename.

    ``check`` runs when the new version is on disk, just before the rename; if it raises, nothing
    is replaced and the temporary file is removed.
    """
    path = Path(path)
    target = Path(os.path.realpath(path))
    try:
        status = target.stat()
    except FileNotFoundError:
        mode = new_file_mode
    except OSError as error:
        raise OutputError(f"{path}: cannot write: {error.strerror}") from None
    else:
        if not stat.S_ISREG(status.st_mode):
            _write_directly(path, target, chunks)
            return target.parent
        mode = status.st_mode & 0o7777
    clean_up_once(target.parent)
    temp = write_temp(target.parent, target.name, chunks, mode, str(path))
    _keep_what_can_be_kept(target, temp)
    try:
        if check is not None:
            check()
        os.replace(temp, target)
    except OSError as error:
        _remove(temp)
        raise OutputError(f"{path}: cannot write: {error.strerror or error}") from None
    except BaseException:
        _remove(temp)
        raise
    if sync_directory:
        fsync_directory(target.parent)
    return target.parent


def _keep_what_can_be_kept(target: Path, temp: Path) -> None:
    """The old file's owner, group and extended attributes on the new one, where this process
    may set them (an output file, not the user's input: no reason to refuse the write)."""
    from .metadata import Metadata

    with contextlib.suppress(OSError):
        like = Metadata.of(str(target))
        fd = os.open(temp, os.O_RDONLY | os.O_CLOEXEC)
        try:
            like.apply(fd, str(target), strict=False)
            os.fsync(fd)
        finally:
            os.close(fd)


def _write_directly(path: Path, target: Path, chunks: Iterable[bytes]) -> None:
    try:
        fd = os.open(target, os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC)
    except OSError as error:
        raise OutputError(f"{path}: cannot write: {error.strerror or error}") from None
    try:
        write_chunks(fd, chunks, str(path))
    finally:
        os.close(fd)


def fsync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable (best effort: not every platform allows it)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


_cleaned: set[str] = set()  # folders this process already rid of killed runs' leftovers


def clean_up_once(directory: Path) -> None:
    """``remove_stale_temp_files`` in ``directory``, the first time this process writes there."""
    key = os.path.realpath(directory)
    if key not in _cleaned:
        _cleaned.add(key)
        remove_stale_temp_files(directory)


def remove_stale_temp_files(directory: Path | int) -> int:
    """Delete the temporary files that killed runs left in ``directory`` (a path, or an open
    folder's descriptor); return how many."""
    removed = 0
    try:
        names = [name for name in os.listdir(directory) if name.endswith(TEMP_SUFFIX)]
    except OSError:
        return 0
    for name in names:
        match = re.fullmatch(_TEMP_NAME, name)
        if match and not _process_alive(int(match["pid"])):
            with contextlib.suppress(OSError):
                if isinstance(directory, int):
                    os.unlink(name, dir_fd=directory)
                else:
                    _remove(os.path.join(directory, name))
                removed += 1
    return removed


# Compiled on first use (re keeps it), not at import: most runs never look for leftovers.
_TEMP_NAME = r"\..+\.(?P<pid>\d+)\.[^.]+" + re.escape(TEMP_SUFFIX)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, but belongs to someone else
        pass
    return not _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    """A process that died but was not reaped still answers ``kill(pid, 0)``.

    That happens to the workers of a killed batch whenever process 1 does not reap orphans (many
    containers), and their temporary files must still count as leftovers. Linux only; elsewhere a
    zombie counts as alive and its files wait for a later run.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            status = handle.read()
    except OSError:
        return False
    state = status.rpartition(b")")[2].split()[:1]  # after "pid (command)"
    return state in ([b"Z"], [b"X"])


def _remove(path: str | Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
