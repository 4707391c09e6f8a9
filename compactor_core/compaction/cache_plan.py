"""The cache-aware per-turn policy: what each request keeps, decided so its prefix stays cached.

Providers bill the longest prefix of a request that equals an earlier one at about a tenth of the
input price, and write the rest into the cache at a premium. Micro compaction that moves its
marker one tool-result turn further on every call changes the prompt near its end on every call,
so nearly everything after that point is written again each time. This policy changes the prompt
rarely and in large steps, and only where the conversation itself says so:

- **markers in batches**: the tool-result turns old enough to be truncated (all but the newest
  ``keep_recent``) are walked oldest first; their gains (tokens their markers free) add up, and
  only when the sum reaches ``min_gain`` does that batch get its markers, all at once. A marker
  once applied stays; a partial batch waits. Stale results go first (staleness.py): one among the
  newest turns that a later result repeats rides with the next batch (it never makes a batch
  happen sooner), and a marker shows what had gone stale by the request it was applied at;
- **catch up when the cache is cold**: where the times show that the gap since the previous
  request exceeded the cache's time to live, the whole prompt is written again anyway, so the
  waiting batch gets its markers then, whatever it frees;
- **a cut that stays put**: a request over the threshold is compacted: everything before its
  pending turn is summarized (a rolling summary after the first), and that head stays as it is,
  request after request, until a request is over the threshold again. The head is counted with
  the summary at its whole budget (``max_tokens``), so no cut depends on what a summary says;
  so is a summary in the conversation itself, which an agent loop that keeps ctxpack's output
  sends back.

The decisions come from a walk over the conversation's requests, oldest first: one before each
assistant message (the history up to it) and the current one (the whole conversation). So the
same prefix always gives the same decisions, and a caller that re-sends its raw history (a proxy)
gets the requests of one that keeps ctxpack's output: the walk finds the earlier cuts again. A
proxy keeps (``Memo.walk``) the walk of each history up to its last request but the current one,
and the next request of the conversation takes it up there, instead of walking it all again.
Turns are named by their position in ``tools.tool_result_turns``, oldest 0.
"""

from __future__ import annotations

import copy
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from ..conversation.formats import Message
from ..conversation.prompts import PROMPTS, SUMMARY_PREFIX
from ..defaults import MIN_GAIN
from ..settings import Settings
from .estimate import Counter, units_to_tokens
from .full import find_pending_turn
from .memo import NO_MEMO, Memo
from .micro import Layout
from .stale_walk import StaleResults
from .staleness import NONE, Staleness
from .tokenizers import counter as counter_named

CACHE_TTL = 300.0  # seconds a provider keeps a cached prefix (Anthropic's default, 5 minutes)


@dataclass(frozen=True)
class Timing:
    """When each message was written, and the cache's time to live (all in seconds)."""

    times: Sequence[float | None] = ()  # per message (epoch seconds); None or missing: unknown
    now: float | None = None  # the current request's time (default: its last message's)
    ttl: float = CACHE_TTL


@dataclass(frozen=True)
class Cut:
    """A full compaction at one request of the walk."""

    request: int  # messages[:request] was the history then
    live: tuple[int, ...]  # the messages sent after the head then (indexes)
    pending: tuple[int, ...]  # those kept after the new summary: the pending turn (SPEC §3.1)
    marked: frozenset[int]  # the turns carrying markers at that request
    marked_at: tuple[tuple[int, int], ...] = ()  # (turn, the request it was marked at)
    single: frozenset[str] = frozenset()  # stale results of other turns marked (call ids)


@dataclass(frozen=True)
class Plan:
    """The current request: the head the last cut left, then the ``live`` messages, the
    ``marked`` turns among them as markers."""

    marked: frozenset[int]
    live: tuple[int, ...]  # message indexes (every message, in order, without a cut)
    cuts: tuple[Cut, ...] = ()  # oldest first
    cuts_now: bool = False  # the last cut is at the current request (not one found again)
    tokens: int = 0  # the request's estimate, a summary counted at its whole budget
    batches: int = 0  # batches of markers applied along the walk
    catch_ups: int = 0  # requests at which the cache was found cold
    marked_at: tuple[tuple[int, int], ...] = ()  # (turn, the request it was marked at)
    single: frozenset[str] = frozenset()  # stale results of newer turns marked (call ids)
    staleness: Staleness = NONE  # the conversation's stale results, found once for all its marks


# Anthropic's cache prices, in input tokens: what a batch of markers weighs (the dearest rules:
# OpenAI writes at 1x).
READ, WRITE = 0.1, 1.25


