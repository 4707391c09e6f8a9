"""Each provider's prompt-cache rules, as data and functions, in one place (issue 31).

A request is a sequence of ``Block``s (tools, then system, then the messages' content blocks, as
the provider reads them), each with its token count, a key that is equal when its content is,
and the TTL of its ``cache_control`` where it carries one (a *breakpoint*). ``Rules.send`` bills
one request against the cache as it stands and returns what was read from the cache, written
into it (5-minute and 1-hour apart) and sent as plain input, with the cache as it stands after.
The state is a value: the caller keeps it (per conversation, per replayed policy) and passes it in.

**Anthropic** (``ANTHROPIC``): an entry is written only at a block that carries ``cache_control``,
for the prefix ending there, and only when that prefix is at least the model's minimum
(``MINIMUM_PREFIX``); a read finds the longest prefix that has a live entry by checking each of
the request's breakpoints and up to ``LOOKBACK`` (20) blocks before it; what follows the read
part up to the last breakpoint is written, what follows the last breakpoint is plain input (1x).
At most 4 breakpoints a request. Writes cost 1.25x (5 minutes) or 2x (1 hour), reads 0.1x; a hit
refreshes its entry. A conversation that carries no breakpoint is billed where its agent would
put them (``Placement``; Claude Code 2.1.328's by default: ``system[1]``, ``system[2]`` and the
last block of the last message, no tool).

**OpenAI** (``OPENAI``): the automatic prefix cache. Every request's prefixes are cached; a read is
the longest prefix shared with an earlier live request, counted from 1,024 tokens in steps of 128;
cached input costs 0.1x, the rest 1x (writing costs nothing extra). Prefixes are matched at block
boundaries here, so a block that differs only at its end is not counted as partly cached.

Times are seconds (any epoch); ``None`` (unknown) means an entry never expires.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from ..compaction.estimate import json_text, tokens_of
from ..errors import InputError

FIVE_MINUTES = "5m"
ONE_HOUR = "1h"
TTL_SECONDS: Mapping[str, float] = {FIVE_MINUTES: 300.0, ONE_HOUR: 3600.0}

MAX_BREAKPOINTS = 4
LOOKBACK = 20  # blocks checked before each breakpoint, besides the breakpoint's own

# The minimum cacheable prefix by model, Anthropic's prompt-caching documentation (December
# 2026): the first entry whose name occurs in the model's id decides; others need 1,024.
MINIMUM_PREFIX: tuple[tuple[str, int], ...] = (
    ("opus-4-6", 4096),
    ("opus-4-5", 4096),
    ("haiku-4-5", 4096),
    ("opus-4-7", 2048),
    ("haiku", 2048),
)
DEFAULT_MINIMUM = 1024

OPENAI_MINIMUM = 1024
OPENAI_STEP = 128


# --- what a request is, what the cache holds, what was billed ----------------------------------


@dataclass(frozen=True)
class Block:
    """One block of a request as the provider reads it."""

    tokens: int
    key: Hashable  # equal for equal content (where the block sits is the prefix's business)
    breakpoint: str | None = None  # the TTL of its cache_control (FIVE_MINUTES, ONE_HOUR)


@dataclass(frozen=True)
class Entry:
    """A cached prefix: its length, when it expires, and the TTL it was written with."""

    tokens: int
    expires: float
    ttl: str = FIVE_MINUTES


@dataclass(frozen=True)
class CacheState:
    """The provider's cache for one caller: cached prefixes by their prefix key."""

    entries: Mapping[Hashable, Entry] = field(default_factory=dict)


@dataclass(frozen=True)
class Prices:
    """Multipliers of the input price."""

    read: float
    write_5m: float
    write_1h: float
    plain: float = 1.0


@dataclass(frozen=True)
class Usage:
    """One request's input as billed: the parts add up to the request's tokens."""

    read: int = 0
    written_5m: int = 0
    written_1h: int = 0
    plain: int = 0

    @property
    def written(self) -> int:
        return self.written_5m + self.written_1h

    @property
    def tokens(self) -> int:
        return self.read + self.written + self.plain

    def billed(self, prices: Prices) -> float:
        """In input tokens."""
        return (
            prices.read * self.read
            + prices.write_5m * self.written_5m
            + prices.write_1h * self.written_1h
            + prices.plain * self.plain
        )

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.read + other.read,
            self.written_5m + other.written_5m,
            self.written_1h + other.written_1h,
            self.plain + other.plain,
        )


