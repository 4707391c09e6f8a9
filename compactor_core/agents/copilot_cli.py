"""GitHub Copilot CLI sessions: ``~/.copilot/session-state/<session id>/events.jsonl``
(``$COPILOT_HOME`` stands for ``~/.copilot``).

An event log, one ``{type, data, id, timestamp, parentId}`` a line, each event the child of the
one before. The conversation is in ``system.message`` (the system prompt), ``user.message``
(``data.content``; what was sent, ``data.transformedContent``, adds the date),
``assistant.message`` (``data.content`` and ``data.toolRequests``: ``toolCallId``, ``name``,
``arguments``) and ``tool.execution_complete`` (``data.toolCallId`` and the output in
``data.result.content``, a UI copy of it in ``data.result.detailedContent``). Every other event
(``session.start``, ``session.resume``, ``assistant.turn_start``, ``tool.execution_start``,
``session.usage_record``, ``model.*``, ``session.shutdown``, any type not known today) is kept.
``model.messages_snapshot`` logs the messages of a model call, tool outputs included: a UI copy.

What ``copilot --resume`` sends, rebuilt from the events (measured with the real CLI): the
system prompt, then the messages in the order of their events; a successful
``session.compaction_complete`` replaces everything before it by one user message that lists
the user's earlier requests and holds ``data.summaryContent``.

A full compaction is appended the way Copilot's own ``/compact`` writes it: a
``session.compaction_complete`` event (``success``, ``summaryContent``, token figures), then
copies of the pending turn's events (new ids, chained after it).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..conversation.formats import Message
from ..session_files.base import (
    COMPACTED,
    RESUMED,
    AgentFormat,
    Answer,
    Compaction,
    Record,
    RecordedCall,
    RecordInfo,
    SessionFile,
    ViewMessage,
)
from ..session_files.records import first_record
from ..session_files.ui_copies import shrink_strings
from ..session_files.usage import calls_of, token_count

SYSTEM = "system.message"
USER = "user.message"
ASSISTANT = "assistant.message"
RESULT = "tool.execution_complete"
COMPACTION = "session.compaction_complete"
SNAPSHOT = "model.messages_snapshot"
SUMMARY_INTRO = (
    "Some of the conversation history has been summarized to free up context.\n\n"
    "Here is a summary of the prior context:\n<summary>\n"
)
SUMMARY_END = "\n</summary>\n"


USAGE = "session.usage_record"  # the event that holds a model request's usage
_CHANGES = {COMPACTION: COMPACTED, "session.resume": RESUMED}
# Where each event that holds a model request's usage keeps it.
_USAGE_KEYS = {USAGE: "usage", COMPACTION: "compactionTokensUsed"}


class CopilotCli(AgentFormat):
    name = "copilot-cli"
    agent = "copilot"
    home_variable = "COPILOT_HOME"
    home_default = ".copilot"

    def claims(self, record: Any) -> bool:
        return (
            isinstance(record, dict)
            and isinstance(record.get("type"), str)
            and "." in record["type"]
            and isinstance(record.get("data"), dict)
            and isinstance(record.get("id"), str)
            and "parentId" in record
        )

    def index(self, record: Record, info: RecordInfo) -> None:
        kind = record.get("type")
        info.kind = kind if isinstance(kind, str) else "untyped"
        info.id = _text(record.get("id"))
        # parentId is not followed: it may name an event Copilot never wrote (an ephemeral one)
        data = _data(record)
        if kind == SNAPSHOT:
            info.copies = tuple(
                m["tool_call_id"]
                for m in _snapshot_messages(data)
                if isinstance(m.get("tool_call_id"), str)
            )
        elif kind == COMPACTION:
            info.tag = data.get("success") is True

    def messages(self, record: Record) -> list[Message]:
        kind, data = record.get("type"), _data(record)
        if kind == SYSTEM and isinstance(data.get("content"), str):
            return [{"role": "system", "content": data["content"]}]
        if kind == USER:
            content = data.get("transformedContent", data.get("content"))
            return [{"role": "user", "content": content if isinstance(content, str) else ""}]
        if kind == ASSISTANT:
            return [_assistant(data)]
        if kind == RESULT and isinstance(data.get("toolCallId"), str):
            block = {"type": "tool_result", "tool_use_id": data["toolCallId"]}
            block["content"] = _result_content(data)
            return [{"role": "user", "content": [block]}]
        if kind == COMPACTION and data.get("success") is True:
            summary = data.get("summaryContent")
            text = SUMMARY_INTRO + (summary if isinstance(summary, str) else "") + SUMMARY_END
            return [{"role": "user", "content": text}]
        return []

    def view(self, infos: Sequence[RecordInfo]) -> list[ViewMessage]:
        system: list[int] = []
        history: list[int] = []
        for index, info in enumerate(infos):
            if info.role is None:
                continue
            if info.kind == SYSTEM:
                system = [index]  # the newest system prompt is the one sent
            elif info.kind == COMPACTION:
                history = [index]
            else:
                history.append(index)
        groups: list[list[int]] = []
        for index in history:
            if groups and infos[index].kind == RESULT and infos[groups[-1][-1]].kind == RESULT:
                groups[-1].append(index)
            else:
                groups.append([index])
        return [ViewMessage(tuple(group)) for group in [system, *groups] if group]

    def store(self, record: Record, messages: list[Message], truncated: dict[Any, str]) -> None:
        data = _data(record)
        if not messages:
            return
        content = messages[0]["content"][0].get("content")
        result, error = data.get("result"), data.get("error")
        if not isinstance(result, dict):
            if isinstance(error, dict):
                error["message"] = content
            return
        result["content"] = content
        tool = truncated.get(data.get("toolCallId"))
        if tool is not None and "detailedContent" in result:
            result["detailedContent"], _ = shrink_strings(result["detailedContent"], tool)

    def shrink_copies(self, record: Record, truncated: dict[Any, str]) -> bool:
        changed = False
        for message in _snapshot_messages(_data(record)):
            tool = truncated.get(message.get("tool_call_id"))
            if tool is not None and "content" in message:
                message["content"], message_changed = shrink_strings(message["content"], tool)
                changed |= message_changed
        return changed

    def compaction_records(self, compaction: Compaction) -> list[Record]:
        new_id: Callable[[], str] = compaction.new_id or _uuid4
        stamp = compaction.stamp
        removed = sum(len(message.records) for message in compaction.view)
        event: Record = {
            "type": COMPACTION,
            "data": {
                "success": True,
                "outcome": "applied",
                "preCompactionMessagesLength": removed,
                "messagesRemoved": removed,
                "preCompactionTokens": compaction.tokens_before,
                "summaryContent": compaction.summary,
                "trigger": "manual",
            },
            "id": new_id(),
            "timestamp": stamp,
            "parentId": compaction.newest_id("id"),
        }
        records = [event]
        for pending, _ in compaction.pending:
            if pending.get("type") in (SYSTEM, COMPACTION):
                continue  # Copilot sends its system prompt again by itself
            copy = {**pending, "id": new_id(), "timestamp": stamp, "parentId": records[-1]["id"]}
            records.append(copy)
        return records

    # Its event log is read with Node's readline, which also ends a line at U+2028 and U+2029.
    line_breaks = ("\u2028", "\u2029")

    def relink(self, record: Record, parent: str | None) -> bool:
        record["parentId"] = parent
        return True

    def drop_result(self, record: Record, call_id: Any) -> bool | None:
        if record.get("type") != RESULT or _data(record).get("toolCallId") != call_id:
            return None
        return False  # the event goes whole

    def answer_calls(self, answer: Answer) -> list[Record]:
        """A failed ``tool.execution_complete`` event for each call, after the call's."""
        events: list[Record] = []
        parent = answer.record.get("id")
        for call_id, _ in answer.calls:
            event_id = answer.new_id()
            data = {"toolCallId": call_id, "success": False, "error": {"message": answer.text}}
            events.append(
                {
                    "type": RESULT,
                    "data": data,
                    "id": event_id,
                    "timestamp": answer.stamp,
                    "parentId": parent,
                }
            )
            parent = event_id
        return events

    def recorded_usage(self, records: Iterable[tuple[int, Record]]) -> list[RecordedCall]:
        """Each ``session.usage_record`` event (OpenAI's counting: ``inputTokens`` holds the
        cache's reads and writes), and the compaction's own request, which Copilot records
        only in its ``session.compaction_complete`` (``compactionTokensUsed``); a compaction
        or a resume changed what the next one sent."""
        return calls_of(records, _usage, lambda record: _CHANGES.get(str(record.get("type"))))

    def session_files(self, home: Path) -> Iterator[SessionFile]:
        for path in sorted((home / "session-state").glob("*/events.jsonl")):
            yield SessionFile(path, path.parent.name, _cwd_of(path) or "")


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _data(record: Record) -> dict[str, Any]:
    data = record.get("data")
    return data if isinstance(data, dict) else {}


