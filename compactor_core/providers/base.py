"""The interface between full compaction and whoever writes the summary."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from ..conversation.formats import Message


@dataclass(frozen=True)
class SummaryRequest:
    """Everything a provider may use: the two prompts, the budget, and the history itself."""

    system: str  # the system prompt
    user: str  # the user prompt: the instruction and the serialized history
    max_tokens: int
    messages: list[Message]  # the history being summarized (micro-compacted, as sent)
    lang: str = "zh"
    # The conversation as it came, before micro compaction: a provider that reads the history
    # itself (extractive) looks up there how an old command ended. Never sent anywhere.
    original: list[Message] = field(default_factory=list)
    # The history whole (micro-compacted), before ``messages`` was shrunk to fit a model's
    # prompt (SPEC §3.10): a provider that reads the history itself reads all of it.
    history: list[Message] | None = None


class Summarizer(Protocol):
    """Writes a summary, or raises ProviderError (RetryableProviderError when worth retrying)."""

    name: str

    def summarize(self, request: SummaryRequest) -> str: ...


def check_ready(provider: Summarizer) -> None:
    """Raise ConfigError if ``provider`` cannot be asked at all (a hosted service without its key).

    Called once a summary is known to be needed, before the snapshot and the prompt are made, so
    that a missing key costs nothing and is reported as the configuration error it is. A
    provider without a ``ready`` method is always ready.
    """
    ready = getattr(provider, "ready", None)
    if ready is not None:
        ready()
