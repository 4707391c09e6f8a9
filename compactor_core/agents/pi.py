"""pi sessions: ``~/.pi/agent/sessions/--<cwd>--/<time>_<id>.jsonl`` (``$PI_CODING_AGENT_DIR``
stands for ``~/.pi/agent``).

A JSONL tree: a ``session`` header (``id``, ``cwd``), then entries linked by ``id`` /
``parentId``: ``message`` (``message.role`` ``user``, ``assistant`` (text, ``thinking``,
``toolCall`` blocks), ``toolResult`` (``toolCallId``, ``content`` blocks), ``bashExecution``,
``custom``), ``compaction`` (``summary``, ``firstKeptEntryId``, ``tokensBefore``),
``branch_summary``, ``custom_message``, ``model_change``, ``thinking_level_change``, ``label``
and any type not known today, kept as it is.

What ``pi --session`` sends (``buildSessionContext``): the path from the last entry (the leaf)
back to the root; with a ``compaction`` on it, the latest one's summary first, then the entries
from its ``firstKeptEntryId`` up to it, then those after it. Tool results go to the model as one
``tool`` message each, their text blocks joined by newlines; a run of them answers one reply.

A full compaction is appended the way pi's own ``/compact`` writes it: a ``compaction`` entry,
child of the leaf, whose ``firstKeptEntryId`` is the first entry of the pending turn (which
therefore stays where it is and is sent after the summary).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..conversation.formats import Message
from ..session_files.base import (
    COMPACTED,
    AgentFormat,
    Answer,
    Compaction,
    Record,
    RecordedCall,
    RecordInfo,
    SessionFile,
    ViewMessage,
    with_results_joined,
)
from ..session_files.keys import key
from ..session_files.records import first_record, milliseconds
from ..session_files.ui_copies import shrink_strings
from ..session_files.usage import calls_of, token_count

HEADER = "session"
COMPACTION = "compaction"
SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:"
    "\n\n<summary>\n"
)
SUMMARY_SUFFIX = "\n</summary>"
BRANCH_PREFIX = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
)
BRANCH_SUFFIX = "</summary>"
_ENTRY_TYPES = frozenset(
    {
        "message",
        COMPACTION,
        "branch_summary",
        "custom_message",
        "custom",
        "model_change",
        "thinking_level_change",
        "label",
        "session_info",
    }
)
RESULTS = "results"


class Pi(AgentFormat):
    name = "pi"
    agent = "pi"
    home_variable = "PI_CODING_AGENT_DIR"
    home_default = ".pi/agent"

    def claims(self, record: Any) -> bool:
        if not isinstance(record, dict) or not isinstance(record.get("id"), str):
            return False
        kind = record.get("type")
        if kind == HEADER:
            return "version" in record and "cwd" in record
        return kind in _ENTRY_TYPES and "parentId" in record and "uuid" not in record

    def index(self, record: Record, info: RecordInfo) -> None:
        kind = record.get("type")
        info.kind = kind if isinstance(kind, str) else "untyped"
        if kind == HEADER:
            return
        info.id = _text(record.get("id"))
        info.parent = _text(record.get("parentId"))
        if kind == COMPACTION:
            info.tag = _text(record.get("firstKeptEntryId"))
        message = record.get("message")
        if kind == "message" and isinstance(message, dict) and message.get("role") == "toolResult":
            info.tag = RESULTS

    def messages(self, record: Record) -> list[Message]:
        kind = record.get("type")
        if kind == "message" and isinstance(record.get("message"), dict):
            message = _message(record["message"])
            return [message] if message is not None else []
        if kind == COMPACTION and isinstance(record.get("summary"), str):
            return [_user(SUMMARY_PREFIX + record["summary"] + SUMMARY_SUFFIX)]
        if kind == "branch_summary" and record.get("summary"):
            return [_user(BRANCH_PREFIX + str(record["summary"]) + BRANCH_SUFFIX)]
        if kind == "custom_message":
            return [_user(record.get("content"))]
        return []

    def view(self, infos: Sequence[RecordInfo]) -> list[ViewMessage]:
        path = _path(infos)
        compaction = next(
            (n for n in range(len(path) - 1, -1, -1) if _is_compaction(infos, path[n])), None
        )
        if compaction is None:
            order = path
        else:
            first_kept = infos[path[compaction]].tag
            start = next(
                (n for n in range(compaction) if infos[path[n]].id == key(first_kept)),
                compaction,
            )
            order = [path[compaction], *path[start:compaction], *path[compaction + 1 :]]
        return with_results_joined(infos, order, RESULTS)

    def store(self, record: Record, messages: list[Message], truncated: dict[Any, str]) -> None:
        message = record.get("message")
        if not isinstance(message, dict) or message.get("role") != "toolResult" or not messages:
            return
        content = messages[0]["content"][0].get("content")
        if isinstance(content, str):
            message["content"] = [{"type": "text", "text": content}]
        tool = truncated.get(message.get("toolCallId"))
        if tool is not None and "details" in message:
            message["details"], _ = shrink_strings(message["details"], tool)

    def compaction_records(self, compaction: Compaction) -> list[Record]:
        own = _new_id(compaction)
        pending = [record for record, _ in compaction.pending]
        first_kept = next((r["id"] for r in pending if isinstance(r.get("id"), str)), own)
        return [
            {
                "type": COMPACTION,
                "id": own,
                "parentId": compaction.newest_id("id"),
                "timestamp": compaction.stamp,
                "summary": compaction.summary,
                "firstKeptEntryId": first_kept,
                "tokensBefore": compaction.tokens_before,
                "details": {"readFiles": [], "modifiedFiles": []},
                "fromHook": False,
            }
        ]

    # --- rescue ---

    chains_answers = True  # the resume follows one path of the entries' tree

    def relink(self, record: Record, parent: str | None) -> bool:
        record["parentId"] = parent
        return True

    def drop_result(self, record: Record, call_id: Any) -> bool | None:
        message = record.get("message")
        if not isinstance(message, dict) or message.get("toolCallId") != call_id:
            return None
        return False  # a result is an entry of its own: it goes whole

    def answer_calls(self, answer: Answer) -> list[Record]:
        """A failed ``toolResult`` entry for each call, chained after the call's entry."""
        entries: list[Record] = []
        parent = answer.record.get("id")
        for call_id, tool in answer.calls:
            own = answer.new_id().replace("-", "")[:8]  # pi's ids: 8 hexadecimal digits
            text = [{"type": "text", "text": answer.text}]
            result = {"role": "toolResult", "toolCallId": call_id, "toolName": tool}
            result |= {"content": text, "isError": True, "timestamp": milliseconds(answer.stamp)}
            entry = {"type": "message", "id": own, "parentId": parent}
            entries.append({**entry, "timestamp": answer.stamp, "message": result})
            parent = own
        return entries

    def recorded_usage(self, records: Iterable[tuple[int, Record]]) -> list[RecordedCall]:
        """Each assistant message's ``usage`` (Anthropic's counting: ``input`` is plain);
        a ``compaction`` entry changed what the next request sent."""
        return calls_of(records, _usage, lambda record: _CHANGES.get(str(record.get("type"))))

    def session_files(self, home: Path) -> Iterator[SessionFile]:
        for path in sorted((home / "sessions").glob("*/*.jsonl")):
            header = first_record(path)
            session_id = header.get("id") if header.get("type") == HEADER else None
            cwd = header.get("cwd")
            yield SessionFile(
                path,
                session_id if isinstance(session_id, str) else path.stem,
                cwd if isinstance(cwd, str) else path.parent.name,
            )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _user(content: Any) -> Message:
    return {"role": "user", "content": _blocks(content)}


