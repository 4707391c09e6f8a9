"""How one session of a database of sessions is named (``FILE#SESSION``), and how a database
file is told apart: the words every end (inputs, batches, agents, restore) names them with."""

from __future__ import annotations

import os
import stat

SESSION_MARK = "#"  # FILE#SESSION: one session of a database
SQLITE_HEADER = b"SQLite format 3\x00"


def split_session(name: str) -> tuple[str, str | None]:
    """``FILE#SESSION`` as (FILE, SESSION); a name without the mark as (name, None)."""
    file, mark, session = name.rpartition(SESSION_MARK)
    if not mark or not file or not session:
        return name, None
    return file, session


def database_part(name: str) -> tuple[str, str | None]:
    """The file a local input ``name`` reads, and the database session it names (None: the
    whole file); a file that is itself named ``FILE#SESSION`` is that file."""
    file, session = split_session(name)
    if session is None or os.path.lexists(name) or not os.path.isfile(file):
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
