"""One conversation through one command: what the library, the CLI and batch workers all call.

``run`` takes a frozen ``Job`` (plain data, so it can cross to a worker process), a parsed
conversation and a ``Context``, and returns an ``Outcome``: the new conversation, whether anything
changed, and the figures worth reporting. The input conversation is never modified.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from .errors import ProviderError
from .estimate import estimate
from .formats import Conversation
from .full import find_pending_turn, full_compact, has_source
from .micro import MicroResult, micro_compact
from .providers.base import Summarizer
from .settings import Settings
from .snapshots import DEFAULT_SESSION, SnapshotStore
from .status import Status

Command = Literal["micro", "full", "auto"]


@dataclass(frozen=True)
class Job:
    command: Command = "micro"
    settings: Settings = field(default_factory=Settings)
    measure: bool = False  # estimate before and after, for statistics


@dataclass(frozen=True)
class Outcome:
    conversation: Conversation
    changed: bool
    micro: MicroResult = field(default_factory=lambda: MicroResult(0, 0))
    full: Status = Status.NOT_RUN
    error: ProviderError | None = None  # why the summary failed
    cut_off: ProviderError | None = None  # the summary kept stopped at max_tokens
    over_threshold: bool = False  # auto: the result is still too big, though nothing failed
    tokens_before: int | None = None
    tokens_after: int | None = None
    snapshots: tuple[Path, ...] = ()  # snapshots already taken of this input and its result


@dataclass(frozen=True)
class Context:
    """What a run may use besides the conversation: a summarizer and where snapshots go.

    Without a provider, summaries are written by the built-in extractive one.
    """

    provider: Summarizer | None = None
    snapshots: SnapshotStore | None = None
    session_id: str = DEFAULT_SESSION


def measure(conversation: Conversation, compat: bool = False) -> int:
    return estimate(conversation.messages, conversation.system, compat)


def run(job: Job, conversation: Conversation, context: Context = Context()) -> Outcome:
    compat = job.settings.compat
    before = measure(conversation, compat) if job.measure else None
    if job.command == "micro":
        outcome = _micro(job, conversation)
    elif job.command == "full":
        outcome = _full(job, conversation, context)
    else:
        outcome = _auto(job, conversation, context)
    if job.measure:
        after = outcome.tokens_after
        if after is None:
            after = measure(outcome.conversation, compat)
        outcome = replace(outcome, tokens_before=before, tokens_after=after)
    return outcome


def preview(job: Job, conversation: Conversation) -> Outcome:
    """What ``run`` would do, with no provider call and no snapshot (``--dry-run``).

    Micro compaction is done for real (it is cheap and exact); a full compaction that would be
    attempted is reported as WOULD_RUN.
    """
    outcome = _micro(job, conversation)
    if job.command == "micro":
        return outcome
    compat = job.settings.compat
    if job.command == "auto" and measure(outcome.conversation, compat) <= job.settings.threshold:
        return outcome
    pending = find_pending_turn(conversation.messages, compat)
    if not has_source(conversation.messages, pending):
        return replace(outcome, full=Status.NOTHING)
    return replace(outcome, changed=True, full=Status.WOULD_RUN)


def default_provider() -> Summarizer:
    from .providers.extractive import ExtractiveSummarizer

    return ExtractiveSummarizer()


def _micro(job: Job, conversation: Conversation) -> Outcome:
    messages, result = micro_compact(conversation.messages, job.settings)
    return Outcome(conversation.with_messages(messages), result.truncated > 0, result)


def _full(job: Job, conversation: Conversation, context: Context) -> Outcome:
    full = full_compact(
        conversation.messages,
        context.provider or default_provider(),
        job.settings,
        context.snapshots,
        context.session_id,
    )
    return Outcome(
        conversation.with_messages(full.messages),
        changed=full.status == Status.COMPACTED,
        full=full.status,
        error=full.error,
        cut_off=full.cut_off,
        snapshots=full.snapshots,
    )


def _auto(job: Job, conversation: Conversation, context: Context) -> Outcome:
    settings = job.settings
    micro_outcome = _micro(job, conversation)
    tokens = measure(micro_outcome.conversation, settings.compat)
    if tokens <= settings.threshold:
        return replace(micro_outcome, tokens_after=tokens)
    full = _full(job, conversation, context)
    if full.full == Status.COMPACTED:
        outcome = replace(full, micro=micro_outcome.micro)
    else:  # the summary failed (or there was nothing to summarize): micro's result stands
        outcome = replace(micro_outcome, full=full.full, error=full.error, snapshots=full.snapshots)
        if outcome.error is not None:
            return replace(outcome, tokens_after=tokens)  # the failure is the news
    if outcome.full == Status.COMPACTED:
        tokens = measure(outcome.conversation, settings.compat)
    return replace(outcome, over_threshold=tokens > settings.threshold, tokens_after=tokens)
