"""A session kept as rows of a SQLite database (OpenCode's ``opencode.db``), through ``sqlite3``.

Decisions (also in the README):
- **Reading**: a read-only connection, the session's rows read in one read transaction; every
  table that names the session (``DatabaseStore.tables``) is read, nothing else.
- **In use**: a process of the agent holding the database (or its ``-wal``) open, or the
  session changed within ``--min-idle`` (its rows' own times: the file's would be any
  session's): skipped, exit 75, unless ``--force``. Another ctxpack holding it is no reason.
- **Writing**: one transaction, ``BEGIN IMMEDIATE`` (a write lock another holds for more than
  ``LOCK_WAIT`` seconds: in use, exit 75, nothing changed). In it the session's rows are read
  again: if the agent changed them since they were read, nothing changes (exit 75); otherwise
  they are kept in the snapshot store, then changed (only the rows that differ), then committed.
  A failure before the commit leaves the database as it was.
- **The original**: the session's rows, one JSON line each (``{"table", "row"}``), taken inside
  that transaction, so they are exactly what was replaced. A copy of the whole database, as
  SQLite's online backup makes, would hold every other session too, once per session changed;
  that copy is what ``--backup SUFFIX`` makes (``opencode.db`` + SUFFIX, before the change).
- **Restore** puts one session back: in one transaction its rows are deleted and the kept ones
  inserted (the session's rows as they were are kept first, as ``replaced``); rows of other
  sessions are neither read nor written, so their later changes stay.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import sqlite3
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import orjson

from ..conversation.formats import dumps
from ..disk.database_names import session_name
from ..errors import InputError, InputUnreadable, OutputError, SessionInUse
from .base import Record
from .in_use import writers_of
from .stores import Result, SessionStore

if TYPE_CHECKING:
    from ..settings import RunSettings
    from ..snapshots.base import Details, Snapshot
    from ..snapshots.finding import Choice
    from ..snapshots.local_store import SnapshotStore
    from ..snapshots.putting_back import Restored

LOCK_WAIT = 2.0  # seconds to wait for the write lock (another ctxpack may hold it a moment)
Rows = dict[str, list[dict[str, Any]]]  # table -> the session's rows, as column -> value


class DatabaseStore(SessionStore):
    """One session of a database: its rows and records, and the transaction that changes it.

    A subclass names the ``tables`` holding the session and turns rows into records
    (``records_of``) and a result into changes (``apply``).
    """

    rewrites_itself = True
    # (table, the column naming the session), parents first: restore deletes children first
    tables: ClassVar[tuple[tuple[str, str], ...]]
    agent_program: ClassVar[str]  # how the agent's program is named (its executable, argv[0])

    def __init__(self, path: Path, session: str, label: str) -> None:
        self.path = path
        self.session = session
        self.label = label
        with _reading(self.path, label) as connection:
            rows = session_rows(connection, self.tables, session)
        if not any(rows.values()):
            raise InputUnreadable(f"{label}: no session {session!r} in the database")
        self.kept = encode_rows(rows)
        self.records = self.records_of(rows)
        self.changed_at = self.last_change(rows)

    # --- what a subclass says ---

    def records_of(self, rows: Rows) -> list[Record]:
        raise NotImplementedError

    def apply(self, connection: sqlite3.Connection, result: Result) -> None:
        raise NotImplementedError

    def last_change(self, rows: Rows) -> float | None:
        """When the session last changed (seconds since the epoch), if its rows say."""
        return None

    # --- the store ---

    def write_in_place(self, result: Result, run: RunSettings, details: Details) -> str | None:
        backup = Path(f"{self.path}{run.backup_suffix}") if run.backup_suffix else None
        if backup is not None:
            _backup(self.path, backup, self.label)
        try:
            with transaction(self.path, self.label) as connection:
                now = encode_rows(session_rows(connection, self.tables, self.session))
                if now != self.kept:
                    raise SessionInUse(
                        f"{self.label}: changed while being compacted (its agent wrote to it), "
                        "left as is"
                    )
                if run.snapshots is not None:
                    run.snapshots.save_original(
                        snapshot_id(self.path, self.session), now, details, self.path
                    )
                self.apply(connection, result)
        except BaseException:
            if backup is not None:  # nothing was changed: the backup would be the database
                with contextlib.suppress(OSError):
                    os.unlink(backup)
            raise
        return None

    def busy(self, rules: RunSettings) -> str | None:
        pid = agent_holding(self.path, self.agent_program, Path(rules.proc))
        if pid is not None:  # it writes its own copy of the session back: --force or not
            raise SessionInUse(
                f"{self.label}: in use by its agent (process {pid} of the agent has the "
                "database open): not compacted, not even with force=True (it keeps the session in "
                "memory and writes it back); quit the agent, then run again"
            )
        if self.changed_at is not None and not rules.force:
            idle = rules.time().timestamp() - self.changed_at
            if idle < rules.min_idle:
                return f"changed {max(idle, 0):.0f}s ago, less than min_idle={rules.min_idle:g}s"
        return None


# --- connections ---------------------------------------------------------------------------------


@contextlib.contextmanager
def _reading(path: Path, label: str) -> Iterator[sqlite3.Connection]:
    try:
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=LOCK_WAIT)
    except sqlite3.Error as error:
        raise InputUnreadable(f"{label}: cannot read the database: {error}") from None
    try:
        connection.execute("BEGIN")  # one read transaction: every row from one moment
        yield connection
    except sqlite3.OperationalError as error:
        if is_locked(error):  # an agent holds it exclusively: try again later
            raise SessionInUse(
                f"{label}: the database is locked by its agent, left as is"
            ) from None
        raise InputError(f"{label}: cannot read the database: {error}", label) from None
    except sqlite3.DatabaseError as error:
        raise InputError(f"{label}: cannot read the database: {error}", label) from None
    finally:
        connection.close()


@contextlib.contextmanager
def transaction(path: Path, label: str) -> Iterator[sqlite3.Connection]:
    """A write transaction on the database, committed if the block ends well."""
    try:
        connection = sqlite3.connect(path, timeout=LOCK_WAIT, isolation_level=None)
    except sqlite3.Error as error:
        raise OutputError(f"{label}: cannot write the database: {error}") from None
    try:
        connection.execute("PRAGMA foreign_keys = OFF")  # a row put back never cascades
        try:
            connection.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            raise SessionInUse(
                f"{label}: in use by its agent (the database is locked: {error}), left as is"
            ) from None
        try:
            yield connection
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
    except sqlite3.Error as error:
        raise OutputError(f"{label}: cannot write the database: {error}") from None
    finally:
        connection.close()


def is_locked(error: sqlite3.Error) -> bool:
    return "locked" in str(error) or "busy" in str(error)


def session_rows(
    connection: sqlite3.Connection, tables: Sequence[tuple[str, str]], session: str
) -> Rows:
    """Every row of each table that names the session, in the order of their rowids."""
    rows: Rows = {}
    for table, column in tables:
        cursor = connection.execute(
            f'SELECT * FROM "{table}" WHERE "{column}" = ? ORDER BY rowid', (session,)
        )
        names = [description[0] for description in cursor.description]
        rows[table] = [dict(zip(names, row, strict=True)) for row in cursor]
    return rows


def encode_rows(rows: Rows) -> bytes:
    """The rows as JSONL, ``{"table", "row"}`` a line (a blob as ``{"$blob": base64}``)."""
    return b"".join(
        dumps({"table": table, "row": {key: _plain(value) for key, value in row.items()}}) + b"\n"
        for table, found in rows.items()
        for row in found
    )


def decode_rows(data: bytes, label: str) -> Rows:
    rows: Rows = {}
    for number, line in enumerate(data.splitlines(), start=1):
        try:
            entry = orjson.loads(line)
            table, row = entry["table"], entry["row"]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            raise InputError(f"{label}: line {number}: not a row of a session") from None
        rows.setdefault(table, []).append({key: _value(v) for key, v in row.items()})
    return rows


def _plain(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"$blob": base64.b64encode(value).decode("ascii")}
    return value


def _value(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"$blob"}:
        return base64.b64decode(value["$blob"])
    return value


def put_back(
    connection: sqlite3.Connection,
    tables: Sequence[tuple[str, str]],
    session: str,
    rows: Rows,
) -> None:
    """Replace the session's rows by ``rows`` (children deleted first, parents inserted first)."""
    for table, column in reversed(tables):
        connection.execute(f'DELETE FROM "{table}" WHERE "{column}" = ?', (session,))
    for table, _ in tables:
        for row in rows.get(table, ()):
            insert(connection, table, row)


