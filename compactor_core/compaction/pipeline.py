"""One conversation through one command: the single pipeline of micro, full and auto (SPEC §2–4).

``decide`` sequences a command the same way for every input: measure, micro compaction, the
threshold, the pending turn, the provider's readiness, the snapshot taken before the model is
asked, the summary, the result's estimate, and what a dry run reports instead. What it works on is
a ``Subject``: a conversation of messages in memory (``MessagesSubject``, here), or an agent's
session file, seen through its index (``session_files.compact.SessionSubject``), which never holds
the whole file.

``run`` is the library's entry point for a parsed conversation: it takes the run's frozen
``RunSettings`` (its snapshots too) and a provider, and returns an ``Outcome`` holding the new
conversation. The input is never modified.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from ..conversation.formats import Conversation, Message, dump
from ..defaults import SESSION_ID
from ..errors import ProviderError
from ..settings import RunSettings, Settings
from .estimate import estimate
from .handles import replaced_originals
from .memo import NO_MEMO, Memo
from .micro import micro_compact, with_old_images
from .outcome import Outcome
from .repairs import repair_messages
from .status import Status
from .tokenizers import counter

# What only a summary needs is imported when one is asked for: micro, on every agent turn, needs
# neither the summarizers nor the snapshot store.
if TYPE_CHECKING:
    from pathlib import Path

    from ..providers.base import Summarizer
    from ..providers.catalog import ProviderSettings
    from ..snapshots.base import Snapshots
    from .full import FullResult, PendingTurn


class Subject(Protocol):
    """What a command is decided on. Its result starts as the input; ``micro`` and
    ``take_summary`` change the result, never the input."""

    # Its estimates come with it (a session file's index holds them): then the tokens before
    # and after are reported even when nobody asked.
    measured: bool

    def tokens(self) -> int:
        """The estimate of the current result (by the settings' counter)."""

    def repair(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``rescue``'s repairs (repairs.py): make them in the result; return a line for each
        and one for each problem left unrepaired."""

    def micro(self) -> tuple[int, int]:
        """Micro-compact the result; return how many tool results, and how many images
        (``Settings.images``), got a marker."""

    def history(self) -> list[Message]:
        """The conversation full compaction summarizes (its pending turn stays out)."""

    def take_summary(self, compacted: FullResult) -> int:
        """Make the summary the result; return the result's estimate."""

    def tokens_without_summary(self, pending: PendingTurn) -> int:
        """The estimate of the result a summary would give, with an empty summary (a dry run)."""

    def for_the_cache(
        self, provider: Summarizer, keeper: Keeper | None, dry_run: bool
    ) -> Outcome | None:
        """``auto`` by the cache-aware policy (``cache_policy.py``); None where the subject keeps
        the every-turn rules (a session file: its agent resumes it when the cache is cold)."""

    def result_chunks(self, pretty: bool = False) -> Iterator[bytes]:
        """The bytes of the result, as every destination writes them."""

    def originals(self) -> list[Any]:
        """The tool results whose markers in the result carry a recall handle (``recall``),
        once the result is written: what a store of originals keeps."""


class Keeper(Protocol):
    """Who keeps the input and the result of a full compaction (snapshots, SPEC §3.3 and §3.9)."""

    def before_summary(self) -> tuple[str, ...]:
        """Keep the input, before the model is asked; return the snapshots taken."""

    def after_summary(self, messages: list[Message], tokens: int) -> tuple[str, ...]:
        """Keep the result of a summary that succeeded."""


def decide(
    run_settings: RunSettings,
    subject: Subject,
    provider: Summarizer | None = None,
    keeper: Keeper | None = None,
) -> Outcome:
    """What ``run_settings`` does to ``subject``, its summaries written by ``provider`` (None:
    the one ``run_settings.provider`` names). A dry run calls no provider and keeps nothing:
    a summary that would be asked for is WOULD_RUN, its tokens after counted at its whole budget."""
    settings, dry_run = run_settings.settings, run_settings.dry_run
    provider = provider or summarizer_of(run_settings)
    measure = run_settings.measure or dry_run or subject.measured
    before = subject.tokens() if measure else None
    if run_settings.command == "full":
        outcome = _summary_step(settings, subject, provider, keeper, dry_run)
        return _measured(outcome, subject, before, measure)
    if run_settings.command == "rescue":

        def fit(run_settings: RunSettings) -> Outcome:
            return _micro_then_summary(
                run_settings, subject, provider, keeper, dry_run, before, True
            )

        return _rescue(run_settings, subject, before, fit)
    if run_settings.command == "auto" and settings.cache_aware:
        cached = subject.for_the_cache(provider or default_provider(), keeper, dry_run)
        if cached is not None:
            return replace(cached, tokens_before=before)
    return _micro_then_summary(run_settings, subject, provider, keeper, dry_run, before, measure)


def _rescue(
    run_settings: RunSettings,
    subject: Subject,
    before: int | None,
    fit: Callable[[RunSettings], Outcome],
) -> Outcome:
    """The repairs; then, if the view is over the window (``threshold``), ``fit``: micro, and a
    summary if micro is not enough."""
    repairs, left = subject.repair()
    outcome = Outcome(changed=bool(repairs), repairs=repairs, left=left, tokens_before=before)
    tokens = subject.tokens()
    if tokens <= run_settings.settings.threshold:
        return replace(outcome, tokens_after=tokens)
    fitted = fit(replace(run_settings, command="auto"))
    steps = "micro" if fitted.full == Status.NOT_RUN else f"micro, then summary {fitted.full}"
    most = "at most " if fitted.full == Status.WOULD_RUN else ""
    repairs += (
        f"the view was {tokens} tokens, over the window of {run_settings.settings.threshold}: "
        f"{steps}: {most}{fitted.tokens_after} tokens now",
    )
    if fitted.over_threshold or fitted.error is not None:  # the agent still cannot send it
        left += (f"still {fitted.tokens_after} tokens, over the window",)
    changed = fitted.changed or outcome.changed
    return replace(fitted, changed=changed, repairs=repairs, left=left, over_threshold=False)


def _micro_then_summary(
    run_settings: RunSettings,
    subject: Subject,
    provider: Summarizer | None,
    keeper: Keeper | None,
    dry_run: bool,
    before: int | None,
    measure: bool,
) -> Outcome:
    """micro, and for auto a summary over the threshold (SPEC §4, every-turn rules)."""
    settings = run_settings.settings
    truncated, images = subject.micro()
    micro = Outcome(
        changed=truncated + images > 0, truncated=truncated, images=images, tokens_before=before
    )
    if run_settings.command == "micro":
        return _measured(micro, subject, before, measure)
    tokens = subject.tokens()
    if tokens <= settings.threshold:
        return replace(micro, tokens_after=tokens)
    summary = _summary_step(settings, subject, provider, keeper, dry_run)
    if summary.full == Status.FAILED:  # micro's result stands; the failure is the news
        return replace(
            micro,
            full=Status.FAILED,
            error=summary.error,
            snapshots=summary.snapshots,
            tokens_after=tokens,
        )
    if summary.full == Status.NOTHING:
        return replace(micro, full=Status.NOTHING, over_threshold=True, tokens_after=tokens)
    after = summary.tokens_after if summary.tokens_after is not None else tokens
    over = summary.full == Status.COMPACTED and after > settings.threshold
    return replace(
        summary, truncated=truncated, images=images, tokens_before=before, over_threshold=over
    )


def _measured(outcome: Outcome, subject: Subject, before: int | None, measure: bool) -> Outcome:
    if not measure:
        return outcome
    after = outcome.tokens_after if outcome.tokens_after is not None else subject.tokens()
    return replace(outcome, tokens_before=before, tokens_after=after)


def _summary_step(
    settings: Settings,
    subject: Subject,
    provider: Summarizer | None,
    keeper: Keeper | None,
    dry_run: bool,
) -> Outcome:
    """Full compaction of the subject's history (SPEC §3): nothing, a summary, or a failure.

    A dry run says what the summary would give at most: the result with the summary at its whole
    budget, and never more than the subject is now (a summary must be smaller than what it
    replaces, or it fails and nothing changes)."""
    from ..providers.base import check_ready
    from .full import full_compact, summarizable

    history = subject.history()
    pending = summarizable(history, settings.compat)
    if pending is None:  # a no-op: no snapshot, no model call
        return Outcome(full=Status.NOTHING)
    if dry_run:
        most = subject.tokens_without_summary(pending) + settings.max_tokens
        return Outcome(
            changed=True, full=Status.WOULD_RUN, tokens_after=min(most, subject.tokens())
        )
    provider = provider or default_provider()
    check_ready(provider)  # a missing API key: exit 78, before any snapshot
    taken = keeper.before_summary() if keeper is not None else ()
    compacted = full_compact(history, provider, settings, pending=pending)
    if compacted.status != Status.COMPACTED:
        return Outcome(full=compacted.status, error=compacted.error, snapshots=taken)
    tokens_after = subject.take_summary(compacted)
    if keeper is not None:
        taken += keeper.after_summary(compacted.messages, tokens_after)
    return Outcome(
        changed=True,
        full=Status.COMPACTED,
        cut_off=compacted.cut_off,
        tokens_after=tokens_after,
        snapshots=taken,
    )


def summarizer_of(run_settings: RunSettings) -> Summarizer | None:
    """The summarizer ``run_settings.provider`` names, if the run may ask one (None for micro
    and a dry run)."""
    return default_provider(run_settings.provider) if run_settings.needs_provider else None


def default_provider(provider: ProviderSettings | None = None) -> Summarizer:
    """The provider ``provider`` names (None: the built-in extractive one), built once a summary
    is asked of it."""
    from ..providers.registry import Deferred, ProviderSettings  # micro never loads them

    return Deferred(provider or ProviderSettings())


# --- a conversation of messages, in memory -------------------------------------------------------


def measure(conversation: Conversation, settings: Settings, memo: Memo = NO_MEMO) -> int:
    """The estimate by the settings' profile and tokenizer; ``memo``: the messages' counts,
    as counted before (``memo.py``)."""
    tokens = counter(settings.tokenizer)
    if settings.compat:
        return estimate(conversation.messages, conversation.system, True, tokens)
    return memo.tokens(conversation.messages, conversation.system, tokens)


class MessagesSubject:
    """A parsed conversation; its result is a new conversation (the input stays as it was)."""

    measured = False  # counting is a pass over the messages: done only when asked

    def __init__(
        self,
        conversation: Conversation,
        settings: Settings,
        memo: Memo = NO_MEMO,
    ) -> None:
        self.input = conversation
        self.result = conversation
        self.settings = settings
        self.memo = memo  # what was computed before of the same messages (memo.py)
        self._tokens: int | None = None  # of the result, once counted

    def tokens(self) -> int:
        if self._tokens is None:
            self._tokens = measure(self.result, self.settings, self.memo)
        return self._tokens

    def repair(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        messages, done = repair_messages(self.input.messages)
        self.input = self.input.with_messages(messages)
        self._take(messages)
        return tuple(done), ()

    def micro(self) -> tuple[int, int]:
        settings = self.settings
        if settings.min_gain and not settings.compat:  # --min-gain: markers in batches
            from .cache_apply import micro_in_batches

            messages, done = micro_in_batches(self.input.messages, settings)
            if settings.images:
                messages, done = with_old_images(messages, done, settings)
        else:
            messages, done = micro_compact(self.input.messages, settings)
        self._take(messages)
        return done.truncated, done.images

    def history(self) -> list[Message]:
        return self.input.messages  # full compaction micro-compacts what it sends by itself

    def take_summary(self, compacted: FullResult) -> int:
        self._take(compacted.messages)
        return self.tokens()

    def tokens_without_summary(self, pending: PendingTurn) -> int:
        from .full import without_summary

        frame = without_summary(self.input.messages, pending, self.settings)
        return measure(self.input.with_messages(frame), self.settings)

    def for_the_cache(self, provider: Summarizer, keeper: Keeper | None, dry_run: bool) -> Outcome:
        """Markers in batches and cuts that stay put; the messages' own ``timestamp`` keys tell
        a cold cache. The input is kept before this request's own summary is asked for, the
        result after it; a cut found again (a caller re-sending its raw history) keeps nothing
        the caller has not kept itself. A dry run counts a cut's summary at its whole budget."""
        from .cache_apply import compact_stably, marks_of, plan_request
        from .cache_plan import Timing, message_times

        conversation, settings = self.input, self.settings
        messages, system = conversation.messages, conversation.system
        if dry_run:
            plan = plan_request(messages, settings, provider, None, system)
            marked, done = marks_of(messages, settings, plan)
            self._take(marked)
            tokens = plan.tokens if plan.cuts else self.tokens()
            full = Status.WOULD_RUN if plan.cuts else Status.NOT_RUN
            changed = done.truncated > 0 or bool(plan.cuts)
            return Outcome(changed, done.truncated, full=full, tokens_after=tokens)
        taken: list[str] = []

        def before_summary() -> None:  # SPEC §3.3: before the model is asked
            if keeper is not None:
                taken.extend(keeper.before_summary())

        timing = Timing(message_times(messages))
        stable = compact_stably(
            messages, settings, provider, timing, system, None, before_summary, self.memo
        )
        self._take(stable.messages)
        tokens = self.tokens()
        compacted = stable.full == Status.COMPACTED
        if stable.plan.cuts_now and compacted and keeper is not None:
            taken.extend(keeper.after_summary(stable.messages, tokens))
        return Outcome(
            changed=stable.micro.truncated > 0 or compacted,
            truncated=stable.micro.truncated,
            full=stable.full,
            error=stable.error,
            over_threshold=tokens > settings.threshold and stable.error is None,
            tokens_after=tokens,
            snapshots=tuple(taken),
        )

    def result_chunks(self, pretty: bool = False) -> Iterator[bytes]:
        """The result, written anew (a filter's output: ``pretty`` applies)."""
        yield dump(self.result, pretty)

    def originals(self) -> list[Any]:
        if not self.settings.recall:
            return []
        return replaced_originals(self.input.messages, self.result.messages)

    def _take(self, messages: list[Message]) -> None:
        self.result = self.input.with_messages(messages)
        self._tokens = None


@dataclass(frozen=True)
class SnapshotKeeper:
    """Keeps a conversation's input bytes and its compacted result in a snapshot store."""

    store: Snapshots
    session_id: str
    conversation: Conversation
    settings: Settings
    original: bytes | None  # None: the input is kept by whoever writes the result (in place)
    source: Path | None = None

    def before_summary(self) -> tuple[str, ...]:
        from ..snapshots.base import Details

        if self.original is None:
            return ()
        conversation = self.conversation
        tokens = measure(conversation, self.settings)
        details = Details(conversation.shape, len(conversation.messages), tokens)
        path = self.store.save_original(self.session_id, self.original, details, self.source)
        return (str(path),)

    def after_summary(self, messages: list[Message], tokens: int) -> tuple[str, ...]:
        from ..snapshots.base import Details

        details = Details(tokens=tokens)
        result = self.conversation.with_messages(messages)
        if self.settings.compat:  # BareAgent writes its transcripts one message a line
            result = Conversation(messages, "jsonl")
        path = self.store.save_result(self.session_id, result, details, self.source)
        return (str(path),)


def run(
    run_settings: RunSettings,
    conversation: Conversation,
    provider: Summarizer | None = None,
    original: bytes | None = None,
    memo: Memo = NO_MEMO,
) -> Outcome:
    """``run_settings`` on a parsed conversation; the outcome holds the new conversation.

    Without a provider, summaries are written by the built-in extractive one. A full compaction
    that replaces the history keeps the input (``original``, its bytes as read, if given) and the
    result in ``run_settings.snapshots``, under its ``session_id`` (None: ``default``).
    ``memo``: what the cache-aware policy computed before of the same messages (a proxy's, for
    earlier requests).
    """
    subject = MessagesSubject(conversation, run_settings.settings, memo)
    keeper = None
    if run_settings.snapshots is not None:
        session_id = run_settings.session_id or SESSION_ID
        keeper = SnapshotKeeper(
            run_settings.snapshots, session_id, conversation, run_settings.settings, original
        )
    outcome = decide(run_settings, subject, provider, keeper)
    return replace(outcome, conversation=subject.result)


def failure(outcome: Outcome) -> ProviderError | None:
    """The summary's failure, or its cut-off, if the outcome has one (what a caller should tell)."""
    return outcome.error or outcome.cut_off
