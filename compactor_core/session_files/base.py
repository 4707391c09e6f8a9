"""What a format module implements, so that every command works on that agent's session files.

A session file is JSONL: one record a line. The framework (``session.py``) reads it twice, as a
stream, and never holds more than one record body at a time:

- **pass 1** parses each line and asks the format to ``index`` it: a small ``RecordInfo`` (its
  ids, its kind, its place in the conversation) that is all that is kept of the record. The
  framework adds what it derives from the record's ``messages`` (role, tool calls and results,
  the estimate in quarter tokens) using the core's own rules (``tools``, ``estimate``);
- the format's ``view`` then picks, from the infos alone, the records that make up the
  conversation view (SPEC §8.2), grouped into the messages the agent would send its model;
- **pass 2** copies every line that no rule changes byte for byte; a record that changes is
  parsed again, changed through its ``messages`` (the core's micro compaction works on them),
  stored back with ``store``, and re-serialized compactly with non-ASCII unescaped. Full
  compaction appends the records the format's ``compaction_records`` returns.

A new agent is one module with one ``AgentFormat`` subclass, listed in ``registry.FORMATS``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from ..conversation.formats import Message

Record = dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """One tool result a record holds: the call it answers and its size (SPEC §2 ``N``)."""

    call_id: Any
    chars: int  # code points of its content, as micro compaction counts them
    is_marker: bool = False  # already truncated
    part: int = 0  # which of the record's messages holds it


@dataclass(slots=True)
class RecordInfo:
    """What pass 1 keeps of one line: no body. The framework packs it into its table
    (``table.RecordTable``, about 50 bytes a line) and gives it back, made afresh, as
    ``infos[i]``: the ids (``id``, ``parent``, ``logical_parent``, ``turn``, ``copies``, the call
    ids of ``calls`` and ``results``) come back as their keys, numbers that compare equal when
    the ids do (``keys.key``).

    The format's ``index`` sets ``kind``, ``id``, ``parent``, ``logical_parent``, ``turn``,
    ``side``, ``copies`` and ``tag``; the framework sets the rest.
    """

    line: int  # 1-based line number
    offset: int  # byte offset of the line in the file
    length: int  # bytes of the line, its line ending included
    kind: str = ""  # the record's type as the format names it; "invalid" / "blank" for non-records
    id: str | None = None  # the record's own id (Claude Code ``uuid``), if the format has one
    parent: str | None = None  # the id of the record it follows (``parentUuid``)
    logical_parent: str | None = None  # across a compaction boundary (``logicalParentUuid``)
    turn: Any = None  # records of one view message share it (Claude Code: ``message.id``)
    side: bool = False  # outside the main conversation (a sidechain): never in the view
    copies: tuple[Any, ...] = ()  # call ids whose output this record repeats for the UI
    tag: Any = None  # a format's own detail about the record, for its ``view``
    # --- set by the framework from ``messages`` ---
    role: str | None = None  # role of its first message; None: it holds no message
    calls: tuple[tuple[Any, str, int], ...] = ()  # (call id, tool name, part) of its calls
    results: tuple[ToolResult, ...] = ()  # the tool results it holds
    quarters: int = 0  # its messages' estimate, in quarter tokens (SPEC §1)
    part_quarters: tuple[int, ...] = ()  # each message's, when it has more than one
    images: int = 0  # inline images its messages hold (measured with the estimate)
    part_images: tuple[int, ...] = ()  # each message's, when it has more than one
    problem: str | None = None  # why an invalid line is not a record


@dataclass(frozen=True, slots=True)
class ViewMessage:
    """One message of the conversation view: the records (indexes into the infos) it is made of.

    Their messages are joined into one, in order (the content lists concatenated), the way the
    agent joins them before it sends them. ``parts``, if given, picks one message of each record
    (an index into its ``messages``; None: all of them), for a record that holds many, such as a
    compaction's replacement history.
    """

    records: tuple[int, ...]
    parts: tuple[int | None, ...] | None = None

    def pieces(self) -> list[tuple[int, int | None]]:
        """``(record, part)`` pairs; part None: the whole record."""
        return list(zip(self.records, self.parts or (None,) * len(self.records), strict=True))


class ViewMessages(Sequence[ViewMessage]):
    """A view's messages, packed in arrays (a view may be millions of messages); each made
    afresh when read. What a format's ``view`` returns (a list of ``ViewMessage`` does too)."""

    def __init__(self) -> None:
        self._starts = array("i")  # where each message's pieces begin
        self._records = array("i")
        self._parts: array | None = None  # -1: the whole record (None: every piece is)

    def add(self, records: Sequence[int], parts: Sequence[int | None] | None = None) -> None:
        """A message of these records (and parts of them)."""
        for number, record in enumerate(records):
            self.add_piece(record, parts[number] if parts else None, join=number > 0)

    def add_piece(self, record: int, part: int | None = None, join: bool = False) -> None:
        """A record (or a part of it): the last message's next piece if ``join``, else a new
        message's first."""
        if not join or not self._starts:
            self._starts.append(len(self._records))
        if part is not None and self._parts is None:
            self._parts = array("i", [-1]) * len(self._records)
        self._records.append(record)
        if self._parts is not None:
            self._parts.append(-1 if part is None else part)

    def __len__(self) -> int:
        return len(self._starts)

    def __getitem__(self, number: int) -> ViewMessage:  # type: ignore[override]
        if number < 0:
            number += len(self)
        if not 0 <= number < len(self):
            raise IndexError(number)
        start = self._starts[number]
        end = self._starts[number + 1] if number + 1 < len(self._starts) else len(self._records)
        records = tuple(self._records[start:end])
        if self._parts is None:
            return ViewMessage(records)
        parts = tuple(None if part < 0 else part for part in self._parts[start:end])
        return ViewMessage(records, None if all(part is None for part in parts) else parts)

    def __iter__(self) -> Iterator[ViewMessage]:
        return (self[number] for number in range(len(self)))