@dataclass(frozen=True)
class Rules:
    """A provider's cache rules at its prices: ``send`` bills one request."""

    name: str
    prices: Prices
    lifetimes: Mapping[str, float] = field(default_factory=lambda: dict(TTL_SECONDS))  # seconds

    def send(
        self,
        blocks: Sequence[Block],
        state: CacheState,
        time: float | None = None,
        model: str | None = None,
    ) -> tuple[Usage, CacheState]:
        """Bill one request: what was read, written and plain, and the cache after it."""
        keys, ends = prefixes(blocks)
        entries = _live(state.entries, time)
        expiry = partial(_expiry, time, self.lifetimes)
        usage = self.bill(Prefixed(blocks, keys, ends, model), entries, expiry)
        return usage, CacheState(entries)

    def bill(self, request: Prefixed, entries: dict[Hashable, Entry], expiry: Expiry) -> Usage:
        """The request's usage; ``entries`` (the live ones) updated in place."""
        raise NotImplementedError


@dataclass(frozen=True)
class Prefixed:
    """A request's blocks, each one's prefix key and the tokens up to its end."""

    blocks: Sequence[Block]
    keys: Sequence[Hashable]
    ends: Sequence[int]
    model: str | None

    @property
    def tokens(self) -> int:
        return self.ends[-1] if self.ends else 0


Expiry = Callable[[str], float]  # when an entry of a TTL written now expires


# --- Anthropic -----------------------------------------------------------------------------------


def minimum_prefix(model: str | None) -> int:
    """The fewest tokens a prefix needs for Anthropic to cache it, for ``model``'s id."""
    name = (model or "").lower()
    return next((tokens for part, tokens in MINIMUM_PREFIX if part in name), DEFAULT_MINIMUM)


@dataclass(frozen=True)
class AnthropicRules(Rules):
    name: str = "anthropic"
    prices: Prices = Prices(read=0.1, write_5m=1.25, write_1h=2.0)

    def bill(self, request: Prefixed, entries: dict[Hashable, Entry], expiry: Expiry) -> Usage:
        blocks, keys, ends = request.blocks, request.keys, request.ends
        marks = [index for index, block in enumerate(blocks) if block.breakpoint]
        if len(marks) > MAX_BREAKPOINTS:
            raise InputError(
                f"a request carries {len(marks)} cache_control breakpoints; "
                f"Anthropic accepts at most {MAX_BREAKPOINTS}"
            )
        hit = max((_longest_hit(keys, mark, entries) for mark in marks), default=-1)
        read = ends[hit] if hit >= 0 else 0
        if hit >= 0:
            entry = entries[keys[hit]]
            entries[keys[hit]] = replace(entry, expires=max(entry.expires, expiry(entry.ttl)))
        written = {FIVE_MINUTES: 0, ONE_HOUR: 0}
        cached_to, minimum = read, minimum_prefix(request.model)
        for mark in marks:
            if ends[mark] <= cached_to or ends[mark] < minimum:
                continue
            ttl = blocks[mark].breakpoint or FIVE_MINUTES
            written[ttl] += ends[mark] - cached_to
            entries[keys[mark]] = Entry(ends[mark], expiry(ttl), ttl)
            cached_to = ends[mark]
        return Usage(read, written[FIVE_MINUTES], written[ONE_HOUR], request.tokens - cached_to)


def _longest_hit(keys: Sequence[Hashable], mark: int, entries: Mapping[Hashable, Entry]) -> int:
    """The last block of the longest cached prefix ending at ``mark`` or up to LOOKBACK before."""
    for index in range(mark, max(mark - LOOKBACK, 0) - 1, -1):
        if keys[index] in entries:
            return index
    return -1


# --- OpenAI --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OpenAIRules(Rules):
    name: str = "openai"
    prices: Prices = Prices(read=0.1, write_5m=1.0, write_1h=1.0)
    ttl: str = FIVE_MINUTES  # entries live 5 to 10 minutes unused: the shorter is assumed

    def bill(self, request: Prefixed, entries: dict[Hashable, Entry], expiry: Expiry) -> Usage:
        keys, ends = request.keys, request.ends
        shared = next(
            (ends[index] for index in range(len(keys) - 1, -1, -1) if keys[index] in entries), 0
        )
        read, cacheable = openai_cached(shared), openai_cached(request.tokens)
        expires = expiry(self.ttl)
        for key, end in zip(keys, ends, strict=True):
            entries[key] = Entry(end, expires, self.ttl)
        return Usage(read, cacheable - read, 0, request.tokens - cacheable)


def openai_cached(shared: int) -> int:
    """How much of a shared prefix of ``shared`` tokens OpenAI counts as cached."""
    if shared < OPENAI_MINIMUM:
        return 0
    return OPENAI_MINIMUM + (shared - OPENAI_MINIMUM) // OPENAI_STEP * OPENAI_STEP


ANTHROPIC = AnthropicRules()
OPENAI = OpenAIRules()
RULES: dict[str, Rules] = {ANTHROPIC.name: ANTHROPIC, OPENAI.name: OPENAI}


# --- shared arithmetic ---------------------------------------------------------------------------


