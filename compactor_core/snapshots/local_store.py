"""Snapshots in a local folder: the per-user store, or a folder the user names (SPEC §5).

The layout and the records are ``snapshots.py``'s. Here is how they are kept safe:

- The folder is checked and held open (``private_dir``): refused if it is a link, someone else's
  or writable by others; made 0700 if it is new. Every file in it is created ``O_EXCL``, 0600
  from its first moment, and every name is claimed with a hard link, which never follows an
  existing name and never replaces one.
- A file replaced in place is kept without a copy where that is safe: its inode is linked here
  (through the open descriptor that read it, so it is the very file read, whatever its path holds
  by then) and the caller's rename gives the path a new inode. It is copied instead (only the
  bytes read) when it is on another file system, when it has other hard links (their names would
  share the snapshot, and its mode), when it is someone else's (they could still write to it,
  and ``restore`` uses only the user's own files), or when the folder can be entered by others
  and the file could be read by them.
- ``restore`` uses a snapshot only if its ``.meta`` is the user's own regular file with a size
  and hash, and the data is the user's own regular file of that size and hash.
- Temporary files of killed runs (their process is gone) are removed when the folder is first
  written to by a process.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import orjson

from ..conversation.formats import Conversation, dump, dumps
from ..disk.atomic import TEMP_SUFFIX, remove_stale_temp_files
from ..disk.private_dir import PrivateDir
from ..disk.streams import write_all
from ..errors import InputError, InputUnreadable, OutputError
from .base import (
    FILE_NAME,
    META_SUFFIX,
    NO_DETAILS,
    ORIGINAL,
    RESULT,
    Details,
    Keeping,
    Kept,
    Snapshot,
    check_session_id,
    extension_of,
    meta_record,
    session_id_for_file,
    snapshot_of,
    stamp_of,
)

READ_CHUNK = 1 << 20
_ENTERABLE_BY_OTHERS = stat.S_IXGRP | stat.S_IXOTH
_READABLE_BY_OTHERS = stat.S_IRGRP | stat.S_IROTH
_cleaned: set[str] = set()  # folders this process has rid of killed runs' temporary files


@dataclass(frozen=True)
class SnapshotStore:
    """Snapshots in one folder; ``clock`` gives the local time for new names."""

    directory: Path
    clock: Callable[[], datetime] = datetime.now

    @property
    def location(self) -> str:
        return str(self.directory)

    # --- saving ----------------------------------------------------------------------------------

    def save_original(
        self,
        session_id: str,
        data: bytes,
        details: Details,
        source: Path | None = None,
        kind: str = ORIGINAL,
    ) -> Path:
        """Keep an input exactly as it was read (standard input, a file not changed in place, a
        session's rows in a database; ``kind`` REPLACED: what a restore replaced)."""
        return self._save(session_id, kind, [data], details, source)

    def save_result(
        self,
        session_id: str,
        result: Conversation,
        details: Details = NO_DETAILS,
        source: Path | None = None,
    ) -> Path:
        """Keep a compacted conversation, in its input's shape."""
        details = Details(result.shape, len(result.messages), details.tokens)
        return self._save(session_id, RESULT, (dump(result),), details, source)

    def _save(
        self,
        session_id: str,
        kind: str,
        chunks: Iterable[bytes],
        details: Details,
        source: Path | None,
    ) -> Path:
        check_session_id(session_id)
        with self._open_for_writing() as folder:
            temp, fd = self._new_temp(folder, session_id)
            try:
                digest = hashlib.sha256()
                size = 0
                for chunk in chunks:
                    digest.update(chunk)
                    size += len(chunk)
                    self._write(fd, chunk)
                self._sync(fd)
                name = self._claim(
                    folder, lambda name: folder.link(temp, name), session_id, kind, details.shape
                )
            finally:
                os.close(fd)
                folder.unlink(temp)
            try:
                meta = meta_record(
                    session_id,
                    kind,
                    _stamp(name),
                    details,
                    source,
                    None,
                    size,
                    digest.hexdigest(),
                )
                self._write_meta(folder, name, meta, new=True)
            except BaseException:
                self._remove_names(folder, name, with_meta=False)  # that name's is not ours
                raise
            return self.directory / name

    @contextlib.contextmanager
    def keep_original(self, file: Path, opened: int, size: int, how: Keeping) -> Iterator[Kept]:
        """Keep the first ``size`` bytes of ``file``, open as ``opened``, while the block
        replaces it by a rename (see the module's docstring for link or copy); yield the
        ``Kept`` record, whose ``replaced`` the block sets once the file is renamed over. If
        the block raises before, the snapshot is removed again. After a rename, the ``.meta``
        gets ``rewritten`` (what the file is now), and bytes moved off a linked snapshot (an
        agent's late lines, now in the new file) are cut off it again."""
        check_session_id(how.session_id)
        with self._open_for_writing() as folder:
            before = os.fstat(opened)
            reason = self._why_copy(folder, before, how.own_links)
            name, sha256 = None, how.sha256
            if reason is None:
                try:
                    name = self._claim(
                        folder,
                        lambda name: folder.link_fd(opened, name),
                        how.session_id,
                        how.kind,
                        how.details.shape,
                    )
                except OSError as error:
                    reason = _link_failure(error)
            try:
                if name is None:
                    name, sha256 = self._copy(folder, opened, size, how)
                elif sha256 is None:
                    sha256 = _sha256(opened, size)
                status = _status_of(file)  # after the link, which changed its ctime
                kept = Kept(status, self.directory / name, reason is None, reason)
                meta = meta_record(
                    how.session_id,
                    how.kind,
                    _stamp(name),
                    how.details,
                    file,
                    before,
                    size,
                    sha256,
                    how.rewritten,
                )
                self._write_meta(folder, name, meta, new=True)
            except BaseException:
                if name is not None:
                    self._remove_names(folder, name, with_meta=False)
                raise
            try:
                yield kept
            except BaseException:
                if not kept.replaced:
                    self._remove_names(folder, name)
                raise
            if kept.replaced:
                self._after_rename(folder, name, meta, kept, opened, size)

    def _after_rename(
        self, folder: PrivateDir, name: str, meta: dict, kept: Kept, opened: int, size: int
    ) -> None:
        """The old inode is the snapshot's (and a backup's) now: make it what was read again,
        private where nothing else shares it, and record what the file became."""
        with contextlib.suppress(OSError):  # the rewrite stands; the record is best effort
            if kept.linked:
                if kept.moved:
                    _truncate(opened, size)
                if os.fstat(opened).st_nlink == 1:
                    os.fchmod(opened, 0o600)
                os.fsync(opened)
            if kept.rewritten is not None:
                meta = {**meta, "rewritten": kept.rewritten.as_dict()}
                self._write_meta(folder, name, meta, new=False)

    def _why_copy(self, folder: PrivateDir, status: os.stat_result, own: int) -> str | None:
        """Why the file must be copied rather than linked; None if a link is safe. ``own``:
        hard links to it that ctxpack made (a backup), which may share the snapshot."""
        if not stat.S_ISREG(status.st_mode):
            return "it is not a regular file"
        if status.st_uid != os.geteuid():
            return "it belongs to another user"
        if status.st_nlink > 1 + own:
            return "it has other hard links"
        folder_mode = os.fstat(folder.fd).st_mode
        if folder_mode & _ENTERABLE_BY_OTHERS and status.st_mode & _READABLE_BY_OTHERS:
            return "the snapshot folder can be entered by others"
        return None

    def _copy(self, folder: PrivateDir, opened: int, size: int, how: Keeping) -> tuple[str, str]:
        """Copy the first ``size`` bytes of ``opened`` into a new snapshot; its name and hash."""
        temp, fd = self._new_temp(folder, how.session_id)
        try:
            digest = hashlib.sha256()
            for chunk in _blocks(opened, size):
                digest.update(chunk)
                self._write(fd, chunk)
            self._sync(fd)
            name = self._claim(
                folder,
                lambda name: folder.link(temp, name),
                how.session_id,
                how.kind,
                how.details.shape,
            )
        finally:
            os.close(fd)
            folder.unlink(temp)
        return name, digest.hexdigest()

    def _open_for_writing(self) -> PrivateDir:
        try:
            folder = PrivateDir.open(self.directory, True, self.location)
        except OSError as error:
            raise self._cannot_write(error) from None
        assert folder is not None
        if self.location not in _cleaned:
            _cleaned.add(self.location)
            remove_stale_temp_files(folder.fd)
        return folder

    def _new_temp(self, folder: PrivateDir, session_id: str) -> tuple[str, int]:
        while True:
            temp = f".{session_id}.{os.getpid()}.{os.urandom(4).hex()}{TEMP_SUFFIX}"
            try:
                return temp, folder.create(temp)
            except FileExistsError:
                continue
            except OSError as error:
                raise self._cannot_write(error) from None

    def _write(self, fd: int, data: bytes) -> None:
        try:
            write_all(fd, data)
        except OSError as error:
            raise self._cannot_write(error) from None

    def _sync(self, fd: int) -> None:
        try:
            os.fsync(fd)
        except OSError as error:
            raise self._cannot_write(error) from None

    def _claim(
        self,
        folder: PrivateDir,
        link: Callable[[str], None],
        session_id: str,
        kind: str,
        shape: str,
    ) -> str:
        """Give the data the first free name from the current moment on (``link`` makes it)."""
        moment = self.clock()
        while True:
            name = f"{session_id}_{stamp_of(moment)}.{kind}.{extension_of(shape)}"
            try:
                if _exists(folder, name + META_SUFFIX):  # a record left without its data
                    raise FileExistsError
                link(name)
            except FileExistsError:
                moment += timedelta(microseconds=1)
                continue
            return name

    def _write_meta(self, folder: PrivateDir, name: str, meta: dict, new: bool) -> None:
        """Write ``name``'s ``.meta`` (a new one never replaces anything), then make both
        names durable."""
        temp, fd = self._new_temp(folder, name)
        try:
            try:
                self._write(fd, dumps(meta) + b"\n")
                self._sync(fd)
            finally:
                os.close(fd)
            try:
                if new:
                    folder.link(temp, name + META_SUFFIX)
                else:
                    folder.replace(temp, name + META_SUFFIX)
            except OSError as error:
                raise self._cannot_write(error) from None
        finally:
            folder.unlink(temp)
        folder.fsync()

    def _cannot_write(self, error: OSError) -> OutputError:
        return OutputError(f"{self.location}: snapshot: cannot write: {error.strerror or error}")

    # --- finding ---------------------------------------------------------------------------------

    def snapshots(self, session_id: str | None = None) -> list[Snapshot]:
        """Every snapshot in the folder (of one session), newest first."""
        with self._open_for_reading() as folder:
            if folder is None:
                return []
            found = []
            for match in map(FILE_NAME.fullmatch, folder.names()):
                if match and (session_id is None or match["session"] == session_id):
                    meta = _read_meta(folder, match.string + META_SUFFIX)
                    found.append(snapshot_of(self.directory / match.string, match, meta, self))
        return sorted(
            found, key=lambda snapshot: (snapshot.stamp, snapshot.path.name), reverse=True
        )

    def select(
        self, session_id: str | None = None, kind: str | None = None, source: Path | None = None
    ) -> list[Snapshot]:
        """The snapshots of a session, of a kind, of a source file; newest first. A file's are
        only those the store can vouch for (``trusted``): they are what ``restore`` puts back."""
        if session_id is not None:
            check_session_id(session_id)
        real = None
        if source is not None:  # its snapshots are all under its own session id
            real = os.path.realpath(source)
            session_id = session_id or session_id_for_file(source)
        return [
            snapshot
            for snapshot in self.snapshots(session_id)
            if (kind is None or snapshot.kind == kind)
            and (real is None or (snapshot.source == real and snapshot.trusted))
        ]

    def last_rewrite(self, file: Path) -> Snapshot | None:
        for snapshot in self.select(source=file):
            if snapshot.rewritten is not None:
                return snapshot
        return None

    def remove(self, snapshot: Snapshot | Path) -> None:
        path = snapshot.path if isinstance(snapshot, Snapshot) else snapshot
        with self._open_for_reading() as folder:
            if folder is not None:
                self._remove_names(folder, path.name)

    def _remove_names(self, folder: PrivateDir, name: str, with_meta: bool = True) -> None:
        for each in (name, name + META_SUFFIX) if with_meta else (name,):
            try:
                folder.unlink(each)
            except OSError as error:
                raise OutputError(
                    f"{self.directory / each}: cannot remove: {error.strerror}"
                ) from None

    def _open_for_reading(self) -> contextlib.AbstractContextManager[PrivateDir | None]:
        try:
            folder = PrivateDir.open(self.directory, False, self.location)
        except OSError as error:
            raise InputUnreadable(f"{self.location}: {error.strerror or error}") from None
        return folder if folder is not None else contextlib.nullcontext()

    # --- reading ---------------------------------------------------------------------------------

    def read(self, snapshot: Snapshot) -> bytes:
        return b"".join(self.chunks(snapshot))

    def chunks(self, snapshot: Snapshot) -> Iterator[bytes]:
        """The snapshot's data, a block at a time: only the user's own regular file, of the
        size and hash its ``.meta`` gives (an InputError, before the last block, if not)."""
        with self._open_for_reading() as folder:
            fd = folder.open_own(snapshot.path.name) if folder is not None else None
            if fd is None:
                raise InputUnreadable(
                    f"{snapshot.path}: not a snapshot of yours (missing, a link, or another "
                    "user's file), not used"
                )
        try:
            size = os.fstat(fd).st_size
            if snapshot.size is not None and size != snapshot.size:
                raise InputError(f"{snapshot.path}: snapshot changed since it was taken, not used")
            digest = hashlib.sha256()
            blocks = _blocks(fd, size)
            pending = next(blocks, b"")
            for block in blocks:
                digest.update(pending)
                yield pending
                pending = block
            digest.update(pending)
            if snapshot.sha256 is not None and digest.hexdigest() != snapshot.sha256:
                raise InputError(f"{snapshot.path}: snapshot changed since it was taken, not used")
            yield pending
        finally:
            os.close(fd)


def _read_meta(folder: PrivateDir, name: str) -> dict | None:
    """A snapshot's metadata, if it is the user's own regular file and holds an object."""
    fd = folder.open_own(name)
    if fd is None:
        return None
    try:
        with os.fdopen(fd, "rb") as handle:
            meta = orjson.loads(handle.read())
    except (OSError, orjson.JSONDecodeError):
        return None
    return meta if isinstance(meta, dict) else None


def _exists(folder: PrivateDir, name: str) -> bool:
    try:
        folder.stat(name)
    except FileNotFoundError:
        return False
    return True


def _stamp(name: str) -> str:
    return FILE_NAME.fullmatch(name)["stamp"]  # type: ignore[index]


def _status_of(file: Path) -> os.stat_result:
    try:
        return os.stat(file)
    except OSError as error:
        raise InputUnreadable(f"{file}: cannot read: {error.strerror}") from None


def _link_failure(error: OSError) -> str:
    if error.errno == errno.EXDEV:
        return "it is on another file system than the snapshot folder"
    return f"it cannot be linked there ({error.strerror})"


def _blocks(fd: int, size: int) -> Iterator[bytes]:
    """The first ``size`` bytes of the open file ``fd``, whatever its position."""
    offset = 0
    while offset < size:
        block = os.pread(fd, min(READ_CHUNK, size - offset), offset)
        if not block:
            raise InputError(f"/proc/self/fd/{fd}: the file shrank while it was being read")
        offset += len(block)
        yield block


def _sha256(fd: int, size: int) -> str:
    digest = hashlib.sha256()
    for block in _blocks(fd, size):
        digest.update(block)
    return digest.hexdigest()


def _truncate(fd: int, size: int) -> None:
    """Cut the open file back to ``size`` bytes (it is open for reading only: reopen it)."""
    writable = os.open(f"/proc/self/fd/{fd}", os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.ftruncate(writable, size)
    finally:
        os.close(writable)
