"""Results kept between runs by what they were computed from: the same input gives the same
result, so a memo changes how long a run takes, never what it gives.

A single run computes everything (``NO_MEMO``). A proxy is sent the same history again and
again, each time with a little more at its end, and keeps what the cache-aware policy computed of
it (``serve.memo``): each message's count, the analysis of its stale results, the policy's walk
of its requests, the full compactions of its cuts, and the heads they leave.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

from ..conversation.formats import Message
from .estimate import Counter, estimate, message_units, units_to_tokens
from .micro import Layout, marked_units, staleness_of
from .staleness import Staleness
from .tokenizers import counter as counter_named

if TYPE_CHECKING:
    from ..settings import Settings


class Memo:
    """Computes everything anew; a proxy's keeps what it computed (``serve.memo.KeptResults``)."""

    def units(self, message: Message, counter: Counter) -> int:
        """The message's count in the counter's units (``estimate.message_units``)."""
        return message_units(message, counter)

    def tokens(self, messages: list[Message], system: Any, counter: Counter) -> int:
        """The estimate of ``messages`` and a request envelope's ``system``
        (``estimate.estimate``, default profile)."""
        return estimate(messages, system, counter=counter)

    def layout(self, messages: list[Message]) -> Layout:
        """Where the messages' tool results are, and the tools they answer (``Layout.of``)."""
        return Layout.of(messages)

    def marked_units(
        self, messages: list[Message], settings: Settings, layout: Layout, positions: range
    ) -> dict[int, int]:
        """The count of each message of these tool-result turns (positions in
        ``layout.turns``) with all its results markers (``micro.marked_units``), by the
        settings' tokenizer."""
        return marked_units(
            messages, settings, layout, counter_named(settings.tokenizer), positions
        )

    def staleness(self, messages: list[Message], settings: Settings) -> Staleness:
        """The conversation's stale results, when the settings put them first
        (``micro.staleness_of``)."""
        return staleness_of(messages, settings)

    def walk(self, messages: list[Message], given: Hashable) -> tuple[int, Any] | None:
        """The cache-aware policy's walk (``cache_plan``) of the longest prefix of ``messages``
        kept under ``given`` (what else it depends on), and the prefix's length; None if none
        was kept."""
        return None

    def keep_walk(
        self, messages: list[Message], length: int, given: Hashable, walk: Callable[[], Any]
    ) -> None:
        """Keep the walk of ``messages[:length]`` under ``given`` (``walk()``: a copy of it
        that is never to be changed), if a memo keeps walks."""

    def compaction(self, messages: list[Message], settings: Settings) -> list[Message] | None:
        """The result of the full compaction of ``messages`` under ``settings``, if one was kept
        (its summarizer being deterministic)."""
        return None

    def keep_compaction(
        self, messages: list[Message], settings: Settings, result: list[Message]
    ) -> None:
        """Keep the result of the full compaction of ``messages``."""

    def head(self, history: list[Message], cuts: Hashable) -> list[Message] | None:
        """The head that ``cuts`` (the settings and a plan's first cuts, oldest first) left of
        ``history`` (the history at the last of them), if one was kept (its summarizer being
        deterministic): the cuts of a prefix say all its summaries were given."""
        return None

    def keep_head(self, history: list[Message], cuts: Hashable, head: list[Message]) -> None:
        """Keep the head that ``cuts`` left of ``history``."""


class KeptCounts(Memo):
    """A memo that counts each message once (``units`` keeps them): the estimate of a
    conversation is the sum of its messages' counts and its ``system``'s, as they add up."""

    def tokens(self, messages: list[Message], system: Any, counter: Counter) -> int:
        units = self.total_units(messages, counter)
        if system is not None:  # counted as a message's content is
            units += message_units({"content": system}, counter)
        return units_to_tokens(units, counter)

    def total_units(self, messages: list[Message], counter: Counter) -> int:
        """The sum of the messages' counts."""
        return sum(self.units(message, counter) for message in messages)


NO_MEMO = Memo()