def prefixes(blocks: Sequence[Block]) -> tuple[list[Hashable], list[int]]:
    """Each block's prefix key (equal when the whole prefix up to it is) and the prefix's tokens."""
    keys: list[Hashable] = []
    ends: list[int] = []
    key: Hashable = ()
    total = 0
    for block in blocks:
        key = hash((key, block.key))
        total += block.tokens
        keys.append(key)
        ends.append(total)
    return keys, ends


def _live(entries: Mapping[Hashable, Entry], time: float | None) -> dict[Hashable, Entry]:
    if time is None:
        return dict(entries)
    return {key: entry for key, entry in entries.items() if entry.expires >= time}


def _expiry(time: float | None, lifetimes: Mapping[str, float], ttl: str) -> float:
    return math.inf if time is None else time + lifetimes[ttl]


# --- where agents put their breakpoints ----------------------------------------------------------


@dataclass(frozen=True)
class Placement:
    """Where an agent marks the requests it builds with ``cache_control``."""

    agent: str
    system: tuple[int, ...]  # the indexes of the system blocks it marks
    last_block: bool  # the last block of the last message
    tools: bool = False  # the last tool definition


CLAUDE_CODE = Placement("Claude Code 2.1.328", system=(1, 2), last_block=True)
DEFAULT_PLACEMENT = CLAUDE_CODE


def placed(
    tools: Sequence[Block],
    system: Sequence[Block],
    messages: Sequence[Block],
    placement: Placement = DEFAULT_PLACEMENT,
    ttl: str = FIVE_MINUTES,
) -> list[Block]:
    """One request, its breakpoints where ``placement``'s agent puts them."""

    def marked(blocks: Sequence[Block], where: set[int]) -> list[Block]:
        return [
            replace(block, breakpoint=ttl if index in where else None)
            for index, block in enumerate(blocks)
        ]

    last_tool = {len(tools) - 1} if placement.tools else set()
    last_message = {len(messages) - 1} if placement.last_block else set()
    return [
        *marked(tools, last_tool),
        *marked(system, set(placement.system)),
        *marked(messages, last_message),
    ]


# --- requests as the providers receive them ------------------------------------------------------

Count = Callable[[Any], int]


def heuristic_tokens(value: Any) -> int:
    """A block's tokens: the estimate's heuristic on its JSON text."""
    return tokens_of([value if isinstance(value, str) else json_text(value)])


def anthropic_blocks(
    body: Mapping[str, Any],
    count: Count = heuristic_tokens,
    placement: Placement | None = DEFAULT_PLACEMENT,
) -> list[Block]:
    """A Messages API body as blocks: its tools, system and messages' content blocks.

    The breakpoints are the body's ``cache_control``s (a top-level one marks the last block, as
    automatic caching does); a body that carries none is marked by ``placement``, if given.
    A string content and the same text as one text block are the same block.
    """
    tools = [content_block(tool, ("tool",), count) for tool in body.get("tools") or ()]
    system = [content_block(block, ("system",), count) for block in as_blocks(body.get("system"))]
    messages = [
        content_block(block, (message.get("role"), place == 0), count)
        for message in body.get("messages") or ()
        for place, block in enumerate(as_blocks(message.get("content")))
    ]
    blocks = [*tools, *system, *messages]
    automatic = body.get("cache_control")
    if isinstance(automatic, Mapping) and blocks:
        blocks[-1] = replace(blocks[-1], breakpoint=_ttl(automatic))
    if placement is None or any(block.breakpoint for block in blocks):
        return blocks
    return placed(tools, system, messages, placement)


def as_blocks(content: Any) -> list[Any]:
    """A content as its blocks: a string is one text block."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else [content]


def content_block(block: Any, where: tuple[Any, ...], count: Count) -> Block:
    """One block of a request, its key made of ``where`` (its role, whether it opens its
    message) and its JSON without its ``cache_control``, which is its breakpoint."""
    control = block.get("cache_control") if isinstance(block, Mapping) else None
    if control is not None:
        block = {name: value for name, value in block.items() if name != "cache_control"}
    ttl = _ttl(control) if isinstance(control, Mapping) else None
    return Block(count(block), (where, json_text(block)), ttl)


def _ttl(control: Mapping[str, Any]) -> str:
    return ONE_HOUR if control.get("ttl") == ONE_HOUR else FIVE_MINUTES


def openai_blocks(body: Mapping[str, Any], count: Count = heuristic_tokens) -> list[Block]:
    """A Chat Completions or Responses body as blocks: tools, instructions, then each message or
    input item (the automatic cache needs no breakpoints)."""
    items: list[Any] = [*(body.get("tools") or ())]
    if body.get("instructions"):
        items.append({"instructions": body["instructions"]})
    conversation = body.get("messages", body.get("input"))
    if isinstance(conversation, str):
        conversation = [{"role": "user", "content": conversation}]
    items.extend(conversation or ())
    return [Block(count(item), json_text(item)) for item in items]
