"""Where an input is: bytes already read (standard input), a local file, or an object at a URL.

Every source can be read whole; a local file can also be opened, so that an agent's session file
of any size is read as a stream. A local file is always opened by its real path (symbolic links
resolved), and its status at that moment is what an in-place rewrite later checks against.
"""

from __future__ import annotations

import io
import os
import stat
from dataclasses import dataclass
from typing import BinaryIO

from ..errors import IsADirectory, reading

READ_BUFFER = 1 << 20  # long lines are read four times faster than with the default 8 KB


@dataclass(frozen=True)
class Given:
    """An input already in memory, such as standard input that the front end read."""

    data: bytes
    label: str = "<stdin>"

    def read(self) -> bytes:
        return self.data

    def open(self) -> BinaryIO:
        return io.BytesIO(self.data)


@dataclass(frozen=True)
class LocalFile:
    path: str | os.PathLike[str]
    label: str
    session: str | None = None  # one session of a database file (``FILE#SESSION``)

    def read(self) -> bytes:
        with self.open() as handle:
            return handle.read()

    def open(self) -> BinaryIO:
        """The file, opened for reading by its real path; errors name ``label``."""
        with reading(self.label):
            real = os.path.realpath(self.path, strict=True)
            handle = open(real, "rb", buffering=READ_BUFFER)  # noqa: SIM115 (returned open)
        if stat.S_ISDIR(os.fstat(handle.fileno()).st_mode):
            handle.close()
            raise IsADirectory(f"{self.label}: is a directory")
        return handle


@dataclass(frozen=True)
class RemoteObject:
    """An object at a URL (``s3://bucket/key``), read through fsspec (the ``s3`` extra)."""

    url: str
    label: str
    version: str = ""  # its ETag, when a listing gave it: a re-run compares it
    size: int = 0

    def read(self) -> bytes:
        from .object_store import read

        return read(self.url)

    def open(self) -> BinaryIO:
        return io.BytesIO(self.read())


Source = Given | LocalFile | RemoteObject


SESSION_MARK = "#"  # FILE#SESSION: one session of a database
SQLITE_HEADER = b"SQLite format 3\x00"


def local_file(name: str) -> LocalFile:
    """The local input ``name``: a file, or one session of a database, ``FILE#SESSION``
    (a file that is itself named so is that file)."""
    file, session = split_session(name)
    if session is None or os.path.lexists(name) or not os.path.isfile(file):
        return LocalFile(name, name)
    from pathlib import Path  # only here: a plain file's input starts without it

    return LocalFile(Path(file), name, session)


def split_session(name: str) -> tuple[str, str | None]:
    """``FILE#SESSION`` as (FILE, SESSION); a name without the mark as (name, None)."""
    file, mark, session = name.rpartition(SESSION_MARK)
    if not mark or not file or not session:
        return name, None
    return file, session


def session_name(file: str | os.PathLike[str], session: str) -> str:
    """How one session of a database file is named: ``FILE#SESSION``."""
    return f"{os.fspath(file)}{SESSION_MARK}{session}"


def is_database_file(name: str | os.PathLike[str]) -> bool:
    """Whether the file is a SQLite database (by its first bytes; only a regular file is
    opened: opening a named pipe would wait for its writer)."""
    try:
        if not stat.S_ISREG(os.stat(name).st_mode):
            return False
        with open(name, "rb") as handle:
            return handle.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False
