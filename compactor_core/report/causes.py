"""Why each request wrote the cache: the tokens it sent fresh, each given a cause.

A request's *fresh* tokens are those it did not read from the cache: the cache writes where the
provider counts them (Anthropic), else the plain input (OpenAI's automatic cache writes for
free, so what it did not read is what it missed). Of those, what the conversation grew by since
the chain's previous request (its input beyond the previous one's) is ``NEW_TURNS``, the cost of
any conversation; the rest had been sent before and was sent again: a miss, given the first
cause that holds:

1. ``FIRST`` — the first request of its chain (the main thread, or a subagent's);
2. ``EXPIRED`` — the gap since the previous request is over the cache's lifetime (5 minutes,
   or an hour where the chain's latest writes were 1-hour entries);
3. the change the agent's file shows before it (``RecordedCall.change``): its own compaction or
   context clearing, a resumed session, a changed system prompt or tools;
4. ``CTXPACK`` — ctxpack rewrote the session since the previous request (its snapshots' times);
5. ``MODEL_SWITCH`` — another model than the previous request's (each model has its own cache);
6. ``PROMPT_CHANGED`` — nothing at all was read from the cache while the previous request's
   entries were alive: the very start of the prompt (the tools, the system prompt) differs;
7. ``UNEXPLAINED``.

A miss of no more than ``FLOOR`` tokens is counted as new turns: a few tokens re-sent around
the cache's last breakpoint are noise, not an event worth a line.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..session_files.base import CHANGES, PROMPT_CHANGED, RecordedCall

FIRST = "first request"
EXPIRED = "cache expired"
CTXPACK = "ctxpack rewrite"
MODEL_SWITCH = "model switch"
UNEXPLAINED = "unexplained"
NEW_TURNS = "new turns"
CAUSES = (NEW_TURNS, FIRST, EXPIRED, *CHANGES, CTXPACK, MODEL_SWITCH, UNEXPLAINED)

FLOOR = 1024  # tokens: a smaller miss is noise (Anthropic's smallest cacheable prefix)
LIFETIME = {False: 300.0, True: 3600.0}  # seconds, by "wrote 1-hour entries"


@dataclass(frozen=True, slots=True)
class Attribution:
    """What one request sent fresh: the conversation's new turns, and what it missed (sent
    again) with the cause of the miss (None where it missed nothing over ``FLOOR``)."""

    new: int
    missed: int
    cause: str | None
    gap: float | None  # seconds since the chain's previous request


def fresh_tokens(call: RecordedCall, writes_counted: bool) -> int:
    """What a request did not read from the cache and paid for as new."""
    if writes_counted:
        return call.cache_write_5m + call.cache_write_1h
    return call.input


def attribute(
    calls: Sequence[RecordedCall], rewrites: Iterable[float] = (), writes_counted: bool = True
) -> list[Attribution]:
    """Each request's fresh tokens split into new turns and a miss, with the miss's cause."""
    rewritten = sorted(rewrites)
    attributions = []
    previous: dict[bool, RecordedCall] = {}  # the last request of each chain
    hourly: dict[bool, bool] = {}  # whether each chain's latest writes were 1-hour entries
    for call in calls:
        fresh = fresh_tokens(call, writes_counted)
        before, lifetime = previous.get(call.side), LIFETIME[hourly.get(call.side, False)]
        previous[call.side] = call
        if call.cache_write_5m or call.cache_write_1h:
            hourly[call.side] = call.cache_write_1h > 0
        gap = _gap(before, call)
        if before is None:
            attributions.append(Attribution(0, fresh, FIRST, None))
            continue
        missed = max(fresh - max(call.tokens - before.tokens, 0), 0)
        if missed <= FLOOR:
            attributions.append(Attribution(fresh, 0, None, gap))
        else:
            cause = _cause(call, before, gap, lifetime, rewritten)
            attributions.append(Attribution(fresh - missed, missed, cause, gap))
    return attributions


def _cause(
    call: RecordedCall,
    before: RecordedCall,
    gap: float | None,
    lifetime: float,
    rewrites: Sequence[float],
) -> str:
    if gap is not None and gap > lifetime:
        return EXPIRED
    if call.change is not None:
        return call.change
    if _rewritten_between(rewrites, before.time, call.time):
        return CTXPACK
    if call.model != before.model and None not in (call.model, before.model):
        return MODEL_SWITCH
    if call.cache_read == 0 and before.tokens > before.input:
        return PROMPT_CHANGED
    return UNEXPLAINED


def _rewritten_between(rewrites: Sequence[float], start: float | None, end: float | None) -> bool:
    if start is None or end is None:
        return False
    return any(start < moment <= end for moment in rewrites)


def _gap(before: RecordedCall | None, call: RecordedCall) -> float | None:
    if before is None or before.time is None or call.time is None:
        return None
    return call.time - before.time
