"""Replay a saved conversation request by request through a policy, and bill it (issue 20).

The conversation is cut into the requests an agent made: one before each assistant message, with
the history up to it. Each request goes through ``auto`` as a caller would use it, in one of two
ways: an agent loop that keeps ctxpack's output and appends to it (``keeps``), or a caller that
re-sends its raw history every time, as a proxy does (``resends``). What was sent is billed with
prompt caching (pricing.py), beside sending the history untouched and beside the seed's policy
(micro compaction on every call, a summary when over the threshold; ``every-turn``). Summaries are
the built-in extractive summarizer's, offline, unless another deterministic one is given.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..compaction.cache_apply import Heads, compact_stably
from ..compaction.cache_plan import Timing, request_points
from ..compaction.pipeline import default_provider, run
from ..compaction.tokenizers import counter
from ..defaults import CACHE_AWARE, EVERY_TURN
from ..ends.formats import Conversation, Message
from ..providers.base import Summarizer
from ..settings import RunSettings, Settings
from .pricing import Bill, Meter, Pricing

KEEPS = "keeps"  # an agent loop that keeps ctxpack's output and appends to it
RESENDS = "resends"  # a caller that re-sends its raw history every time (a proxy)
USES = (KEEPS, RESENDS)
UNTOUCHED = "untouched"
SEED = "seed"  # the seed's policy: every-turn, with the same settings otherwise
CHOSEN = "chosen"


@dataclass(frozen=True)
class Recording:
    """A saved conversation: its messages, when each was written, its envelope's system."""

    messages: list[Message]
    times: Sequence[float | None] = ()
    system: Any = None


@dataclass(frozen=True)
class Run:
    """One policy in one way of use: what each request was, and the bill."""

    use: str  # KEEPS or RESENDS (untouched: both alike)
    policy: str  # UNTOUCHED, SEED or CHOSEN
    bill: Bill
    summaries: int = 0  # requests that held a summary


@dataclass(frozen=True)
class Replay:
    requests: int
    prices: Pricing
    settings: Settings
    runs: tuple[Run, ...] = field(default_factory=tuple)

    def find(self, use: str, policy: str) -> Run:
        if policy == UNTOUCHED:
            use = KEEPS
        return next(run for run in self.runs if run.use == use and run.policy == policy)


def replay(
    recording: Recording,
    settings: Settings,
    prices: Pricing,
    provider: Summarizer | None = None,
    policies: Sequence[str] = (SEED, CHOSEN),
    uses: Sequence[str] = USES,
) -> Replay:
    """Every request of the recording through each policy and way of use, billed."""
    provider = provider or default_provider()
    points = request_points(recording.messages)[:-1]  # the current request is not a request yet
    runs = [Run(KEEPS, UNTOUCHED, _untouched(recording, points, prices, settings))]
    replayed = {SEED: replace(settings, policy=EVERY_TURN, min_gain=None), CHOSEN: settings}
    for use in uses:
        for name, chosen in ((name, replayed[name]) for name in policies):
            meter = Meter(prices, counter(settings.tokenizer))
            summaries = 0
            for request, time in _requests(recording, points, use, chosen, provider, prices):
                meter.send(request, recording.system, time)
                summaries += any(_is_summary(message) for message in request[:4])
            runs.append(Run(use, name, meter.bill(), summaries))
    return Replay(len(points), prices, settings, tuple(runs))


def _untouched(
    recording: Recording, points: list[int], prices: Pricing, settings: Settings
) -> Bill:
    meter = Meter(prices, counter(settings.tokenizer))
    for point in points:
        meter.send(recording.messages[:point], recording.system, _time(recording.times, point))
    return meter.bill()


def _requests(
    recording: Recording,
    points: list[int],
    use: str,
    settings: Settings,
    provider: Summarizer,
    prices: Pricing,
) -> Iterator[tuple[list[Message], float | None]]:
    """Each request as the caller sends it, with its time."""
    messages, times = recording.messages, recording.times
    stable = settings.policy == CACHE_AWARE and not settings.compat
    heads: Heads = {}
    kept: list[Message] = []  # KEEPS: ctxpack's last output
    kept_times: list[float | None] = []
    previous = 0
    for point in points:
        now = _time(times, point)
        if use == KEEPS:
            history = [*kept, *messages[previous:point]]
            history_times = [*kept_times, *(_time(times, i + 1) for i in range(previous, point))]
        else:
            history = messages[:point]
            history_times = [_time(times, i + 1) for i in range(point)]
        if stable:
            timing = Timing(history_times, now, prices.ttl)
            remembered = heads if use == RESENDS else None
            done = compact_stably(history, settings, provider, timing, recording.system, remembered)
            request = done.messages
            head = len(request) - len(done.plan.live)
            kept_times = [None] * head + [history_times[index] for index in done.plan.live]
        else:
            envelope = None if recording.system is None else {"system": recording.system}
            conversation = Conversation(history, "envelope" if envelope else "array", envelope)
            outcome = run(RunSettings("auto", settings), conversation, provider)
            request = outcome.conversation.messages
            kept_times = [None] * len(request)  # the seed's policy has no use for times
        kept, previous = request, point
        yield request, now


def _time(times: Sequence[float | None], point: int) -> float | None:
    """The time of the request with ``messages[:point]``: its last message's."""
    return times[point - 1] if 0 < point <= len(times) else None


def _is_summary(message: Message) -> bool:
    content = message.get("content")
    return isinstance(content, str) and content.startswith("[Context Compressed]")
