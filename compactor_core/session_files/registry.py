"""The one table of agent formats, and detection from a file's first records (SPEC §8.1).

A new agent: write its module (an ``AgentFormat`` subclass) and add one line to ``_MODULES``.
A format whose sessions are one JSON document or rows of a database (``stores.StoredFormat``)
is told from the document it is, or from the tables of the database.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import orjson

from .. import defaults
from ..conversation.formats import UTF8_BOM
from ..disk.database_names import database_part, is_database_file, session_name
from ..errors import InputError
from .records import lines, parse_fast
from .stores import DATABASE, DOCUMENT, StoredFormat, is_database, peek

if TYPE_CHECKING:  # the formats' base class is imported with the first format module
    from .base import AgentFormat

# --format value -> "module:class"; modules are imported only when a file needs them.
_MODULES = {
    "claude-code": "compactor_core.agents.claude_code:ClaudeCode",
    "codex": "compactor_core.agents.codex:Codex",
    "gemini-cli": "compactor_core.agents.gemini_cli:GeminiCli",
    "qwen-code": "compactor_core.agents.qwen_code:QwenCode",
    "pi": "compactor_core.agents.pi:Pi",
    "copilot-cli": "compactor_core.agents.copilot_cli:CopilotCli",
    "cline": "compactor_core.agents.cline:Cline",
    "opencode": "compactor_core.agents.opencode:OpenCode",
}
MESSAGES = defaults.MESSAGES_FORMAT
AUTO = defaults.AUTO_FORMAT
FORMAT_NAMES = (MESSAGES, *_MODULES)
SNIFF_RECORDS = 20  # how many of the first records detection looks at
_SNIFF_BYTES = 4096
# A session document names its session near its start; a request envelope does not.
_DOCUMENT_HINT = b'"sessionId"'


@cache
def get(name: str) -> AgentFormat:
    """The format module for a --format value; InputError for an unknown one."""
    if name not in _MODULES:
        raise InputError(f"unknown format {name!r}: known formats are {', '.join(FORMAT_NAMES)}")
    module, _, attribute = _MODULES[name].partition(":")
    return getattr(importlib.import_module(module), attribute)()


def agent_formats() -> list[AgentFormat]:
    return [get(name) for name in _MODULES]


def detect_records(records: list[Any]) -> str | None:
    """The agent format the first valid records belong to, or None (not an agent file).

    The first record that a format claims decides; files mixing formats are not told apart
    here (``check`` reports the records of another format).
    """
    formats = agent_formats()
    for record in records[:SNIFF_RECORDS]:
        for agent_format in formats:
            if agent_format.claims(record):
                return agent_format.name
    return None


def not_a_session(source: str) -> InputError:
    return InputError(
        f"{source}: not a conversation ctxpack knows: expected one of the formats "
        f"{', '.join(FORMAT_NAMES)} (see format=NAME)"
    )


def detect(handle: BinaryIO, requested: str, source: str) -> AgentFormat | None:
    """The agent format of the file, or None for a conversation of messages (SPEC §6).

    ``requested`` is the --format value. With ``auto``, the first records decide; a file whose
    first record is an object that is neither a message nor an agent's record is refused with
    one line naming the formats ctxpack knows.
    """
    if requested == MESSAGES:
        return None
    if requested != AUTO:
        return get(requested)
    head = _first_records(handle)
    name = detect_records(head)
    if name is not None:
        return get(name)
    if len(head) > 1 and not _could_be_messages(head[0]):  # one object: the core says why
        raise not_a_session(source)
    return None


def detect_stored(handle: BinaryIO, requested: str, source: str) -> StoredFormat | None:
    """The format of a session kept in one JSON document or a database, or None.

    With ``auto``: a SQLite database is one of a database format's (or refused), a JSON
    document that one of the document formats claims is that format's; anything else is for
    the JSONL formats and the messages to tell.
    """
    if requested == MESSAGES:
        return None
    if requested != AUTO:
        chosen = get(requested)
        return chosen if isinstance(chosen, StoredFormat) else None
    if is_database(handle):
        name = getattr(handle, "name", None)
        found = _database_format(Path(name)) if isinstance(name, str) else None
        if found is None:
            raise not_a_session(source)
        return found[0]
    value = _one_document(handle)
    if value is None:
        return None
    documents = [
        f for f in agent_formats() if isinstance(f, StoredFormat) and f.kept_as == DOCUMENT
    ]
    return next((f for f in documents if f.claims_document(value)), None)


def beside_a_session(path: Path) -> bool:
    """Whether an agent keeps ``path`` beside one of its sessions (Cline's ``<id>.json``)."""
    return any(agent_format.beside_a_session(path) for agent_format in agent_formats())


def stored_sessions(path: Path) -> list[str] | None:
    """The sessions of a database file a format knows, oldest first; None for any other file
    (a batch does each session of a database as an input of its own)."""
    found = _database_format(path)
    return found[1] if found else None


def database_of(name: str) -> tuple[StoredFormat, Path, str | None] | None:
    """For a database of sessions (or ``FILE#SESSION``, one of them): its format, its file
    and the session named (None: the database itself); None for any other name."""
    file, session = database_part(name)
    path = Path(file)
    found = _database_format(path)
    return (found[0], path, session) if found else None


def _database_format(path: Path) -> tuple[StoredFormat, list[str]] | None:
    """The database format whose sessions the file holds, and those sessions."""
    if not is_database_file(path):
        return None
    for agent_format in agent_formats():
        if isinstance(agent_format, StoredFormat) and agent_format.kept_as == DATABASE:
            sessions = agent_format.sessions_in(path)
            if sessions:
                return agent_format, sessions
    return None


def each_session(names: Sequence[str]) -> list[str]:
    """The inputs the names stand for: a database of sessions stands for each of them
    (``FILE#SESSION``), any other name for itself."""
    inputs: list[str] = []
    for name in names:
        sessions = stored_sessions(Path(name))
        inputs.extend([session_name(name, s) for s in sessions] if sessions else [name])
    return inputs


def _one_document(handle: BinaryIO) -> Any:
    """The input parsed as one JSON object, when it looks like a session document: an object
    laid out over many lines (its first line is its opening brace, unlike a JSONL file's),
    naming its session near its start; None otherwise."""
    head = peek(handle, _SNIFF_BYTES).removeprefix(UTF8_BOM)
    first_line = head.lstrip().split(b"\n", 1)[0].strip()
    if first_line != b"{" or _DOCUMENT_HINT not in head:
        return None
    data = handle.read().removeprefix(UTF8_BOM)
    handle.seek(0)
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _first_records(handle: BinaryIO) -> list[Any]:
    records = []
    for line in lines(handle):
        record, _ = parse_fast(line)
        if record is not None:
            records.append(record)
        if len(records) >= SNIFF_RECORDS or line.number >= 4 * SNIFF_RECORDS:
            break
    handle.seek(0)
    return records


def _could_be_messages(first: dict[str, Any]) -> bool:
    # a JSONL message has a role; a request envelope (one pretty-printed object) has messages
    return "role" in first or "messages" in first
