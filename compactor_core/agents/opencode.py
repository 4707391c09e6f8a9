"""OpenCode sessions: every session of the user in one SQLite database,
``~/.local/share/opencode/opencode.db`` (``$XDG_DATA_HOME`` stands for ``~/.local/share``).

Tables ``session``, ``message`` (``data``: ``role``, ``parentID`` (an assistant's user message),
``summary``, ``finish``, ``error``, …), ``part`` (``data``: a ``text``, ``reasoning``,
``step-start``, ``step-finish``, ``tool`` (``callID``, ``tool``, ``state``: ``status``,
``input``, ``output``, ``metadata``, ``time.compacted``), ``file``, ``compaction``, …), and an
``event`` log holding a copy of each message and part as it was written. An input names one
session, ``opencode.db#ses_…``; the database alone stands for each of its sessions.

The records are the session's messages with their parts, as ``opencode export`` writes them
(``{"info": {…, "id", "sessionID"}, "parts": [{…, "id", "sessionID", "messageID"}]}``), in
the order OpenCode reads them (created, then id).

What OpenCode sends when it resumes (``filterCompacted``): from the newest message back to the
latest user message holding a ``compaction`` part whose summary (an assistant message,
``summary: true``, ``parentID`` that message) finished; with the part's ``tail_start_id``: the
compaction, its summary, the kept tail, the rest. Each message goes as ``opencode_parts`` says.

``micro`` changes the tool parts' ``state.output`` (and the long strings of ``state.metadata``,
OpenCode's UI copy), and the same in the event log's copies; ``full`` appends OpenCode's own
compaction: a user message with a ``compaction`` part (``tail_start_id``: the pending turn's
first message, which so stays where it is), then the summary, an assistant message of mode
``compaction`` with ``summary: true`` whose text part is the summary.
"""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from ..conversation.formats import Message, dumps
from ..disk.database_names import session_name
from ..errors import InputError, SessionInUse, UsageError
from ..session_files.base import (
    Compaction,
    Record,
    RecordInfo,
    SessionFile,
    ViewMessage,
    by_role,
)
from ..session_files.database import DatabaseStore, Rows, insert, is_locked
from ..session_files.keys import key
from ..session_files.stores import DATABASE, Result, StoredFormat
from ..session_files.ui_copies import shrink_strings
from .wire.opencode_parts import as_messages, recorded_usage

_TABLES = frozenset({"session", "message", "part"})
_IDS = ("id", "sessionID", "messageID")
_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
PART_EVENT, MESSAGE_EVENT = "message.part.updated.1", "message.updated.1"


@dataclass(frozen=True, slots=True)
class _Tag:
    """What the view needs of a message: its roles as sent, its place in a compaction."""

    roles: tuple[str, ...]
    compaction: bool = False  # a user message holding a compaction part
    # ids as the index keeps them (``keys.key``), to compare with the infos' ``id``
    tail: int | None = None  # its tail_start_id
    summary_of: int | None = None  # a finished summary: the id of its compaction message
    model: dict[str, Any] | None = None  # an assistant's provider and model, agent, path


class OpenCodeStore(DatabaseStore):
    """One session of ``opencode.db``: its messages and parts, and what a command changes."""

    # the event log's rows of a session are under its id (``aggregate_id``)
    tables = (
        ("session", "id"),
        ("message", "session_id"),
        ("part", "session_id"),
        ("event_sequence", "aggregate_id"),
        ("event", "aggregate_id"),
    )
    agent_program = "opencode"

    def records_of(self, rows: Rows) -> list[Record]:
        parts: dict[str, list[dict[str, Any]]] = {}
        for row in sorted(rows["part"], key=lambda row: row["id"]):
            part = _with_ids(row, "part", self.label)
            parts.setdefault(row["message_id"], []).append({**part, "messageID": row["message_id"]})
        messages = sorted(rows["message"], key=lambda row: (row["time_created"], row["id"]))
        return [
            {"info": _with_ids(row, "message", self.label), "parts": parts.get(row["id"], [])}
            for row in messages
        ]

    def last_change(self, rows: Rows) -> float | None:
        times = [row["time_updated"] for table in ("session", "message") for row in rows[table]]
        numbers = [time for time in times if isinstance(time, int | float)]
        return max(numbers) / 1000 if numbers else None

    def apply(self, connection: sqlite3.Connection, result: Result) -> None:
        changed: dict[str, dict[str, Any]] = {}
        for position in sorted(result.changed):
            before = {part.get("id"): part for part in _parts(self.records[position])}
            for part in _parts(result.records[position]):
                if part != before.get(part.get("id")):
                    connection.execute(
                        "UPDATE part SET data = ? WHERE id = ? AND session_id = ?",
                        (_row_data(part), part["id"], self.session),
                    )
                    changed[part["id"]] = part
        events = _Events(connection, self.session)
        if changed:
            events.shrink_copies(changed)
        for record in result.appended:
            self._insert(connection, record, events)

    def _insert(self, connection: sqlite3.Connection, record: Record, events: _Events) -> None:
        meta = _info(record)
        created = meta.get("time", {}).get("created")
        insert(
            connection,
            "message",
            {
                "id": meta["id"],
                "session_id": self.session,
                "time_created": created,
                "time_updated": created,
                "data": _row_data(meta),
            },
        )
        events.add(MESSAGE_EVENT, {"sessionID": self.session, "info": _ids_first(meta)})
        for part in _parts(record):
            row = {"id": part["id"], "message_id": meta["id"], "session_id": self.session}
            insert(
                connection,
                "part",
                {**row, "time_created": created, "time_updated": created, "data": _row_data(part)},
            )
            copy = _ids_first(part)
            events.add(PART_EVENT, {"sessionID": self.session, "part": copy, "time": created})


