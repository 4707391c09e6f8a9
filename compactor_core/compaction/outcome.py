"""What a run did: ``Outcome`` for one compaction, ``Report`` for one input (file, object, stdin).

Both are small frozen data, the same for a conversation of messages and for an agent's session
file, so every caller (the library, the CLI, batch workers, Dask workers) reads one vocabulary.
A report crosses back from a worker process cheaply: it never holds the conversation.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from .status import Status

if TYPE_CHECKING:
    from ..conversation.formats import Conversation
    from ..errors import CtxpackError, ProviderError


@dataclass(frozen=True)
class Outcome:
    """What micro, full or auto compaction did to one conversation."""

    changed: bool = False  # the result differs from the input
    truncated: int = 0  # tool results replaced by a marker
    images: int = 0  # images replaced by a marker (micro --images, rescue)
    full: Status = Status.NOT_RUN  # what became of the summary step
    error: ProviderError | None = None  # why the summary failed
    cut_off: ProviderError | None = None  # the summary kept stopped at max_tokens
    over_threshold: bool = False  # auto: the result is still too big, though nothing failed
    tokens_before: int | None = None  # None: not measured
    tokens_after: int | None = None
    snapshots: tuple[str, ...] = ()  # snapshots already taken of this input and its result
    repairs: tuple[str, ...] = ()  # rescue: a line for each repair made
    left: tuple[str, ...] = ()  # rescue: a line for each problem it could not repair
    # The compacted conversation, for a conversation of messages compacted in memory; None for
    # a session file (its result is written as a stream) and in reports.
    conversation: Conversation | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Report:
    """What became of one input."""

    label: str  # how messages name the input
    outcome: Outcome = field(default_factory=Outcome)
    error: CtxpackError | None = None  # the input failed: unreadable, invalid, not writable, …
    written: str | None = None  # the folder a file was written into (its fsync may wait)
    warning: str | None = None  # done, but something beside it went wrong (an agent's index)
    skipped: bool = False  # its output was already current (a re-run on object storage)
    copied: str | None = None  # why its original was copied into the snapshots, not linked

    @classmethod
    def of(cls, label: str, outcome: Outcome, **details: Any) -> Report:
        """The report of a done input; its outcome without the conversation."""
        return cls(label, replace(outcome, conversation=None), **details)

    @property
    def changed(self) -> bool:
        return self.outcome.changed and self.error is None
