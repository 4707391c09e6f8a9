"""Claude Code sessions: ``<config>/projects/<project>/<session-id>.jsonl`` (SPEC §8.1).

One record a line. Conversation records (``user``, ``assistant``) carry a ``message`` in the
Anthropic shape and are chained by ``uuid`` / ``parentUuid``; every other record (``system``,
``progress``, ``file-history-snapshot``, ``summary``, any type not known today) is kept as it is.
Progress and system records take part in the chain, so the chain is followed through them.

The view (what ``claude --resume`` sends): the chain back from the last conversation record of
the main thread (sidechains are a subagent's), stopping at the latest ``compact_boundary``, whose
``parentUuid`` is null (``logicalParentUuid`` remembers what came before). Assistant records
sharing ``message.id`` are one reply, and consecutive user records are one message (tool results
of parallel calls are written one record each), the way Claude Code joins them for the API.

A full compaction is appended the way Claude Code's own ``/compact`` writes it: a ``system``
record of subtype ``compact_boundary`` (parent null, ``logicalParentUuid`` the last record,
``compactMetadata``), then the summary as a ``user`` record with ``isCompactSummary``; then fresh
copies of the pending turn's records (new ``uuid``s, chained after the summary) so the request
the user is waiting on, and the calls its results answer, are still there on resume.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from ..session_files.base import (
    AgentFormat,
    Answer,
    Compaction,
    Record,
    RecordInfo,
    SessionFile,
    ViewMessage,
)
from ..session_files.ui_copies import shrink_strings

CONVERSATION = ("user", "assistant")
BOUNDARY = "system:compact_boundary"
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
        info.parent = _text(record.get("parentUuid"))
        info.logical_parent = _text(record.get("logicalParentUuid"))
        info.side = record.get("isSidechain") is True
        message = record.get("message")
        if kind == "assistant" and isinstance(message, dict):
            info.turn = _text(message.get("id"))
        if info.kind == BOUNDARY:
            info.tag = _preserved_segment(record)

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

    def view(self, infos: Sequence[RecordInfo]) -> list[ViewMessage]:
        chain = _whole_replies(infos, _chain(infos))
        groups: list[list[int]] = []
        for index in chain:
            info = infos[index]
            if info.role is None or info.kind not in CONVERSATION:
                continue
            if groups and _same_message(infos[groups[-1][-1]], info):
                groups[-1].append(index)
            else:
                groups.append([index])
        return [ViewMessage(tuple(group)) for group in groups]

    def store(self, record: Record, messages: list[dict[str, Any]], truncated: dict[Any, str]):
        # ``messages`` is the record's own message, already changed; its UI copy follows it
        if truncated and "toolUseResult" in record:
            tool = next(iter(truncated.values()))
            record["toolUseResult"], _ = shrink_strings(record["toolUseResult"], tool)

    def compaction_records(self, compaction: Compaction) -> list[Record]:
        last = compaction.last or {}
        shared = {key: last[key] for key in _SESSION_KEYS if key in last}
        stamp = _timestamp(compaction)
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
        projects = home / "projects"
        if not projects.is_dir():
            return
        for project in sorted(projects.iterdir()):
            if not project.is_dir():
                continue
            for path in sorted(project.glob("*.jsonl")):
                yield SessionFile(path, path.stem, _cwd_of(path) or project.name)

    # --- rescue ---

    def relink(self, record: Record, parent: str | None) -> bool:
        record["parentUuid"] = parent
        return True

    def drop_result(self, record: Record, call_id: Any) -> bool | None:
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            return None
        kept = [block for block in content if not _answers(block, call_id)]
        message["content"] = kept  # type: ignore[index]
        if not any(
            isinstance(block, dict) and block.get("type") == "tool_result" for block in kept
        ):
            record.pop("toolUseResult", None)  # the UI copy of the result that went
        return bool(kept)

    def answer_calls(self, answer: Answer) -> list[Record]:
        """A user record for each call, as Claude Code writes a failed tool's result: the
        child of the assistant record that made the call (as parallel calls' results are)."""
        call = answer.record
        shared = {key: call[key] for key in _SESSION_KEYS if key in call}
        return [
            {
                "parentUuid": call.get("uuid"),
                "isSidechain": False,
                **shared,
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "content": answer.text,
                            "is_error": True,
                            "tool_use_id": call_id,
                        }
                    ],
                },
                "uuid": answer.new_id(),
                "timestamp": answer.stamp,
                "toolUseResult": answer.text,
                "sourceToolAssistantUUID": call.get("uuid"),
            }
            for call_id, _ in answer.calls
        ]


