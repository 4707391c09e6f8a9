"""The cache-aware policy carried out: its plan's markers, and the summaries of its cuts.

``cache_policy.plan`` decides; this writes the request. Every cut of the plan is summarized in
turn, each from the head the one before left (a rolling summary), the way a caller that kept
ctxpack's output would have had it compacted. A cut found again (a proxy re-sending its raw
history) is summarized again, which gives the same words with a deterministic summarizer (the
built-in extractive one); a summarizer that is not deterministic is only ever asked about the
current request (``past_cuts``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace

from ..conversation.formats import Message
from ..errors import ProviderError
from ..providers.base import Summarizer, check_ready
from ..settings import Settings
from .cache_plan import Cut, Plan, Timing, plan
from .estimate import estimate
from .full import full_compact
from .memo import NO_MEMO, Memo
from .micro import Layout, MicroResult, mark_turns
from .status import Status
from .tokenizers import counter

NO_THRESHOLD = sys.maxsize  # no request is over it: markers only, no cut

# Heads already written, by the cuts that led to them: valid for the prefixes of one
# conversation under one settings and summarizer (the replay asks again and again).
Heads = dict[Hashable, list[Message]]


@dataclass(frozen=True)
class StableResult:
    messages: list[Message]
    plan: Plan
    micro: MicroResult  # markers written now (in the messages sent after the head)
    full: Status  # COMPACTED: the head is a summary; FAILED: the current request's failed
    error: ProviderError | None = None


def is_deterministic(provider: Summarizer) -> bool:
    """Whether the summarizer writes the same summary for the same history (it says so)."""
    return bool(getattr(provider, "deterministic", False))


def plan_request(
    messages: list[Message],
    settings: Settings,
    provider: Summarizer,
    timing: Timing | None = None,
    system: object = None,
    unmade: frozenset[int] = frozenset(),
    memo: Memo = NO_MEMO,
    layout: Layout | None = None,
) -> Plan:
    """The plan for this request; ``system``: a request envelope's, sent with every request."""
    fixed = estimate([], system, counter=counter(settings.tokenizer)) if system else 0
    deterministic = is_deterministic(provider)
    return plan(
        messages,
        settings,
        timing,
        fixed,
        deterministic,
        unmade,
        payback=True,
        memo=memo,
        layout=layout,
    )


def marks_of(
    messages: list[Message],
    settings: Settings,
    plan: Plan,
    cut: Cut | None = None,
    layout: Layout | None = None,
    within: set[int] | None = None,
) -> tuple[list[Message], MicroResult]:
    """The markers the plan (or one of its cuts) decided, as they read when they were made;
    ``layout``: the messages', when the caller has it already; ``within``: the messages whose
    markers are read (None: every one)."""
    decided = cut or plan
    at = dict(decided.marked_at)
    return mark_turns(
        messages, settings, decided.marked, at, decided.single, plan.staleness, layout, within
    )


def micro_in_batches(
    messages: list[Message], settings: Settings
) -> tuple[list[Message], MicroResult]:
    """Micro compaction whose markers come in batches that free ``min_gain`` (``micro
    --min-gain``): the old turns oldest first, up to the end of the last whole batch."""
    batches = plan(messages, replace(settings, threshold=NO_THRESHOLD))
    return marks_of(messages, settings, batches)


def compact_stably(
    messages: list[Message],
    settings: Settings,
    provider: Summarizer,
    timing: Timing | None = None,
    system: object = None,
    heads: Heads | None = None,
    before_summary: Callable[[], None] | None = None,
    memo: Memo = NO_MEMO,
) -> StableResult:
    """The current request by the cache-aware policy; ``messages`` is left as it was.

    An earlier cut whose summary the (deterministic) summarizer refuses is not made, every time
    alike: the plan is made again without it. ``before_summary`` is called once, before the
    current request's own summary is asked for (the caller keeps the input first).
    ``memo``: what was computed before of the same messages (a proxy's), not computed again.
    """
    heads = {} if heads is None else heads
    layout = memo.layout(messages)  # for the plans and every marking of the messages
    unmade: frozenset[int] = frozenset()
    while True:
        the_plan = plan_request(messages, settings, provider, timing, system, unmade, memo, layout)
        result = carry_out(
            messages, the_plan, settings, provider, heads, before_summary, memo, layout
        )
        if not isinstance(result, Cut):
            return result
        unmade |= {result.request}


def carry_out(
    messages: list[Message],
    the_plan: Plan,
    settings: Settings,
    provider: Summarizer,
    heads: Heads,
    before_summary: Callable[[], None] | None = None,
    memo: Memo = NO_MEMO,
    layout: Layout | None = None,
) -> StableResult | Cut:
    """The request the plan describes, or the earlier cut whose summary failed."""
    layout = layout or Layout.of(messages)
    final, micro = marks_of(messages, settings, the_plan, None, layout)
    if not the_plan.cuts:
        return StableResult(final, the_plan, micro, Status.NOT_RUN)
    check_ready(provider)
    head: list[Message] = []
    for number, cut in enumerate(the_plan.cuts):
        key = the_plan.cuts[: number + 1]
        if key in heads:
            head = heads[key]
            continue
        now = the_plan.cuts_now and number == len(the_plan.cuts) - 1
        if now and before_summary is not None:
            before_summary()
        history = messages[: cut.request]
        # a later message that names a call again may change the markers of the history's
        # results: its head is made anew
        compacted = None if layout.names.renamed else memo.head(history, (settings, key))
        if compacted is None:
            compacted = _compact_at(messages, head, the_plan, cut, settings, provider, memo, layout)
            if isinstance(compacted, ProviderError):
                if not now:
                    return cut
                marked, micro = marks_of(messages, settings, the_plan, cut, layout)  # all before
                unmade = [*head, *(marked[index] for index in cut.live)]
                return StableResult(unmade, the_plan, micro, Status.FAILED, compacted)
            memo.keep_head(history, (settings, key), compacted)
        head = heads[key] = compacted
    return StableResult(
        [*head, *(final[index] for index in the_plan.live)], the_plan, micro, Status.COMPACTED
    )


def _compact_at(
    messages: list[Message],
    head: list[Message],
    the_plan: Plan,
    cut: Cut,
    settings: Settings,
    provider: Summarizer,
    memo: Memo = NO_MEMO,
    layout: Layout | None = None,
) -> list[Message] | ProviderError:
    """The new head: the request at the cut, its pending turn left out; or why it failed."""
    then, _ = marks_of(messages, settings, the_plan, cut, layout, set(cut.live))  # sent then
    summarized = [*head, *(then[index] for index in cut.live)]
    compacted = memo.compaction(summarized, settings)
    if compacted is None:
        result = full_compact(summarized, provider, settings)
        if result.status != Status.COMPACTED:
            return result.error or ProviderError("nothing to summarize")
        compacted = result.messages
        memo.keep_compaction(summarized, settings, compacted)
    return compacted[: len(compacted) - len(cut.pending)]
