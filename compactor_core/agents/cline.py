"""Cline sessions: ``~/.cline/data/sessions/<id>/<id>.messages.json`` (``$CLINE_DIR`` stands for
``~/.cline``), beside ``<id>.json`` (provider, model, ``cwd``, ``status``, ``pid``).

One JSON document, written again whole on every change, two spaces deep: ``{"version": 1,
"updated_at", "agent", "sessionId", "origin", "messages": […], "system_prompt"}``. Its records are
the messages, in the Anthropic shape with an ``id`` (and ``ts``, ``modelInfo``, ``metrics``,
``metadata``): a user's text wrapped in ``<user_input mode="act">…</user_input>`` (sent without
it), ``tool_use`` blocks, one user message per ``tool_result`` block (``content``: a list such as
``[{query, result, success}]``, sent as its JSON text). A message whose ``metadata.displayOnly``
is set (an error shown to the user) is never sent.

What Cline sends when it resumes (``session/load`` over ACP): the system prompt and every
message of the document. Its own compaction keeps the document whole and writes the compacted
messages to another file (``<id>.compaction.json``, tied to the document by a hash of the
messages it summarized: any change to them unties it). A summary appended to the document would
be sent after everything it summarizes, so a full compaction here writes the document with
Cline's compacted messages as its history: the summary as Cline writes it (a user message,
``metadata.kind`` ``compaction_summary``, text "Context summary:\\n\\n…"), then the pending turn's
messages as they were. The original is kept in the snapshot store; ``restore`` puts it back.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import orjson

from ..conversation.formats import Message
from ..session_files.base import (
    Compaction,
    Record,
    RecordedCall,
    RecordInfo,
    SessionFile,
    ViewMessage,
    with_results_joined,
)
from ..session_files.json_document import read_document
from ..session_files.stores import DOCUMENT, Result, SessionStore, StoredFormat
from ..session_files.usage import calls_of, token_count

if TYPE_CHECKING:
    from ..settings import RunSettings

MESSAGES = "messages"
RESULTS = "results"
SUMMARY_KIND = "compaction_summary"
SUMMARY_PREFIX = "Context summary:\n\n"
_USER_INPUT = re.compile(r'<user_input mode="[^"]*">(.*)</user_input>', re.DOTALL)
# Statuses in ``<id>.json`` of a session whose process may still write it.
_LIVE = frozenset({"running", "idle", "pending"})
_SENT_BLOCKS = ("text", "tool_use", "tool_result", "image", "thinking", "redacted_thinking")


class ClineStore(SessionStore):
    """A ``<id>.messages.json``: its messages, and the document written again around them."""

    def __init__(self, data: bytes, label: str, path: Path | None) -> None:
        self.data = data
        self.label = label
        self.path = path
        self.document = read_document(data, MESSAGES, label) if data.strip() else None
        self.records = self.document.records if self.document is not None else []

    def result(self, result: Result) -> Iterator[bytes]:
        """The document again: a compaction's records become its history (see the module)."""
        if self.document is None:
            yield self.data
            return
        records = list(result.appended) if result.appended else result.records
        yield from self.document.written(records, self._unchanged(records, result.changed))

    def original(self) -> Iterator[bytes]:
        yield self.data

    def busy(self, rules: RunSettings) -> str | None:
        """Cline's own word: ``<id>.json`` says a live process of its has the session (a word
        ``--force`` overrides: it may be stale)."""
        if self.path is None or rules.force:
            return None
        manifest = _manifest(self.path)
        status, pid = manifest.get("status"), manifest.get("pid")
        if status not in _LIVE or not isinstance(pid, int) or pid == os.getpid():
            return None
        if not _alive_cline(pid, Path(rules.proc)):
            return None
        return f"Cline process {pid} has it, status {status} in {self.path.parent.name}.json"

    def _unchanged(self, records: list[Record], changed: frozenset[int]) -> dict[int, int]:
        """Which new records are original messages, as they were (by id, else by place)."""
        originals = self.records
        places = {
            record.get("id"): place
            for place, record in enumerate(originals)
            if isinstance(record, dict) and isinstance(record.get("id"), str)
        }
        same: dict[int, int] = {}
        for position, record in enumerate(records):
            key = record.get("id") if isinstance(record, dict) else None
            place = places.get(key, position) if isinstance(key, str) else position
            if place in changed or place >= len(originals):
                continue
            if originals[place] is record or originals[place] == record:
                same[position] = place
        return same


