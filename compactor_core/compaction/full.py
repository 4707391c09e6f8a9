"""Full compaction: a provider summarizes the history, which the summary replaces (SPEC §3).

The result is every system message (deep copies, moved to the front), the summary as a user
message, an acknowledgement from the assistant, and the pending turn the user is waiting on. On any
failure the input comes back exactly as it was: full compaction is best effort, never harmful.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from ..conversation import language
from ..conversation.formats import Message
from ..conversation.prompts import PROMPTS, SUMMARY_PREFIX, system_prompt, user_prompt
from ..conversation.tools import has_tool_result_block, tool_calls, tool_names, tool_result_ids
from ..errors import ProviderError, SummaryCutOff
from ..providers.base import Summarizer, SummaryRequest
from ..settings import DEFAULT_SETTINGS, Settings
from . import bareagent
from .estimate import estimate, tokens_of
from .micro import micro_compact
from .shrink import fit_prompt
from .status import Status
from .tokenizers import counter


@dataclass(frozen=True)
class PendingTurn:
    """What stays out of the summary: message indexes, and whether the acknowledgement is kept."""

    indexes: tuple[int, ...] = ()
    acknowledge: bool = True


@dataclass(frozen=True)
class FullResult:
    messages: list[Message]  # the input list itself unless status is COMPACTED
    status: Status  # COMPACTED, NOTHING or FAILED
    error: ProviderError | None = None
    summary: str | None = None
    cut_off: SummaryCutOff | None = None  # the summary was kept though it stopped at max_tokens
    pending: PendingTurn = PendingTurn()  # the turn set aside, which follows the summary


def full_compact(
    messages: list[Message],
    provider: Summarizer,
    settings: Settings = DEFAULT_SETTINGS,
    *,
    pending: PendingTurn | None = None,
) -> FullResult:
    """Summarize the history of ``messages``; never modifies ``messages`` itself.

    Snapshots are the caller's (``pipeline``): it knows the input's bytes, which a snapshot keeps.
    So is the check that ``provider`` can be asked at all (``providers.base.check_ready``): made
    once, before the snapshot, a missing API key is a configuration error, not a failed summary.
    A caller that must tell a no-op first (``summarizable``) passes the ``pending`` turn it found.
    """
    if pending is None:
        pending = summarizable(messages, settings.compat)
    if pending is None:
        return FullResult(messages, Status.NOTHING)

    working, _ = micro_compact(messages, settings)  # the pending turn counts among the kept
    source = [
        message
        for index, message in enumerate(working)
        if index not in pending.indexes and message.get("role") != "system"
    ]
    request = _request(source, messages, settings)
    try:
        summary, cut_off = _ask(provider, request, settings.keep_cut_off)
        if not settings.compat:  # the reference takes whatever comes back
            _check_summary(summary, source, provider.name)
    except ProviderError as error:
        return FullResult(messages, Status.FAILED, error)

    # The reference rebuilds from its micro-compacted list: its system messages and pending turn
    # come back as micro left them.
    result = rebuild(working if settings.compat else messages, pending, summary, request.lang)
    return FullResult(result, Status.COMPACTED, None, summary, cut_off, pending)


def summarizable(messages: list[Message], compat: bool = False) -> PendingTurn | None:
    """The pending turn a summary of ``messages`` leaves out; None if nothing else is there to
    summarize (system messages only): a no-op, which needs no snapshot and no model."""
    pending = find_pending_turn(messages, compat)
    if any(
        message.get("role") != "system"
        for index, message in enumerate(messages)
        if index not in pending.indexes
    ):
        return pending
    return None


def _request(source: list[Message], original: list[Message], settings: Settings) -> SummaryRequest:
    """What the provider is asked: the prompts in the conversation's language (``--lang auto``),
    with the history serialized as the reference does (compat) or fitted under
    ``max_prompt_tokens``. ``original``: the conversation as it came."""
    lang = language.resolve(settings.lang, original, settings.compat)
    system = system_prompt(lang, settings.instructions)
    if settings.compat:
        sent, user = source, user_prompt(lang, bareagent.serialize(source))
    else:
        budget, tokens = settings.max_prompt_tokens, counter(settings.tokenizer)
        names = tool_names(original)
        sent, user = fit_prompt(source, names, lang, system, budget, tokens)
    return SummaryRequest(system, user, settings.max_tokens, sent, lang, original, history=source)


def _ask(
    provider: Summarizer, request: SummaryRequest, keep_cut_off: bool
) -> tuple[str, SummaryCutOff | None]:
    """The provider's summary, and its cut-off if one is kept; any failure a ProviderError."""
    cut_off = None
    try:
        summary = provider.summarize(request)
    except SummaryCutOff as error:
        if not keep_cut_off:
            raise
        summary, cut_off = error.summary, error
    except ProviderError:
        raise
    except Exception as error:  # a provider's bug or surprise must not cost the conversation
        raise ProviderError(f"{provider.name}: {type(error).__name__}: {error}") from error
    if not isinstance(summary, str):
        raise ProviderError(f"{provider.name}: the reply is not text")
    return summary, cut_off