def _blocks(content: Any) -> Any:
    """pi's content (a string, or text and image blocks) in the core's shape; an image block is
    pi's own (``{"type": "image", "data", "mimeType"}``, which the core reads as it is)."""
    if not isinstance(content, list):
        return content if isinstance(content, str) else None
    return [
        {"type": "text", "text": block["text"]}
        if isinstance(block, dict) and isinstance(block.get("text"), str)
        else block
        for block in content
        if isinstance(block, dict)
    ]


def _message(message: dict[str, Any]) -> Message | None:
    role = message.get("role")
    content = message.get("content")
    if role == "assistant":
        return {"role": "assistant", "content": _assistant_blocks(content)}
    if role == "toolResult":
        block = {
            "type": "tool_result",
            "tool_use_id": message.get("toolCallId"),
            "content": _result_content(content),
        }
        return {"role": "user", "content": [block]}
    if role == "bashExecution":
        if message.get("excludeFromContext"):
            return None
        return _user(f"{message.get('command', '')}\n{message.get('output', '')}")
    if role in ("user", "custom"):
        return _user(content)
    return None


def _assistant_blocks(content: Any) -> Any:
    if not isinstance(content, list):
        return _blocks(content)
    blocks = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "toolCall":
            blocks.append(
                {
                    "type": "tool_use",
                    "id": block.get("id"),
                    "name": block.get("name"),
                    "input": block.get("arguments"),
                }
            )
        elif kind == "thinking":
            blocks.append({"type": "text", "text": str(block.get("thinking", ""))})
        elif kind == "text":
            blocks.append({"type": "text", "text": str(block.get("text", ""))})
    return blocks


def _result_content(content: Any) -> Any:
    """What the model reads of a tool result: its text blocks joined, or the blocks themselves
    when it holds images."""
    if not isinstance(content, list):
        return content
    if all(isinstance(block, dict) and block.get("type") == "text" for block in content):
        return "\n".join(str(block.get("text", "")) for block in content)
    return content


def _path(infos: Sequence[RecordInfo]) -> list[int]:
    """The entries from the root to the leaf (the last entry), oldest first."""
    by_id = {info.id: index for index, info in enumerate(infos) if info.id is not None}
    index = next((n for n in range(len(infos) - 1, -1, -1) if infos[n].id is not None), None)
    path: list[int] = []
    seen: set[int] = set()
    while index is not None and index not in seen:
        seen.add(index)
        path.append(index)
        parent = infos[index].parent
        index = by_id.get(parent) if parent is not None else None
    path.reverse()
    return path


def _is_compaction(infos: Sequence[RecordInfo], index: int) -> bool:
    return infos[index].kind == COMPACTION and infos[index].role is not None


def _new_id(compaction: Compaction) -> str:
    if compaction.new_id is not None:
        return compaction.new_id()

    taken = {info.id for info in compaction.infos}  # the ids' keys
    while True:
        candidate = uuid.uuid4().hex[:8]
        if key(candidate) not in taken:
            return candidate


_CHANGES = {"compaction": COMPACTED}


def _usage(record: Record) -> dict[str, Any] | None:
    message = record.get("message")
    if not isinstance(message, dict) or not isinstance(message.get("usage"), dict):
        return None
    usage = message["usage"]
    return {
        "time": record.get("timestamp"),
        "model": message.get("model"),
        "plain": usage.get("input"),
        "read": usage.get("cacheRead"),
        "written": usage.get("cacheWrite"),
        "output": token_count(usage.get("output")),
    }