def insert(connection: sqlite3.Connection, table: str, row: dict[str, Any]) -> None:
    columns = ", ".join(f'"{name}"' for name in row)
    places = ", ".join("?" for _ in row)
    connection.execute(f'INSERT INTO "{table}" ({columns}) VALUES ({places})', tuple(row.values()))


def _backup(path: Path, target: Path, label: str) -> None:
    """``--backup``: the whole database, as it is before the change, by SQLite's online backup
    (a consistent copy even while others write), written beside it and renamed into place.

    The copy is made in a file of its own, created as every temporary file is (exclusive, 0600,
    an unpredictable name), and SQLite writes it through that open file (``/proc/self/fd``,
    no journal beside it): a link planted at its name is never followed."""
    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".ctxpack-tmp", dir=target.parent)
    try:
        with (
            _reading(path, label) as source,
            contextlib.closing(sqlite3.connect(f"/proc/self/fd/{fd}")) as copy,
        ):
            copy.execute("PRAGMA journal_mode = OFF")
            source.execute("ROLLBACK")  # the backup makes its own read transactions
            source.backup(copy)
        os.replace(temp, target)
    except (OSError, sqlite3.Error) as error:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise OutputError(f"{target}: cannot write backup: {error}") from None
    finally:
        os.close(fd)


