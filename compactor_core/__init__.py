"""ctxpack's core: compact an LLM agent's conversation, from Python, with no CLI in sight.

>>> from compactor_core import Settings, compact, estimate_tokens
>>> messages = [
...     {"role": "user", "content": "list the files"},
...     {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "bash",
...                                        "input": {"command": "ls"}}]},
...     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
...                                   "content": "a.py b.py c.py d.py e.py f.py g.py h.py i.py"}]},
... ]
>>> compact(messages, "micro", Settings(keep_recent=0))[2]["content"][0]["content"]
'[truncated: bash result, 44 chars]'
>>> messages[2]["content"][0]["content"]  # the input is never modified
'a.py b.py c.py d.py e.py f.py g.py h.py i.py'
>>> estimate_tokens(messages)
24

The submodules keep their names (``compactor_core.compaction.estimate``, ``.micro``, ``.full``): the
functions exported here never shadow them. Messages are plain dicts (unknown keys survive);
``parse`` and ``dump`` read and write the three input shapes. ``compact`` compacts a list of
messages and warns (``CompactionWarning``) when a summary failed or was cut off; ``run`` with
a ``RunSettings`` returns the whole ``Outcome``; ``compact_file`` does any input file — a
conversation of messages or an agent's session file — in place or to another file, and returns
its ``Report``; ``provider`` builds a summarizer by name. Errors are one tree, rooted at
``CtxpackError`` (see :mod:`compactor_core.errors`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .compaction.estimate import breakdown
    from .compaction.estimate import estimate as estimate_tokens
    from .compaction.outcome import Outcome, Report
    from .compaction.pipeline import run
    from .compaction.status import Status
    from .conversation.formats import Conversation, Message, dump, parse
    from .errors import (
        ConfigError,
        CtxpackError,
        InputError,
        InputUnreadable,
        OutputError,
        ProviderError,
        RetryableProviderError,
        SummaryCutOff,
    )
    from .library import CompactionWarning, compact, compact_file
    from .providers.base import Summarizer, SummaryRequest
    from .providers.registry import provider
    from .settings import Command, RunSettings, Settings
    from .snapshots.local_store import SnapshotStore

# Public name -> (module, name there). Imported on first use: the CLI imports this package at
# start-up (for its defaults) and must not pay for the whole core.
_EXPORTS = {
    **{
        name: ("errors", name)
        for name in (
            "ConfigError",
            "CtxpackError",
            "InputError",
            "InputUnreadable",
            "OutputError",
            "ProviderError",
            "RetryableProviderError",
            "RunSettings",
            "SummaryCutOff",
        )
    },
    "breakdown": ("compaction.estimate", "breakdown"),
    "estimate_tokens": ("compaction.estimate", "estimate"),
    **{
        name: ("conversation.formats", name)
        for name in ("Conversation", "Message", "dump", "parse")
    },
    **{name: ("library", name) for name in ("CompactionWarning", "compact", "compact_file")},
    **{name: ("compaction.outcome", name) for name in ("Outcome", "Report")},
    "run": ("compaction.pipeline", "run"),
    "provider": ("providers.registry", "provider"),
    **{name: ("settings", name) for name in ("Command", "RunSettings", "Settings")},
    "Summarizer": ("providers.base", "Summarizer"),
    "SummaryRequest": ("providers.base", "SummaryRequest"),
    "SnapshotStore": ("snapshots.local_store", "SnapshotStore"),
    "Status": ("compaction.status", "Status"),
}

__all__ = [
    "Command",
    "CompactionWarning",
    "ConfigError",
    "Conversation",
    "CtxpackError",
    "InputError",
    "InputUnreadable",
    "Message",
    "Outcome",
    "OutputError",
    "ProviderError",
    "Report",
    "RetryableProviderError",
    "RunSettings",
    "Settings",
    "SnapshotStore",
    "Status",
    "Summarizer",
    "SummaryCutOff",
    "SummaryRequest",
    "breakdown",
    "compact",
    "compact_file",
    "dump",
    "estimate_tokens",
    "parse",
    "provider",
    "run",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = _EXPORTS[name]
    return getattr(importlib.import_module(f"{__name__}.{module}"), attribute)