def by_role(pieces: list[tuple[int, int, str]]) -> list[ViewMessage]:
    """View messages from (record, part, role) in order: consecutive parts of one role are one
    message, as the agent joins them into one turn."""
    groups: list[list[tuple[int, int, str]]] = []
    for piece in pieces:
        if groups and groups[-1][-1][2] == piece[2]:
            groups[-1].append(piece)
        else:
            groups.append([piece])
    return [
        ViewMessage(tuple(index for index, _, _ in group), tuple(part for _, part, _ in group))
        for group in groups
    ]


def with_results_joined(
    infos: Sequence[RecordInfo], order: Iterable[int], results: str
) -> list[ViewMessage]:
    """View messages of the records in ``order`` that have a role, one a record, but a run of
    records tagged ``results`` (a tool result each, answering one reply) is one message."""
    groups: list[list[int]] = []
    for index in order:
        info = infos[index]
        if info.role is None:
            continue
        if groups and info.tag == results and infos[groups[-1][-1]].tag == results:
            groups[-1].append(index)
        else:
            groups.append([index])
    return [ViewMessage(tuple(group)) for group in groups]


@dataclass(frozen=True)
class Compaction:
    """What a full compaction hands the format to write: it returns the records to append."""

    summary: str  # the provider's summary text
    messages: list[Message]  # the core's rebuilt conversation (systems, summary, ack?, pending)
    view: Sequence[ViewMessage]  # the view that was summarized
    # the pending turn (SPEC §3.1) as (record, part) in view order, records parsed afresh
    pending: Sequence[tuple[Record, int | None]]
    last: Record | None  # the last record of the view, parsed (for session-wide keys)
    infos: Sequence[RecordInfo]
    tokens_before: int  # the view's estimate before compaction
    now: datetime  # the time to stamp new records with (UTC, timezone-aware)
    path: Path | None = None  # the session file, when there is one
    new_id: Any = None  # a function () -> str giving fresh record ids (uuid4 by default)
    # a function (record index) -> the record parsed afresh: for what the format carries over
    # whole (Codex's encrypted compaction of what came before, which no summary can read)
    read: Any = None

    @property
    def stamp(self) -> str:
        """``now`` the way the agents write a record's time: ``2026-12-02T18:50:21.614Z``."""
        return self.now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.now.microsecond // 1000:03d}Z"

    def newest_id(self, field: str, accepts: Callable[[RecordInfo], bool] | None = None) -> Any:
        """The own id (``record[field]``) of the newest record that has one and that ``accepts``
        takes, read from its line: the index keeps ids only as keys. None: no record has one."""
        infos = self.infos
        for index in range(len(infos) - 1, -1, -1):
            info = infos[index]
            if info.id is not None and (accepts is None or accepts(info)):
                return self.read(index).get(field)
        return None


