"""What a provider bills for a run of requests with prompt caching (the replay's arithmetic).

A request is billed by its provider's cache rules (``cache_rules.py``: Anthropic's breakpoints
and 20-block lookback, or OpenAI's automatic prefix cache) at a price profile's multipliers of
the input price. The requests are built as their agent sends them: what the agent sends besides
the messages (its system prompt and tools, ``extras`` tokens, when the file does not hold them)
first, as the end of the system where Claude Code marks it; then an envelope's ``system`` and
each message's content blocks. A request that carries no ``cache_control`` is marked where
Claude Code 2.1.328 marks its own (``cache_rules.DEFAULT_PLACEMENT``). Tokens are the estimate's
(SPEC §1) per block, times ``scale`` where the replay calibrated them against recorded usage.
Output tokens are not counted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..compaction.estimate import HEURISTIC, Counter, TextCollector, json_text
from ..conversation.formats import Message
from ..errors import ConfigError
from .cache_rules import (
    FIVE_MINUTES,
    ONE_HOUR,
    RULES,
    TTL_SECONDS,
    Block,
    CacheState,
    Prices,
    Rules,
    Usage,
    as_blocks,
    content_block,
    placed,
)


@dataclass(frozen=True)
class Pricing:
    name: str
    read: float  # a cached input token, in input tokens
    write: float  # an input token written into the cache at the profile's TTL
    ttl: float  # seconds a cached prefix lives unused (a hit refreshes it)
    rules: str = "anthropic"  # whose cache rules (cache_rules.RULES)
    breakpoint_ttl: str = FIVE_MINUTES  # the TTL of the breakpoints the replay places

    def describe(self) -> str:
        return f"{self.name}: read {self.read:g}x, write {self.write:g}x, ttl {self.ttl:g} s"

    def cache_rules(self) -> Rules:
        """The provider's rules at this profile's prices and lifetime."""
        base = RULES[self.rules]
        written = "write_1h" if self.breakpoint_ttl == ONE_HOUR else "write_5m"
        prices = replace(base.prices, read=self.read, **{written: self.write})
        lifetimes = {**TTL_SECONDS, self.breakpoint_ttl: self.ttl}
        return replace(base, prices=prices, lifetimes=lifetimes)  # type: ignore[type-var]


PROFILES = {
    "anthropic-5m": Pricing("anthropic-5m", 0.1, 1.25, 300.0),
    "anthropic-1h": Pricing("anthropic-1h", 0.1, 2.0, 3600.0, breakpoint_ttl=ONE_HOUR),
    "openai": Pricing("openai", 0.1, 1.0, 300.0, rules="openai"),
}
DEFAULT_PROFILE = "anthropic-5m"


def pricing(
    profile: str, read: float | None = None, write: float | None = None, ttl: float | None = None
) -> Pricing:
    """A profile, its ``read``, ``write`` or ``ttl`` replaced where one is given."""
    if profile not in PROFILES:
        raise ConfigError(f"unknown pricing {profile!r}: choose one of {', '.join(PROFILES)}")
    base = PROFILES[profile]
    if read is None and write is None and ttl is None:
        return base
    return replace(
        base,
        name=f"{profile}, custom",
        read=base.read if read is None else read,
        write=base.write if write is None else write,
        ttl=base.ttl if ttl is None else ttl,
    )


@dataclass(frozen=True)
class Sent:
    """One request as billed."""

    usage: Usage
    time: float | None = None

    @property
    def tokens(self) -> int:
        return self.usage.tokens

    @property
    def cached(self) -> int:
        return self.usage.read

    @property
    def written(self) -> int:
        return self.usage.written


@dataclass(frozen=True)
class Bill:
    """A run of requests: what it cost and how."""

    requests: tuple[Sent, ...]
    prices: Prices

    @property
    def billed(self) -> float:
        return sum(request.usage.billed(self.prices) for request in self.requests)

    @property
    def sent(self) -> int:
        return sum(request.tokens for request in self.requests)

    @property
    def cached(self) -> int:
        return sum(request.cached for request in self.requests)

    @property
    def written(self) -> int:
        return sum(request.written for request in self.requests)

    @property
    def hit_rate(self) -> float:
        return self.cached / self.sent if self.sent else 0.0

    @property
    def biggest(self) -> int:
        return max((request.tokens for request in self.requests), default=0)


TOOLS_CHANGED = "tools"  # the agent's whole prefix changed: its tools, or the model
SYSTEM_CHANGED = "system"  # the end of its system prompt changed (Claude Code's system[2])


@dataclass(frozen=True)
class Calibration:
    """What a request holds besides its messages, recorded tokens per estimated token, and
    where the agent changed what it sends besides the messages (from the recorded usage)."""

    extras: int = 0  # its system prompt and tools
    stable: int = 0  # of those, what a change of its system prompt leaves (tools, system[1])
    scale: float = 1.0
    model: str | None = None  # the model the requests went to (its minimum cacheable prefix)
    changes: Mapping[int, str] = field(default_factory=dict)  # request number -> what changed
    warm: bool = False  # the first request read the stable part: an earlier session cached it


class Meter:
    """Bills requests one after the other against the provider's cache as they leave it."""

    def __init__(
        self, prices: Pricing, counter: Counter = HEURISTIC, calibration: Calibration | None = None
    ) -> None:
        self.prices, self.counter = prices, counter
        self.calibration = calibration or Calibration()
        self.rules = prices.cache_rules()
        self.state = CacheState()
        self.requests: list[Sent] = []
        self._versions = {TOOLS_CHANGED: 0, SYSTEM_CHANGED: 0}
        self._blocks: dict[int, tuple[Message, list[Block]]] = {}  # by id; the message kept

    def send(self, messages: Sequence[Message], system: Any = None, time: float | None = None):
        """Bill one request (``system``: a request envelope's)."""
        changed = self.calibration.changes.get(len(self.requests))
        if changed is not None:
            self._versions[changed] += 1
        blocks = self.blocks(messages, system)
        if self.calibration.warm and not self.requests:  # what the earlier session left
            stable = [*blocks[:1], replace(blocks[1], breakpoint=self.prices.breakpoint_ttl)]
            _, self.state = self.rules.send(stable, self.state, time, self.calibration.model)
        usage, self.state = self.rules.send(blocks, self.state, time, self.calibration.model)
        self.requests.append(Sent(usage, time))

    def bill(self) -> Bill:
        return Bill(tuple(self.requests), self.rules.prices)

    def blocks(self, messages: Sequence[Message], system: Any = None) -> list[Block]:
        """The request as the provider reads it, marked where its agent marks it."""
        conversation = [block for message in messages for block in self._message_blocks(message)]
        if any(block.breakpoint for block in conversation):
            return [*self._system_blocks(system), *conversation]
        return placed((), self._system_blocks(system), conversation, ttl=self.prices.breakpoint_ttl)

    def _system_blocks(self, system: Any) -> list[Block]:
        """Claude Code's three system blocks, which it marks at [1] and [2]: the tokens that
        survive a change of its system prompt (its tools) up to [1], the rest up to [2]."""
        extras, stable = self.calibration.extras, self.calibration.stable
        if not extras and system is None:
            return []
        tokens = extras - stable + (self._tokens(system) if system is not None else 0)
        tools, prompt = self._versions[TOOLS_CHANGED], self._versions[SYSTEM_CHANGED]
        key = (prompt, None if system is None else json_text(system))
        return [Block(0, "system[0]"), Block(stable, ("tools", tools)), Block(tokens, key)]

    def _message_blocks(self, message: Message) -> list[Block]:
        known = self._blocks.get(id(message))
        if known is not None and known[0] is message:
            return known[1]
        content, role = message.get("content"), message.get("role")
        if isinstance(content, str | list) and not message.get("tool_calls"):
            blocks = [
                content_block(part, (role, place == 0), self._tokens)
                for place, part in enumerate(as_blocks(content))
            ]
        else:  # an OpenAI-style message with calls: one block
            blocks = [Block(self._tokens(message), (role, True, json_text(message)))]
        self._blocks[id(message)] = (message, blocks)
        return blocks

    def _tokens(self, value: Any) -> int:
        collector = TextCollector()
        if _is_message(value):
            collector.message(value)
        else:
            collector.value(value)
        units = collector.units(self.counter)
        return round(units * self.calibration.scale / self.counter.per_token)


def _is_message(value: Any) -> bool:
    return isinstance(value, dict) and "role" in value
