"""The one table of agent formats, and detection from a file's first records (SPEC §8.1).

A new agent: write its module (an ``AgentFormat`` subclass) and add one line to ``_MODULES``.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import Any

from ..errors import InputError
from .base import AgentFormat

# --format value -> "module:class"; modules are imported only when a file needs them.
_MODULES = {
    "claude-code": "compactor_core.agents.claude_code:ClaudeCode",
    "codex": "compactor_core.agents.codex:Codex",
}
MESSAGES = "messages"
AUTO = "auto"
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
