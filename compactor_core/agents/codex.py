"""Codex CLI rollouts: ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`` (SPEC §8.1).

Each line is ``{timestamp, type, payload}`` (Codex 0.169 adds ``ordinal``, the line's number from
0, and a top-level ``metadata``). A ``response_item`` payload is what the model saw or said: a
``message`` (user, assistant, developer), a ``reasoning`` item, a tool call (``function_call``,
``custom_tool_call``, ``local_shell_call``, …) or a call's output (``function_call_output``,
``custom_tool_call_output``), the two paired by ``call_id``. ``event_msg`` records are for the UI;
some repeat a tool's output (``exec_command_end``; in Codex 0.169 ``item_completed`` with a
``CommandExecution`` item whose ``id`` is the call id). Every other type (``session_meta``,
``turn_context``, ``world_state``, ``token_usage_record``, any type not known today) is kept.

The view is what ``codex resume`` rebuilds: the newest ``compacted`` record's
``replacement_history`` replaces everything before it; a legacy ``compacted`` record without one
leaves the user messages of the history before it, then its ``message`` as a user message; a
``thread_rolled_back`` event drops the newest ``num_turns`` user turns; the ``response_item``
records after it follow. Codex re-sends its own context (developer messages, the
``<environment_context>`` and AGENTS.md user messages) after a compaction by itself, so they are
system messages here: a full compaction keeps them out of the summary and out of the
``replacement_history`` it writes. So is the encrypted ``compaction`` item of a remote compaction
(Codex with OpenAI's API: its model's summary of what came before, which only it can read): it
is kept in the ``replacement_history``, before ctxpack's summary.

Messages are in the core's Anthropic shape: a call is an assistant ``tool_use`` block, an output
a user ``tool_result`` block. Consecutive assistant-side items are one message (one reply, its
parallel calls together) and so are consecutive outputs, the way the Responses API pairs them.

A full compaction is appended the way Codex writes its own: a ``compacted`` record whose
``replacement_history`` is the summary as a user message, then the pending turn's items, and the
``context_compacted`` event.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ..conversation.boilerplate import CODEX_SUMMARY_INTRO
from ..session_files.agent_indexes import forget_projection
from ..session_files.base import (
    AgentFormat,
    Answer,
    Compaction,
    Record,
    RecordInfo,
    SessionFile,
    ViewMessages,
)
from ..session_files.records import first_record
from ..session_files.table import RecordTable
from ..session_files.ui_copies import shrink_strings
from .codex_usage import recorded_usage
from .wire.response_items import has_text, is_call, is_context, is_output, texts, tool_use

RECORD_TYPES = frozenset(
    {
        "session_meta",
        "response_item",
        "event_msg",
        "turn_context",
        "compacted",
        "world_state",
        "token_usage_record",
    }
)
_SYSTEM_ROLES = frozenset({"developer", "system"})
# Where UI copies keep a tool's output (keys of an event payload or of its ``item``).
_OUTPUT_KEYS = ("stdout", "stderr", "aggregated_output", "formatted_output", "output", "result")
_ITEM_EVENTS = frozenset({"item_started", "item_updated", "item_completed"})
# Each message's side, in ``Tag.sides`` (their codes are their places here).
_SIDES = ("assistant", "results", "user", "summary", "system", "compaction")
_USER = _SIDES.index("user")
_JOINED = (_SIDES.index("assistant"), _SIDES.index("results"))  # a run of them is one message
_ROLLBACK = "thread_rolled_back"
_ROLLOUT_NAME = re.compile(r"rollout-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-[0-9A-Za-z-]+\.jsonl")


@dataclass(frozen=True, slots=True)
class Tag:
    """What ``view`` needs to know of a record beyond its info (``RecordInfo.tag``)."""

    # per message of the record: "assistant" (a reply's items), "results" (call outputs),
    # "user" (a user's turn), "summary" (a compaction's), "system" (Codex's own context),
    # "compaction" (a remote compaction's encrypted item)
    sides: tuple[str, ...] = ()
    legacy: bool = False  # a compaction without replacement_history
    rollback: int = 0  # user turns a thread_rolled_back event drops


class Codex(AgentFormat):
    name = "codex"
    agent = "codex"
    home_variable = "CODEX_HOME"
    home_default = ".codex"
    cache_rules = "openai"
    recorded_usage = staticmethod(recorded_usage)  # from its token_count events

    def claims(self, record: Any) -> bool:
        return (
            isinstance(record, dict)
            and record.get("type") in RECORD_TYPES
            and "payload" in record
            and "timestamp" in record
        )

    def index(self, record: Record, info: RecordInfo) -> None:
        kind = record.get("type")
        info.kind = kind if isinstance(kind, str) else "untyped"
        payload = record.get("payload")
        if not isinstance(payload, dict):
            return
        if kind == "event_msg":
            info.copies = _copied_calls(payload)
            if payload.get("type") == _ROLLBACK:
                info.tag = Tag(rollback=_rollback_turns(payload))
        elif kind in ("response_item", "compacted", "session_meta"):
            sides = tuple(_side(item) for item in _conversation_items(record))
            legacy = kind == "compacted" and not isinstance(
                payload.get("replacement_history"), list
            )
            info.tag = _tag(sides, legacy)

    def messages(self, record: Record) -> list[dict[str, Any]]:
        return [_message(item) for item in _conversation_items(record)]

    def view(self, infos: RecordTable) -> ViewMessages:  # type: ignore[override]
        instructions = array("q")  # the first session_meta's: sent before everything
        history = array("q")  # oldest first
        for index in range(len(infos)):
            tag = infos.tag(index)
            if not isinstance(tag, Tag):
                continue
            kind = infos.kind(index)
            own = [_entry(index, part, side) for part, side in enumerate(tag.sides)]
            if kind == "compacted":
                # the newest compaction replaces what came before; a legacy one keeps the
                # user's messages of it
                users = (entry for entry in history if _side_of(entry) == _USER)
                history = array("q", users if tag.legacy else ())
                history.extend(own)
            elif kind == "response_item":
                history.extend(own)
            elif kind == "session_meta" and not instructions:
                instructions.extend(own)
            elif tag.rollback:
                history = _rolled_back(history, tag.rollback)
        return _grouped(instructions + history)

    def store(self, record: Record, messages: list[dict[str, Any]], truncated: dict[Any, str]):
        for item, message in zip(_conversation_items(record), messages, strict=True):
            if is_output(item):
                item["output"] = message["content"][0].get("content")

    def shrink_copies(self, record: Record, truncated: dict[Any, str]) -> bool:
        payload = record.get("payload")
        if not isinstance(payload, dict):
            return False
        changed = False
        for holder in _copy_holders(payload):
            tool = truncated.get(_copied_call(holder, payload))
            if tool is None:
                continue
            for key in _OUTPUT_KEYS:
                if key in holder:
                    holder[key], key_changed = shrink_strings(holder[key], tool)
                    changed |= key_changed
        return changed

    def compaction_records(self, compaction: Compaction) -> list[Record]:
        stamp = compaction.stamp
        text = CODEX_SUMMARY_INTRO + compaction.summary
        summary = {"type": "message", "role": "user", "content": [_input_text(text)]}
        history = [*_earlier_compactions(compaction), summary, *_pending_items(compaction)]
        compacted = {"message": text, "replacement_history": history}
        records: list[Record] = [
            {"timestamp": stamp, "type": "compacted", "payload": compacted},
            {"timestamp": stamp, "type": "event_msg", "payload": {"type": "context_compacted"}},
        ]
        ordinal = _next_ordinal(compaction)
        if ordinal is not None:
            for number, new in enumerate(records, start=ordinal):
                new["ordinal"] = number
                new.update({key: new.pop(key) for key in ("type", "payload")})  # Codex's order
        return records

    def after_replace(self, path: Path) -> str | None:
        return forget_projection(path, _session_meta(path).get("id"))

    def session_files(self, home: Path) -> Iterator[SessionFile]:
        """``sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``: the files Codex writes (a copy by
        another name, or a snapshot folder among them, is no session of its own)."""
        sessions = home / "sessions"
        if not sessions.is_dir():
            return
        for path in sorted(sessions.glob("*/*/*/rollout-*.jsonl")):
            if _is_rollout(path, sessions):
                meta = _session_meta(path)
                session_id = meta.get("id") if isinstance(meta.get("id"), str) else None
                cwd = meta.get("cwd") if isinstance(meta.get("cwd"), str) else ""
                yield SessionFile(path, session_id or _id_from_name(path), cwd)

    # --- rescue ---

    def drop_result(self, record: Record, call_id: Any) -> bool | None:
        """An output record goes whole; a compaction's history loses the output."""
        payload = record.get("payload")
        if not isinstance(payload, dict):
            return None
        if record.get("type") == "response_item":
            return None if payload.get("call_id") != call_id else False
        history = payload.get("replacement_history")
        if record.get("type") != "compacted" or not isinstance(history, list):
            return None
        payload["replacement_history"] = [
            item
            for item in history
            if not (isinstance(item, dict) and is_output(item) and item["call_id"] == call_id)
        ]
        return True

    def answer_calls(self, answer: Answer) -> list[Record] | None:
        """An output item for each call, as Codex records a failed call's, after the call."""
        if answer.record.get("type") != "response_item":
            return None  # a call inside a compaction's history
        payload = answer.record.get("payload") or {}
        kind = payload.get("type") if isinstance(payload.get("type"), str) else "function_call"
        return [
            {
                "timestamp": answer.stamp,
                "type": "response_item",
                "payload": {"type": f"{kind}_output", "call_id": call_id, "output": answer.text},
            }
            for call_id, _ in answer.calls
        ]


