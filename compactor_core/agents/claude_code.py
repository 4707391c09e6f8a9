"""Claude Code sessions: ``<config>/projects/<project>/<session-id>.jsonl`` (SPEC §8.1).

One record a line. Conversation records (``user``, ``assistant``) carry a ``message`` in the
Anthropic shape and are chained by ``uuid`` / ``parentUuid``; every other record (``system``,
``progress``, ``file-history-snapshot``, ``summary``, any type not known today) is kept as it is.
Progress and system records take part in the chain, so the chain is followed through them.

The view (what ``claude --resume`` sends): the chain back from the last conversation record of
the main thread (sidechains are a subagent's), stopping at the latest ``compact_boundary``, whose
``parentUuid`` is null (``logicalParentUuid`` remembers what came before). Where a parent is
missing (or already on the chain), Claude Code goes on from the latest record of the same thread
written at most 5 s before (``GAP_WINDOW_MS``), as the view does; past a longer gap the chain
ends there. Assistant records sharing ``message.id`` are one reply, consecutive user records one
message (the results of parallel calls are one record each), as Claude Code joins them for the API.

A full compaction is appended the way Claude Code's own ``/compact`` writes it: a ``system``
record of subtype ``compact_boundary`` (parent null, ``logicalParentUuid`` the last record,
``compactMetadata``), then the summary as a ``user`` record with ``isCompactSummary``; then fresh
copies of the pending turn's records (new ``uuid``s, chained after the summary) so the request
the user is waiting on, and the calls its results answer, are still there on resume.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..session_files.base import (
    AgentFormat,
    Answer,
    Compaction,
    Record,
    RecordInfo,
    SessionFile,
    ViewMessage,
    ViewMessages,
)
from ..session_files.keys import NONE
from ..session_files.records import first_value, milliseconds
from ..session_files.table import MISSING, NO_PARENT, RecordTable
from ..session_files.ui_copies import shrink_strings
from .claude_code_usage import recorded_usage

CONVERSATION = ("user", "assistant")
BOUNDARY = "system:compact_boundary"
# The record types Claude Code chains by parentUuid (its loader's "message" types): the records a
# parent link can name, and those its resume walks through.
CHAIN_TYPES = frozenset({"user", "assistant", "system", "attachment", "progress"})
# How far back in time Claude Code 2.1.328 looks for the record a missing parent stood for.
GAP_WINDOW_MS = 5000
REPLY_SPAN = 4096  # lines after which a reply still open is forgotten (its records come together)
_NOT_A_STEP = "system:file_snapshot"  # never where a gap leads
_SESSION_NAME = re.compile(r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\.jsonl")
# Record types only Claude Code writes, for detection (conversation records have a uuid too).
_OWN_TYPES = frozenset(
    {
        "file-history-snapshot",
        "summary",
        "queue-operation",
        "last-prompt",
        "permission-mode",
        "ai-title",
        "custom-title",
    }
)
# Keys every record of a session repeats; a new record takes them from the last one.
_SESSION_KEYS = ("userType", "cwd", "sessionId", "version", "gitBranch", "slug")
SUMMARY_INTRO = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The summary below covers the earlier portion of the conversation.\n\n"
)
TRANSCRIPT_NOTE = (
    "\n\nIf you need specific details from before compaction (like exact code snippets, error "
    "messages, or content you generated), read the full transcript at: "
)


class ClaudeCode(AgentFormat):
    name = "claude-code"
    agent = "claude"
    home_variable = "CLAUDE_CONFIG_DIR"
    home_default = ".claude"
    cache_rules, recorded_usage = "anthropic", staticmethod(recorded_usage)  # claude_code_usage

    def claims(self, record: Any) -> bool:
        if not isinstance(record, dict) or not isinstance(record.get("type"), str):
            return False
        if "payload" in record or "role" in record:  # Codex, or a plain message
            return False
        if "systemPayload" in record or record["type"] == "tool_result":  # Qwen Code's
            return False
        message = record.get("message")
        if isinstance(message, dict) and "parts" in message:  # Qwen Code's Gemini parts
            return False
        if record["type"] in _OWN_TYPES:
            return True
        return "uuid" in record and "sessionId" in record

    def index(self, record: Record, info: RecordInfo) -> None:
        kind = record.get("type")
        kind = kind if isinstance(kind, str) else "untyped"
        subtype = record.get("subtype")
        info.kind = f"{kind}:{subtype}" if kind == "system" and isinstance(subtype, str) else kind
        info.id = _text(record.get("uuid"))
        info.parent = _text(record.get("parentUuid")) or None  # "" ends the chain, as null
        info.logical_parent = _text(record.get("logicalParentUuid"))
        info.side = record.get("isSidechain") is True
        message = record.get("message")
        if kind == "assistant" and isinstance(message, dict):
            info.turn = _text(message.get("id"))
        if kind in CHAIN_TYPES:
            time = milliseconds(record.get("timestamp"))
            info.tag = Boundary(time, _preserved_segment(record)) if info.kind == BOUNDARY else time

    def messages(self, record: Record) -> list[dict[str, Any]]:
        message = record.get("message")
        if record.get("type") not in CONVERSATION or not isinstance(message, dict):
            return []
        if not isinstance(message.get("role"), str):
            return []
        content = message.get("content")
        if content is not None and not isinstance(content, str | list):
            return []
        return [message]  # the record's own dict: what the core changes is the record's

    def view(self, infos: RecordTable) -> ViewMessages:  # type: ignore[override]
        view = ViewMessages()
        group: list[int] = []
        for index in _whole_replies(infos, _chain(infos)):
            if infos.role(index) is None or infos.kind(index) not in CONVERSATION:
                continue
            if group and not _same_message(infos, group[-1], index):
                view.add(group)
                group = []
            group.append(index)
        if group:
            view.add(group)
        return view

    def resumed(self, infos: RecordTable, view: Sequence[ViewMessage]) -> Sequence[int]:  # type: ignore[override]
        return _whole_replies(infos, _chain(infos))

    def store(self, record: Record, messages: list[dict[str, Any]], truncated: dict[Any, str]):
        # ``messages`` is the record's own message, already changed; its UI copy follows it
        if truncated and "toolUseResult" in record:
            tool = next(iter(truncated.values()))
            record["toolUseResult"], _ = shrink_strings(record["toolUseResult"], tool)

    def compaction_records(self, compaction: Compaction) -> list[Record]:
        last = compaction.last or {}
        shared = {key: last[key] for key in _SESSION_KEYS if key in last}
        stamp = compaction.stamp
        new_id: Callable[[], str] = compaction.new_id or _uuid4
        boundary: Record = {
            "parentUuid": None,
            "logicalParentUuid": last.get("uuid"),
            "isSidechain": False,
            **shared,
            "type": "system",
            "subtype": "compact_boundary",
            "content": "Conversation compacted",
            "isMeta": False,
            "timestamp": stamp,
            "uuid": new_id(),
            "level": "info",
            "compactMetadata": {"trigger": "manual", "preTokens": compaction.tokens_before},
        }
        text = SUMMARY_INTRO + compaction.summary
        if compaction.path is not None:
            text += TRANSCRIPT_NOTE + str(compaction.path)
        summary: Record = {
            "parentUuid": boundary["uuid"],
            "isSidechain": False,
            **shared,
            "type": "user",
            "message": {"role": "user", "content": text},
            "isVisibleInTranscriptOnly": True,
            "isCompactSummary": True,
            "uuid": new_id(),
            "timestamp": stamp,
        }
        pending = [record for record, _ in compaction.pending]  # one message each
        return [boundary, summary, *_chained_copies(pending, summary, stamp, new_id)]

    def session_files(self, home: Path) -> Iterator[SessionFile]:
        """``projects/<project>/<session id>.jsonl``: the only files Claude Code resumes (a
        copy by another name, or a snapshot folder among them, is no session of its own)."""
        projects = home / "projects"
        if not projects.is_dir():
            return
        for project in sorted(projects.iterdir()):
            if not project.is_dir() or project.name.startswith("."):
                continue
            for path in sorted(project.glob("*.jsonl")):
                if _SESSION_NAME.fullmatch(path.name) and path.is_file():
                    yield SessionFile(path, path.stem, first_value(path, "cwd") or project.name)

    # --- rescue ---

    def resume_parent(self, infos: RecordTable, index: int) -> int:  # type: ignore[override]
        return Gaps(infos).across(index, bytearray(len(infos)))

    def relink(self, record: Record, parent: str | None) -> bool:
        record["parentUuid"] = parent
        return True

    def drop_result(self, record: Record, call_id: Any) -> bool | None:
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            return None
        kept = [b for b in content if not (_is_result(b) and b.get("tool_use_id") == call_id)]
        message["content"] = kept  # type: ignore[index]
        if not any(_is_result(block) for block in kept):
            record.pop("toolUseResult", None)  # the UI copy of the result that went
        return bool(kept)

    def answer_calls(self, answer: Answer) -> list[Record]:
        """A user record for each call, as Claude Code writes a failed tool's result: the
        child of the assistant record that made the call (as parallel calls' results are)."""
        call = answer.record
        shared = {key: call[key] for key in _SESSION_KEYS if key in call}
        shared |= {"type": "user", "timestamp": answer.stamp, "toolUseResult": answer.text}
        own = {"parentUuid": call.get("uuid"), "isSidechain": False}
        answers = []
        for call_id, _ in answer.calls:
            result = {"type": "tool_result", "content": answer.text, "is_error": True}
            message = {"role": "user", "content": [{**result, "tool_use_id": call_id}]}
            answers.append({**own, **shared, "message": message, "uuid": answer.new_id()})
        return answers


@dataclass(frozen=True, slots=True)
class Boundary:
    """A compaction boundary's tag: its time, and the preserved segment of a newer Claude Code."""

    time: int | None
    segment: tuple[str, str, str] | None


def _is_result(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "tool_result"


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _time(infos: RecordTable, index: int) -> int | None:
    tag = infos.tag(index)
    return tag.time if isinstance(tag, Boundary) else tag


def _chained(infos: RecordTable, index: int) -> bool:
    """Whether a parent link can name the record (the types Claude Code chains, with a uuid)."""
    return infos.id(index) != NONE and infos.kind(index).partition(":")[0] in CHAIN_TYPES


def _chain(infos: RecordTable) -> array:
    """Indexes of the chain back from the last main-thread conversation record, oldest first.

    It stops at the latest compaction boundary. A boundary of a newer Claude Code may name a
    preserved segment (``compactMetadata.preservedSegment``: records from before it, kept
    whole); resume sends it right after its anchor, the summary, and so does the view.
    """
    leaf = next(
        (
            index
            for index in range(len(infos) - 1, -1, -1)
            if infos.kind(index) in CONVERSATION and not infos.side(index)
        ),
        None,
    )
    chain, boundary = _back(infos, leaf, stop=None, gaps=Gaps(infos))
    segment = infos.tag(boundary).segment if boundary is not None else None
    if not segment:
        return chain
    head, anchor, tail = (infos.find(item) for item in segment)
    preserved, _ = _back(infos, tail, stop=head)
    after = next((n + 1 for n, index in enumerate(chain) if index == anchor), 0)
    return chain[:after] + preserved + chain[after:]


def _back(
    infos: RecordTable, start: int | None, stop: int | None, gaps: Gaps | None = None
) -> tuple[array, int | None]:
    """The records from ``start`` back through the parents to ``stop`` (included) or to a
    compaction boundary (not included, but returned), oldest first; across a missing parent
    (or one already on the chain) by ``gaps``, if given, else the chain ends there."""
    chain = array("i")
    seen = bytearray(len(infos))
    index = start
    boundary = None
    while index is not None and not seen[index]:
        seen[index] = 1
        if infos.kind(index) == BOUNDARY:
            boundary = index
            break
        chain.append(index)
        parent = infos.parent_at(index)
        if index == stop or parent == NO_PARENT:
            break
        if parent == MISSING or seen[parent] or not _chained(infos, parent):
            parent = gaps.across(index, seen) if gaps is not None else -1
        index = parent if parent >= 0 else None
    chain.reverse()
    return chain, boundary


class Gaps:
    """Where Claude Code's resume goes on from a record whose parent is missing, or already on
    the chain: to the latest record of the same thread (main or side) written at most
    ``GAP_WINDOW_MS`` before it and not on the chain yet; of records written at the same moment,
    the first in the file. -1 past a longer gap: the chain ends there. (Claude Code 2.1.328's
    chain walk, measured with the real agent on sessions with records taken out.)

    Records' times mostly grow line by line: the ones that can be the answer lie between the
    first line whose running maximum reaches the window and the last whose running minimum
    (from the end) is before the record's time; only those are looked at.
    """

    def __init__(self, infos: RecordTable) -> None:
        self.infos = infos
        self._bounds: tuple[array, array] | None = None

    def across(self, index: int, seen: bytearray) -> int:
        infos = self.infos
        time = _time(infos, index)
        if time is None:
            return -1
        highest, lowest = self._bounds or self._running_bounds()
        side = infos.side(index)
        best, best_time = -1, None
        for candidate in range(bisect_left(highest, time - GAP_WINDOW_MS), len(infos)):
            if lowest[candidate] > time:  # none from here on is early enough
                break
            when = _time(infos, candidate)
            if when is None or when > time or seen[candidate] or not self._step(candidate, side):
                continue
            if best_time is None or when > best_time:  # the first of equal times stays
                best, best_time = candidate, when
        return best if best_time is not None and time - best_time <= GAP_WINDOW_MS else -1

    def _step(self, index: int, side: bool) -> bool:
        infos = self.infos
        return (
            _chained(infos, index)
            and infos.side(index) == side
            and infos.kind(index) != _NOT_A_STEP
        )

    def _running_bounds(self) -> tuple[array, array]:
        """Each line's running maximum of times from the start, and minimum from the end."""
        infos, never = self.infos, 2**62
        highest, lowest = array("q"), array("q", [never]) * len(infos)
        top = -never
        for index in range(len(infos)):
            when = _time(infos, index)
            top = max(top, when) if when is not None else top
            highest.append(top)
        bottom = never
        for index in range(len(infos) - 1, -1, -1):
            when = _time(infos, index)
            bottom = min(bottom, when) if when is not None else bottom
            lowest[index] = bottom
        self._bounds = (highest, lowest)
        return self._bounds


def _whole_replies(infos: RecordTable, chain: array) -> array:
    """The chain with every record of each reply on it and every result of those records.

    Claude Code writes each block of one API reply as its own assistant record (sharing
    ``message.id``) and the result of each parallel call as a child of the record that made the
    call, so the chain runs through only some of them. Resume puts the whole reply and all its
    results back; so does the view: the reply's records, then their results, in file order.
    """
    start = min(chain, default=len(infos))
    # only from where the chain starts: a copy of a reply made by a compaction (ctxpack's
    # pending turn) shares its message.id with the original before the boundary
    groups = _Groups(infos, start)
    placed = bytearray(len(infos))
    view = array("i")
    for index in chain:
        if placed[index]:
            continue
        if infos.kind(index) != "assistant" or infos.turn(index) == NONE:
            view.append(index)
            placed[index] = 1
            continue
        reply = [record for record in groups.reply(infos, index) if not placed[record]] or [index]
        answers = sorted(
            result for record in reply for result in groups.results(record) if not placed[result]
        )
        for record in (*reply, *answers):
            view.append(record)
            placed[record] = 1
    return view


class _Groups:
    """The main thread's records from ``start`` on grouped as resume groups them: the records of
    one reply (one turn of the table: sharing ``message.id``, written together), and the results
    of each call's record. Linked lines in arrays, 12 bytes a line, however many groups."""

    def __init__(self, infos: RecordTable, start: int) -> None:
        span = len(infos) - start
        self._start = start
        self._next = array("i", [-1]) * span  # the reply's next record
        self._first_result = array("i", [-1]) * span  # a record's first result's line
        self._next_result = array("i", [-1]) * span
        last_of_reply: dict[int, int] = {}  # the line that opened a reply -> its latest record
        for index in range(start, len(infos)):
            if infos.side(index):
                continue
            kind, at = infos.kind(index), index - start
            if kind == "assistant" and infos.turn(index) != NONE:
                last = last_of_reply.get(infos.turn(index))
                if last is not None:
                    self._next[last - start] = index
                last_of_reply[infos.turn(index)] = index
            elif kind == "user" and infos.has_results(index) and infos.parent_at(index) >= start:
                parent = infos.parent_at(index) - start
                self._next_result[at] = self._first_result[parent]
                self._first_result[parent] = index
            if at % REPLY_SPAN == REPLY_SPAN - 1:  # forget the replies that ended long ago
                last_of_reply = {t: i for t, i in last_of_reply.items() if i > index - REPLY_SPAN}

    def reply(self, infos: RecordTable, index: int) -> list[int]:
        """The records of the reply ``index`` is one of, from the first one of it the chain
        reaches (the line that opened its turn, or the first after the start)."""
        records, record = [], max(infos.turn(index) - 1, self._start)
        while record >= 0 and (infos.turn(record) != infos.turn(index) or infos.side(record)):
            record += 1  # the turn opened before the start: its first record after it
            if record >= index:
                record = index
                break
        while record >= 0:
            records.append(record)
            record = self._next[record - self._start]
        return records

    def results(self, index: int) -> list[int]:
        found, result = [], self._first_result[index - self._start]
        while result >= 0:
            found.append(result)
            result = self._next_result[result - self._start]
        return found


def _preserved_segment(boundary: Record) -> tuple[str, str, str] | None:
    """(head, anchor, tail) of the records a newer Claude Code keeps whole across a compaction."""
    metadata = boundary.get("compactMetadata")
    segment = metadata.get("preservedSegment") if isinstance(metadata, dict) else None
    if not isinstance(segment, dict):
        return None
    head, anchor, tail = (segment.get(key) for key in ("headUuid", "anchorUuid", "tailUuid"))
    if isinstance(head, str) and isinstance(anchor, str) and isinstance(tail, str):
        return head, anchor, tail
    return None


def _same_message(infos: RecordTable, previous: int, index: int) -> bool:
    role = infos.role(index)
    if infos.role(previous) != role:
        return False
    if role == "user":
        return True
    return infos.turn(index) != NONE and infos.turn(index) == infos.turn(previous)


def _chained_copies(
    records: Sequence[Record], after: Record, stamp: str, new_id: Callable[[], str]
) -> list[Record]:
    """Copies of ``records`` with new ids, each the child of the one before, the first of
    ``after``; a result's link to the assistant record that asked for it follows the copy."""
    copies: list[Record] = []
    renamed: dict[Any, str] = {}
    parent = after["uuid"]
    for record in records:
        copy = dict(record)
        copy["parentUuid"] = parent
        copy["uuid"] = renamed[record.get("uuid")] = new_id()
        copy["timestamp"] = stamp
        if copy.get("sourceToolAssistantUUID") in renamed:
            copy["sourceToolAssistantUUID"] = renamed[copy["sourceToolAssistantUUID"]]
        copies.append(copy)
        parent = copy["uuid"]
    return copies


def _uuid4() -> str:
    import uuid

    return str(uuid.uuid4())