def _check_summary(summary: str, source: list[Message], provider_name: str) -> None:
    if not summary.strip():
        raise ProviderError(f"{provider_name}: the summary is empty")
    summary_tokens = tokens_of([summary])
    source_tokens = estimate(source)
    if summary_tokens >= source_tokens:
        raise ProviderError(
            f"{provider_name}: the summary ({summary_tokens} tokens) is not smaller than the "
            f"history it would replace ({source_tokens} tokens)"
        )


def without_summary(
    messages: list[Message], pending: PendingTurn, settings: Settings
) -> list[Message]:
    """The result a summary would give, with an empty summary: what a dry run counts (the
    acknowledgement in the conversation's language)."""
    lang = language.resolve(settings.lang, messages, settings.compat)
    return rebuild(messages, pending, "", lang)


def rebuild(
    messages: list[Message], pending: PendingTurn, summary: str, lang: str
) -> list[Message]:
    systems = [copy.deepcopy(message) for message in messages if message.get("role") == "system"]
    result = [*systems, {"role": "user", "content": SUMMARY_PREFIX + summary}]
    if pending.acknowledge:
        result.append({"role": "assistant", "content": PROMPTS[lang].acknowledgement})
    result.extend(messages[index] for index in pending.indexes)
    return result


# --- the pending turn ----------------------------------------------------------------------------


def find_pending_turn(messages: list[Message], compat: bool = False) -> PendingTurn:
    """The turn the model has yet to answer, which stays out of the summary (SPEC §3.1)."""
    if compat:  # the reference: the last message, if it is a user's
        if messages and messages[-1].get("role") == "user":
            return PendingTurn((len(messages) - 1,))
        return PendingTurn()
    last = _last_non_system(messages)
    if last is None:
        return PendingTurn()
    role = messages[last].get("role")
    if role == "tool":
        first = last
        while first > 0 and messages[first - 1].get("role") == "tool":
            first -= 1
        turn = list(range(first, last + 1))
    elif role == "user":
        turn = [last]
    else:
        return PendingTurn()
    if not any(_holds_tool_results(messages[index]) for index in turn):
        return PendingTurn(tuple(turn))
    return _with_its_calls(messages, turn)


def _last_non_system(messages: list[Message]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") != "system":
            return index
    return None


def _holds_tool_results(message: Message) -> bool:
    return message.get("role") == "tool" or has_tool_result_block(message)


def _with_its_calls(messages: list[Message], turn: list[int]) -> PendingTurn:
    """Pair safety: keep the message that made the calls with their results, and no ack.

    If no single earlier message made every call the turn answers, the results cannot be kept
    pair-valid, so they are summarized instead (there is then no pending turn).
    """
    answered = {call_id for index in turn for call_id in tool_result_ids(messages[index])}
    for index in range(turn[0] - 1, -1, -1):
        made = {call_id for call_id, _ in tool_calls(messages[index])}
        if made & answered:
            if answered <= made:
                return PendingTurn((index, *turn), acknowledge=False)
            break
    return PendingTurn()
