"""One conversation through one command: what the CLI and batch workers both call.

``run`` takes a parsed conversation and a frozen ``Job`` (plain data, so it can cross to a worker
process) and returns an ``Outcome``: the new conversation, whether anything changed, and the
figures worth reporting. The input conversation is never modified.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from . import defaults, language
from .errors import ProviderError
from .estimate import estimate
from .formats import Conversation
from .full import (
    FullResult,
    FullSettings,
    find_pending_turn,
    full_compact,
    has_source,
    rebuild,
)
from .micro import MicroResult, MicroSettings, copy_tool_results, micro_with
from .providers.base import Summarizer, check_ready
from .snapshots import DEFAULT_SESSION, Details, SnapshotStore
from .tokenizers import counter

DEFAULT_THRESHOLD = defaults.THRESHOLD
Command = Literal["micro", "full", "auto"]


@dataclass(frozen=True)
class Job:
    command: Command = "micro"
    micro: MicroSettings = field(default_factory=MicroSettings)
    full: FullSettings = field(default_factory=FullSettings)
    threshold: int = DEFAULT_THRESHOLD  # auto: full compaction above this estimate
    compat: bool = False
    measure: bool = False  # estimate before and after, for statistics
    tokenizer: str = "heuristic"  # who counts for the threshold and the statistics


@dataclass(frozen=True)
class Outcome:
    conversation: Conversation
    changed: bool
    micro: MicroResult = field(default_factory=lambda: MicroResult(0, 0))
    full: Literal["compacted", "nothing", "failed", "would run", "not run"] = "not run"
    error: ProviderError | None = None  # why the summary failed
    over_threshold: bool = False  # auto: the result is still too big, though nothing failed
    tokens_before: int | None = None
    tokens_after: int | None = None
    snapshots: tuple[Path, ...] = ()  # snapshots already taken of this input and its result


@dataclass(frozen=True)
class Context:
    """What a run may use besides the conversation: a summarizer and where snapshots go.

    A full compaction that replaces the history keeps the input (``original``, its bytes as read)
    and the result in ``snapshots``. ``original`` is None for a file changed in place: the
    writer keeps that file itself (``files.replace_file``). ``source`` is the file read, if any.
    """

    provider: Summarizer | None = None
    snapshots: SnapshotStore | None = None
    session_id: str = DEFAULT_SESSION
    original: bytes | None = None
    source: Path | None = None


def measure(conversation: Conversation, job: Job) -> int:
    return estimate(conversation.messages, conversation.system, job.compat, counter(job.tokenizer))


def run(job: Job, conversation: Conversation, context: Context = Context()) -> Outcome:
    before = measure(conversation, job) if job.measure or job.command == "auto" else None
    if job.command == "micro":
        outcome = _micro(job, conversation)
    elif job.command == "full":
        outcome = _full(job, conversation, context)
    else:
        outcome = _auto(job, conversation, context)
    if job.measure:
        after = measure(outcome.conversation, job)
        outcome = _with(outcome, tokens_before=before, tokens_after=after)
    return outcome


def preview(job: Job, conversation: Conversation) -> Outcome:
    """What ``run`` would do, with no provider call and no snapshot (``--dry-run``).

    Micro compaction is done for real (it is cheap and exact); a full compaction that would be
    attempted is reported as "would run", its tokens after counted with the summary at its whole
    budget (``max_tokens``): the most the result would be, since no model is asked.
    """
    before = measure(conversation, job)
    outcome = _micro(job, conversation)
    after_micro = measure(outcome.conversation, job)
    outcome = _with(outcome, tokens_before=before, tokens_after=after_micro)
    if job.command == "micro":
        return outcome
    if job.command == "auto" and after_micro <= job.threshold:
        return outcome
    pending = find_pending_turn(conversation.messages, job.full.compat)
    if not has_source(conversation.messages, pending):
        return replace(outcome, full="nothing")
    lang = language.resolve(job.full.lang, conversation.messages, job.full.compat)
    frame = conversation.with_messages(rebuild(conversation.messages, pending, "", lang))
    most = measure(frame, job) + job.full.max_tokens
    return replace(outcome, changed=True, full="would run", tokens_after=min(most, after_micro))


def _micro(job: Job, conversation: Conversation) -> Outcome:
    messages = copy_tool_results(conversation.messages)
    result = micro_with(messages, job.micro)
    return Outcome(conversation.with_messages(messages), result.truncated > 0, result)


def _full(job: Job, conversation: Conversation, context: Context) -> Outcome:
    """Summarize; the input is kept before the model is called (SPEC §3.3), the result after."""
    if context.provider is None:
        raise ValueError("full compaction needs a provider")
    pending = find_pending_turn(conversation.messages, job.full.compat)
    if not has_source(conversation.messages, pending):  # a no-op: no snapshot, no model call
        return Outcome(conversation, changed=False, full="nothing")
    check_ready(context.provider)  # a missing API key: exit 78, before any snapshot
    store = context.snapshots
    taken = []
    if store is not None and context.original is not None:
        tokens = measure(conversation, job)
        details = Details(conversation.shape, len(conversation.messages), tokens)
        taken.append(
            store.save_original(context.session_id, context.original, details, context.source)
        )
    full = full_compact(conversation.messages, context.provider, job.full)
    if store is not None and full.status == "compacted":
        details = Details(tokens=measure(conversation.with_messages(full.messages), job))
        result = store.save_result(context.session_id, full.messages, details, context.source)
        taken.append(result)
    return _from_full(full, conversation, tuple(taken))


def _from_full(full: FullResult, conversation: Conversation, taken: tuple[Path, ...]) -> Outcome:
    return Outcome(
        conversation.with_messages(full.messages),
        changed=full.status == "compacted",
        full=full.status,
        error=full.error,
        snapshots=taken,
    )


def _auto(job: Job, conversation: Conversation, context: Context) -> Outcome:
    micro_outcome = _micro(job, conversation)
    if measure(micro_outcome.conversation, job) <= job.threshold:
        return micro_outcome
    full = _full(job, conversation, context)
    if full.full == "compacted":
        outcome = _with(full, micro=micro_outcome.micro)
    else:  # the summary failed (or there was nothing to summarize): micro's result stands
        outcome = _with(micro_outcome, full=full.full, error=full.error, snapshots=full.snapshots)
    if outcome.error is not None:
        return outcome  # the failure is the news, not its consequence
    after = measure(outcome.conversation, job)
    return _with(outcome, over_threshold=after > job.threshold, tokens_after=after)


def _with(outcome: Outcome, **changes: object) -> Outcome:
    return replace(outcome, **changes)
