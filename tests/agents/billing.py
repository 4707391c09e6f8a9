"""A model server that bills like the providers (issue 31): the usage of each reply is what the
provider would count for the body received, by ``compactor_core.replay.cache_rules``.

Anthropic's cache is read and written only at the body's own ``cache_control`` breakpoints (a
body without any is not cached, as with the real API); Chat Completions and Responses bodies
meet OpenAI's automatic prefix cache, and Gemini's bodies an automatic prefix cache of the same
rules (Gemini's implicit caching: the tools, the system instruction, then each content). One
cache per server and provider, as a provider keeps one per organization. Tokens are the
estimate's heuristic of each block's JSON text.

    with ModelServer(script, billing=Billing()) as server: ...
    server.billing.bills  # (path, Usage) of every model request, in order
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from compactor_core.compaction.estimate import json_text
from compactor_core.replay.cache_rules import (
    ANTHROPIC,
    OPENAI,
    Block,
    CacheState,
    Rules,
    Usage,
    anthropic_blocks,
    heuristic_tokens,
    openai_blocks,
)


@dataclass
class Billing:
    anthropic: CacheState = field(default_factory=CacheState)
    openai: CacheState = field(default_factory=CacheState)
    gemini: CacheState = field(default_factory=CacheState)
    bills: list[tuple[str, Usage]] = field(default_factory=list)
    # the time the cache lives by; None: its entries never expire (a test moves it on to
    # let them expire, as a user's pause would)
    clock: Callable[[], float] | None = None

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def messages(self, body: dict[str, Any]) -> Usage:
        """A Messages API request, billed by Anthropic's rules at its own breakpoints."""
        blocks = anthropic_blocks(body, placement=None)
        return self._bill("/v1/messages", "anthropic", ANTHROPIC, blocks, body.get("model"))

    def openai_request(self, path: str, body: dict[str, Any]) -> Usage:
        """A Chat Completions or Responses request, billed by OpenAI's automatic prefix cache."""
        return self._bill(path, "openai", OPENAI, openai_blocks(body))

    def gemini_request(self, path: str, body: dict[str, Any]) -> Usage:
        """A generateContent request, billed by an automatic prefix cache."""
        return self._bill(path, "gemini", OPENAI, gemini_blocks(body))

    def _bill(
        self, path: str, cache: str, rules: Rules, blocks: list[Block], model: Any = None
    ) -> Usage:
        """Bill a request against the provider's cache (the attribute ``cache``), at the
        clock's time."""
        with self._lock:
            now = self.clock() if self.clock else None
            usage, state = rules.send(blocks, getattr(self, cache), time=now, model=model)
            setattr(self, cache, state)
            self.bills.append((path, usage))
        return usage


def gemini_blocks(body: dict[str, Any]) -> list[Block]:
    """A Gemini body as blocks: its tools, its system instruction, then each content."""
    items = [*(body.get("tools") or ())]
    if body.get("systemInstruction"):
        items.append({"systemInstruction": body["systemInstruction"]})
    items.extend(body.get("contents") or ())
    return [Block(heuristic_tokens(item), json_text(item)) for item in items]


def anthropic_usage(usage: Usage) -> dict[str, Any]:
    """The input side of a Messages API ``usage``."""
    return {
        "input_tokens": usage.plain,
        "cache_creation_input_tokens": usage.written,
        "cache_read_input_tokens": usage.read,
        "cache_creation": {
            "ephemeral_5m_input_tokens": usage.written_5m,
            "ephemeral_1h_input_tokens": usage.written_1h,
        },
    }
