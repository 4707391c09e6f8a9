"""``ctxpack sessions``: the agents' sessions on this machine, newest first (SPEC §8.3).

The caller names each agent's home folder (the CLI reads ``CLAUDE_CONFIG_DIR`` / ``CODEX_HOME``);
each format finds its session files there. A file that cannot be read is listed with no estimate
rather than hiding it: it is exactly the one a user wants to hear about.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..errors import CtxpackError
from ..sources import local_file
from .base import AgentFormat
from .in_use import in_use


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
            try:
                status = os.stat(file)
                reason = in_use(file, now, min_idle, proc)
            except OSError:
                continue  # gone since it was listed
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


def _tokens(agent_format: AgentFormat, path: Path) -> int | None:
    from ..documents import open_document  # a stored session is read as every input is

    try:
        with open_document(local_file(str(path)), agent_format.name) as document:
            return document.tokens()
    except (OSError, CtxpackError):
        return None
