"""What an agent keeps of its sessions beside their files, kept right when ctxpack replaces one.

A format's ``after_replace`` calls on this after a rewrite in place or a ``restore``. Today one
agent needs it: Codex 0.169 projects each rollout into ``CODEX_HOME/thread_history_N.sqlite`` and
reads on from the byte offset it stopped at; after a rollout is rewritten those offsets point
into the old file, and the next lines Codex projects are read from the wrong place. Without a
thread's rows Codex projects its rollout afresh (measured with the real Codex), so they are
deleted.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

_PROJECTION_TABLES = ("thread_items", "thread_turns", "thread_history_projection_state")
_TABLES = "SELECT name FROM sqlite_master WHERE type = 'table'"


def forget_projection(path: Path, thread: object) -> str | None:
    """Delete Codex's projection rows of ``thread``, so Codex rebuilds them from the rollout at
    ``path``.

    Nothing to do outside a ``CODEX_HOME/sessions/YYYY/MM/DD/`` folder, without a thread id or
    without the database. A warning line if the database could not be changed.
    """
    home = path.parents[4] if len(path.parents) > 4 else None
    if home is None or path.parents[3].name != "sessions" or not isinstance(thread, str):
        return None
    for database in sorted(home.glob("thread_history_*.sqlite")):
        try:
            with closing(sqlite3.connect(database, timeout=5)) as connection, connection:
                tables = {row[0] for row in connection.execute(_TABLES)}
                for table in _PROJECTION_TABLES:
                    if table in tables:
                        connection.execute(f"DELETE FROM {table} WHERE thread_id = ?", (thread,))
        except sqlite3.Error as error:
            return f"{database}: could not reset Codex's thread history of {thread}: {error}"
    return None
