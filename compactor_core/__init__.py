"""ctxpack's core: compact an LLM agent's conversation, from Python, with no CLI in sight.

>>> from compactor_core import Settings, compact, estimate_tokens
>>> messages = [
...     {"role": "user", "content": "list the files"},
...     {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "bash",
...                                        "input": {"command": "ls"}}]},
...     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
...                                   "content": "a.py b.py"}]},
... ]
>>> compact(messages, "micro", Settings(keep_recent=0))[2]["content"][0]["content"]
'[truncated: bash result, 9 chars]'
>>> messages[2]["content"][0]["content"]  # the input is never modified
'a.py b.py'
>>> estimate_tokens(messages)
14

The submodules keep their names (``compactor_core.estimate``, ``.micro``, ``.full``): the
functions exported here never shadow them. Messages are plain dicts (unknown keys survive);
``parse`` and ``dump`` read and write the three input shapes. ``compact`` is the one entry point;
``run`` with a ``Job`` returns the whole ``Outcome`` (what was done, the summary's status, the
snapshots taken). Errors are one tree, rooted at ``CtxpackError`` (see
:mod:`compactor_core.errors`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    from .estimate import breakdown
    from .estimate import estimate as estimate_tokens
    from .formats import Conversation, Message, dump, parse
    from .pipeline import Command, Context, Job, Outcome, run
    from .providers.base import Summarizer, SummaryRequest
    from .settings import Settings
    from .snapshots import SnapshotStore
    from .status import Status

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
            "SummaryCutOff",
        )
    },
    "breakdown": ("estimate", "breakdown"),
    "estimate_tokens": ("estimate", "estimate"),
    **{name: ("formats", name) for name in ("Conversation", "Message", "dump", "parse")},
    **{name: ("pipeline", name) for name in ("Command", "Context", "Job", "Outcome", "run")},
    "Summarizer": ("providers.base", "Summarizer"),
    "SummaryRequest": ("providers.base", "SummaryRequest"),
    "Settings": ("settings", "Settings"),
    "SnapshotStore": ("snapshots", "SnapshotStore"),
    "Status": ("status", "Status"),
}

__all__ = [
    "Command",
    "ConfigError",
    "Context",
    "Conversation",
    "CtxpackError",
    "InputError",
    "InputUnreadable",
    "Job",
    "Message",
    "Outcome",
    "OutputError",
    "ProviderError",
    "RetryableProviderError",
    "Settings",
    "SnapshotStore",
    "Status",
    "Summarizer",
    "SummaryCutOff",
    "SummaryRequest",
    "breakdown",
    "compact",
    "dump",
    "estimate_tokens",
    "parse",
    "run",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = _EXPORTS[name]
    return getattr(importlib.import_module(f"{__name__}.{module}"), attribute)


def compact(
    conversation: list[Message],
    mode: Command,
    settings: Settings | None = None,
    provider: Summarizer | None = None,
    snapshots: SnapshotStore | None = None,
    session_id: str = "default",
) -> list[Message]:
    """The compacted conversation (a new list; ``conversation`` is left as it was).

    ``mode`` is ``"micro"``, ``"full"`` or ``"auto"``. ``provider`` writes summaries (default:
    the built-in extractive one, offline). A summary that fails leaves the conversation as it
    came (micro's result for ``auto``); use ``run`` to learn why.
    """
    from .formats import Conversation
    from .pipeline import Context, Job, run
    from .settings import Settings

    job = Job(mode, settings or Settings())
    context = Context(provider, snapshots, session_id)
    return run(job, Conversation(conversation), context).conversation.messages
