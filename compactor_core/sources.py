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

from .errors import IsADirectory, reading

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
        from .storage import read

        return read(self.url)

    def open(self) -> BinaryIO:
        return io.BytesIO(self.read())


Source = Given | LocalFile | RemoteObject