@cache
def _tag(sides: tuple[str, ...], legacy: bool) -> Tag:
    # one shared Tag per shape: a rollout of millions of lines has a handful of them
    return Tag(sides, legacy)


# --- records and their items ---------------------------------------------------------------------


def _conversation_items(record: Record) -> list[dict[str, Any]]:
    """The response items of a record that are part of the conversation, in order."""
    payload = record.get("payload")
    if not isinstance(payload, dict):
        return []
    kind = record.get("type")
    if kind == "session_meta":
        return _base_instructions(payload)
    if kind == "response_item":
        items = [payload]
    elif kind == "compacted":
        history = payload.get("replacement_history")
        if not isinstance(history, list):
            return [_legacy_summary(payload)]
        items = history
    else:
        return []
    return [item for item in items if _is_conversation(item)]


def _base_instructions(payload: dict[str, Any]) -> list[dict[str, Any]]:
    # Codex sends them as the first developer message of every request
    instructions = payload.get("base_instructions")
    text = instructions.get("text") if isinstance(instructions, dict) else None
    if not isinstance(text, str) or not text:
        return []
    return [{"type": "message", "role": "developer", "content": [_input_text(text)]}]


def _legacy_summary(payload: dict[str, Any]) -> dict[str, Any]:
    # Codex rebuilds a compaction without replacement_history as the user messages before it,
    # then its message as a user message (an empty one says so)
    text = payload.get("message")
    text = text if isinstance(text, str) and text else "(no summary available)"
    return {"type": "message", "role": "user", "content": [_input_text(text)], "summary": True}