class Cline(StoredFormat):
    name = "cline"
    agent = "cline"
    home_variable = "CLINE_DIR"
    home_default = ".cline"
    kept_as = DOCUMENT
    store_type = ClineStore

    def recorded_usage(self, records: Iterable[tuple[int, Record]]) -> list[RecordedCall]:
        """Each assistant message's ``metrics``, at its ``ts``. ``inputTokens`` is the whole
        input, the cache's reads and writes in it, whatever the provider (Cline's SDK counts as
        the AI SDK does, and prices the input as ``inputTokens`` less the reads and writes)."""
        return calls_of(records, _usage)

    def claims_document(self, value: Any) -> bool:
        return (
            isinstance(value, dict)
            and isinstance(value.get(MESSAGES), list)
            and isinstance(value.get("sessionId"), str)
            and "version" in value
            and ("agent" in value or "origin" in value)
        )

    def open_store(self, handle: BinaryIO, label: str, session: str | None) -> ClineStore:
        return ClineStore(handle.read(), label, Path(handle.name) if _named(handle) else None)

    def index(self, record: Record, info: RecordInfo) -> None:
        role = record.get("role")
        info.kind = role if isinstance(role, str) else "untyped"
        info.id = record.get("id") if isinstance(record.get("id"), str) else None
        if _is_results(record):
            info.tag = RESULTS

    def messages(self, record: Record) -> list[Message]:
        role = record.get("role")
        metadata = record.get("metadata")
        if role not in ("user", "assistant"):
            return []
        if isinstance(metadata, dict) and metadata.get("displayOnly") is True:
            return []
        return [{"role": role, "content": _sent(record.get("content"), role)}]

    def view(self, infos: Sequence[RecordInfo]) -> list[ViewMessage]:
        """Every message, in order; the results of one reply (a message each) are one turn."""
        return with_results_joined(infos, range(len(infos)), RESULTS)

    def store(self, record: Record, messages: list[Message], truncated: dict[Any, str]) -> None:
        """Only tool results change: each result block takes its new content."""
        content = record.get("content")
        if not isinstance(content, list) or not messages:
            return
        new = {
            block.get("tool_use_id"): block.get("content")
            for block in messages[0].get("content") or ()
            if _is(block, "tool_result")
        }
        for block in content:
            if _is(block, "tool_result") and block.get("tool_use_id") in truncated:
                block["content"] = new.get(block.get("tool_use_id"), block.get("content"))

    def compaction_records(self, compaction: Compaction) -> list[Record]:
        """Cline's summary message, then the pending turn's messages as they are."""
        moment = int(compaction.now.timestamp() * 1000)
        pending = [record for record, _ in compaction.pending]
        # the user's requests the summary stands for (Cline counts them: ``userRunSpan``)
        requests = [
            info for info in compaction.infos if info.role == "user" and info.tag != RESULTS
        ]
        pending_requests = [record for record in pending if _is_request(record)]
        runs = len(requests) - len(pending_requests)
        summary = {
            "id": compaction.new_id() if compaction.new_id else str(uuid.uuid4()),
            "role": "user",
            "content": [{"type": "text", "text": SUMMARY_PREFIX + compaction.summary}],
            "ts": moment,
            "metadata": {
                "kind": SUMMARY_KIND,
                "displayRole": "system",
                "userRunSpan": max(runs, 1),
                "summary": compaction.summary,
                "details": {"readFiles": [], "modifiedFiles": []},
                "tokensBefore": compaction.tokens_before,
                "generatedAt": moment,
            },
        }
        return [summary, *pending]

    def beside_a_session(self, path: Path) -> bool:
        """``<id>.json`` (the session's status, provider, paths) beside ``<id>.messages.json``."""
        messages = path.with_name(path.name.removesuffix(".json") + ".messages.json")
        return not path.name.endswith(".messages.json") and messages.is_file()

    def session_files(self, home: Path) -> Iterator[SessionFile]:
        for path in sorted((home / "data" / "sessions").glob("*/*.messages.json")):
            session_id = path.name.removesuffix(".messages.json")
            cwd = _manifest(path).get("cwd")
            yield SessionFile(path, session_id, cwd if isinstance(cwd, str) else path.parent.name)


