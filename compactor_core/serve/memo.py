"""What serve's policy computed of the histories it was sent, kept for the requests that send
them again (``compaction.memo``): a caller re-sends its whole history each time, a little more at
its end, so nearly every message was seen before.

Kept by content, never by conversation: a message's count under the JSON of the message (the
newest ``budget`` bytes of them); the print of a list of messages, a hash of their JSON one after
the other, built from the prints of its prefixes (``ledger.Links``); under a history's print, the
analysis of its stale results and the sum of its counts, taken up from there when the history
goes on, and the policy's walk of its requests up to the one before its last (``Memo.walk``);
under the print of what it was given, a full compaction, and under a history's print and a
plan's cuts, the head they left (``summaries.KeptCompactions``, a deterministic summarizer's
only). The same input gives the same result, so a request gets the same bytes with or without
them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

from ..compaction.estimate import Counter, message_units
from ..compaction.memo import KeptCounts
from ..compaction.micro import Layout, marked_units
from ..compaction.staleness import Analysis, Staleness
from ..compaction.tokenizers import counter as counter_named
from ..conversation.formats import Message, dumps
from ..conversation.tools import tool_result_ids
from .ledger import DIGEST, Links

if TYPE_CHECKING:
    from ..settings import Settings
    from .summaries import KeptCompactions

BUDGET = 16 << 20  # bytes of messages whose counts (and prefixes' prints) are kept
ALONG = 256  # analyses of stale results, sums of counts and walks of the policy kept
START = bytes(DIGEST)  # the print of no message


class KeptResults:
    """What the policy found, for every request of every conversation (thread-safe)."""

    def __init__(self, compactions: KeptCompactions | None, budget: int = BUDGET) -> None:
        self.compactions = compactions
        self.budget = budget
        self._found: OrderedDict[tuple[Hashable, bytes], Any] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()
        self.prints = Links(budget)  # of each prefix of a history, by the JSON of its messages
        # of prefixes of histories, each where a request's history ended (the analyses of their
        # stale results, the sums of their counts) or before its last request (the policy's walks)
        self._along: OrderedDict[tuple[Hashable, bytes], Any] = OrderedDict()

    def for_request(self) -> RequestResults:
        return RequestResults(self)

    def units_of(self, message: Message, text: bytes, counter: Counter) -> int:
        """The count of ``message``, whose JSON is ``text``."""
        units = self.found(counter.name, text)
        if units is None:
            units = message_units(message, counter)
            self.keep(counter.name, text, units)
        return units

    def found(self, what: Hashable, text: bytes) -> Any:
        """What was found of a message whose JSON is ``text`` (``what``: what it is, and
        what else it depends on); None if nothing was kept."""
        with self._lock:
            found = self._found.get((what, text))
            if found is not None:
                self._found.move_to_end((what, text))
            return found

    def keep(self, what: Hashable, text: bytes, found: Any) -> None:
        with self._lock:
            if (what, text) not in self._found:
                self._size += len(text)
            self._found[(what, text)] = found
            while self._size > self.budget and len(self._found) > 1:
                (_, dropped), _ = self._found.popitem(last=False)
                self._size -= len(dropped)

    def along(self, what: Hashable, prints: list[bytes]) -> tuple[int, Any]:
        """What was found of the longest prefix kept (its length, and None if none was), by the
        prints of the prefixes (``what``: what it is, and what else it depends on); never to be
        changed (``Analysis.copy``)."""
        with self._lock:
            for length in range(len(prints) - 1, 0, -1):
                found = self._along.get((what, prints[length]))
                if found is not None:
                    self._along.move_to_end((what, prints[length]))
                    return length, found
        return 0, None

    def keep_along(self, what: Hashable, print_: bytes, found: Any) -> None:
        with self._lock:
            self._along[(what, print_)] = found
            self._along.move_to_end((what, print_))
            while len(self._along) > ALONG:
                self._along.popitem(last=False)


class RequestResults(KeptCounts):
    """``KeptResults`` for one request, which asks about each of its messages more than once
    (its estimate, the policy's walk, the ledger's fingerprints): a message's JSON and count are
    given again by its identity. Each message is held while this lives, so that no other object
    can take its identity."""

    def __init__(self, kept: KeptResults) -> None:
        self.kept = kept
        self._texts: dict[int, tuple[Message, bytes]] = {}
        self._counted: dict[tuple[int, str], tuple[Message, int]] = {}
        self._printed: list[Message] = []  # the messages of the longest list printed
        self._prints: list[bytes] = [START]  # its prints
        self._printed_list: list[Message] | None = None  # that list itself

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

    def layout(self, messages: list[Message]) -> Layout:
        """Read on from the layout of the longest prefix of ``messages`` found before."""
        prints = self.prints(messages)
        read, kept = self.kept.along("layout", prints)
        if kept is not None and read == len(messages):
            return kept
        layout = Layout.of(messages) if kept is None else kept.then(messages)
        self.kept.keep_along("layout", prints[-1], layout)
        return layout

    def total_units(self, messages: list[Message], counter: Counter) -> int:
        """Taken up from the longest prefix of ``messages`` counted before: the counts of a
        conversation's messages add up."""
        prints = self.prints(messages)
        what = ("units", counter.name)
        counted, total = self.kept.along(what, prints)
        total = (total or 0) + sum(self.units(message, counter) for message in messages[counted:])
        if counted < len(messages):
            self.kept.keep_along(what, prints[-1], total)
        return total

    def marked_units(
        self, messages: list[Message], settings: Settings, layout: Layout, positions: range
    ) -> dict[int, int]:
        """Found again for the messages seen, by their JSON, the settings and the tools their
        results answer: the rest are marked and counted."""
        units: dict[int, int] = {}
        given: dict[int, Hashable] = {}
        unfound: list[int] = []  # turn positions
        for position in positions:
            for index in layout.turns[position]:
                answered = (layout.names.get(call) for call in tool_result_ids(messages[index]))
                given[index] = ("marked", settings, tuple(answered))
                found = self.kept.found(given[index], self.text(messages[index]))
                if found is None:
                    unfound.append(position)
                else:
                    units[index] = found
        if unfound:
            counter = counter_named(settings.tokenizer)
            counted = marked_units(messages, settings, layout, counter, sorted(set(unfound)))
            for index, found in counted.items():
                units[index] = found
                self.kept.keep(given[index], self.text(messages[index]), found)
        return units

    def staleness(self, messages: list[Message], settings: Settings) -> Staleness:
        """Taken up where the analysis of the longest prefix of ``messages`` seen stopped: the
        analysis reads a conversation message after message."""
        if not settings.stale_first:
            return super().staleness(messages, settings)
        prints = self.prints(messages)
        rules = settings.tool_rules
        read, kept = self.kept.along(rules, prints)
        if kept is not None and read == len(messages):
            return kept.staleness()
        analysis = Analysis(rules) if kept is None else kept.copy()
        analysis.read(messages[read:])
        self.kept.keep_along(rules, prints[-1], analysis)
        return analysis.staleness()

    def walk(self, messages: list[Message], given: Hashable) -> tuple[int, Any] | None:
        length, walk = self.kept.along(("walk", given), self.prints(messages))
        return None if walk is None else (length, walk)

    def keep_walk(
        self, messages: list[Message], length: int, given: Hashable, walk: Callable[[], Any]
    ) -> None:
        self.kept.keep_along(("walk", given), self.prints(messages)[length], walk())

    def compaction(self, messages: list[Message], settings: Settings) -> list[Message] | None:
        compactions = self.kept.compactions
        if compactions is None:
            return None
        return compactions.get(self.prints(messages)[-1], settings)

    def keep_compaction(
        self, messages: list[Message], settings: Settings, result: list[Message]
    ) -> None:
        if self.kept.compactions is not None:
            self.kept.compactions.put(self.prints(messages)[-1], settings, result)

    def head(self, history: list[Message], cuts: Hashable) -> list[Message] | None:
        compactions = self.kept.compactions
        if compactions is None:
            return None
        return compactions.head(self.prints(history)[-1], cuts)

    def keep_head(self, history: list[Message], cuts: Hashable, head: list[Message]) -> None:
        if self.kept.compactions is not None:
            self.kept.compactions.put_head(self.prints(history)[-1], cuts, head)

    def prints(self, messages: list[Message]) -> list[bytes]:
        """The print of each prefix of ``messages``, the empty one first: a hash of the JSON of
        its messages, one after the other. The staleness and a cut's compaction both ask, the
        cut of a prefix of the request's messages: what was printed of the same messages (by
        identity) is not printed again."""
        printed = self._printed
        if messages is self._printed_list and len(messages) == len(printed):
            return self._prints  # the same list again (never changed while a request lasts)
        same = 0
        while same < min(len(messages), len(printed)) and printed[same] is messages[same]:
            same += 1
        prints = self._prints[: same + 1]
        for message in messages[same:]:
            prints.append(self.kept.prints.after(prints[-1], self.text(message)))
        if len(messages) >= len(printed):
            self._printed, self._prints = list(messages), prints
            self._printed_list = messages
        return prints
