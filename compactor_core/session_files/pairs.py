"""The calls and results of a session's conversation view that have no partner in it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from .index import SessionIndex


class Unpaired(NamedTuple):
    index: int  # the record that holds it
    call: int  # the call's key (keys.key of its id)
    is_call: bool  # a call without its result (else a result without its call)
    message: int  # the view message that holds it
    tool: str = ""  # a call's tool


def unpaired(session: SessionIndex) -> Iterator[Unpaired]:
    """Results whose call is not earlier in the view, as they come; then calls never answered."""
    infos = session.infos
    asked: dict[int, tuple[int, int, str]] = {}  # call key -> (record, message, tool), waiting
    answered: set[int] = set()
    for number, message in enumerate(session.view):
        pieces = message.pieces()
        for index, part in pieces:
            for result in infos.results(index) if infos.has_results(index) else ():
                if part is not None and result.part != part:
                    continue
                if result.call_id in asked:
                    del asked[result.call_id]
                    answered.add(result.call_id)
                elif result.call_id not in answered:
                    yield Unpaired(index, result.call_id, False, number)
        for index, part in pieces:
            for call, tool, call_part in infos.calls(index):
                if part is None or call_part == part:
                    asked[call] = (index, number, tool)
    for call, (index, number, tool) in asked.items():
        yield Unpaired(index, call, True, number, tool)