def _sent(content: Any, role: str) -> Any:
    """A message's content as Cline sends it, in the core's shape."""
    if isinstance(content, str):
        return _without_wrapper(content) if role == "user" else content
    if not isinstance(content, list):
        return content
    blocks = []
    for block in content:
        if not isinstance(block, dict) or block.get("type") not in _SENT_BLOCKS:
            continue
        kind = block["type"]
        if kind == "text":
            text = block.get("text")
            blocks.append(
                {"type": "text", "text": _without_wrapper(text) if role == "user" else text}
            )
        elif kind == "tool_use":
            blocks.append(
                {
                    "type": "tool_use",
                    "id": block.get("id"),
                    "name": block.get("name"),
                    "input": block.get("input"),
                }
            )
        elif kind == "tool_result":
            blocks.append(
                {
                    "type": "tool_result",
                    "tool_use_id": block.get("tool_use_id"),
                    "content": _result_text(block.get("content")),
                }
            )
        elif kind == "thinking":
            blocks.append({"type": "text", "text": str(block.get("thinking", ""))})
        else:
            blocks.append({"type": kind})
    return blocks


def _result_text(content: Any) -> Any:
    """A result as the model reads it: a string or text blocks as they are; anything else
    (Cline's ``[{query, result, success}]``) as its JSON text, as ``JSON.stringify`` writes it."""
    if isinstance(content, str) or content is None:
        return content
    if isinstance(content, list) and all(_is(block, "text") for block in content):
        return content
    return json.dumps(content, ensure_ascii=False, separators=(",", ":"))


def _without_wrapper(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    match = _USER_INPUT.fullmatch(text)
    return match.group(1) if match else text


def _is_results(record: Record) -> bool:
    """A user message holding tool results only (one result of a reply, as Cline writes them)."""
    content = record.get("content")
    if record.get("role") != "user" or not isinstance(content, list) or not content:
        return False
    return all(_is(block, "tool_result") for block in content)


def _is_request(record: Record) -> bool:
    return record.get("role") == "user" and not _is_results(record)


def _is(block: Any, kind: str) -> bool:
    return isinstance(block, dict) and block.get("type") == kind


def _named(handle: BinaryIO) -> bool:
    return isinstance(getattr(handle, "name", None), str)


def _manifest(messages_file: Path) -> dict[str, Any]:
    """The session's ``<id>.json`` beside its messages; {} if there is none to read."""
    stem = messages_file.name.removesuffix(".messages.json")
    try:
        value = orjson.loads((messages_file.parent / f"{stem}.json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def _alive_cline(pid: int, proc: Path) -> bool:
    """Whether process ``pid`` runs and is a Cline (a pid reused by another program is not)."""
    try:
        command = (proc / str(pid) / "cmdline").read_bytes()
        state = (proc / str(pid) / "stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z" and b"cline" in command.lower()


def _usage(record: Record) -> dict[str, Any] | None:
    metrics, model = record.get("metrics"), record.get("modelInfo")
    if record.get("role") != "assistant" or not isinstance(metrics, dict):
        return None
    return {
        "time": record.get("ts"),
        "model": model.get("id") if isinstance(model, dict) else None,
        "prompt": metrics.get("inputTokens"),
        "read": metrics.get("cacheReadTokens"),
        "written": metrics.get("cacheWriteTokens"),
        "output": token_count(metrics.get("outputTokens")),
    }
