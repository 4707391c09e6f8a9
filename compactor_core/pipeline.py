"""One conversation through one command: what the library, the CLI and batch workers all call.

``run`` takes a frozen ``Job`` (plain data, so it can cross to a worker process), a parsed
conversation and a ``Context``, and returns an ``Outcome``: the new conversation, whether anything
changed, and the figures worth reporting. The input conversation is never modified.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from . import language
from .cache_aware import compact_stably, decide, micro_in_batches
from .cache_policy import CACHE_AWARE, Timing, message_times
from .errors import ProviderError
from .estimate import estimate
from .formats import Conversation
from .full import FullResult, find_pending_turn, full_compact, has_source, rebuild
from .micro import MicroResult, mark_turns, micro_compact
from .providers.base import Summarizer, check_ready
from .settings import Settings
from .snapshots import DEFAULT_SESSION, Details, SnapshotStore
from .status import Status
from .tokenizers import counter

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

    Without a provider, summaries are written by the built-in extractive one. A full compaction
    that replaces the history keeps the input (``original``, its bytes as read) and the result in
    ``snapshots``. ``original`` is None for a file changed in place: the writer keeps that file
    itself (``files.replace_file``). ``source`` is the file read, if any.
    """

    provider: Summarizer | None = None
    snapshots: SnapshotStore | None = None
    session_id: str = DEFAULT_SESSION
    original: bytes | None = None
    source: Path | None = None


def measure(conversation: Conversation, settings: Settings) -> int:
    """The estimate by the settings' profile and tokenizer."""
    tokens = counter(settings.tokenizer)
    return estimate(conversation.messages, conversation.system, settings.compat, tokens)


def run(job: Job, conversation: Conversation, context: Context = Context()) -> Outcome:
    before = measure(conversation, job.settings) if job.measure else None
    if job.command == "micro":
        outcome = _micro(job, conversation)
    elif job.command == "full":
        outcome = _full(job, conversation, context)
    else:
        outcome = _auto(job, conversation, context)
    if job.measure:
        after = outcome.tokens_after
        if after is None:
            after = measure(outcome.conversation, job.settings)
        outcome = replace(outcome, tokens_before=before, tokens_after=after)
    return outcome


def preview(job: Job, conversation: Conversation) -> Outcome:
    """What ``run`` would do, with no provider call and no snapshot (``--dry-run``).

    Micro compaction is done for real (it is cheap and exact); a full compaction that would be
    attempted is reported as WOULD_RUN, its tokens after counted with the summary at its whole
    budget (``max_tokens``): the most the result would be, since no model is asked.
    """
    settings = job.settings
    if job.command == "auto" and settings.policy == CACHE_AWARE and not settings.compat:
        return _preview_cache_aware(job, conversation)
    before = measure(conversation, settings)
    outcome = _micro(job, conversation)
    after_micro = measure(outcome.conversation, settings)
    outcome = replace(outcome, tokens_before=before, tokens_after=after_micro)
    if job.command == "micro":
        return outcome
    if job.command == "auto" and after_micro <= settings.threshold:
        return outcome
    pending = find_pending_turn(conversation.messages, settings.compat)
    if not has_source(conversation.messages, pending):
        return replace(outcome, full=Status.NOTHING)
    lang = language.resolve(settings.lang, conversation.messages, settings.compat)
    frame = conversation.with_messages(rebuild(conversation.messages, pending, "", lang))
    most = measure(frame, settings) + settings.max_tokens
    return replace(
        outcome, changed=True, full=Status.WOULD_RUN, tokens_after=min(most, after_micro)
    )


def _preview_cache_aware(job: Job, conversation: Conversation) -> Outcome:
    """The cache-aware plan, its markers made; a summary in it counted at its whole budget."""
    settings = job.settings
    plan = decide(conversation.messages, settings, default_provider(), system=conversation.system)
    messages, micro = mark_turns(conversation.messages, settings, plan.marked)
    marked = conversation.with_messages(messages)
    full = Status.WOULD_RUN if plan.cuts else Status.NOT_RUN
    after = plan.tokens if plan.cuts else measure(marked, settings)
    before = measure(conversation, settings)
    changed = micro.truncated > 0 or bool(plan.cuts)
    return Outcome(marked, changed, micro, full, tokens_before=before, tokens_after=after)


def default_provider() -> Summarizer:
    from .providers.extractive import ExtractiveSummarizer

    return ExtractiveSummarizer()


def _micro(job: Job, conversation: Conversation) -> Outcome:
    if job.settings.min_gain and not job.settings.compat:  # --min-gain: markers in batches
        messages, result = micro_in_batches(conversation.messages, job.settings)
    else:
        messages, result = micro_compact(conversation.messages, job.settings)
    return Outcome(conversation.with_messages(messages), result.truncated > 0, result)


