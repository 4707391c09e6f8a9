"""Replay a saved conversation request by request through a policy, and bill it (issue 20).

The conversation is cut into the requests an agent made: one before each assistant message, with
the history up to it; a session file that records its requests' usage gives them itself
(``recordings.py``), across the agent's own compactions, and its receipt (``receipt.py``). Each
request goes through ``auto`` as a caller would use it, in one of two ways: an agent loop that
keeps ctxpack's output and appends to it (``keeps``), or a caller that re-sends its raw history
every time, as a proxy does (``resends``). What was sent is billed by the provider's cache rules
(pricing.py, cache_rules.py), beside sending the history untouched and beside BareAgent's policy
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
from ..conversation.formats import Conversation, Message
from ..defaults import CACHE_AWARE, EVERY_TURN
from ..providers.base import Summarizer
from ..session_files.base import RecordedCall
from ..settings import RunSettings, Settings
from .pricing import Bill, Calibration, Meter, Pricing
from .receipt import Receipt, receipt

KEEPS = "keeps"  # an agent loop that keeps ctxpack's output and appends to it
RESENDS = "resends"  # a caller that re-sends its raw history every time (a proxy)
USES = (KEEPS, RESENDS)
UNTOUCHED = "untouched"
BAREAGENT = "bareagent"  # BareAgent's policy: every-turn, with the same settings otherwise
CHOSEN = "chosen"


@dataclass(frozen=True)
class Request:
    """One request an agent made: the history it sent, when each message of it was written,
    and when it was sent."""

    history: Sequence[Message]
    times: Sequence[float | None]
    time: float | None


@dataclass(frozen=True)
class Recording:
    """A saved conversation: its messages, when each was written, its envelope's system; for a
    session file that records its usage, the requests it made and what they were billed."""

    messages: list[Message]
    times: Sequence[float | None] = ()
    system: Any = None
    requests: Sequence[Request] = ()  # none: one before each assistant message
    calibration: Calibration = field(default_factory=Calibration)
    recorded: Sequence[RecordedCall] = ()  # every recorded request, a subagent's too
    profile: str | None = None  # the price profile the file's own bill follows

    def all_requests(self) -> Iterator[Request]:
        """The requests the agent made, one at a time (a long conversation's would not all fit
        in memory at once: each holds the history before it)."""
        if self.requests:
            yield from self.requests
            return
        for point in request_points(self.messages)[:-1]:  # the current request is not one yet
            times = [_time(self.times, number + 1) for number in range(point)]
            yield Request(self.messages[:point], times, _time(self.times, point))


@dataclass(frozen=True)
class Run:
    """One policy in one way of use: what each request was, and the bill."""

    use: str  # KEEPS or RESENDS (untouched: both alike)
    policy: str  # UNTOUCHED, BAREAGENT or CHOSEN
    bill: Bill
    summaries: int = 0  # requests that held a summary
    new_summaries: tuple[int, ...] = ()  # the requests that held a summary the one before did not


@dataclass(frozen=True)
class Replay:
    requests: int
    prices: Pricing
    settings: Settings
    runs: tuple[Run, ...] = field(default_factory=tuple)
    recorded: Receipt | None = None  # the bill as the file records it; None: a simulation
    calibration: Calibration = field(default_factory=Calibration)

    def find(self, use: str, policy: str) -> Run:
        if policy == UNTOUCHED:
            use = KEEPS
        return next(run for run in self.runs if run.use == use and run.policy == policy)


def replay(
    recording: Recording,
    settings: Settings,
    prices: Pricing,
    provider: Summarizer | None = None,
    policies: Sequence[str] = (BAREAGENT, CHOSEN),
    uses: Sequence[str] = USES,
) -> Replay:
    """Every request of the recording through each policy and way of use, billed."""
    provider = provider or default_provider()

    def meter() -> Meter:
        return Meter(prices, counter(settings.tokenizer), recording.calibration)

    untouched = meter()
    for request in recording.all_requests():
        untouched.send(request.history, recording.system, request.time)
    runs = [Run(KEEPS, UNTOUCHED, untouched.bill())]
    replayed = {BAREAGENT: replace(settings, policy=EVERY_TURN, min_gain=None), CHOSEN: settings}
    for use in uses:
        for name, chosen in ((name, replayed[name]) for name in policies):
            billed = meter()
            held: list[Message | None] = []  # each request's summary
            sent = _requests(recording, use, chosen, provider, prices)
            for request, time in sent:
                billed.send(request, recording.system, time)
                held.append(next((m for m in request[:4] if _is_summary(m)), None))
            made = (
                n
                for n, summary in enumerate(held)
                if summary and (n == 0 or held[n - 1] != summary)
            )
            summaries = sum(summary is not None for summary in held)
            runs.append(Run(use, name, billed.bill(), summaries, tuple(made)))
    recorded = receipt(recording.recorded, untouched.rules.prices) if recording.recorded else None
    count = len(untouched.requests)
    return Replay(count, prices, settings, tuple(runs), recorded, recording.calibration)


def _requests(
    recording: Recording,
    use: str,
    settings: Settings,
    provider: Summarizer,
    prices: Pricing,
) -> Iterator[tuple[list[Message], float | None]]:
    """Each request as the caller sends it, with its time. A caller that keeps ctxpack's output
    appends what is new since its last request; where the agent's history does not go on from
    it (the agent compacted), it starts again from the agent's."""
    stable = settings.policy == CACHE_AWARE and not settings.compat
    heads: Heads = {}
    kept: list[Message] = []  # KEEPS: ctxpack's last output
    kept_times: list[float | None] = []
    previous: Sequence[Message] = ()
    for request in recording.all_requests():
        now = request.time
        if use == KEEPS:
            start = len(previous) if _goes_on(previous, request.history) else 0
            if not start:
                kept, kept_times = [], []
            history = [*kept, *request.history[start:]]
            history_times = [*kept_times, *request.times[start:]]
        else:
            history, history_times = list(request.history), list(request.times)
        if stable:
            timing = Timing(history_times, now, prices.ttl)
            remembered = heads if use == RESENDS else None
            done = compact_stably(history, settings, provider, timing, recording.system, remembered)
            sent = done.messages
            head = len(sent) - len(done.plan.live)
            kept_times = [None] * head + [history_times[index] for index in done.plan.live]
        else:
            envelope = None if recording.system is None else {"system": recording.system}
            conversation = Conversation(history, "envelope" if envelope else "array", envelope)
            outcome = run(RunSettings("auto", settings), conversation, provider)
            sent = outcome.conversation.messages
            kept_times = [None] * len(sent)  # BareAgent's policy has no use for times
        kept, previous = sent, request.history
        yield sent, now


def _goes_on(previous: Sequence[Message], history: Sequence[Message]) -> bool:
    """Whether ``history`` is ``previous`` with messages added (the same objects, in order)."""
    if len(history) < len(previous):
        return False
    return all(old is new or old == new for old, new in zip(previous, history, strict=False))


def _time(times: Sequence[float | None], point: int) -> float | None:
    """The time of the request with ``messages[:point]``: its last message's."""
    return times[point - 1] if 0 < point <= len(times) else None


def _is_summary(message: Message) -> bool:
    content = message.get("content")
    return isinstance(content, str) and content.startswith("[Context Compressed]")
