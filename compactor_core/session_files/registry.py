"""The one table of agent formats, and detection from a file's first records (SPEC §8.1).

A new agent: write its module (an ``AgentFormat`` subclass) and add one line to ``_MODULES``.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import TYPE_CHECKING, Any, BinaryIO

from .. import defaults
from ..errors import InputError
from .records import lines, parse_fast

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
}
MESSAGES = defaults.MESSAGES_FORMAT
AUTO = defaults.AUTO_FORMAT
FORMAT_NAMES = (MESSAGES, *_MODULES)
SNIFF_RECORDS = 20  # how many of the first records detection looks at


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
        f"{', '.join(FORMAT_NAMES)} (see --format)"
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
