"""What a provider bills for a run of requests with prompt caching (the replay's arithmetic).

A request's *cached part* is the longest prefix of whole messages equal to the previous request's
(a request envelope's ``system`` counts as the first of them), provided the previous request is
at most the cache's time to live older; it is billed at ``read`` times the input price, the rest
at ``write`` times (writing it into the cache). Tokens are the estimate's (SPEC §1), per message,
so a request's cached and written parts add up to its estimate. Tool definitions are not counted
(ctxpack never changes them), nor the output tokens. Providers cache only from a minimum prefix
(1,024 tokens) and match earlier requests too, not just the previous one; neither is modelled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..compaction.estimate import HEURISTIC, Counter, message_units, system_units, units_to_tokens
from ..conversation.formats import Message
from ..errors import ConfigError


@dataclass(frozen=True)
class Pricing:
    name: str
    read: float  # a cached input token, in input tokens
    write: float  # an input token written into the cache
    ttl: float  # seconds a cached prefix lives unused (a hit refreshes it)

    def describe(self) -> str:
        return f"{self.name}: read {self.read:g}x, write {self.write:g}x, ttl {self.ttl:g} s"


PROFILES = {
    "anthropic-5m": Pricing("anthropic-5m", 0.1, 1.25, 300.0),
    "anthropic-1h": Pricing("anthropic-1h", 0.1, 2.0, 3600.0),
    "openai": Pricing("openai", 0.1, 1.0, 300.0),
}
DEFAULT_PROFILE = "anthropic-5m"


def pricing(profile: str, read: float | None = None, write: float | None = None) -> Pricing:
    """A profile, its ``read`` or ``write`` multiplier replaced where one is given."""
    if profile not in PROFILES:
        raise ConfigError(f"unknown pricing {profile!r}: choose one of {', '.join(PROFILES)}")
    base = PROFILES[profile]
    if read is None and write is None:
        return base
    return Pricing(
        f"{profile}, custom",
        base.read if read is None else read,
        base.write if write is None else write,
        base.ttl,
    )


@dataclass(frozen=True)
class Sent:
    """One request as billed."""

    tokens: int
    cached: int  # of those, read from the cache
    time: float | None = None

    def billed(self, prices: Pricing) -> float:
        return prices.read * self.cached + prices.write * (self.tokens - self.cached)


@dataclass(frozen=True)
class Bill:
    """A run of requests: what it cost and how."""

    requests: tuple[Sent, ...]
    prices: Pricing

    @property
    def billed(self) -> float:
        return sum(request.billed(self.prices) for request in self.requests)

    @property
    def sent(self) -> int:
        return sum(request.tokens for request in self.requests)

    @property
    def cached(self) -> int:
        return sum(request.cached for request in self.requests)

    @property
    def hit_rate(self) -> float:
        return self.cached / self.sent if self.sent else 0.0

    @property
    def biggest(self) -> int:
        return max((request.tokens for request in self.requests), default=0)


class Meter:
    """Bills requests one after the other, each against the one before it."""

    def __init__(self, prices: Pricing, counter: Counter = HEURISTIC) -> None:
        self.prices, self.counter = prices, counter
        self.previous: Sequence[Message] | None = None
        self.previous_time: float | None = None
        self.requests: list[Sent] = []
        self._units: dict[int, tuple[Message, int]] = {}  # by id; the message is kept alive

    def send(self, messages: Sequence[Message], system: Any = None, time: float | None = None):
        """Bill one request (``system``: a request envelope's, part of the cached prefix)."""
        units = [self._message_units(message) for message in messages]
        total = system_units(system, self.counter) + sum(units)
        cold = self.previous is None or (
            time is not None
            and self.previous_time is not None
            and time - self.previous_time > self.prices.ttl
        )
        cached = 0
        if not cold:
            shared = _common_prefix(self.previous or (), messages)
            cached = system_units(system, self.counter) + sum(units[:shared])
        tokens = units_to_tokens(total, self.counter)
        self.requests.append(Sent(tokens, units_to_tokens(cached, self.counter), time))
        self.previous, self.previous_time = messages, time

    def bill(self) -> Bill:
        return Bill(tuple(self.requests), self.prices)

    def _message_units(self, message: Message) -> int:
        known = self._units.get(id(message))
        if known is not None and known[0] is message:
            return known[1]
        units = message_units(message, self.counter)
        self._units[id(message)] = (message, units)
        return units


def _common_prefix(before: Sequence[Message], now: Sequence[Message]) -> int:
    """How many whole messages at the start of ``now`` equal those of ``before``."""
    shared = 0
    for old, new in zip(before, now, strict=False):
        if old is not new and old != new:
            break
        shared += 1
    return shared