def _assistant(data: dict[str, Any]) -> Message:
    content: list[dict[str, Any]] = []
    if isinstance(data.get("content"), str) and data["content"]:
        content.append({"type": "text", "text": data["content"]})
    for request in data.get("toolRequests") or ():
        if isinstance(request, dict):
            content.append(
                {
                    "type": "tool_use",
                    "id": request.get("toolCallId"),
                    "name": request.get("name"),
                    "input": request.get("arguments"),
                }
            )
    return {"role": "assistant", "content": content}


def _result_content(data: dict[str, Any]) -> Any:
    result = data.get("result")
    if isinstance(result, dict) and "content" in result:
        return result["content"]
    error = data.get("error")
    return error.get("message") if isinstance(error, dict) else None


def _snapshot_messages(data: dict[str, Any]) -> list[dict[str, Any]]:
    messages = data.get("messages")
    return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []


def _cwd_of(path: Path) -> str | None:
    start = first_record(path)
    context = _data(start).get("context")
    cwd = context.get("cwd") if isinstance(context, dict) else None
    return cwd if isinstance(cwd, str) else None


def _uuid4() -> str:
    return str(uuid.uuid4())


def _usage(record: Record) -> dict[str, Any] | None:
    data = record.get("data")
    if not isinstance(data, dict):
        return None
    usage = data.get(_USAGE_KEYS.get(str(record.get("type"))) or "")
    if not isinstance(usage, dict):
        return None
    return {
        "time": record.get("timestamp"),
        "model": usage.get("model"),
        "prompt": usage.get("inputTokens"),
        "read": usage.get("cacheReadTokens"),
        "written": usage.get("cacheWriteTokens"),
        "output": token_count(usage.get("outputTokens")),
    }
