"""The receipt: the bill as the agent recorded it, and what the replay learns from it.

An agent that records the usage of its model requests (``AgentFormat.recorded_usage``: Claude
Code, Codex) gives the bill as the provider counted it. The receipt adds it up at a profile's
prices (1-hour writes at their own); the profile follows the file (``recorded_profile``). The
simulation is calibrated on it (``calibrate``): each recorded request's input tokens against the
estimate of the messages it held, a straight line whose intercept is what the agent sends
besides the messages (system prompt and tools, not in the file) and whose slope is the
provider's tokens per estimated token.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ..session_files.base import RecordedCall
from .cache_rules import Prices, Usage
from .pricing import SYSTEM_CHANGED, TOOLS_CHANGED, Calibration


@dataclass(frozen=True)
class Receipt:
    """What the recorded requests were billed, in input tokens (``billed``) and their parts."""

    requests: int
    input: int  # plain input
    cache_read: int
    cache_write: int  # 5-minute and 1-hour writes
    cache_write_1h: int
    billed: float
    biggest: int = 0  # the most input tokens of one request
    side_requests: int = 0  # of the requests, a subagent's (in the bill, not in the view)
    per_request: tuple[float, ...] = ()  # each request's bill, in the file's order

    @property
    def sent(self) -> int:
        return self.input + self.cache_read + self.cache_write

    def as_json(self) -> dict[str, int | float]:
        return {
            "requests": self.requests,
            "input": self.input,
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
            "cache_write_1h": self.cache_write_1h,
            "billed": round(self.billed, 2),
        }


def usage_of(call: RecordedCall) -> Usage:
    return Usage(call.cache_read, call.cache_write_5m, call.cache_write_1h, call.input)


def receipt(calls: Sequence[RecordedCall], prices: Prices) -> Receipt:
    total = sum((usage_of(call) for call in calls), Usage())
    return Receipt(
        requests=len(calls),
        input=total.plain,
        cache_read=total.read,
        cache_write=total.written,
        cache_write_1h=total.written_1h,
        billed=total.billed(prices),
        biggest=max((call.tokens for call in calls), default=0),
        side_requests=sum(call.side for call in calls),
        per_request=tuple(usage_of(call).billed(prices) for call in calls),
    )


def recorded_profile(calls: Sequence[RecordedCall], rules: str | None) -> str | None:
    """The price profile the file's own bill follows: OpenAI's, or Anthropic's with the TTL
    that most of its writes had; None if the file records nothing."""
    if not calls or rules is None:
        return None
    if rules == "openai":
        return "openai"
    hour = sum(call.cache_write_1h for call in calls)
    minutes = sum(call.cache_write_5m for call in calls)
    return "anthropic-1h" if hour > minutes else "anthropic-5m"


def calibrate(
    calls: Sequence[RecordedCall], estimated: Sequence[float], lifetime: float
) -> Calibration:
    """The simulation's basis from the main thread's recorded calls and the estimate of the
    messages each one sent: the extras and scale (``fit``), and where the agent changed them."""
    models = Counter(call.model for call in calls if call.model)
    model = models.most_common(1)[0][0] if models else None
    extras, scale = fit([call.tokens for call in calls], estimated)
    changes, stable = prefix_changes(calls, extras, lifetime)
    warm = bool(calls) and 0 < stable <= calls[0].cache_read
    return Calibration(extras, stable, scale, model, changes, warm)


def prefix_changes(
    calls: Sequence[RecordedCall], extras: int, lifetime: float
) -> tuple[dict[int, str], int]:
    """Where the agent changed what it sends besides the messages, and how much of it stayed.

    A request that read less than 90% of the extras from the cache, within ``lifetime`` of the
    one before, found the agent's own prefix changed: its system prompt where it still read
    the part that Claude Code marks first (tools and the first system blocks: the read such
    requests most often share), its tools (or model) where it read less."""
    missed = [
        number
        for number in range(1, len(calls))
        if calls[number].cache_read < 0.9 * extras
        and not _expired(calls[number - 1].time, calls[number].time, lifetime)
    ]
    reads = Counter(calls[number].cache_read for number in missed if calls[number].cache_read)
    stable = min(reads.most_common(1)[0][0], extras) if reads else 0
    changes = {
        number: SYSTEM_CHANGED
        if stable and calls[number].cache_read >= 0.9 * stable
        else TOOLS_CHANGED
        for number in missed
    }
    return changes, stable


def _expired(before: float | None, now: float | None, lifetime: float) -> bool:
    return before is not None and now is not None and now - before > lifetime


def fit(recorded: Sequence[int], estimated: Sequence[float]) -> tuple[int, float]:
    """The least-squares line ``recorded = extras + scale * estimated`` over the requests.

    With too few requests, or a line that makes no sense (a negative intercept or slope), the
    first request's difference is the extras and the scale is 1."""
    count = len(recorded)
    fallback = (max(recorded[0] - round(estimated[0]), 0) if count else 0), 1.0
    if count < 2:
        return fallback
    mean_x, mean_y = sum(estimated) / count, sum(recorded) / count
    spread = sum((x - mean_x) ** 2 for x in estimated)
    if not spread:
        return fallback
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(estimated, recorded, strict=True))
    slope /= spread
    intercept = mean_y - slope * mean_x
    if slope <= 0 or intercept < 0:
        return fallback
    return round(intercept), slope