def _is_conversation(item: Any) -> bool:
    if not isinstance(item, dict) or not isinstance(item.get("type"), str):
        return False
    kind = item["type"]
    if kind == "message":
        return isinstance(item.get("role"), str)
    return kind == "reasoning" or is_call(item) or is_output(item) or _is_compaction(item)


def _is_compaction(item: dict[str, Any]) -> bool:
    """A remote compaction's item: the model's own summary of what came before, encrypted."""
    return item.get("type") == "compaction" and isinstance(item.get("encrypted_content"), str)


def _side(item: dict[str, Any]) -> str:
    if is_output(item):
        return "results"
    if _is_compaction(item):
        return "compaction"
    if item.get("type") != "message":
        return "assistant"
    role = item.get("role")
    if role in _SYSTEM_ROLES or is_context(item):
        return "system"
    if role != "user":
        return "assistant"
    return "summary" if item.get("summary") is True or _is_summary(item) else "user"


def _is_summary(item: dict[str, Any]) -> bool:
    found = texts(item.get("content"))
    return bool(found) and found[0].startswith(CODEX_SUMMARY_INTRO)


def _message(item: dict[str, Any]) -> dict[str, Any]:
    """One response item as a message in the core's Anthropic shape."""
    if is_output(item):
        block = {
            "type": "tool_result",
            "tool_use_id": item["call_id"],
            "content": item.get("output"),
        }
        return {"role": "user", "content": [block]}
    if is_call(item):
        return {"role": "assistant", "content": [tool_use(item)]}
    if _is_compaction(item):  # sent again as it is, read by the model alone: kept, never summarized
        return {"role": "system", "content": [{"type": "text", "text": item["encrypted_content"]}]}
    if item["type"] == "reasoning":
        summary = item.get("summary")
        found = texts(summary) if isinstance(summary, list) else []
        return {"role": "assistant", "content": [{"type": "reasoning", "text": "\n".join(found)}]}
    role = "system" if _side(item) == "system" else item["role"]
    content = item.get("content")
    if isinstance(content, list):
        # an image part is the item's own (so the estimate counts it and a marker replaces it)
        blocks = [
            {"type": "text", "text": part["text"]} if has_text(part) else part
            for part in content
            if isinstance(part, dict)
        ]
        return {"role": role, "content": blocks}
    return {"role": role, "content": content if isinstance(content, str) else None}


