"""Pass 1 over a session file: the index of its records and the conversation view (SPEC §8.2).

``index_session`` reads the file once, line by line, and keeps a ``RecordInfo`` per line (no
bodies), packed into a ``RecordTable``; the format then names the records of the view. The
view's estimate is the sum of its records' estimates (the estimate of a text is the sum over its
characters, so it adds up), and ``load_view`` reads just the view's records again when the
messages themselves are needed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

from ..compaction.estimate import HEURISTIC, Counter, estimate, quarters_to_tokens
from ..conversation.formats import Message
from ..conversation.tool_rules import Rules
from ..errors import InputError
from .base import AgentFormat, Record, RecordInfo, ViewMessage
from .records import Line, lines, parse_exact, parse_fast
from .table import RecordTable

BLANK = "blank"
INVALID = "invalid"


@dataclass
class SessionIndex:
    """A session file as pass 1 saw it: an index of its records, and its conversation view."""

    format: AgentFormat
    source: str  # how messages name the file
    infos: RecordTable
    view: Sequence[ViewMessage]
    size: int  # bytes read
    ends_with_newline: bool = True  # the last line has a line ending (or the file is empty)
    measured: bool = True  # the records' estimates were made (micro alone does without)

    @property
    def view_records(self) -> Iterator[int]:
        return (index for message in self.view for index in message.records)

    @property
    def view_pieces(self) -> Iterator[tuple[int, int | None]]:
        return (piece for message in self.view for piece in message.pieces())

    @property
    def view_quarters(self) -> int:
        return sum(self.infos.piece_quarters(index, part) for index, part in self.view_pieces)

    @property
    def tokens(self) -> int:
        """The estimate of the conversation view (SPEC §1 on §8.2)."""
        return quarters_to_tokens(self.view_quarters)

    def tool(self, call: Any, default: Any = None) -> Any:
        """The tool name of a call id (or its key), from the whole file's calls."""
        return self.infos.tool(call, default)

    def records(self) -> int:
        kinds = self.infos.kinds()
        return sum(
            kinds[self.infos.kind_code(n)] not in _NOT_RECORDS for n in range(len(self.infos))
        )

    def bytes_by_kind(self) -> dict[str, int]:
        sizes: dict[str, int] = {}
        infos = self.infos
        for index in range(len(infos)):
            kind = infos.kind(index)
            sizes[kind] = sizes.get(kind, 0) + infos.length(index)
        return dict(sorted(sizes.items(), key=lambda item: -item[1]))


_NOT_RECORDS = (BLANK, INVALID)


def index_session(
    handle: BinaryIO,
    agent_format: AgentFormat,
    source: str,
    others: Sequence[AgentFormat] = (),
    measure: bool = True,
    rules: Rules | None = None,
) -> SessionIndex:
    """Pass 1: one ``RecordInfo`` per line, packed into a table, the tool names, the view.

    Without ``measure`` the records' estimates are not made: a micro compaction whose figures
    nobody asked for runs at nearly the speed of reading the file. With ``rules`` (the tool
    rules, ``Settings.tool_rules``) what each call touched is kept too, for stale results
    (stale.py).

    A record that one of ``others`` claims and this format does not is marked with a problem
    (``check`` passes the other formats; a file may be half one format).
    """
    infos = RecordTable(measure, rules)
    last: Line | None = None
    for line in lines(handle):
        info = RecordInfo(line.number, line.offset, len(line.data))
        record, problem = parse_fast(line)
        if record is None:
            info.kind = BLANK if problem == BLANK else INVALID
            info.problem = None if problem == BLANK else problem
            infos.add(info, [])
        else:
            agent_format.index(record, info)
            if others and not agent_format.claims(record):
                info.problem = _foreign(record, agent_format, others)
            infos.add(info, agent_format.messages(record))
        last = line
    infos.finish()
    size = last.offset + len(last.data) if last else 0
    view = agent_format.view(infos)
    ends_with_newline = last is None or bool(last.ending)
    return SessionIndex(agent_format, source, infos, view, size, ends_with_newline, measure)


def view_before(session: SessionIndex, line: int) -> Sequence[ViewMessage]:
    """The conversation view as it stood before record ``line`` was written: what the agent
    sent then (the format's view of the lines before it)."""
    return session.format.view(_Before(session.infos, line))  # type: ignore[arg-type]


class _Before:
    """The table as if it ended before ``end``: every accessor is the table's own."""

    def __init__(self, infos: RecordTable, end: int) -> None:
        self._infos, self._end = infos, end

    def __len__(self) -> int:
        return self._end

    def __iter__(self) -> Iterator[Any]:
        return (self._infos[index] for index in range(self._end))

    def __getitem__(self, index: int) -> Any:
        if not -self._end <= index < self._end:
            raise IndexError(index)
        return self._infos[index % self._end]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._infos, name)


def _foreign(record: Record, own: AgentFormat, others: Sequence[AgentFormat]) -> str | None:
    for other in others:
        if other.claims(record):
            return f"a {other.name} record in a {own.name} session (kept as it is)"
    return None


def pick(messages: list[Message], part: int | None) -> list[Message]:
    return messages if part is None else messages[part : part + 1]


# --- reading the view ----------------------------------------------------------------------------


def read_record(handle: BinaryIO, infos: RecordTable, index: int, source: str) -> Record:
    """A record pass 1 indexed, read again from its place (exactly, as it will be written)."""
    offset, length = infos.offset(index), infos.length(index)
    handle.seek(offset)
    data = handle.read(length)
    if len(data) != length:
        line = infos.line(index)
        raise InputError(f"{source}: line {line}: the file shrank while it was being read")
    return parse_exact(Line(infos.line(index), offset, data), source)


def load_view(
    handle: BinaryIO,
    session: SessionIndex,
    change: Callable[[int, Record], Any] | None = None,
) -> list[Message]:
    """The view's messages, read from the file; ``change(index, record)`` may alter each record
    first (micro compaction, so only the results it keeps whole take memory)."""
    messages: list[Message] = []
    for view_message in session.view:
        parts: list[Message] = []
        for index, part in view_message.pieces():
            record = read_record(handle, session.infos, index, session.source)
            if change is not None:
                change(index, record)
            parts.extend(pick(session.format.messages(record), part))
        if parts:
            messages.append(join(parts))
    return messages


def view_tokens(
    handle: BinaryIO,
    session: SessionIndex,
    counter: Counter = HEURISTIC,
    change: Callable[[int, Record], Any] | None = None,
) -> int:
    """The view's count: the heuristic's adds up from the index; a tokenizer, or a ``change``,
    reads the view."""
    if counter is HEURISTIC and change is None:
        return session.tokens
    return estimate(load_view(handle, session, change), counter=counter)


def join(parts: Sequence[Message]) -> Message:
    """Messages the agent sends as one: the first's role, the contents one after the other."""
    if len(parts) == 1:
        return parts[0]
    content: list[Any] = []
    for part in parts:
        value = part.get("content")
        if isinstance(value, list):
            content.extend(value)
        elif isinstance(value, str):
            content.append({"type": "text", "text": value})
    return {"role": parts[0].get("role"), "content": content}
