"""The results a later one repeats (staleness.py), as the cache-aware walk (cache_plan.py) takes
them: each rides with the next batch of markers once it has gone stale, so the walk needs where
it is, what its marker frees, and the request from which on it is stale.
"""

from __future__ import annotations

from typing import Any

from ..conversation.formats import Message
from ..conversation.tools import result_holders
from ..settings import Settings
from .estimate import Counter
from .memo import NO_MEMO, Memo
from .micro import Layout, mark_turns
from .staleness import Staleness


class StaleResults:
    """The results a later one repeats (staleness.py), for the walk: where each is, what its
    marker frees, and the request from which on it is stale; those that went stale at
    ``messages[since]`` or later (a walk taken up there has seen the others)."""

    def __init__(
        self,
        messages: list[Message],
        settings: Settings,
        counter: Counter,
        stale: Staleness,
        layout: Layout,
        memo: Memo = NO_MEMO,
        since: int = 0,
    ) -> None:
        repeated = stale.duplicates().items()
        duplicates = {call: found for call, found in repeated if found.at >= since}
        self.index: dict[str, int] = {}
        self.gains: dict[str, int] = {}
        self.order: list[tuple[int, str]] = []
        self.next = 0
        if not duplicates:
            return  # none went stale since: nothing to mark
        marked, _ = mark_turns(
            messages, settings, (), single=duplicates, stale=stale, layout=layout
        )
        for index, (before, after) in enumerate(zip(messages, marked, strict=True)):
            if before is after:
                continue
            pairs = zip(result_holders([before]), result_holders([after]), strict=True)
            for (call, was), (_, now) in pairs:
                if was is not now and was.get("content") != now.get("content"):
                    self.index[call] = index
                    freed = _content_units(was, counter, memo) - _content_units(now, counter, memo)
                    self.gains[call] = freed
        self.order = sorted((duplicates[call].at, call) for call in self.index)

    def gone_stale(self, point: int) -> list[tuple[str, int, int]]:
        """(call id, message index, what its marker frees) of the results gone stale before
        ``point``, once each."""
        found = []
        while self.next < len(self.order) and self.order[self.next][0] < point:
            call = self.order[self.next][1]
            found.append((call, self.index[call], self.gains[call]))
            self.next += 1
        return found


def _content_units(holder: dict[str, Any], counter: Counter, memo: Memo) -> int:
    return memo.units({"content": holder.get("content")}, counter)