def _full(job: Job, conversation: Conversation, context: Context) -> Outcome:
    """Summarize; the input is kept before the model is called (SPEC §3.3), the result after."""
    compat = job.settings.compat
    pending = find_pending_turn(conversation.messages, compat)
    if not has_source(conversation.messages, pending):  # a no-op: no snapshot, no model call
        return Outcome(conversation, changed=False, full=Status.NOTHING)
    check_ready(context.provider)  # a missing API key: exit 78, before any snapshot
    taken = _keep_original(job, conversation, context)
    full = full_compact(conversation.messages, context.provider or default_provider(), job.settings)
    tokens_after = None
    if context.snapshots is not None and full.status == Status.COMPACTED:
        result = conversation.with_messages(full.messages)
        tokens_after, kept = _keep_result(job, result, context.snapshots, context)
        taken.append(kept)
    return _from_full(full, conversation, tuple(taken), tokens_after)


def _keep_original(job: Job, conversation: Conversation, context: Context) -> list[Path]:
    """The input as it came, kept before a summary is asked for (SPEC §3.3)."""
    store = context.snapshots
    if store is None or context.original is None:
        return []
    tokens = measure(conversation, job.settings)
    details = Details(conversation.shape, len(conversation.messages), tokens)
    return [store.save_original(context.session_id, context.original, details, context.source)]


def _keep_result(
    job: Job, result: Conversation, store: SnapshotStore, context: Context
) -> tuple[int, Path]:
    """The compacted result kept (SPEC §3.9), and its estimate."""
    tokens = measure(result, job.settings)
    path = store.save_result(
        context.session_id, result.messages, Details(tokens=tokens), context.source
    )
    return tokens, path


def _from_full(
    full: FullResult,
    conversation: Conversation,
    taken: tuple[Path, ...],
    tokens_after: int | None = None,
) -> Outcome:
    """The outcome of a full compaction; ``tokens_after``: the result's estimate, if made."""
    return Outcome(
        conversation.with_messages(full.messages),
        changed=full.status == Status.COMPACTED,
        full=full.status,
        error=full.error,
        cut_off=full.cut_off,
        tokens_after=tokens_after,
        snapshots=taken,
    )


def _auto(job: Job, conversation: Conversation, context: Context) -> Outcome:
    settings = job.settings
    if settings.policy == CACHE_AWARE and not settings.compat:
        return _cache_aware(job, conversation, context)
    micro_outcome = _micro(job, conversation)
    tokens = measure(micro_outcome.conversation, settings)
    if tokens <= settings.threshold:
        return replace(micro_outcome, tokens_after=tokens)
    full = _full(job, conversation, context)
    if full.full == Status.COMPACTED:
        outcome = replace(full, micro=micro_outcome.micro)
    else:  # the summary failed (or there was nothing to summarize): micro's result stands
        outcome = replace(micro_outcome, full=full.full, error=full.error, snapshots=full.snapshots)
        if outcome.error is not None:
            return replace(outcome, tokens_after=tokens)  # the failure is the news
    if outcome.full == Status.COMPACTED:  # the result's estimate, unless its snapshot made it
        tokens = outcome.tokens_after
        if tokens is None:
            tokens = measure(outcome.conversation, settings)
    return replace(outcome, over_threshold=tokens > settings.threshold, tokens_after=tokens)


def _cache_aware(job: Job, conversation: Conversation, context: Context) -> Outcome:
    """auto by the cache-aware policy (cache_policy.py): markers in batches, cuts that stay put.

    Snapshots are taken when a cut is made at this request; a cut found again (a caller that
    re-sends its raw history) changes nothing the caller has not kept itself.
    """
    settings = job.settings
    provider = context.provider or default_provider()
    taken: list[Path] = []

    def keep_original() -> None:  # before the model is asked (SPEC §3.3)
        taken.extend(_keep_original(job, conversation, context))

    timing = Timing(message_times(conversation.messages))  # where messages carry their time
    done = compact_stably(
        conversation.messages, settings, provider, timing, conversation.system, None, keep_original
    )
    plan = done.plan
    result = conversation.with_messages(done.messages)
    tokens = None
    if plan.cuts_now and done.full == Status.COMPACTED and context.snapshots is not None:
        tokens, kept = _keep_result(job, result, context.snapshots, context)
        taken.append(kept)
    tokens = measure(result, settings) if tokens is None else tokens
    return Outcome(
        result,
        changed=done.micro.truncated > 0 or done.full == Status.COMPACTED,
        micro=done.micro,
        full=done.full,
        error=done.error,
        over_threshold=tokens > settings.threshold and done.error is None,  # a failure is news
        tokens_after=tokens,
        snapshots=tuple(taken),
    )
