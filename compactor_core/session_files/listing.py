"""``ctxpack sessions``: the agents' sessions on this machine, newest first (SPEC §8.3).

The caller names each agent's home folder (the CLI reads ``CLAUDE_CONFIG_DIR`` / ``CODEX_HOME``);
each format finds its session files there. A file that cannot be read is listed with no estimate
rather than hiding it: it is exactly the one a user wants to hear about. Only regular files are
listed (a FIFO or a link to a device named like a session is passed over), and a file whose
first line is not a record within 1 MiB, or any line over 256 MiB, is listed without an estimate.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..ends.documents import open_document  # a stored session is read as every input is
from ..ends.sources import local_file
from ..errors import CtxpackError
from .base import AgentFormat, SessionFile
from .in_use import in_use, writer_of
from .records import is_regular


@dataclass(frozen=True)
class SessionEntry:
    agent: str
    session_id: str
    project: str
    path: Path
    size: int
    mtime: float  # seconds since the epoch
    tokens: int | None  # None: the file could not be read
    in_use: str | None  # why it is in use, or None


def list_sessions(
    homes: Iterable[tuple[AgentFormat, Path]],
    now: float,
    min_idle: float,
    proc: Path = Path("/proc"),
) -> list[SessionEntry]:
    entries = []
    for agent_format, home in homes:
        for found in agent_format.session_files(home):
            file = found.held_in or found.path
            if not is_regular(file):
                continue  # a FIFO, a device, a link to one: never a session, never read
            try:
                status = os.stat(file)
                reason = in_use(file, now, min_idle, proc) if found.held_in is None else None
            except OSError:
                continue  # gone since it was listed
            if found.held_in is not None:  # one of many in a file: by its own last change
                reason = _in_use_among_others(found, status, now, min_idle, proc)
            entries.append(
                SessionEntry(
                    agent_format.agent,
                    found.session_id,
                    found.project,
                    found.path,
                    status.st_size if found.size is None else found.size,
                    status.st_mtime if found.mtime is None else found.mtime,
                    _tokens(agent_format, found.path),
                    reason,
                )
            )
    return sorted(entries, key=lambda entry: -entry.mtime)


def _in_use_among_others(
    found: SessionFile, status: os.stat_result, now: float, min_idle: float, proc: Path
) -> str | None:
    """A session of a database: changed within ``min_idle`` by its own times, or its file open
    for writing by another process."""
    if found.mtime is not None and now - found.mtime < min_idle:
        return f"changed {max(now - found.mtime, 0):.0f}s ago, less than min_idle={min_idle:g}s"
    writer = writer_of(status.st_dev, status.st_ino, proc)
    return f"open for writing by process {writer}" if writer is not None else None


def _tokens(agent_format: AgentFormat, path: Path) -> int | None:
    try:
        with open_document(local_file(str(path)), agent_format.name) as document:
            return document.tokens()
    except (OSError, CtxpackError):
        return None
