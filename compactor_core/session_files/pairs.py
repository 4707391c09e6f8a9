"""The calls and results of a session's conversation view that have no partner in it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from .index import SessionIndex


class Unpaired(NamedTuple):
    index: int  # the record that holds it
    call_id: Any
    is_call: bool  # a call without its result (else a result without its call)
    tool: str = ""  # a call's tool


def unpaired(session: SessionIndex) -> Iterator[Unpaired]:
    """Results whose call is not earlier in the view, as they come; then calls never answered."""
    asked: dict[Any, tuple[int, str]] = {}  # call id -> (record, tool), waiting for its result
    answered: set[Any] = set()
    for message in session.view:
        pieces = [(index, session.infos[index], part) for index, part in message.pieces()]
        for index, info, part in pieces:
            for result in info.results:
                if part is not None and result.part != part:
                    continue
                if result.call_id in asked:
                    del asked[result.call_id]
                    answered.add(result.call_id)
                elif result.call_id not in answered:
                    yield Unpaired(index, result.call_id, False)
        for index, info, part in pieces:
            for call_id, tool, call_part in info.calls:
                if part is None or call_part == part:
                    asked[call_id] = (index, tool)
    for call_id, (index, tool) in asked.items():
        yield Unpaired(index, call_id, True, tool)