@dataclass(frozen=True)
class Answer:
    """Calls of the view that have no result: what ``AgentFormat.answer_calls`` answers."""

    record: Record  # the record that holds the calls, parsed (a format may answer in it)
    calls: tuple[tuple[Any, str], ...]  # (call id, tool name), in order
    text: str  # the error the result says
    stamp: str  # the time to stamp new records with, as the agents write it
    new_id: Any  # () -> str: a fresh record id


@dataclass(frozen=True)
class SessionFile:
    """A session found on this machine (``ctxpack sessions``)."""

    path: Path  # the input that names it: its file, or ``FILE#SESSION`` in a database
    session_id: str
    project: str  # where the agent ran (a folder), as well as it can be told
    held_in: Path | None = None  # the file holding it among others (a database)
    size: int | None = None  # its bytes, when they are not its file's
    mtime: float | None = None  # its last change, when it is not its file's


@dataclass
class Problem:
    """Something ``check`` found; ``line`` is 0 for the whole file. A note does not break or
    change what the agent resumes (``check`` exits 0 for notes)."""

    line: int
    kind: str  # torn-line, invalid-line, dangling-parent, orphan-result, unanswered-call, ...
    detail: str
    note: bool = False


# The changes to its own prompt that an agent's file shows (``RecordedCall.change``): they break
# the cached prefix, so the next request writes the cache again.
COMPACTED = "compaction"  # the agent's own compaction or context clearing
RESUMED = "resume"  # a resumed session: the context rebuilt
PROMPT_CHANGED = "prompt changed"  # the system prompt or the tools (another agent version, say)
THINKING_DROPPED = "thinking dropped"  # a new prompt: the API drops earlier thinking blocks
CHANGES = (COMPACTED, RESUMED, PROMPT_CHANGED, THINKING_DROPPED)


def first_change(seen: str | None, more: str | None) -> str | None:
    """Of two changes seen since a request, the one that explains its miss: the first in
    ``CHANGES`` (a compaction's prompt is new whatever came with it, a resume's included)."""
    if seen is None or more is None:
        return seen or more
    return min(seen, more, key=CHANGES.index)


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """One model request as the agent recorded its usage (``AgentFormat.recorded_usage``).

    Tokens as the provider counted them: ``input`` is the plain input (neither read from the
    cache nor written into it), so the four add up to the request's input tokens.
    """

    line: int  # the record the request came before: what the view holds up to it was sent
    time: float | None  # seconds since the epoch, when the file says
    input: int
    cache_read: int
    cache_write_5m: int = 0
    cache_write_1h: int = 0
    model: str | None = None
    side: bool = False  # a subagent's request (Claude Code's sidechain): not the view's
    output: int = 0  # the reply's tokens (thinking included), as recorded
    # What the agent itself changed in its prompt since its previous request, where the file
    # shows it: one of the CHANGES above, or None.
    change: str | None = None

    @property
    def tokens(self) -> int:
        return self.input + self.cache_read + self.cache_write_5m + self.cache_write_1h


