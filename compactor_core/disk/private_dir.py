"""A folder only its user can change, used through a descriptor: where snapshots are kept.

Snapshots hold whole sessions, secrets from tool output included, and ``restore`` writes them
back over the user's files; so the folder they are in must be the user's alone (issue 22.1):

- The folder is refused (``UnsafeLocation``) when it is a symbolic link, is not owned by the
  user, or can be written by group or others; and when a folder above it (links resolved) could
  be changed by someone else: owned by another user (root is trusted, as the system's own
  folders are root's), or writable by group or others without the sticky bit (``/tmp`` is
  fine: nobody but us may rename or remove what is ours in it). A new folder is made 0700.
- Once checked, the folder is held open, and every name in it is used relative to that
  descriptor, never by its path after a check: new files are created ``O_EXCL|O_NOFOLLOW``
  (0600 from their first moment), files are opened ``O_NOFOLLOW`` and used only if they are
  regular files of the user, and a hard link never follows the name it creates.
"""

from __future__ import annotations

import contextlib
import errno
import os
import pwd
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path

from ..errors import UnsafeLocation

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
# The folders above: only walked through (O_PATH needs no read permission, as /home 0711 gives).
_PASSAGE = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC
_NEW_FILE = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH
ROOT = 0


class PrivateDir:
    """An open, checked folder: ``open`` makes one, ``close`` (or ``with``) lets it go."""

    def __init__(self, fd: int, path: Path) -> None:
        self.fd = fd
        self.path = path

    @classmethod
    def open(cls, path: Path, create: bool, label: str) -> PrivateDir | None:
        """The folder at ``path``, checked; None if it is missing and not to be created.
        UnsafeLocation if it is not safe; the OSError if it cannot be opened or made.

        ``label`` names it in errors (its path, as the user gave it)."""
        path = Path(os.path.abspath(path))
        parent = Path(os.path.realpath(path.parent))
        parent_fd = _checked_parents(parent, create, label)
        if parent_fd is None:
            return None
        try:
            fd = _open_or_make(parent_fd, path.name, create, label, _DIRECTORY)
        finally:
            os.close(parent_fd)
        if fd is None:
            return None
        try:
            _check_own(os.fstat(fd), label)
        except BaseException:
            os.close(fd)
            raise
        return cls(fd, path)

    @classmethod
    @contextlib.contextmanager
    def opened(cls, path: Path, create: bool) -> Iterator[PrivateDir]:
        """``open`` for a ``with`` block: FileNotFoundError when it is missing and not to be
        created."""
        folder = cls.open(path, create=create, label=str(path))
        if folder is None:
            raise FileNotFoundError(str(path))
        with folder:
            yield folder

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> PrivateDir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- names in it -----------------------------------------------------------------------------

    def names(self) -> list[str]:
        return os.listdir(self.fd)

    def create(self, name: str) -> int:
        """A new file, 0600, open for reading and writing; FileExistsError if the name is taken
        (by anything: a planted link is never followed)."""
        return os.open(name, _NEW_FILE, 0o600, dir_fd=self.fd)

    def open_own(self, name: str) -> int | None:
        """The user's own regular file ``name``, open for reading; None if it is missing, a
        link, or anything else (opened without blocking: a FIFO planted there never holds us)."""
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        try:
            fd = os.open(name, flags, dir_fd=self.fd)
        except OSError:
            return None
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode) or status.st_uid != os.geteuid():
            os.close(fd)
            return None
        return fd

    def link_fd(self, fd: int, name: str) -> None:
        """Give the open file ``fd`` the name ``name`` here (a hard link to that very inode,
        whatever its path now holds); FileExistsError if the name is taken."""
        os.link(f"/proc/self/fd/{fd}", name, dst_dir_fd=self.fd, follow_symlinks=True)

    def link(self, old: str, new: str) -> None:
        """A second name for ``old``; FileExistsError if ``new`` is taken."""
        os.link(old, new, src_dir_fd=self.fd, dst_dir_fd=self.fd, follow_symlinks=False)

    def replace(self, old: str, new: str) -> None:
        os.replace(old, new, src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def unlink(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=self.fd)

    def stat(self, name: str) -> os.stat_result:
        return os.stat(name, dir_fd=self.fd, follow_symlinks=False)

    def fsync(self) -> None:
        with contextlib.suppress(OSError):  # not every file system can
            os.fsync(self.fd)

    # --- whole small files -----------------------------------------------------------------------

    def read_own(self, name: str, limit: int) -> bytes:
        """The user's own regular file ``name`` (``open_own``), at most ``limit`` bytes
        (ValueError beyond); touched, so that the newest used are pruned last."""
        fd = self.open_own(name)
        if fd is None:
            raise FileNotFoundError(name)
        try:
            data = os.read(fd, limit + 1)
            if len(data) > limit:
                raise ValueError(f"{name}: over {limit} bytes")
            os.utime(fd)
            return data
        finally:
            os.close(fd)

    def put(self, name: str, data: bytes, durable: bool = True) -> None:
        """``name`` holds ``data``, whole or not at all: written to a new 0600 file, made
        durable (unless it is a cache a crash may lose), then renamed over it."""
        temporary = f".{name}-{secrets.token_hex(8)}.tmp"
        fd = self.create(temporary)  # exclusive, 0600, never through a link
        try:
            os.write(fd, data)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        self.replace(temporary, name)

    def modified(self, name: str) -> float:
        """When ``name`` was last written or used (0 if it is gone)."""
        try:
            return self.stat(name).st_mtime
        except OSError:
            return 0.0


def _checked_parents(parent: Path, create: bool, label: str) -> int | None:
    """Walk down to ``parent`` from the root, checking each folder; its descriptor, or None if
    it is missing and not to be created. Missing folders are made 0700 when ``create``."""
    fd = os.open("/", _PASSAGE)
    try:
        _check_parent(os.fstat(fd), Path("/"), label)
        here = Path("/")
        for part in parent.parts[1:]:
            here = here / part
            child = _open_or_make(fd, part, create, label, _PASSAGE)
            if child is None:
                os.close(fd)
                return None
            os.close(fd)
            fd = child
            _check_parent(os.fstat(fd), here, label)
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise
    return fd


def _open_or_make(parent_fd: int, name: str, create: bool, label: str, flags: int) -> int | None:
    """Open folder ``name`` in ``parent_fd`` without following a link; make it 0700 if it is
    missing and ``create``; None if it is missing otherwise."""
    for _ in range(2):
        try:
            return os.open(name, flags | os.O_NOFOLLOW, dir_fd=parent_fd)
        except FileNotFoundError:
            if not create:
                return None
        except OSError:
            if _is_link(parent_fd, name):
                raise UnsafeLocation(
                    f"{label}: snapshot folder not used: {name} is a symbolic link "
                    "(give the folder it points to with snapshots=FOLDER)"
                ) from None
            raise
        with contextlib.suppress(FileExistsError):  # made meanwhile: open what is there now
            os.mkdir(name, 0o700, dir_fd=parent_fd)
    raise OSError(errno.EAGAIN, f"{name} keeps changing")


def _is_link(parent_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=parent_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _check_own(status: os.stat_result, label: str) -> None:
    """The store itself: the user's, and nobody else may write to it."""
    if status.st_uid != os.geteuid():
        raise UnsafeLocation(
            f"{label}: snapshot folder not used: it belongs to {_user(status.st_uid)} "
            "(give a folder of your own with snapshots=FOLDER)"
        )
    if status.st_mode & _OTHERS_WRITE:
        raise UnsafeLocation(
            f"{label}: snapshot folder not used: others can write to it ({_mode(status)}; "
            "chmod go-w it, or give another with snapshots=FOLDER)"
        )


def _check_parent(status: os.stat_result, path: Path, label: str) -> None:
    """A folder above the store: nobody but the user (or root) may change what is in it."""
    if status.st_uid not in (os.geteuid(), ROOT):
        raise UnsafeLocation(
            f"{label}: snapshot folder not used: {path} belongs to {_user(status.st_uid)}, who "
            "could replace it (give one under a folder of your own with snapshots=FOLDER)"
        )
    if status.st_mode & _OTHERS_WRITE and not status.st_mode & stat.S_ISVTX:
        raise UnsafeLocation(
            f"{label}: snapshot folder not used: others can write to {path} ({_mode(status)}) "
            "and replace it (give one under a folder of your own with snapshots=FOLDER)"
        )


def _mode(status: os.stat_result) -> str:
    return f"mode {stat.S_IMODE(status.st_mode):04o}"


def _user(uid: int) -> str:
    try:
        return f"user {pwd.getpwuid(uid).pw_name}"
    except KeyError:
        return f"user {uid}"