def _input_text(text: str) -> dict[str, str]:
    return {"type": "input_text", "text": text}


# --- the view ------------------------------------------------------------------------------------


def _entry(index: int, part: int, side: str) -> int:
    """A message of the view in one number: its record, which message of it, its side."""
    return index << 27 | part << 3 | _SIDES.index(side)  # up to 16M messages a record


def _side_of(entry: int) -> int:
    return entry & 7


def _rolled_back(history: array, turns: int) -> array:
    """The history without its newest ``turns`` user turns (each from a user message on)."""
    starts = [number for number, entry in enumerate(history) if _side_of(entry) == _USER]
    if turns <= 0 or not starts:
        return history
    return history[: starts[-min(turns, len(starts))]]


def _grouped(entries: array) -> ViewMessages:
    """View messages: consecutive assistant-side items are one, so are consecutive outputs."""
    view = ViewMessages()
    previous = None
    for entry in entries:
        side = _side_of(entry)
        view.add_piece(
            entry >> 27, entry >> 3 & 0xFFFFFF, join=side in _JOINED and side == previous
        )
        previous = side
    return view


def _rollback_turns(payload: dict[str, Any]) -> int:
    turns = payload.get("num_turns")
    return turns if isinstance(turns, int) and not isinstance(turns, bool) else 0


# --- UI copies -----------------------------------------------------------------------------------


def _copy_holders(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """The dicts of an event payload that may hold a copy of a tool's output."""
    item = payload.get("item")
    if payload.get("type") in _ITEM_EVENTS and isinstance(item, dict):
        return [item]
    return [payload]


def _copied_call(holder: dict[str, Any], payload: dict[str, Any]) -> Any:
    return holder.get("id") if holder is not payload else payload.get("call_id")


def _copied_calls(payload: dict[str, Any]) -> tuple[Any, ...]:
    calls = []
    for holder in _copy_holders(payload):
        call = _copied_call(holder, payload)
        if isinstance(call, str) and any(key in holder for key in _OUTPUT_KEYS):
            calls.append(call)
    return tuple(calls)


# --- full compaction -----------------------------------------------------------------------------


def _earlier_compactions(compaction: Compaction) -> list[dict[str, Any]]:
    """The encrypted compaction items of the view, as they are in the file: what Codex's model
    summarized before, which the new summary cannot replace (it cannot read them)."""
    items: list[dict[str, Any]] = []
    for message in compaction.view:
        for index, part in message.pieces():
            tag = compaction.infos[index].tag
            if isinstance(tag, Tag) and part is not None and tag.sides[part] == "compaction":
                items.append(_conversation_items(compaction.read(index))[part])
    return items


def _pending_items(compaction: Compaction) -> list[dict[str, Any]]:
    """The response items of the pending turn, in view order, as they are in the file."""
    items: list[dict[str, Any]] = []
    for record, part in compaction.pending:
        conversation = _conversation_items(record)
        items.extend(conversation if part is None else [conversation[part]])
    return [item for item in items if not item.get("summary")]


def _next_ordinal(compaction: Compaction) -> int | None:
    """The ordinal of the next line, if the rollout numbers its lines (Codex 0.169 does).

    The view's last record has one; each line after it in the file takes the next number.
    """
    last = compaction.last or {}
    ordinal = last.get("ordinal")
    if not isinstance(ordinal, int) or isinstance(ordinal, bool) or not compaction.view:
        return None
    lines_after = len(compaction.infos) - 1 - compaction.view[-1].records[-1]
    return ordinal + lines_after + 1


# --- sessions on this machine --------------------------------------------------------------------


def _is_rollout(path: Path, sessions: Path) -> bool:
    dated = all(folder.isdigit() for folder in path.relative_to(sessions).parts[:3])
    return dated and _ROLLOUT_NAME.fullmatch(path.name) is not None and path.is_file()


def _session_meta(path: Path) -> dict[str, Any]:
    """The payload of the file's first record, if it is the session_meta."""
    record = first_record(path)
    if record.get("type") == "session_meta":
        payload = record.get("payload")
        return payload if isinstance(payload, dict) else {}
    return {}


def _id_from_name(path: Path) -> str:
    # rollout-YYYY-MM-DDThh-mm-ss-<id>.jsonl
    stem = path.stem.removeprefix("rollout-")
    return stem[20:] if len(stem) > 20 and stem[10] == "T" else stem