class OpenCode(StoredFormat):
    name = "opencode"
    agent = "opencode"
    home_variable = "XDG_DATA_HOME"
    home_default = ".local/share"
    kept_as = DATABASE
    store_type = OpenCodeStore
    recorded_usage = staticmethod(recorded_usage)  # each reply's tokens (opencode_parts)

    def sessions_in(self, path: Path) -> list[str]:
        try:
            with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as connection:
                names = {row[0] for row in connection.execute(_TABLE_NAMES)}
                if not names >= _TABLES:
                    return []
                query = "SELECT id FROM session ORDER BY time_created, id"
                return [row[0] for row in connection.execute(query)]
        except sqlite3.Error as error:
            if is_locked(error):  # OpenCode holds it exclusively: in use, not something else
                raise SessionInUse(f"{path}: locked by its agent, left as is") from None
            return []

    def open_store(self, handle: BinaryIO, label: str, session: str | None) -> OpenCodeStore:
        if session is None:
            raise UsageError(
                f"{label}: a database of sessions: name one as {label}#SESSION "
                "(list_sessions(agent='opencode') lists them)"
            )
        return OpenCodeStore(Path(handle.name), session, label)

    def index(self, record: Record, info: RecordInfo) -> None:
        meta = _info(record)
        role = meta.get("role")
        info.kind = role if isinstance(role, str) else "untyped"
        info.id = _text(meta.get("id"))
        info.parent = _text(meta.get("parentID")) if role == "assistant" else None
        parts = _parts(record)
        compaction = next((p for p in parts if p.get("type") == "compaction"), None)
        finished = meta.get("summary") and meta.get("finish") and not meta.get("error")
        model = None
        if role == "assistant":
            model = {name: meta.get(name) for name in ("providerID", "modelID", "agent", "path")}
        info.tag = _Tag(
            tuple(message["role"] for message in self.messages(record)),
            compaction is not None and role == "user",
            _key(compaction.get("tail_start_id")) if compaction else None,
            _key(meta.get("parentID")) if role == "assistant" and finished else None,
            model,
        )

    def messages(self, record: Record) -> list[Message]:
        return as_messages(_info(record), _parts(record))

    def view(self, infos: Sequence[RecordInfo]) -> list[ViewMessage]:
        order = _filter_compacted(infos)
        pieces = [
            (index, part, role)
            for index in order
            if isinstance(infos[index].tag, _Tag)
            for part, role in enumerate(infos[index].tag.roles)
        ]
        return by_role(pieces)

    def store(self, record: Record, messages: list[Message], truncated: dict[Any, str]) -> None:
        """A result that got the marker: its tool part's output (an error: its text), and the
        long strings of its ``state.metadata``."""
        new = {
            block.get("tool_use_id"): block.get("content")
            for message in messages
            for block in message.get("content") or ()
            if isinstance(block, dict) and block.get("type") == "tool_result"
        }
        for part in _parts(record):
            call = part.get("callID")
            state = part.get("state")
            if part.get("type") != "tool" or call not in truncated or not isinstance(state, dict):
                continue
            if state.get("status") == "completed":
                state["output"] = new.get(call, state.get("output"))
            elif state.get("status") == "error":
                state["error"] = new.get(call, state.get("error"))
            if "metadata" in state:
                state["metadata"], _ = shrink_strings(state["metadata"], truncated[call])

    def compaction_records(self, compaction: Compaction) -> list[Record]:
        moment = int(compaction.now.timestamp() * 1000)
        last = compaction.last or {}
        session = _info(last).get("sessionID")
        model = (
            next((info.tag.model for info in reversed(compaction.infos) if _model_of(info)), None)
            or {}
        )
        ids = _Ids(moment)
        user_id, summary_id = ids.next("msg"), ids.next("msg")
        pending = [record for record, _ in compaction.pending]
        tail = next((_info(r).get("id") for r in pending if _info(r).get("id")), None)
        part: dict[str, Any] = {"type": "compaction", "auto": False}
        if tail is not None:
            part["tail_start_id"] = tail
        user = {
            "info": {
                "role": "user",
                "time": {"created": moment},
                "agent": model.get("agent"),
                "model": {"providerID": model.get("providerID"), "modelID": model.get("modelID")},
                "id": user_id,
                "sessionID": session,
            },
            "parts": [{**part, "id": ids.next("prt"), "sessionID": session, "messageID": user_id}],
        }
        summary = {
            "info": {
                "parentID": user_id,
                "role": "assistant",
                "mode": "compaction",
                "agent": "compaction",
                "path": model.get("path") or {"cwd": "", "root": ""},
                "summary": True,
                "cost": 0,
                "tokens": {
                    "input": 0,
                    "output": 0,
                    "reasoning": 0,
                    "cache": {"read": 0, "write": 0},
                },
                "modelID": model.get("modelID"),
                "providerID": model.get("providerID"),
                "time": {"created": moment, "completed": moment},
                "finish": "stop",
                "id": summary_id,
                "sessionID": session,
            },
            "parts": [
                {
                    "type": "text",
                    "text": compaction.summary,
                    "time": {"start": moment, "end": moment},
                    "id": ids.next("prt"),
                    "sessionID": session,
                    "messageID": summary_id,
                }
            ],
        }
        return [user, summary]

    def session_files(self, home: Path) -> Iterator[SessionFile]:
        database = home / "opencode" / "opencode.db"
        if not database.is_file() or not self.sessions_in(database):
            return
        query = (
            "SELECT s.id, s.directory, s.time_updated,"
            " (SELECT COALESCE(SUM(LENGTH(data)), 0) FROM part WHERE session_id = s.id)"
            " + (SELECT COALESCE(SUM(LENGTH(data)), 0) FROM message WHERE session_id = s.id)"
            " FROM session s ORDER BY s.time_created, s.id"
        )
        uri = f"file:{database}?mode=ro"
        try:
            with closing(sqlite3.connect(uri, uri=True)) as connection:
                rows = connection.execute(query).fetchall()
        except sqlite3.Error:
            return
        for session, directory, updated, size in rows:
            yield SessionFile(
                Path(session_name(database, session)),
                session,
                directory if isinstance(directory, str) else "",
                held_in=database,
                size=size,
                mtime=updated / 1000 if isinstance(updated, int | float) else None,
            )