def min_gain(settings: Settings) -> int:
    """The settings' ``min_gain``, or the cache-aware default when unset."""
    return MIN_GAIN if settings.min_gain is None else settings.min_gain


def requests_to_come(since_cut: int) -> float:
    """The requests a batch of markers is taken to be read on: half those since the last cut."""
    return max(since_cut, 1) / 2


def request_points(messages: Sequence[Message]) -> list[int]:
    """The requests of a conversation as history lengths: one before each assistant message,
    and the whole conversation (the current request)."""
    before = [index for index, message in enumerate(messages) if message.get("role") == "assistant"]
    return [point for point in before if point > 0] + [len(messages)]


def plan(
    messages: list[Message],
    settings: Settings,
    timing: Timing | None = None,
    fixed_tokens: int = 0,
    past_cuts: bool = True,
    unmade: frozenset[int] = frozenset(),
    payback: bool = False,
    memo: Memo = NO_MEMO,
    layout: Layout | None = None,
) -> Plan:
    """The decisions for the current request, the whole of ``messages``.

    ``fixed_tokens``: what every request carries besides the messages (a request envelope's
    ``system``). ``past_cuts=False`` cuts at the current request only: for a summarizer that
    cannot write an earlier summary again word for word (a model), which a proxy re-sending its
    raw history would otherwise have to ask again on every request. ``unmade``: requests whose
    cut the summarizer refused (a summary not smaller than what it replaces): the walk goes on
    without them, and cuts at a later request instead. ``payback``: a batch is made only when it
    pays for itself too (``auto``'s policy; ``micro --min-gain`` batches by ``min_gain`` alone).
    ``memo``: what was found before of the same messages (a proxy's: ``memo.py``); ``layout``:
    the messages', when the caller has it already.
    """
    counter = counter_named(settings.tokenizer)
    timing = timing or Timing()
    points = request_points(messages)
    given = (settings, fixed_tokens, past_cuts, unmade, payback, timing.ttl)
    saved = _saved_walk(messages, points, timing, memo.walk(messages, given))
    walk = _Walk(messages, settings, counter, fixed_tokens, payback, memo, layout, saved)
    for point in points[bisect_right(points, walk.added) :]:  # those not walked before
        walk.advance(point)
        now = _request_time(timing, point, len(messages))
        if walk.previous is not None and now is not None and now - walk.previous > timing.ttl:
            walk.catch_up()
        walk.previous = now
        if (past_cuts or point == len(messages)) and point not in unmade:
            walk.fit(point)
        if len(points) > 1 and point == points[-2]:  # the previous request: where the next goes on
            memo.keep_walk(messages, point, given, partial(walk.saved, timing))
    return walk.result()


def _saved_walk(
    messages: list[Message], points: list[int], timing: Timing, found: tuple[int, Any] | None
) -> dict[str, Any] | None:
    """The walk kept of a prefix of ``messages``, if it ended at one of their requests with the
    same times (both go into the walk besides the messages)."""
    if found is None:
        return None
    length, saved = found
    if length not in points or saved["times"] != tuple(timing.times[:length]):
        return None
    return saved


def parse_time(value: Any) -> float | None:
    """Epoch seconds from a timestamp: ISO 8601, or a number of seconds (or milliseconds)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value / 1000 if value > 1e11 else float(value)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def message_times(messages: Sequence[Message]) -> list[float | None]:
    """The times messages carry themselves: a ``timestamp`` key, as some exports have."""
    times = [message.get("timestamp") for message in messages]
    return [None if value is None else parse_time(value) for value in times]


def _is_framing(message: Message) -> bool:
    """An earlier compaction's summary or its acknowledgement."""
    content = message.get("content")
    acknowledgements = (prompts.acknowledgement for prompts in PROMPTS.values())
    return _is_summary(message) or (
        message.get("role") == "assistant" and content in acknowledgements
    )


def _is_summary(message: Message) -> bool:
    """A summary an earlier compaction wrote (an agent loop keeps ctxpack's output)."""
    content = message.get("content")
    return isinstance(content, str) and content.startswith(SUMMARY_PREFIX)


def _request_time(timing: Timing, point: int, length: int) -> float | None:
    """A request goes out as soon as the last message of its history is there."""
    if point == length and timing.now is not None:
        return timing.now
    index = point - 1
    return timing.times[index] if 0 <= index < len(timing.times) else None


