"""Qwen Code sessions: ``~/.qwen/projects/<cwd, / as ->/chats/<session id>.jsonl``
(``$QWEN_HOME`` stands for ``~/.qwen``).

One record a line, chained by ``uuid`` / ``parentUuid`` (the first record of a uuid counts), each
with ``sessionId``, ``cwd``, ``version``, ``timestamp``: ``user``, ``assistant`` and
``tool_result`` records carry a ``message`` in Gemini's shape (``role`` ``user`` / ``model``,
``parts`` with ``functionCall`` / ``functionResponse``); a tool result keeps a UI copy of the
output in ``toolCallResult.resultDisplay``. ``system`` records (``subtype`` ``ui_telemetry``,
``attribution_snapshot``, ``slash_command``, ``chat_compression``, …, and any type not known
today) are kept as they are.

What ``qwen --resume`` sends (``buildSessionHistoryFromConversation``): the chain back from the
last conversation record; each record's ``message`` in order, except that a ``chat_compression``
record's ``systemPayload.compressedHistory`` replaces everything before it. Qwen regenerates its
own startup context (environment, skills) on resume; it is not in the file.

A full compaction is appended the way Qwen's own ``/compress`` writes it: a ``system`` record of
subtype ``chat_compression``, child of the last record, whose ``compressedHistory`` is the
summary (with Qwen's resume trailer) as a user turn, the model's acknowledgement, then the
pending turn's contents.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..conversation.formats import Message
from ..session_files.base import (
    AgentFormat,
    Answer,
    Compaction,
    Record,
    RecordedCall,
    RecordInfo,
    SessionFile,
    ViewMessage,
    by_role,
)
from ..session_files.records import first_record
from ..session_files.ui_copies import shrink_strings
from ..session_files.usage import calls_of, token_count
from .wire import gemini_parts
from .wire.gemini_parts import ACKNOWLEDGEMENT

COMPRESSION = "system:chat_compression"
RECORD_TYPES = frozenset({"user", "assistant", "tool_result", "system"})
# Records resume does not take for the leaf (Qwen's NON_CONVERSATION and artifact subtypes).
_OFF_CHAIN = frozenset(
    {
        "system:session_sources_snapshot",
        "system:managed_session_header_v1",
        "system:managed_session_event_v1",
        "system:managed_session_commit_v1",
        "system:session_artifact_event",
        "system:session_artifact_snapshot",
    }
)
RESUME_TRAILER = (
    "Resume the prior task using the summary above. Continue from the last in-flight step; do "
    "not acknowledge the summary, do not re-introduce, do not greet the user again."
)
_SESSION_KEYS = ("sessionId", "cwd", "version", "gitBranch")


API_RESPONSE = "qwen-code.api_response"  # the telemetry event that holds a request's usage


class QwenCode(AgentFormat):
    name = "qwen-code"
    agent = "qwen"
    home_variable = "QWEN_HOME"
    home_default = ".qwen"

    def claims(self, record: Any) -> bool:
        if not isinstance(record, dict) or record.get("type") not in RECORD_TYPES:
            return False
        if not isinstance(record.get("uuid"), str) or "parentUuid" not in record:
            return False
        message = record.get("message")
        return (
            (isinstance(message, dict) and isinstance(message.get("parts"), list))
            or isinstance(record.get("systemPayload"), dict)
            or record.get("type") == "tool_result"
        )

    def index(self, record: Record, info: RecordInfo) -> None:
        kind = record.get("type")
        kind = kind if isinstance(kind, str) else "untyped"
        subtype = record.get("subtype")
        info.kind = f"{kind}:{subtype}" if kind == "system" and isinstance(subtype, str) else kind
        info.id = _text(record.get("uuid"))
        info.parent = _text(record.get("parentUuid"))
        info.tag = tuple(_keys(_contents(record), info.line))

    def messages(self, record: Record) -> list[Message]:
        return [gemini_parts.as_message(role, parts) for role, parts, _ in _contents(record)]

    def view(self, infos: Sequence[RecordInfo]) -> list[ViewMessage]:
        pieces: list[tuple[int, int, str]] = []
        for index in _chain(infos):
            info = infos[index]
            if info.kind == COMPRESSION and info.tag:
                pieces = []
            for part, key in enumerate(info.tag or ()):
                pieces.append((index, part, key))
        return by_role(pieces)

    def store(self, record: Record, messages: list[Message], truncated: dict[Any, str]) -> None:
        for (_, _, setters), message in zip(_contents(record), messages, strict=True):
            gemini_parts.put_back(setters, message)
        display = record.get("toolCallResult")
        tool = truncated.get(display.get("callId")) if isinstance(display, dict) else None
        if tool is not None and "resultDisplay" in display:
            display["resultDisplay"], _ = shrink_strings(display["resultDisplay"], tool)

    def compaction_records(self, compaction: Compaction) -> list[Record]:
        last = compaction.last or {}
        new_id: Callable[[], str] = compaction.new_id or _uuid4
        summary = f"{compaction.summary}\n\n{RESUME_TRAILER}"
        history = [
            {"role": "user", "parts": [{"text": summary}]},
            {"role": gemini_parts.MODEL, "parts": [{"text": ACKNOWLEDGEMENT}]},
            *_pending_contents(compaction),
        ]
        leaf = compaction.newest_id("uuid", _on_chain) or last.get("uuid")
        record: Record = {
            "uuid": new_id(),
            "parentUuid": leaf,
            **{key: last[key] for key in ("sessionId",) if key in last},
            "timestamp": compaction.stamp,
            "type": "system",
            "provenance": "system",
            **{key: last[key] for key in _SESSION_KEYS[1:] if key in last},
            "subtype": "chat_compression",
            "systemPayload": {
                "info": {
                    "originalTokenCount": compaction.tokens_before,
                    "newTokenCount": 0,
                    "compressionStatus": 1,
                    "originalTokenCountIsEstimated": True,
                    "newTokenCountIsEstimated": True,
                },
                "compressedHistory": history,
                "completedToolCallIds": [],
            },
        }
        return [record]

    # --- rescue ---

    chains_answers = True  # the resume follows the chain back from the last record

    def relink(self, record: Record, parent: str | None) -> bool:
        record["parentUuid"] = parent
        return True

    def drop_result(self, record: Record, call_id: Any) -> bool | None:
        message = record.get("message")
        parts = message.get("parts") if isinstance(message, dict) else None
        if record.get("type") != "tool_result" or not isinstance(parts, list):
            return None
        kept = [part for part in parts if _response_id(part) != call_id]
        message["parts"] = kept  # type: ignore[index]
        return bool(kept)

    def answer_calls(self, answer: Answer) -> list[Record]:
        """A ``tool_result`` record of an error response for each call, chained after it."""
        call = answer.record
        shared = {key: call[key] for key in _SESSION_KEYS if key in call}
        records: list[Record] = []
        parent = call.get("uuid")
        for call_id, tool in answer.calls:
            response = {"id": call_id, "name": tool, "response": {"error": answer.text}}
            message = {"role": "user", "parts": [{"functionResponse": response}]}
            own = answer.new_id()
            record = {"uuid": own, "parentUuid": parent, **shared, "timestamp": answer.stamp}
            records.append({**record, "type": "tool_result", "message": message})
            parent = own
        return records

    def recorded_usage(self, records: Iterable[tuple[int, Record]]) -> list[RecordedCall]:
        """Each ``qwen-code.api_response`` event of a ``ui_telemetry`` record (OpenAI's
        counting: the input holds what was cached)."""
        return calls_of(records, _usage)

    def session_files(self, home: Path) -> Iterator[SessionFile]:
        for path in sorted((home / "projects").glob("*/chats/*.jsonl")):
            first = first_record(path)
            cwd = first.get("cwd")
            yield SessionFile(path, path.stem, cwd if isinstance(cwd, str) else path.parent.name)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _contents(record: Record) -> list[tuple[str, list[Any], list[Any]]]:
    """The Gemini contents a record adds to the history: its message, or a compression's."""
    if record.get("type") == "system":
        payload = record.get("systemPayload")
        history = payload.get("compressedHistory") if isinstance(payload, dict) else None
        if record.get("subtype") != "chat_compression" or not isinstance(history, list):
            return []
        return [_content(content) for content in history if _is_content(content)]
    message = record.get("message")
    if record.get("subtype") == "realtime_message" or not _is_content(message):
        return []
    return [_content(message)]