class _Events:
    """The session's event log: the copies of changed parts shrink, new rows get events."""

    def __init__(self, connection: sqlite3.Connection, session: str) -> None:
        self.connection = connection
        self.session = session
        names = {row[0] for row in connection.execute(_TABLE_NAMES)}
        self.kept = {"event", "event_sequence"} <= names
        found = (
            connection.execute(
                "SELECT seq FROM event_sequence WHERE aggregate_id = ?", (session,)
            ).fetchone()
            if self.kept
            else None
        )
        self.seq = found[0] if found else None  # no sequence: the session keeps no events
        self.ids = _Ids(0)

    def shrink_copies(self, changed: dict[str, dict[str, Any]]) -> None:
        if not self.kept:
            return
        rows = self.connection.execute(
            "SELECT id, data FROM event WHERE aggregate_id = ? AND type = ?",
            (self.session, PART_EVENT),
        ).fetchall()
        for event_id, data in rows:
            value = orjson.loads(data)
            copy = value.get("part") if isinstance(value, dict) else None
            part = changed.get(copy.get("id")) if isinstance(copy, dict) else None
            if part is None or not isinstance(copy.get("state"), dict):
                continue
            if _shrink_copy(copy["state"], part):
                self.connection.execute(
                    "UPDATE event SET data = ? WHERE id = ?", (dumps(value).decode(), event_id)
                )

    def add(self, kind: str, data: dict[str, Any]) -> None:
        if not self.kept or self.seq is None:
            return
        self.seq += 1
        moment = data.get("time") or data.get("info", {}).get("time", {}).get("created") or 0
        self.ids.moment = moment
        row = {
            "id": self.ids.next("evt"),
            "aggregate_id": self.session,
            "seq": self.seq,
            "type": kind,
            "data": dumps(data).decode(),
        }
        insert(self.connection, "event", row)
        self.connection.execute(
            "UPDATE event_sequence SET seq = ? WHERE aggregate_id = ?", (self.seq, self.session)
        )


