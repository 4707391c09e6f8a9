"""Pass 1 over a session file: the index of its records and the conversation view (SPEC §8.2).

``index_session`` reads the file once, line by line, and keeps a ``RecordInfo`` per line (no
bodies); the format then names the records of the view. The view's estimate is the sum of its
records' estimates (the estimate of a text is the sum over its characters, so it adds up), and
``load_view`` reads just the view's records again when the messages themselves are needed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from ..errors import InputError
from ..estimate import HEURISTIC, Counter, estimate, quarters_and_images, quarters_to_tokens
from ..formats import Message
from ..micro import content_length, is_marker
from ..tools import ToolNames, blocks, is_block, tool_calls
from .base import AgentFormat, Record, RecordInfo, ToolResult, ViewMessage
from .records import Line, lines, parse_exact, parse_fast

BLANK = "blank"
INVALID = "invalid"


@dataclass
class SessionIndex:
    """A session file as pass 1 saw it: an index of its records, and its conversation view."""

    format: AgentFormat
    source: str  # how messages name the file
    infos: list[RecordInfo]
    view: list[ViewMessage]
    size: int  # bytes read
    names: ToolNames = field(default_factory=ToolNames)  # call id -> tool name, whole file
    ends_with_newline: bool = True  # the last line has a line ending (or the file is empty)
    measured: bool = True  # the records' estimates were made (micro alone does without)

    @property
    def view_records(self) -> list[int]:
        return [index for message in self.view for index in message.records]

    @property
    def view_pieces(self) -> list[tuple[int, int | None]]:
        return [piece for message in self.view for piece in message.pieces()]

    @property
    def view_quarters(self) -> int:
        return sum(piece_quarters(self.infos[index], part) for index, part in self.view_pieces)

    @property
    def tokens(self) -> int:
        """The estimate of the conversation view (SPEC §1 on §8.2)."""
        return quarters_to_tokens(self.view_quarters)

    def records(self) -> int:
        return sum(info.kind not in (BLANK, INVALID) for info in self.infos)

    def bytes_by_kind(self) -> dict[str, int]:
        sizes: dict[str, int] = {}
        for info in self.infos:
            sizes[info.kind] = sizes.get(info.kind, 0) + info.length
        return dict(sorted(sizes.items(), key=lambda item: -item[1]))


def index_session(
    handle: BinaryIO,
    agent_format: AgentFormat,
    source: str,
    others: Sequence[AgentFormat] = (),
    measure: bool = True,
) -> SessionIndex:
    """Pass 1: one ``RecordInfo`` per line, the tool names, the view.

    Without ``measure`` the records' estimates are not made: a micro compaction whose figures
    nobody asked for runs at nearly the speed of reading the file.

    A record that one of ``others`` claims and this format does not is marked with a problem
    (``check`` passes the other formats; a file may be half one format).
    """
    infos: list[RecordInfo] = []
    names = ToolNames()
    last: Line | None = None
    for line in lines(handle):
        info = RecordInfo(line.number, line.offset, len(line.data))
        record, problem = parse_fast(line)
        if record is None:
            info.kind = BLANK if problem == BLANK else INVALID
            info.problem = None if problem == BLANK else problem
        else:
            agent_format.index(record, info)
            if others and not agent_format.claims(record):
                info.problem = _foreign(record, agent_format, others)
            describe(info, agent_format.messages(record), measure)
            for call_id, name, _ in info.calls:
                if isinstance(call_id, str):
                    names[call_id] = name
        infos.append(info)
        last = line
    size = last.offset + len(last.data) if last else 0
    view = agent_format.view(infos)
    ends_with_newline = last is None or bool(last.ending)
    return SessionIndex(agent_format, source, infos, view, size, names, ends_with_newline, measure)


def _foreign(record: Record, own: AgentFormat, others: Sequence[AgentFormat]) -> str | None:
    for other in others:
        if other.claims(record):
            return f"a {other.name} record in a {own.name} session (kept as it is)"
    return None


def describe(info: RecordInfo, messages: list[Message], measure: bool = True) -> None:
    """What the framework derives from a record's messages, by the core's own rules."""
    if not messages:
        return
    info.role = messages[0].get("role")
    info.calls = tuple(
        (call_id, name, part)
        for part, message in enumerate(messages)
        for call_id, name in tool_calls(message)
    )
    info.results = tuple(
        ToolResult(call_id, content_length(content), is_marker(content), part)
        for part, message in enumerate(messages)
        for call_id, holder in result_holders([message])
        for content in (holder.get("content"),)
    )
    if not measure:
        return
    if len(messages) == 1:
        info.quarters, info.images = quarters_and_images(messages[0])
    else:
        measured = [quarters_and_images(message) for message in messages]
        info.part_quarters = tuple(quarters for quarters, _ in measured)
        info.quarters = sum(info.part_quarters)
        info.part_images = tuple(images for _, images in measured)
        info.images = sum(info.part_images)


def piece_quarters(info: RecordInfo, part: int | None) -> int:
    """The estimate of one message of a record (part None: of all of them)."""
    return info.quarters if part is None or not info.part_quarters else info.part_quarters[part]


def piece_images(info: RecordInfo, part: int | None) -> int:
    """The inline images of one message of a record (part None: of all of them)."""
    return info.images if part is None or not info.part_images else info.part_images[part]


def pick(messages: list[Message], part: int | None) -> list[Message]:
    return messages if part is None else messages[part : part + 1]


def result_holders(messages: list[Message]) -> Iterator[tuple[Any, dict]]:
    """Each dict whose ``content`` is a tool result, with the call id it answers."""
    for message in messages:
        if message.get("role") == "tool":
            yield message.get("tool_call_id"), message
        for block in blocks(message):
            if is_block(block, "tool_result"):
                yield block.get("tool_use_id"), block


# --- reading the view ----------------------------------------------------------------------------


def read_record(handle: BinaryIO, info: RecordInfo, source: str) -> Record:
    """A record pass 1 indexed, read again from its place (exactly, as it will be written)."""
    handle.seek(info.offset)
    data = handle.read(info.length)
    if len(data) != info.length:
        raise InputError(f"{source}: line {info.line}: the file shrank while it was being read")
    return parse_exact(Line(info.line, info.offset, data), source)


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
            record = read_record(handle, session.infos[index], session.source)
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
