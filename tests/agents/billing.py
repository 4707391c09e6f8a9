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
from dataclasses import dataclass, field
from typing import Any

from compactor_core.compaction.estimate import json_text
from compactor_core.replay.cache_rules import (
    ANTHROPIC,
    OPENAI,
    Block,
    CacheState,
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

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def expire(self) -> None:
        """The providers forget every cached prefix, as when the user is away past the TTL
        (the server's clock does not move: the bills are computed without time)."""
        with self._lock:
            self.anthropic, self.openai, self.gemini = CacheState(), CacheState(), CacheState()

    def messages(self, body: dict[str, Any]) -> Usage:
        """A Messages API request, billed by Anthropic's rules at its own breakpoints."""
        blocks = anthropic_blocks(body, placement=None)
        with self._lock:
            usage, self.anthropic = ANTHROPIC.send(blocks, self.anthropic, model=body.get("model"))
            self.bills.append(("/v1/messages", usage))
        return usage

    def openai_request(self, path: str, body: dict[str, Any]) -> Usage:
        """A Chat Completions or Responses request, billed by OpenAI's automatic prefix cache."""
        with self._lock:
            usage, self.openai = OPENAI.send(openai_blocks(body), self.openai)
            self.bills.append((path, usage))
        return usage

    def gemini_request(self, path: str, body: dict[str, Any]) -> Usage:
        """A generateContent request, billed by an automatic prefix cache."""
        with self._lock:
            usage, self.gemini = OPENAI.send(gemini_blocks(body), self.gemini)
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