def _shrink_copy(state: dict[str, Any], part: dict[str, Any]) -> bool:
    """An event's copy of a part whose output got the marker: the same marker where it is
    complete, its long strings the marker where it was still running."""
    new = part.get("state") or {}
    tool = part.get("tool") if isinstance(part.get("tool"), str) else "unknown"
    changed = False
    if state.get("status") == "completed" and "output" in state and new.get("output") is not None:
        changed = state["output"] != new["output"]
        state["output"] = new["output"]
    if "metadata" in state:
        state["metadata"], shrunk = shrink_strings(state["metadata"], tool)
        changed = changed or shrunk
    return changed


class _Ids:
    """OpenCode's ascending ids: PREFIX_ + 12 hex digits of (milliseconds * 4096 + a counter),
    then 14 random letters and digits, so new ones sort after the old."""

    def __init__(self, moment: int) -> None:
        self.moment = moment
        self.count = 0

    def next(self, prefix: str) -> str:
        self.count += 1
        number = (int(self.moment) * 4096 + self.count) & (1 << 48) - 1
        tail = "".join(secrets.choice(_BASE62) for _ in range(14))
        return f"{prefix}_{number:012x}{tail}"


_TABLE_NAMES = "SELECT name FROM sqlite_master WHERE type = 'table'"


def _filter_compacted(infos: Sequence[RecordInfo]) -> list[int]:
    """The messages OpenCode sends, oldest first (its ``filterCompacted``, on the infos)."""
    taken: list[int] = []
    summarized: set[int] = set()
    tail: int | None = None
    for index in range(len(infos) - 1, -1, -1):
        info, tag = infos[index], infos[index].tag
        taken.append(index)
        if not isinstance(tag, _Tag):
            continue
        if tail is not None:
            if info.id == tail:
                break
            continue
        if info.kind == "user" and info.id in summarized and tag.compaction:
            if tag.tail is None or info.id == tag.tail:
                break
            tail = tag.tail
            continue
        if tag.summary_of is not None:
            summarized.add(tag.summary_of)
    taken.reverse()
    cut = next(
        (
            n
            for n in range(len(taken) - 1, -1, -1)
            if _tag(infos, taken[n]).tail is not None and _tag(infos, taken[n]).compaction
        ),
        None,
    )
    if cut is None:
        return taken
    user = infos[taken[cut]]
    summary = next(
        (n for n in range(cut + 1, len(taken)) if _tag(infos, taken[n]).summary_of == user.id), -1
    )
    start = next((n for n, index in enumerate(taken) if infos[index].id == user.tag.tail), -1)
    if 0 <= start < cut < summary:
        return [*taken[cut : summary + 1], *taken[start:cut], *taken[summary + 1 :]]
    return taken


def _key(value: Any) -> int | None:
    """An id's key, as the infos hold ids; None for no id."""
    text = _text(value)
    return None if text is None else key(text)


def _tag(infos: Sequence[RecordInfo], index: int) -> _Tag:
    tag = infos[index].tag
    return tag if isinstance(tag, _Tag) else _Tag(())


def _model_of(info: RecordInfo) -> bool:
    return isinstance(info.tag, _Tag) and info.tag.model is not None


def _info(record: Record) -> dict[str, Any]:
    info = record.get("info") if isinstance(record, dict) else None
    return info if isinstance(info, dict) else {}


def _parts(record: Record) -> list[dict[str, Any]]:
    parts = record.get("parts") if isinstance(record, dict) else None
    return [part for part in parts if isinstance(part, dict)] if isinstance(parts, list) else []


def _with_ids(row: dict[str, Any], table: str, label: str) -> dict[str, Any]:
    """A row as a record: its ``data`` with the ids kept in columns."""
    return {**_data(row, table, label), "id": row["id"], "sessionID": row["session_id"]}


def _data(row: dict[str, Any], table: str, label: str) -> dict[str, Any]:
    if isinstance(row["data"], bytes):  # OpenCode writes text: this row is not its own
        place = f"{table} {row.get('id')}"
        raise InputError(f"{label}: {place}: its data is a BLOB, not JSON text", place=place)
    try:
        value = orjson.loads(row["data"])
    except (orjson.JSONDecodeError, TypeError):
        return {"$unreadable": row.get("data")}
    return value if isinstance(value, dict) else {"$unreadable": row.get("data")}


def _row_data(value: dict[str, Any]) -> str:
    """A message's or part's ``data`` column: the record without the ids kept in columns."""
    return dumps({key: item for key, item in value.items() if key not in _IDS}).decode()


def _ids_first(value: dict[str, Any]) -> dict[str, Any]:
    """A message or part as OpenCode's events copy it: its ids first."""
    return {name: value[name] for name in _IDS if name in value} | value


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
