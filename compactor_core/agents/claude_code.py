"""Claude Code sessions: ``<config>/projects/<project>/<session-id>.jsonl`` (SPEC §8.1).

One record a line. Conversation records (``user``, ``assistant``) carry a ``message`` in the
Anthropic shape and are chained by ``uuid`` / ``parentUuid``; every other record (``system``,
``progress``, ``file-history-snapshot``, ``summary``, any type not known today) is kept as it is.
Progress and system records take part in the chain, so the chain is followed through them.

The view (what ``claude --resume`` sends): the chain back from the last conversation record of
the main thread, as Claude Code's resume walks it (claude_code_chain.py). Assistant records
sharing ``message.id`` are one reply, consecutive user records one message (the results of
parallel calls are one record each), as Claude Code joins them for the API.

A full compaction is appended the way Claude Code 2.1.328's own ``/compact`` writes it: a
``system`` record of subtype ``compact_boundary`` (parent null, ``logicalParentUuid`` the last
record, ``compactMetadata`` with ``preservedSegment`` and ``preservedMessages``), then the summary
as a ``user`` record with ``isCompactSummary``, framed as Claude Code frames its own. The most
recent messages stay where they are, kept whole by the boundary: the pending turn (the request
the user is waiting on, and the calls its results answer), else the last reply. The resume sends
``[summary, those messages, the new turn]``, as after ``/compact``.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator, Sequence
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
from ..session_files.table import RecordTable
from ..session_files.ui_copies import shrink_strings
from .claude_code_chain import (
    BOUNDARY,
    CHAIN_TYPES,
    CONVERSATION,
    Gaps,
    Relinks,
    boundary_tag,
    chain,
    whole_replies,
)
from .claude_code_compact import SESSION_KEYS, compaction_records, kept_in_place
from .claude_code_usage import recorded_usage

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
            info.tag = boundary_tag(record, time) if info.kind == BOUNDARY else time

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
        for index in whole_replies(infos, chain(infos)):
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
        return whole_replies(infos, chain(infos))

    def store(self, record: Record, messages: list[dict[str, Any]], truncated: dict[Any, str]):
        # ``messages`` is the record's own message, already changed; its UI copy follows it
        if truncated and "toolUseResult" in record:
            tool = next(iter(truncated.values()))
            record["toolUseResult"], _ = shrink_strings(record["toolUseResult"], tool)

    def compaction_records(self, compaction: Compaction) -> list[Record]:
        return compaction_records(compaction, compaction.new_id or _uuid4)

    def kept_in_place(self, compaction: Compaction) -> list[Record]:
        return kept_in_place(compaction)

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
        return Gaps(infos, Relinks.of(infos)).across(index, bytearray(len(infos)))

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
        shared = {key: call[key] for key in SESSION_KEYS if key in call}
        shared |= {"type": "user", "timestamp": answer.stamp, "toolUseResult": answer.text}
        own = {"parentUuid": call.get("uuid"), "isSidechain": False}
        answers = []
        for call_id, _ in answer.calls:
            result = {"type": "tool_result", "content": answer.text, "is_error": True}
            message = {"role": "user", "content": [{**result, "tool_use_id": call_id}]}
            answers.append({**own, **shared, "message": message, "uuid": answer.new_id()})
        return answers


def _is_result(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "tool_result"


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _same_message(infos: RecordTable, previous: int, index: int) -> bool:
    role = infos.role(index)
    if infos.role(previous) != role:
        return False
    if role == "user":
        return True
    return infos.turn(index) != NONE and infos.turn(index) == infos.turn(previous)


def _uuid4() -> str:
    return str(uuid.uuid4())