class _Walk:
    """The walk's state: what is sent, what is marked, what waits in the batch. ``saved``: what
    a walk of a prefix of the messages found (``_Walk.saved``), taken up where it ended."""

    def __init__(
        self,
        messages: list[Message],
        settings: Settings,
        counter: Counter,
        fixed_tokens: int,
        payback: bool = False,
        memo: Memo = NO_MEMO,
        layout: Layout | None = None,
        saved: dict[str, Any] | None = None,
    ) -> None:
        self.messages, self.settings, self.counter = messages, settings, counter
        self.payback = payback
        layout = layout or Layout.of(messages)
        self.turns = layout.turns
        self.turn_starts = [turn[0] for turn in self.turns]
        per_token = counter.per_token
        self.fixed_units = fixed_tokens * per_token
        self.threshold_units = settings.threshold * per_token
        self.min_gain_units = min_gain(settings) * per_token
        self.summary_units = settings.max_tokens * per_token + counter.units([SUMMARY_PREFIX])
        self.ack_units = max(
            counter.units([prompts.acknowledgement]) for prompts in PROMPTS.values()
        )
        self._start()
        if saved is not None:
            self._take_up(saved)
        new = messages[self.added :]
        self.units[self.added :] = [self._units(message, memo) for message in new]
        # what an old turn's markers free, as its truncation markers: a batch of old turns fills
        # as it does by age alone (stale results only join it sooner); the turns walked before
        # and not in the batch need none
        waiting = range(min(self.batch, default=self.considered), len(self.turns))
        self.marked_units = memo.marked_units(messages, settings, layout, waiting)
        self.staleness = memo.staleness(messages, settings)
        self.stale = StaleResults(
            messages, settings, counter, self.staleness, layout, memo, self.added
        )

    def _start(self) -> None:
        """The walk before its first request (``_PROGRESS``)."""
        self.units: list[int] = []  # of each message, as sent now
        self.live: list[int] = []
        self.live_units = 0
        self.head_systems: list[int] = []  # system messages the cuts moved to the front
        self.head_units = 0  # those, the summary at its budget, the acknowledgement
        self.marked: set[int] = set()
        self.marked_at: dict[int, int] = {}
        self.batch: list[int] = []  # turns old enough, not yet marked
        # stale results of newer turns, not yet marked: (call id, message index, what it frees)
        self.batch_stale: list[tuple[str, int, int]] = []
        self.single: dict[str, int] = {}  # stale results marked: call id, message index
        self.batch_gain = 0
        self.added = 0  # messages[:added] have joined the walk
        self.considered = 0  # turns[:considered] were old enough, or went into a summary
        self.cuts: list[Cut] = []
        self.batches = self.catch_ups = 0
        self.since_cut = 0  # requests walked since the last cut
        self.previous: float | None = None  # the time of the last request walked

    def _take_up(self, saved: dict[str, Any]) -> None:
        for name in _PROGRESS:
            setattr(self, name, copy.copy(saved[name]))  # the saved walk stays as it was

    def saved(self, timing: Timing) -> dict[str, Any]:
        """The walk so far, to be taken up by a walk of a conversation that goes on from here
        (with the times it was walked by)."""
        saved = {name: copy.copy(getattr(self, name)) for name in _PROGRESS}
        return {**saved, "times": tuple(timing.times[: self.added])}

    def _units(self, message: Message, memo: Memo) -> int:
        units = memo.units(message, self.counter)
        # counted as a cut's head counts its own
        return max(units, self.summary_units) if _is_summary(message) else units

    def advance(self, point: int) -> None:
        """The history grows to ``messages[:point]``; turns that became old enough join the
        batch, which gets its markers once it frees ``min_gain``."""
        self.since_cut += 1
        self.live.extend(range(self.added, point))
        self.live_units += sum(self.units[self.added : point])
        self.added = point
        started = bisect_left(self.turn_starts, point)  # turns begun before the point
        keep = self.settings.keep_recent
        old_enough = started - keep if keep > 0 else started
        # stale duplicates among the newest turns ride with the next batch: they never make
        # one happen sooner, so the prompt is written again exactly when age alone writes it
        for gone in self.stale.gone_stale(point):
            if self._turn_of(gone[1]) >= max(self.considered, old_enough):
                self.batch_stale.append(gone)
        for position in range(self.considered, old_enough):
            self.batch.append(position)
            self._join(self._gain(position))
        self.considered = max(self.considered, old_enough)

    def _join(self, gain: int) -> None:
        """What joined the batch frees ``gain``: the batch gets its markers once it is enough."""
        self.batch_gain += gain
        if self.min_gain_units <= 0 or (
            self.batch_gain >= self.min_gain_units and (not self.payback or self._pays_for_itself())
        ):
            self.batches += 1
            self._mark_batch()

    def _pays_for_itself(self) -> bool:
        """Whether the batch's markers save more than they cost, by Anthropic's prices: what
        they free, read on each request to come, against writing again what follows the first
        of them (which the cache read until now). Stateless, the walk cannot know how many
        requests are to come; it takes half as many as came since the last cut (counted from
        the cut alike whether the caller keeps ctxpack's output or not). If a conversation that
        has reached t requests reaches x·t with the odds 1/x (the Lindy rule: one that went on
        long goes on), a batch that pays for itself by then fails to at most one time in three;
        taking as many as came, one time in two."""
        first = self.turns[self.batch[0]][0]
        rewritten = sum(self.units[index] for index in self.live if index >= first)
        saved = self.batch_gain * READ * requests_to_come(self.since_cut)
        return saved >= (WRITE - READ) * (rewritten - self.batch_gain)

    def catch_up(self) -> None:
        """The cache has expired: the prompt is written again anyway, so mark what waits."""
        self.catch_ups += 1
        self._mark_batch()

    def fit(self, point: int) -> None:
        """Cut if this request is over the threshold and there is something new to summarize."""
        if self.fixed_units + self.head_units + self.live_units <= self.threshold_units:
            return
        pending = find_pending_turn([self.messages[index] for index in self.live])
        kept = [self.live[position] for position in pending.indexes]
        systems = [index for index in self.live if self.messages[index].get("role") == "system"]
        gone = set(kept) | set(systems)
        if all(index in gone or _is_framing(self.messages[index]) for index in self.live):
            return  # nothing new to summarize: an earlier summary alone stays as it is
        marked_at, single = tuple(sorted(self.marked_at.items())), frozenset(self.single)
        cut = Cut(point, tuple(self.live), tuple(kept), frozenset(self.marked), marked_at, single)
        self.cuts.append(cut)
        self.head_systems += systems
        ack = self.ack_units if pending.acknowledge else 0
        self.head_units = self._units_of(self.head_systems) + self.summary_units + ack
        self.live, self.live_units = kept, self._units_of(kept)
        first_kept = kept[0] if kept else point
        self.considered = max(self.considered, bisect_left(self.turn_starts, first_kept))
        self.batch, self.batch_gain, self.batch_stale = [], 0, []
        self.since_cut = 0

    def result(self) -> Plan:
        live = set(self.live)
        marked = frozenset(p for p in self.marked if live.issuperset(self.turns[p]))
        units = self.fixed_units + self.head_units + self.live_units
        cuts_now = bool(self.cuts) and self.cuts[-1].request == len(self.messages)
        tokens = units_to_tokens(units, self.counter)
        cuts = tuple(self.cuts)
        marked_at = tuple((position, self.marked_at[position]) for position in sorted(marked))
        single = frozenset(call for call, index in self.single.items() if index in live)
        return Plan(
            marked,
            tuple(self.live),
            cuts,
            cuts_now,
            tokens,
            self.batches,
            self.catch_ups,
            marked_at,
            single,
            self.staleness,
        )

    def _gain(self, position: int) -> int:
        return sum(self.units[i] - self.marked_units[i] for i in self.turns[position])

    def _mark_batch(self) -> None:
        live = set(self.live)
        for call, index, gain in self.batch_stale:
            self.single[call] = index
            self._free(index, gain, live)
        for position in self.batch:
            self.marked.add(position)
            self.marked_at[position] = self.added
            for index in self.turns[position]:
                self._free(index, self.units[index] - self.marked_units[index], live)
        self.batch, self.batch_gain, self.batch_stale = [], 0, []

    def _free(self, index: int, gain: int, live: set[int]) -> None:
        self.units[index] -= gain
        if index in live:
            self.live_units -= gain

    def _turn_of(self, index: int) -> int:
        """The position of the tool-result turn holding message ``index``."""
        return bisect_left(self.turn_starts, index + 1) - 1

    def _units_of(self, indexes: Sequence[int]) -> int:
        return sum(self.units[index] for index in indexes)


# what a walk has found so far: the attributes ``_Walk.saved`` keeps and a walk takes up
_PROGRESS = (
    "units",
    "live",
    "live_units",
    "head_systems",
    "head_units",
    "marked",
    "marked_at",
    "batch",
    "batch_stale",
    "single",
    "batch_gain",
    "added",
    "considered",
    "cuts",
    "batches",
    "catch_ups",
    "since_cut",
    "previous",
)