def _is_content(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("parts"), list)


def _content(content: dict[str, Any]) -> tuple[str, list[Any], list[Any]]:
    parts = content["parts"]
    role = content.get("role")
    setters = [gemini_parts.response_setter(part) for part in parts]
    return (role if isinstance(role, str) else "user", parts, setters)


def _keys(contents: list[tuple[str, list[Any], list[Any]]], line: int) -> Iterator[str]:
    """Per content, how the view groups it: a run of tool results is one turn."""
    for part, (role, parts, _) in enumerate(contents):
        only_results = bool(parts) and all(
            isinstance(p, dict) and "functionResponse" in p for p in parts
        )
        yield "results" if only_results else f"{role}:{line}:{part}"


def _on_chain(info: RecordInfo) -> bool:
    return (
        info.id is not None
        and info.kind not in _OFF_CHAIN
        and info.kind not in ("invalid", "blank")
    )


def _chain(infos: Sequence[RecordInfo]) -> list[int]:
    """The records resume follows, from the root to the last conversation record."""
    first: dict[str, int] = {}
    for index, info in enumerate(infos):
        if _on_chain(info) and info.id not in first:
            first[info.id] = index
    leaf = next((n for n in range(len(infos) - 1, -1, -1) if _on_chain(infos[n])), None)
    chain: list[int] = []
    seen: set[int] = set()
    index = first.get(infos[leaf].id) if leaf is not None else None
    while index is not None and index not in seen:
        seen.add(index)
        chain.append(index)
        parent = infos[index].parent
        index = first.get(parent) if parent else None
    chain.reverse()
    return chain


def _pending_contents(compaction: Compaction) -> list[Any]:
    contents: list[Any] = []
    for record, part in compaction.pending:
        own = [content for content in _contents_of(record)]
        contents.extend(own if part is None else own[part : part + 1])
    return contents


def _contents_of(record: Record) -> list[Any]:
    if record.get("type") == "system":
        payload = record.get("systemPayload") or {}
        return [c for c in payload.get("compressedHistory") or () if _is_content(c)]
    return [record["message"]] if _is_content(record.get("message")) else []


def _uuid4() -> str:
    return str(uuid.uuid4())


def _response_id(part: Any) -> Any:
    response = part.get("functionResponse") if isinstance(part, dict) else None
    return response.get("id") if isinstance(response, dict) else None


def _usage(record: Record) -> dict[str, Any] | None:
    payload = record.get("systemPayload")
    event = payload.get("uiEvent") if isinstance(payload, dict) else None
    if not isinstance(event, dict) or event.get("event.name") != API_RESPONSE:
        return None
    thoughts = token_count(event.get("thoughts_token_count"))
    return {
        "time": record.get("timestamp"),
        "model": event.get("model"),
        "prompt": event.get("input_token_count"),
        "read": event.get("cached_content_token_count"),
        "output": token_count(event.get("output_token_count")) + thoughts,
    }
