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

from .base import AgentFormat, Compaction, Record, RecordInfo, SessionFile, ViewMessage
from .ui_copies import shrink_strings

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
        chain = _with_parallel_results(infos, _chain(infos))
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


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _chain(infos: Sequence[RecordInfo]) -> list[int]:
    """Indexes of the chain back from the last main-thread conversation record, oldest first."""
    by_id = {info.id: index for index, info in enumerate(infos) if info.id is not None}
    leaf = next(
        (
            index
            for index in range(len(infos) - 1, -1, -1)
            if infos[index].kind in CONVERSATION and not infos[index].side
        ),
        None,
    )
    chain: list[int] = []
    seen: set[int] = set()
    index = leaf
    while index is not None and index not in seen:
        seen.add(index)
        info = infos[index]
        if info.kind == BOUNDARY:
            break  # the latest compaction: what came before is not sent again
        chain.append(index)
        index = by_id.get(info.parent) if info.parent is not None else None
    chain.reverse()
    return chain


def _with_parallel_results(infos: Sequence[RecordInfo], chain: list[int]) -> list[int]:
    """The chain with the results of parallel tool calls that are not on it.

    The assistant records of one reply are chained one after the other, but the result of each
    call is the child of the record that made the call: only the last result is on the chain.
    Claude Code puts the others back on resume; so does the view, after the reply, in file order.
    """
    on_chain = set(chain)
    ids = {infos[index].id: index for index in chain if infos[index].role == "assistant"}
    off_chain: dict[int, list[int]] = {}  # assistant record -> its results that are off the chain
    for index, info in enumerate(infos):
        if index in on_chain or info.side or info.kind != "user" or not info.results:
            continue
        parent = ids.get(info.parent) if info.parent is not None else None
        if parent is not None:
            off_chain.setdefault(parent, []).append(index)
    if not off_chain:
        return chain
    result: list[int] = []
    waiting: list[int] = []  # found under the reply's records, placed when the reply ends
    for position, index in enumerate(chain):
        result.append(index)
        waiting.extend(off_chain.get(index, ()))
        following = chain[position + 1] if position + 1 < len(chain) else None
        if waiting and (following is None or not _same_message(infos[index], infos[following])):
            result.extend(sorted(waiting))
            waiting = []
    return result


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