def _answers(block: Any, call_id: Any) -> bool:
    return (
        isinstance(block, dict)
        and block.get("type") == "tool_result"
        and block.get("tool_use_id") == call_id
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _chain(infos: Sequence[RecordInfo]) -> list[int]:
    """Indexes of the chain back from the last main-thread conversation record, oldest first.

    It stops at the latest compaction boundary. A boundary of a newer Claude Code may name a
    preserved segment (``compactMetadata.preservedSegment``: records from before it, kept
    whole); resume sends it right after its anchor, the summary, and so does the view.
    """
    by_id = {info.id: index for index, info in enumerate(infos) if info.id is not None}
    leaf = next(
        (
            index
            for index in range(len(infos) - 1, -1, -1)
            if infos[index].kind in CONVERSATION and not infos[index].side
        ),
        None,
    )
    chain, boundary = _back(infos, by_id, leaf, stop=None)
    segment = infos[boundary].tag if boundary is not None else None
    if not segment:
        return chain
    head, anchor, tail = segment
    preserved, _ = _back(infos, by_id, by_id.get(tail), stop=by_id.get(head))
    after = next((n + 1 for n, index in enumerate(chain) if infos[index].id == anchor), 0)
    return [*chain[:after], *preserved, *chain[after:]]


def _back(
    infos: Sequence[RecordInfo], by_id: dict[str, int], start: int | None, stop: int | None
) -> tuple[list[int], int | None]:
    """The records from ``start`` back through the parents to ``stop`` (included) or to a
    compaction boundary (not included, but returned), oldest first."""
    chain: list[int] = []
    seen: set[int] = set()
    index = start
    boundary = None
    while index is not None and index not in seen:
        seen.add(index)
        info = infos[index]
        if info.kind == BOUNDARY:
            boundary = index
            break
        chain.append(index)
        if index == stop:
            break
        index = by_id.get(info.parent) if info.parent is not None else None
    chain.reverse()
    return chain, boundary


def _whole_replies(infos: Sequence[RecordInfo], chain: list[int]) -> list[int]:
    """The chain with every record of each reply on it and every result of those records.

    Claude Code writes each block of one API reply as its own assistant record (sharing
    ``message.id``) and the result of each parallel call as a child of the record that made the
    call, so the chain runs through only some of them. Resume puts the whole reply and all its
    results back; so does the view: the reply's records, then their results, in file order.
    """
    by_turn: dict[Any, list[int]] = {}
    results_of: dict[str, list[int]] = {}
    # only from where the chain starts: a copy of a reply made by a compaction (ctxpack's
    # pending turn) shares its message.id with the original before the boundary
    for index in range(min(chain, default=len(infos)), len(infos)):
        info = infos[index]
        if info.side:
            continue
        if info.kind == "assistant" and info.turn is not None:
            by_turn.setdefault(info.turn, []).append(index)
        elif info.kind == "user" and info.results and info.parent is not None:
            results_of.setdefault(info.parent, []).append(index)
    placed: set[int] = set()
    view: list[int] = []
    for index in chain:
        if index in placed:
            continue
        info = infos[index]
        if info.kind != "assistant":
            view.append(index)
            placed.add(index)
            continue
        reply = [record for record in by_turn.get(info.turn, [index]) if record not in placed]
        results = sorted(
            result
            for record in reply
            for result in results_of.get(infos[record].id or "", ())
            if result not in placed
        )
        view.extend(reply + results)
        placed.update(reply + results)
    return view


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


def _same_message(previous: RecordInfo, info: RecordInfo) -> bool:
    if previous.role != info.role:
        return False
    if info.role == "user":
        return True
    return info.turn is not None and info.turn == previous.turn


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


def _timestamp(compaction: Compaction) -> str:
    now = compaction.now
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def _uuid4() -> str:
    import uuid

    return str(uuid.uuid4())


def _cwd_of(path: Path, lines: int = 20) -> str | None:
    """The folder the agent ran in, from the first records that name it."""
    try:
        with open(path, "rb") as handle:
            for _, line in zip(range(lines), handle, strict=False):
                try:
                    record = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(record, dict) and isinstance(record.get("cwd"), str):
                    return record["cwd"]
    except OSError:
        return None
    return None
