"""The cache-aware policy carried out: its plan's markers, and the summaries of its cuts.

``cache_policy.plan`` decides; this writes the request. Every cut of the plan is summarized in
turn, each from the head the one before left (a rolling summary), the way a caller that kept
ctxpack's output would have had it compacted. A cut found again (a proxy re-sending its raw
history) is summarized again, which gives the same words with a deterministic summarizer (the
built-in extractive one); a summarizer that is not deterministic is only ever asked about the
current request (``past_cuts``).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from .cache_policy import Cut, Plan, Timing, plan
from .errors import ProviderError
from .estimate import estimate
from .formats import Message
from .full import full_compact
from .micro import MicroResult, mark_turns
from .providers.base import Summarizer, check_ready
from .settings import Settings
from .status import Status
from .tokenizers import counter

# Heads already written, by the cuts that led to them: valid for the prefixes of one
# conversation under one settings and summarizer (the replay asks again and again).
Heads = dict[Hashable, list[Message]]


@dataclass(frozen=True)
class StableResult:
    messages: list[Message]
    plan: Plan
    micro: MicroResult  # markers written now (in the messages sent after the head)
    full: Status  # COMPACTED: the head is a summary; FAILED: a cut's summary failed
    error: ProviderError | None = None


def is_deterministic(provider: Summarizer) -> bool:
    """Whether the summarizer writes the same summary for the same history (it says so)."""
    return bool(getattr(provider, "deterministic", False))


def decide(
    messages: list[Message],
    settings: Settings,
    provider: Summarizer,
    timing: Timing | None = None,
    system: object = None,
) -> Plan:
    """The plan for this request; ``system``: a request envelope's, sent with every request."""
    fixed = estimate([], system, counter=counter(settings.tokenizer)) if system else 0
    return plan(messages, settings, timing, fixed, past_cuts=is_deterministic(provider))


def carry_out(
    messages: list[Message],
    the_plan: Plan,
    settings: Settings,
    provider: Summarizer,
    heads: Heads | None = None,
) -> StableResult:
    """The request the plan describes; ``messages`` is left as it was."""
    final, micro = mark_turns(messages, settings, the_plan.marked)
    if not the_plan.cuts:
        return StableResult(final, the_plan, micro, Status.NOT_RUN)
    check_ready(provider)
    head: list[Message] = []
    for number, cut in enumerate(the_plan.cuts):
        key = the_plan.cuts[: number + 1]
        if heads is not None and key in heads:
            head = heads[key]
            continue
        compacted = _compact_at(messages, head, cut, settings, provider)
        if isinstance(compacted, ProviderError):  # the cut is not made; nor any after it
            sent = [*cut.live, *range(cut.request, len(messages))]
            unmade, micro = mark_turns(messages, settings, cut.marked | the_plan.marked)
            result = [*head, *(unmade[index] for index in sent)]
            return StableResult(result, the_plan, micro, Status.FAILED, compacted)
        head = compacted
        if heads is not None:
            heads[key] = head
    return StableResult(
        [*head, *(final[index] for index in the_plan.live)], the_plan, micro, Status.COMPACTED
    )


def _compact_at(
    messages: list[Message],
    head: list[Message],
    cut: Cut,
    settings: Settings,
    provider: Summarizer,
) -> list[Message] | ProviderError:
    """The new head: the request at the cut, its pending turn left out; or why it failed."""
    then, _ = mark_turns(messages, settings, cut.marked)
    result = full_compact([*head, *(then[index] for index in cut.live)], provider, settings)
    if result.status != Status.COMPACTED:
        return result.error or ProviderError("nothing to summarize")
    return result.messages[: len(result.messages) - len(cut.pending)]
