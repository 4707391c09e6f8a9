"""Gemini CLI sessions: ``~/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl``.

``$GEMINI_CLI_HOME`` stands for the user's home folder (sessions under its ``.gemini``). The file
is the log of one mutable record: a header (``sessionId``, ``projectHash``, ``startTime``, maybe
``messages``), ``{"$set": {…}}`` patches (``$set.messages`` replaces every message: Gemini CLI
writes the whole history so at each start and after its own compression), ``{"$rewindTo": id}``
(drops that message and every later one), and message records (``id``, ``type`` ``user`` /
``gemini`` / ``info`` / ``error`` / ``warning``, ``content`` in Gemini ``parts``). The last record
of an id wins, in the place its id first took.

What ``gemini --resume`` sends (``convertSessionToClientHistory``): each ``user`` message (but
the ``<session_context>`` it writes itself, slash commands and ``?`` help, which it regenerates
or never sends); each ``gemini`` message as a model turn (its thoughts, text and one
``functionCall`` per entry of ``toolCalls``), followed by a user turn of the calls' results
(``toolCalls[].result``); the separate ``user`` record of the same ``functionResponse`` parts is
sent too, so every result goes twice. Both copies shrink with ``micro``; the UI copy of the
output (``toolCalls[].resultDisplay``) shrinks with them.

A full compaction is appended the way Gemini CLI's own compression writes it: a ``$set`` of
``messages`` (the summary as a user message, the model's "Got it" acknowledgement, then the
pending turn's messages as they are) and ``lastUpdated``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..conversation.formats import Message
from ..session_files.base import (
    COMPACTED,
    RESUMED,
    AgentFormat,
    Compaction,
    Record,
    RecordedCall,
    RecordInfo,
    SessionFile,
    ViewMessage,
    by_role,
    first_change,
)
from ..session_files.records import first_record
from ..session_files.ui_copies import shrink_strings
from ..session_files.usage import recorded_call, token_count
from .wire import gemini_parts
from .wire.gemini_parts import ACKNOWLEDGEMENT, Part, Setter

MESSAGE_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})
_IGNORED_OPENINGS = ("/", "?", "<session_context>", "<hook_context>")
SET = "$set"
REWIND = "$rewindTo"
HEADER = "header"

# one conversation message of the file: (message id, role, parts, a setter per part)
Content = tuple[str, str, list[Part], list[Setter | None]]


@dataclass(frozen=True, slots=True)
class Tag:
    """What a record does to the session's messages (``RecordInfo.tag``).

    ``operation``: "put" (set each message of ``entries``), "reset" (a ``$set.messages``: the
    messages are exactly ``entries``), "rewind" (drop ``target`` and what follows it).
    ``entries``: (message id, first part, parts, role of each part) for each message.
    """

    operation: str
    entries: tuple[tuple[str, int, int, tuple[str, ...]], ...] = ()
    target: str | None = None


class GeminiCli(AgentFormat):
    name = "gemini-cli"
    agent = "gemini"
    home_variable = "GEMINI_CLI_HOME"  # the home folder Gemini CLI's .gemini is in
    home_default = ".gemini"

    def claims(self, record: Any) -> bool:
        if not isinstance(record, dict):
            return False
        if _is_header(record):
            return True
        if isinstance(record.get(SET), dict) or isinstance(record.get(REWIND), str):
            return len(record) == 1
        return (
            isinstance(record.get("id"), str)
            and record.get("type") in MESSAGE_TYPES
            and "timestamp" in record
            and not {"uuid", "role", "message", "payload"} & record.keys()
        )

    def index(self, record: Record, info: RecordInfo) -> None:
        patch = record.get(SET)
        if isinstance(patch, dict):
            info.kind = SET
            if isinstance(patch.get("messages"), list):
                info.tag = Tag("reset", _entries(_contents(record)))
        elif isinstance(record.get(REWIND), str):
            info.kind = REWIND
            info.tag = Tag("rewind", target=record[REWIND])
        elif _is_header(record):
            info.kind = HEADER
            info.tag = Tag("put", _entries(_contents(record)))
        elif isinstance(record.get("id"), str):
            kind = record.get("type")
            info.kind = kind if isinstance(kind, str) else "untyped"
            info.tag = Tag("put", _entries(_contents(record)))
            info.copies = tuple(_display_calls(record))
        else:
            info.kind = "untyped"

    def messages(self, record: Record) -> list[Message]:
        return [gemini_parts.as_message(role, parts) for _, role, parts, _ in _contents(record)]

    def view(self, infos: Sequence[RecordInfo]) -> list[ViewMessage]:
        current: dict[str, tuple[int, int, int, tuple[str, ...]]] = {}
        for index, info in enumerate(infos):
            tag = info.tag
            if not isinstance(tag, Tag):
                continue
            if tag.operation == "rewind":
                current = _rewound(current, tag.target)
                continue
            if tag.operation == "reset":
                current = {}
            for message_id, first, count, roles in tag.entries:
                current[message_id] = (index, first, count, roles)
        pieces = [
            (index, first + offset, roles[offset])
            for index, first, count, roles in current.values()
            for offset in range(count)
        ]
        return by_role(pieces)

    def store(self, record: Record, messages: list[Message], truncated: dict[Any, str]) -> None:
        for (_, _, _, setters), message in zip(_contents(record), messages, strict=True):
            gemini_parts.put_back(setters, message)
        for gemini_message in _gemini_messages(record):
            shrink_displays(gemini_message, truncated)

    def shrink_copies(self, record: Record, truncated: dict[Any, str]) -> bool:
        return any(shrink_displays(message, truncated) for message in _gemini_messages(record))

    def compaction_records(self, compaction: Compaction) -> list[Record]:
        stamp = compaction.stamp
        new_id = compaction.new_id or _uuid4
        summary = {
            "id": new_id(),
            "timestamp": stamp,
            "type": "user",
            "content": [{"text": compaction.summary}],
        }
        acknowledgement = {
            "id": new_id(),
            "timestamp": stamp,
            "type": "gemini",
            "content": [{"text": ACKNOWLEDGEMENT}],
        }
        kept = _pending_messages(compaction)
        messages = [summary, acknowledgement, *kept]
        return [{SET: {"messages": messages, "lastUpdated": stamp}}]

    def recorded_usage(self, records: Iterable[tuple[int, Record]]) -> list[RecordedCall]:
        """Each reply's ``tokens`` (Gemini's counting: ``input`` holds ``cached``). Gemini CLI
        writes a reply again as it grows: its last copy counts, at the line of its first.

        A header again is a resumed run, which sends the history rebuilt from the file (not
        byte for byte what was sent: the first call's thought signature is gone); a ``$set``
        of ``messages`` without one, its own compression."""
        calls: dict[Any, RecordedCall] = {}
        change = None
        for index, record in records:
            if calls:
                change = first_change(change, _change_of(record, change))
            tokens = record.get("tokens")
            if record.get("type") != "gemini" or not isinstance(tokens, dict):
                continue
            key = record.get("id", index)
            first, changed = (
                (calls[key].line, calls[key].change) if key in calls else (index, change)
            )
            output = token_count(tokens.get("output")) + token_count(tokens.get("thoughts"))
            calls[key] = recorded_call(
                first,
                time=record.get("timestamp"),
                model=record.get("model"),
                prompt=tokens.get("input"),
                read=tokens.get("cached"),
                output=output,
                change=changed,
            )
            change = None
        return list(calls.values())

    def session_files(self, home: Path) -> Iterator[SessionFile]:
        gemini = home if (home / "tmp").is_dir() else home / ".gemini"
        for path in sorted((gemini / "tmp").glob("*/chats/*.jsonl")):
            header = first_record(path)
            session_id = header.get("sessionId")
            project = path.parent.parent.name
            yield SessionFile(
                path, session_id if isinstance(session_id, str) else path.stem, project
            )


def _change_of(record: Record, since: str | None) -> str | None:
    """What a record says changed the next request's prompt, ``since`` what was seen since
    the previous request (a resume's header comes before its ``$set`` of every message)."""
    if _is_header(record):
        return RESUMED
    patch = record.get(SET)
    if since is None and isinstance(patch, dict) and isinstance(patch.get("messages"), list):
        return COMPACTED
    return None


def _is_header(record: Record) -> bool:
    return isinstance(record.get("sessionId"), str) and isinstance(record.get("projectHash"), str)


def _rewound(current: dict[str, Any], target: str | None) -> dict[str, Any]:
    ids = list(current)
    if target not in current:
        return {}
    return {message_id: current[message_id] for message_id in ids[: ids.index(target)]}


def _entries(contents: list[Content]) -> tuple[tuple[str, int, int, tuple[str, ...]], ...]:
    """(message id, first part, parts, roles) of each message, in order."""
    entries: dict[str, tuple[int, list[str]]] = {}
    for number, (message_id, role, _, _) in enumerate(contents):
        entries.setdefault(message_id, (number, []))[1].append(role)
    return tuple(
        (message_id, first, len(roles), tuple(roles))
        for message_id, (first, roles) in entries.items()
    )


def _messages_of(record: Record) -> list[Any]:
    """The session messages a record holds: itself, or those of its ``messages`` list."""
    patch = record.get(SET)
    holder = patch if isinstance(patch, dict) else record
    if isinstance(holder.get("messages"), list) and (holder is patch or _is_header(record)):
        return holder["messages"]
    if isinstance(record.get("id"), str) and record.get("type") in MESSAGE_TYPES:
        return [record]
    return []


def _gemini_messages(record: Record) -> Iterator[dict[str, Any]]:
    for message in _messages_of(record):
        if isinstance(message, dict) and message.get("type") == "gemini":
            yield message


def _contents(record: Record) -> list[Content]:
    return [content for message in _messages_of(record) for content in _message_contents(message)]


def _message_contents(message: Any) -> list[Content]:
    """What resume makes of one session message: none, one or two turns."""
    if not isinstance(message, dict) or not isinstance(message.get("id"), str):
        return []
    message_id, kind = message["id"], message.get("type")
    if kind == "user":
        parts = gemini_parts.parts_of(message.get("content"))
        if not parts or _ignored(parts):
            return []
        setters = [gemini_parts.response_setter(part) for part in parts]
        return [(message_id, "user", parts, setters)]
    if kind != "gemini":
        return []
    contents: list[Content] = []
    model = _model_parts(message)
    if model:
        contents.append((message_id, gemini_parts.MODEL, model, [None] * len(model)))
        results, setters = _results(message)
        if results:
            contents.append((message_id, "user", results, setters))
    return contents


def _ignored(parts: list[Part]) -> bool:
    text = "".join(
        part["text"] if isinstance(part.get("text"), str) else "[part]"
        for part in parts
        if isinstance(part, dict)
    )
    text = text.strip()
    return not text or text.startswith(_IGNORED_OPENINGS)


def _tool_calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    calls = message.get("toolCalls")
    return [call for call in calls if isinstance(call, dict)] if isinstance(calls, list) else []


def _model_parts(message: dict[str, Any]) -> list[Part]:
    content = gemini_parts.parts_of(message.get("content") or None)
    if any(
        isinstance(part, dict) and ("functionCall" in part or part.get("thought"))
        for part in content
    ):
        return content
    parts: list[Part] = []
    for thought in message.get("thoughts") or ():
        if isinstance(thought, dict):
            subject, description = thought.get("subject"), thought.get("description")
            text = f"**{subject}** {description}" if subject else str(description)
            parts.append({"text": text, "thought": True})
    parts += content
    for call in _tool_calls(message):
        parts.append(
            {
                "functionCall": {
                    "id": call.get("id"),
                    "name": call.get("name"),
                    "args": call.get("args"),
                }
            }
        )
    return parts


def _results(message: dict[str, Any]) -> tuple[list[Part], list[Setter | None]]:
    """The function responses resume sends after a gemini message's calls, and their setters."""
    parts: list[Part] = []
    setters: list[Setter | None] = []
    for call in _tool_calls(message):
        result = call.get("result")
        if not result:
            continue
        if isinstance(result, str):
            response = {
                "id": call.get("id"),
                "name": call.get("name"),
                "response": {"output": result},
            }
            parts.append({"functionResponse": response})
            setters.append(_result_setter(call))
        else:
            own = gemini_parts.parts_of(result)
            parts += own
            setters += [gemini_parts.response_setter(part) for part in own]
    return parts, setters


def _result_setter(call: dict[str, Any]) -> Setter:
    def put(marker: str) -> None:
        call["result"] = marker

    return put


def _display_calls(record: Record) -> Iterator[str]:
    for message in _gemini_messages(record):
        for call in _tool_calls(message):
            if isinstance(call.get("id"), str) and call.get("resultDisplay"):
                yield call["id"]


def shrink_displays(message: dict[str, Any], truncated: dict[Any, str]) -> bool:
    """The UI copies of the truncated outputs (``toolCalls[].resultDisplay``) shrink."""
    changed = False
    for call in _tool_calls(message):
        tool = truncated.get(call.get("id"))
        if tool is not None and "resultDisplay" in call:
            call["resultDisplay"], call_changed = shrink_strings(call["resultDisplay"], tool)
            changed |= call_changed
    return changed


def _pending_messages(compaction: Compaction) -> list[Any]:
    """The session messages the pending turn's parts come from, each once, in order."""
    kept: dict[str, Any] = {}
    for record, part in compaction.pending:
        contents = _contents(record)
        chosen = contents if part is None else contents[part : part + 1]
        by_id = {m["id"]: m for m in _messages_of(record) if isinstance(m, dict) and "id" in m}
        for message_id, _, _, _ in chosen:
            kept.setdefault(message_id, by_id[message_id])
    return list(kept.values())


def _uuid4() -> str:
    return str(uuid.uuid4())