# --- who holds it --------------------------------------------------------------------------------


def agent_holding(path: Path, program: str, proc: Path) -> int | None:
    """A process of the agent (running ``program``) that has the database or its write-ahead
    log open for writing; another ctxpack holding it a moment does not count."""
    for name in (path, Path(f"{path}-wal")):
        try:
            status = os.stat(name)
        except OSError:
            continue
        for pid in writers_of(status.st_dev, status.st_ino, proc):
            if _runs(pid, program, proc):
                return pid
    return None


def _runs(pid: int, program: str, proc: Path) -> bool:
    """Whether the process runs ``program``: by the name it was started as (``argv[0]``) or its
    executable's. Not by any word of its command line: ctxpack's own workers, doing the other
    sessions of the database, have its path there (``…/opencode/opencode.db``)."""
    names = []
    with contextlib.suppress(OSError):
        names.append(os.fsdecode((proc / str(pid) / "cmdline").read_bytes().split(b"\0")[0]))
    with contextlib.suppress(OSError):
        names.append(os.readlink(proc / str(pid) / "exe"))
    return any(Path(name).name.lower().startswith(program) for name in names)


# --- snapshots and restore -----------------------------------------------------------------------


def snapshot_id(path: Path, session: str) -> str:
    """The snapshots' session id of one session of a database: the session's own id and a short
    hash of the database's real path and that id."""
    from ..snapshots.base import check_session_id

    where = f"{os.path.realpath(path)}#{session}".encode()
    digest = hashlib.sha256(where).hexdigest()[:8]
    cleaned = "".join(c if c.isalnum() or c in "._:@+-" else "-" for c in session)[:119]
    return check_session_id(f"{cleaned.lstrip('.') or 'session'}-{digest}")


def kept_sessions(snapshots: SnapshotStore, path: Path) -> list[str]:
    """The sessions of the database that have snapshots, in the order of their ids."""
    real = os.path.realpath(path)
    return sorted(
        {
            snapshot.session_id.rpartition("-")[0]
            for snapshot in snapshots.select()
            if snapshot.source == real and snapshot.session_id.rpartition("-")[0]
        }
    )


def restore_session(
    snapshots: SnapshotStore,
    path: Path,
    session: str,
    store: type[DatabaseStore],
    choice: Choice,
    dry_run: bool = False,
) -> tuple[Restored, Snapshot]:
    """Put one session of the database back as a snapshot kept it; its rows as they are now
    are kept first (``replaced``). Nothing but that session's rows changes."""
    from ..snapshots.base import REPLACED, Details
    from ..snapshots.finding import choose
    from ..snapshots.putting_back import Restored

    label = session_name(path, session)
    snapshot = choose(snapshots.select(snapshot_id(path, session)), choice, label)
    data = snapshot.read()  # checked against its hash: a damaged snapshot is never put back
    rows = decode_rows(data, str(snapshot.path))
    pid = agent_holding(path, store.agent_program, Path("/proc"))
    if pid is not None and not dry_run:
        raise SessionInUse(
            f"{label}: in use by its agent (process {pid} has the database open), left as is"
        )
    with transaction(path, label) as connection:
        now = encode_rows(session_rows(connection, store.tables, session))
        if now == data:
            return Restored("unchanged"), snapshot
        if dry_run:
            return Restored("would restore"), snapshot
        details = Details(snapshot.shape or "jsonl")
        kept = snapshots.save_original(snapshot_id(path, session), now, details, path, REPLACED)
        put_back(connection, store.tables, session, rows)
    return Restored("restored", replaced=str(kept)), snapshot
