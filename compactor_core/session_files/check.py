"""``ctxpack check``: what is wrong with a session file, found from the index alone (SPEC §8.3).

Read-only. Problems: a torn last line (the agent was killed while writing it) or an invalid line
elsewhere, a record of another agent's format, a duplicate record id, a parent id (or logical
parent) that no record has, and in the conversation view a tool result without its call or a
call without its result. Blank lines are not problems: every agent skips them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .base import Problem
from .index import INVALID, SessionIndex, index_session
from .pairs import unpaired
from .registry import agent_formats

if TYPE_CHECKING:
    from ..documents import SessionDocument


def check_report(document: SessionDocument) -> dict[str, Any]:
    """What ``ctxpack check`` says of a session file: its make-up and every problem found."""
    others = [other for other in agent_formats() if other.name != document.format.name]
    session = index_session(document.handle, document.format, document.label, others)
    found = problems(session)
    return {
        "file": document.label,
        "format": document.format.name,
        "bytes": session.size,
        "lines": len(session.infos),
        "records": session.records(),
        "view_messages": len(session.view),
        "tokens": session.tokens,
        "problems": [{"line": p.line, "kind": p.kind, "detail": p.detail} for p in found],
    }


def problems(session: SessionIndex) -> list[Problem]:
    found = [*_line_problems(session), *_id_problems(session), *_pair_problems(session)]
    return sorted(found, key=lambda problem: problem.line)


def _line_problems(session: SessionIndex) -> Iterator[Problem]:
    last = len(session.infos) - 1
    for index, info in enumerate(session.infos):
        if info.kind == INVALID:
            if index == last and not session.ends_with_newline:
                yield Problem(info.line, "torn-line", f"torn last line: {info.problem}")
            else:
                yield Problem(info.line, "invalid-line", str(info.problem))
        elif info.problem:  # a valid record that something else said is out of place
            yield Problem(info.line, "foreign-record", info.problem)


def _id_problems(session: SessionIndex) -> Iterator[Problem]:
    first_line: dict[str, int] = {}
    for info in session.infos:
        if info.id is None:
            continue
        if info.id in first_line:
            yield Problem(
                info.line, "duplicate-id", f"id {info.id} is also on line {first_line[info.id]}"
            )
        else:
            first_line[info.id] = info.line
    for info in session.infos:
        for what, value in (("parent", info.parent), ("logical parent", info.logical_parent)):
            if value is not None and value not in first_line:
                yield Problem(info.line, "dangling-parent", f"{what} {value} is in no record")


def _pair_problems(session: SessionIndex) -> Iterator[Problem]:
    """Calls and results of the view that have no partner in it."""
    for found in unpaired(session):
        line = session.infos[found.index].line
        if found.is_call:
            yield Problem(
                line, "unanswered-call", f"tool call {found.call_id} has no result in the view"
            )
        else:
            yield Problem(
                line,
                "orphan-result",
                f"tool result for {found.call_id} without its call in the view",
            )