class AgentFormat(ABC):
    """One agent's session format. Stateless: one instance serves every file."""

    name: ClassVar[str]  # the --format value: "claude-code"
    agent: ClassVar[str]  # the agent, for `sessions --agent`: "claude"
    home_variable: ClassVar[str]  # the environment variable naming its home: "CLAUDE_CONFIG_DIR"
    home_default: ClassVar[str]  # its home under the user's home folder: ".claude"

    # --- detection ---

    @abstractmethod
    def claims(self, record: Any) -> bool:
        """Whether this parsed line is plainly one of this format's records (detection reads
        the first records and never the file name)."""

    # --- pass 1 ---

    @abstractmethod
    def index(self, record: Record, info: RecordInfo) -> None:
        """Fill in ``info`` from ``record`` (an object): ``kind``, ids, ``turn``, ``side``,
        ``copies``. Must not keep the record."""

    @abstractmethod
    def messages(self, record: Record) -> list[Message]:
        """The record's part of the conversation, as messages in the core's shape (Anthropic
        blocks or OpenAI style). Mutable parts may alias the record; either way ``store`` puts a
        change made to them back. ``[]`` for a record that is not conversation."""

    # --- the view ---

    @abstractmethod
    def view(self, infos: Sequence[RecordInfo]) -> Sequence[ViewMessage]:
        """The conversation view (SPEC §8.2) from the infos alone, oldest message first.

        ``infos`` is the framework's ``table.RecordTable``: ``infos[i]`` is line i's info, and
        its accessors (``kind(i)``, ``parent_at(i)``, ``tag(i)``, …) read the same without
        making an object, for a format that must be fast on millions of lines."""

    def resumed(self, infos: Sequence[RecordInfo], view: Sequence[ViewMessage]) -> Sequence[int]:
        """The records the agent reads to rebuild the view (what ``check`` finds wrong in them
        breaks or changes the resume): the view's own and those the agent passes on the way,
        such as Claude Code's chain through records that are not conversation. By default the
        view's records."""
        return [index for message in view for index in message.records]

    # --- pass 2 ---

    @abstractmethod
    def store(self, record: Record, messages: list[Message], truncated: dict[Any, str]) -> None:
        """Put ``messages`` (from ``messages(record)``, changed by the core) back into the
        record. ``truncated`` maps the call ids whose results were just replaced by a marker to
        their tool's name, so the record's own UI copies of them shrink too (keys stay, long
        strings become the marker: ``ui_copies.shrink_strings``)."""

    def shrink_copies(self, record: Record, truncated: dict[Any, str]) -> bool:
        """Shrink the UI copies this record holds of the outputs whose call ids are keys of
        ``truncated`` (values: the tool name); return whether anything changed. Only called for
        records whose info lists ``copies``."""
        return False

    @abstractmethod
    def compaction_records(self, compaction: Compaction) -> list[Record]:
        """The records to append so the agent resumes from the summary, the way the agent's own
        compaction writes them, followed by what it needs of the pending turn."""

    def kept_in_place(self, compaction: Compaction) -> list[Record]:
        """Records from before the compaction that the agent goes on sending after it, where
        they are (Claude Code's preserved messages): they count in the result's tokens. None
        by default: what a format keeps of the pending turn, it appends."""
        return []

    # --- sessions on this machine ---

    @abstractmethod
    def session_files(self, home: Path) -> Iterator[SessionFile]:
        """Every session file under the agent's home folder."""

    def beside_a_session(self, path: Path) -> bool:
        """Whether ``path`` is a file the agent keeps beside a session, not a conversation (a
        folder's walk passes it over, as it is no input)."""
        return False

    def after_replace(self, path: Path) -> str | None:
        """Keep the agent's own index of the session right once ``path`` was replaced (in place
        or by ``restore``); a warning line if that failed (the new file stands either way)."""
        return None

    # --- rescue: the repairs a format can make in its own records (default: none) ---

    # Characters besides the line ending on which the agent's own reader splits a line: written
    # escaped (``\u2028``) in every line ctxpack writes, and escaped in place by ``rescue``.
    line_breaks: ClassVar[tuple[str, ...]] = ()

    # Whether the answers ``answer_calls`` writes continue the call's chain (the records that
    # followed the call follow the last answer), as in an agent that resumes one path of a tree.
    chains_answers: ClassVar[bool] = False

    def resume_parent(self, infos: Any, index: int) -> int:
        """The line the agent's resume goes on from when line ``index`` names a parent no
        record has (``infos``: the ``RecordTable``); -1: it does not guess (the chain ends)."""
        return -1

    def relink(self, record: Record, parent: str | None) -> bool:
        """Make ``record`` the child of the record whose id is ``parent`` (a dangling parent
        re-linked, a removed record bypassed); False if this format's records have no parents."""
        return False

    def drop_result(self, record: Record, call_id: Any) -> bool | None:
        """Remove the tool result answering ``call_id`` from ``record``, in place: True if the
        record keeps something else, False if nothing is left of it (the record goes), None if
        this format cannot."""
        return None

    # --- the bill: what the agent recorded of its model requests (default: nothing) ---

    # Whose prompt cache the agent's requests meet (``replay.cache_rules.RULES``), if known.
    cache_rules: ClassVar[str | None] = None

    def recorded_usage(self, records: Iterable[tuple[int, Record]]) -> list[RecordedCall]:
        """The usage of each model request the file records, oldest first, each request once.

        ``records`` is every record of the file with its line index, in file order (the
        framework's ``usage.recorded_calls`` reads them); a format that records no usage keeps
        this default and returns []. ``replay`` prices the calls as the receipt and simulates a
        request before each one; ``report`` and the statusline add them up."""
        return []

    def answer_calls(self, answer: Answer) -> list[Record] | None:
        """The records that answer ``answer.calls`` with an error result, as the agent writes a
        failed call's, to follow the call's turn (``rescue`` chains them with ``relink``). A
        format that keeps a call's result in the call's own record writes it there, in place,
        and returns []. None: this format cannot."""
        return None
