"""What serve's policy computed of the histories it was sent, kept for the requests that send
them again (``compaction.memo``): a caller re-sends its whole history each time, a little more at
its end, so nearly every message was counted before.

Kept by content, never by conversation: a message's count under the JSON of the message (the
newest ``budget`` bytes of them), a full compaction under the hash of what it was given
(``summaries.KeptCompactions``, a deterministic summarizer's only). The same input gives the same
result, so a request gets the same bytes with or without them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

from ..compaction.estimate import Counter
from ..compaction.memo import KeptCounts
from ..conversation.formats import Message, dumps

if TYPE_CHECKING:
    from ..settings import Settings
    from .summaries import KeptCompactions

BUDGET = 16 << 20  # bytes of messages whose counts are kept


class KeptResults(KeptCounts):
    """What the policy computed, for every request of every conversation (thread-safe)."""

    def __init__(self, compactions: KeptCompactions | None, budget: int = BUDGET) -> None:
        self.compactions = compactions
        self.budget = budget
        self._units: OrderedDict[tuple[str, bytes], int] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def units(self, message: Message, counter: Counter) -> int:
        return self.units_of(message, dumps(message), counter)

    def units_of(self, message: Message, text: bytes, counter: Counter) -> int:
        """The count of ``message``, whose JSON is ``text``."""
        key = (counter.name, text)
        with self._lock:
            units = self._units.get(key)
            if units is not None:
                self._units.move_to_end(key)
                return units
        units = super().units(message, counter)
        with self._lock:
            if key not in self._units:
                self._size += len(text)
            self._units[key] = units
            while self._size > self.budget and len(self._units) > 1:
                (_, dropped), _ = self._units.popitem(last=False)
                self._size -= len(dropped)
        return units

    def compaction(self, messages: list[Message], settings: Settings) -> list[Message] | None:
        if self.compactions is None:
            return None
        return self.compactions.get(messages, settings)

    def keep_compaction(
        self, messages: list[Message], settings: Settings, result: list[Message]
    ) -> None:
        if self.compactions is not None:
            self.compactions.put(messages, settings, result)

    def for_request(self) -> RequestResults:
        return RequestResults(self)


class RequestResults(KeptCounts):
    """``KeptResults`` for one request, which asks about each of its messages more than once
    (its estimate, the policy's walk, the ledger's fingerprints): a message's JSON and count are
    given again by its identity. Each message is held while this lives, so that no other object
    can take its identity."""

    def __init__(self, kept: KeptResults) -> None:
        self.kept = kept
        self._texts: dict[int, tuple[Message, bytes]] = {}
        self._counted: dict[tuple[int, str], tuple[Message, int]] = {}

    def text(self, message: Message) -> bytes:
        """The message's JSON (``dumps``)."""
        known = self._texts.get(id(message))
        if known is None:
            known = self._texts[id(message)] = (message, dumps(message))
        return known[1]

    def units(self, message: Message, counter: Counter) -> int:
        key = (id(message), counter.name)
        counted = self._counted.get(key)
        if counted is None:
            units = self.kept.units_of(message, self.text(message), counter)
            counted = self._counted[key] = (message, units)
        return counted[1]

    def compaction(self, messages: list[Message], settings: Settings) -> list[Message] | None:
        return self.kept.compaction(messages, settings)

    def keep_compaction(
        self, messages: list[Message], settings: Settings, result: list[Message]
    ) -> None:
        self.kept.keep_compaction(messages, settings, result)
