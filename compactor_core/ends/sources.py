"""Where an input is: bytes already read (standard input), a local file, or an object at a URL.

Every source can be read whole; a local file can also be opened, so that an agent's session file
of any size is read as a stream. A local file is always opened by its real path (symbolic links
resolved), and its status at that moment is what an in-place rewrite later checks against.

Each kind answers the same questions, so that nothing else asks which kind it is: what it
``opened`` (``origins``), its version, its size, the folder it is in, the session id its
snapshots are kept under, and the URL it has, if any.
"""

from __future__ import annotations

import io
import os
import stat
from dataclasses import dataclass, replace
from typing import BinaryIO

from .. import defaults
from ..disk.database_names import database_part
from ..errors import IsADirectory, reading
from .origins import InMemory, OpenedFile, ReadObject, file_version

READ_BUFFER = 1 << 20  # long lines are read four times faster than with the default 8 KB


@dataclass(frozen=True)
class Given:
    """An input already in memory, such as standard input that the front end read."""

    data: bytes
    label: str = "<stdin>"
    url = None  # not an object
    folder = None  # not in a folder: nothing written beside it

    def read(self) -> bytes:
        return self.data

    def open(self) -> BinaryIO:
        return io.BytesIO(self.data)

    def opened(self, handle: BinaryIO) -> InMemory:
        return InMemory(self.label)

    def with_version(self) -> Given:
        return self

    def current_version(self) -> str:
        return ""

    def known_size(self) -> int:
        return len(self.data)

    def session_id(self) -> str:
        return defaults.SESSION_ID


@dataclass(frozen=True)
class LocalFile:
    path: str | os.PathLike[str]
    label: str
    session: str | None = None  # one session of a database file (``FILE#SESSION``)
    url = None  # not an object

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

    def opened(self, handle: BinaryIO) -> OpenedFile:
        """What was opened: the real file, its status then, and the descriptor that holds it."""
        descriptor = handle.fileno()
        status = os.fstat(descriptor)
        return OpenedFile(self.label, handle.name, status, descriptor, self.session)

    def with_version(self) -> LocalFile:
        return self  # a file's version is read when it is opened

    def current_version(self) -> str:
        """Its version now, as an output made from it records it (``origins.file_version``)."""
        with reading(self.label):
            return file_version(os.stat(self.path))

    def known_size(self) -> int:
        try:
            return os.stat(self.path).st_size
        except OSError:  # a missing file: whoever reads it reports it
            return 0

    @property
    def folder(self) -> str:
        """The folder of the file itself (links resolved): where it is replaced."""
        return os.path.dirname(os.path.realpath(self.path))

    def session_id(self) -> str:
        from ..snapshots.base import session_id_for_file

        return session_id_for_file(self.path)


@dataclass(frozen=True)
class RemoteObject:
    """An object at a URL (``s3://bucket/key``), read through fsspec (the ``s3`` extra)."""

    url: str
    label: str
    version: str = ""  # its ETag, when a listing gave it: a re-run compares it
    size: int = 0
    folder = None  # not in a local folder

    def read(self) -> bytes:
        from .object_store import read

        return read(self.url)

    def open(self) -> BinaryIO:
        return io.BytesIO(self.read())

    def opened(self, handle: BinaryIO) -> ReadObject:
        return ReadObject(self.label, self.url, self.version)

    def with_version(self) -> RemoteObject:
        """The object with its version, asked for if a listing did not give it: a re-run
        compares it, and an in-place write checks that nobody replaced the object meanwhile."""
        if self.version:
            return self
        from .object_store import stat

        return replace(self, version=stat(self.url).version)

    def current_version(self) -> str:
        return self.version

    def known_size(self) -> int:
        return self.size

    def session_id(self) -> str:
        from ..snapshots.base import session_id_for_url

        return session_id_for_url(self.url)


Source = Given | LocalFile | RemoteObject


def local_file(name: str) -> LocalFile:
    """The local input ``name``: a file, or one session of a database, ``FILE#SESSION``
    (a file that is itself named so is that file)."""
    file, session = database_part(name)
    if session is None:
        return LocalFile(name, name)
    from pathlib import Path  # only here: a plain file's input starts without it

    return LocalFile(Path(file), name, session)
