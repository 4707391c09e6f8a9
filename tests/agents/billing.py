"""A model server that bills like the providers (issue 31): the usage of each reply is what the
provider would count for the body received, by ``compactor_core.replay.cache_rules``.

Anthropic's cache is read and written only at the body's own ``cache_control`` breakpoints (a
body without any is not cached, as with the real API); Chat Completions and Responses bodies
meet OpenAI's automatic prefix cache. One cache per server and provider, as a provider keeps one
per organization. Tokens are the estimate's heuristic of each block's JSON text.

    with ModelServer(script, billing=Billing()) as server: ...
    server.billing.bills  # (path, Usage) of every model request, in order
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from compactor_core.replay.cache_rules import (
    ANTHROPIC,
    OPENAI,
    CacheState,
    Usage,
    anthropic_blocks,
    openai_blocks,
)


@dataclass
class Billing:
    anthropic: CacheState = field(default_factory=CacheState)
    openai: CacheState = field(default_factory=CacheState)
    bills: list[tuple[str, Usage]] = field(default_factory=list)
    # the time the cache lives by; None: its entries never expire (a test moves it on to
    # let them expire, as a user's pause would)
    clock: Callable[[], float] | None = None

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def messages(self, body: dict[str, Any]) -> Usage:
        """A Messages API request, billed by Anthropic's rules at its own breakpoints."""
        blocks = anthropic_blocks(body, placement=None)
        with self._lock:
            now = self.clock() if self.clock else None
            usage, self.anthropic = ANTHROPIC.send(
                blocks, self.anthropic, time=now, model=body.get("model")
            )
            self.bills.append(("/v1/messages", usage))
        return usage

    def openai_request(self, path: str, body: dict[str, Any]) -> Usage:
        """A Chat Completions or Responses request, billed by OpenAI's automatic prefix cache."""
        with self._lock:
            usage, self.openai = OPENAI.send(openai_blocks(body), self.openai)
            self.bills.append((path, usage))
        return usage


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
