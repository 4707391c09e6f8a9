"""``ctxpack check``: what is wrong with a session file, found from the index alone (SPEC §8.3).

Read only. What it finds is a **problem** when it breaks or changes what the agent resumes (exit
1), and a **note** when the agent resumes the session as it is (exit 0):

- problems: a torn last line (the agent was killed while writing it) or an invalid line
  elsewhere, a record of another agent's format; in the records the agent reads to rebuild the
  view (the format's ``resumed``), a parent id that no record has (a gap: Claude Code guesses the
  record that was there, or the conversation ends), parent links that loop, an id two records
  share; in the view, a tool result without its call, and a call without its result before the
  last message (the agent drops it);
- notes: the same about records the resume does not read (before the latest compaction, on
  another branch, a compaction's logical parent, which is never followed), and the calls of
  the last message left without results (the agent was stopped while they ran; it answers them
  as interrupted on resume).

Blank lines are neither: every agent skips them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .base import Problem
from .index import INVALID, SessionIndex, index_session
from .registry import agent_formats

if TYPE_CHECKING:
    from ..documents import SessionDocument


def check_report(document: SessionDocument) -> dict[str, Any]:
    """What ``ctxpack check`` says of a session file: its make-up, every problem and note."""
    others = [other for other in agent_formats() if other.name != document.format.name]
    session = index_session(document.handle, document.format, document.label, others)
    found = findings(session)
    return {
        "file": document.label,
        "format": document.format.name,
        "bytes": session.size,
        "lines": len(session.infos),
        "records": session.records(),
        "view_messages": len(session.view),
        "tokens": session.tokens,
        "problems": [_described(finding) for finding in found if not finding.note],
        "notes": [_described(finding) for finding in found if finding.note],
    }


def _described(finding: Problem) -> dict[str, Any]:
    return {"line": finding.line, "kind": finding.kind, "detail": finding.detail}


def problems(session: SessionIndex) -> list[Problem]:
    """What breaks or changes the resume."""
    return [finding for finding in findings(session) if not finding.note]


def findings(session: SessionIndex) -> list[Problem]:
    """Every problem and note, in the order of the file."""
    resumed = set(session.format.resumed(session.infos, session.view))
    found = [
        *_line_problems(session),
        *_id_findings(session, resumed),
        *_loops(session, resumed),
        *_pair_findings(session),
    ]
    return sorted(found, key=lambda finding: finding.line)


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


def _id_findings(session: SessionIndex, resumed: set[int]) -> Iterator[Problem]:
    infos = session.infos
    first: dict[str, int] = {}
    for index, info in enumerate(infos):
        if info.id is None:
            continue
        if info.id not in first:
            first[info.id] = index
            continue
        other = first[info.id]
        shared = f"id {info.id} is also on line {infos[other].line}"
        yield Problem(info.line, "duplicate-id", shared, note=not {index, other} & resumed)
    for index, info in enumerate(infos):
        if info.parent is not None and info.parent not in first:
            gap = index in resumed
            detail = f"parent {info.parent} is in no record"
            if gap:
                detail += ": a gap in what the agent resumes (it guesses, or stops there)"
            yield Problem(info.line, "dangling-parent", detail, note=not gap)
        if info.logical_parent is not None and info.logical_parent not in first:
            # across a compaction: never followed by a resume
            detail = f"logical parent {info.logical_parent} is in no record"
            yield Problem(info.line, "dangling-parent", detail, note=True)


def _loops(session: SessionIndex, resumed: set[int]) -> Iterator[Problem]:
    """Parent links that come back to where they started, each loop once."""
    infos = session.infos
    by_id = {info.id: index for index, info in enumerate(infos) if info.id is not None}
    state = [0] * len(infos)  # 0: not seen, 1: on the path being followed, 2: done
    for start in range(len(infos)):
        path: list[int] = []
        index: int | None = start
        while index is not None and state[index] == 0:
            state[index] = 1
            path.append(index)
            parent = infos[index].parent
            index = by_id.get(parent) if parent is not None else None
        if index is not None and state[index] == 1:  # back on this path: a loop
            loop = path[path.index(index) :]
            lines = " -> ".join(f"line {infos[n].line}" for n in (*loop, loop[0]))
            detail = f"parent links loop: {lines}"
            yield Problem(infos[loop[0]].line, "parent-loop", detail, note=not set(loop) & resumed)
        for done in path:
            state[done] = 2


def _pair_findings(session: SessionIndex) -> Iterator[Problem]:
    """Calls and results of the view that have no partner in it."""
    asked: dict[Any, tuple[int, int]] = {}  # call id -> (line, view message) awaiting its result
    answered: set[Any] = set()
    for number, message in enumerate(session.view):
        pieces = [(session.infos[index], part) for index, part in message.pieces()]
        for info, part in pieces:
            for result in info.results:
                if part is not None and result.part != part:
                    continue
                if result.call_id in asked:
                    del asked[result.call_id]
                    answered.add(result.call_id)
                elif result.call_id not in answered:
                    yield Problem(
                        info.line,
                        "orphan-result",
                        f"tool result for {result.call_id} without its call in the view",
                    )
        for info, part in pieces:
            for call_id, _, call_part in info.calls:
                if part is None or call_part == part:
                    asked[call_id] = (info.line, number)
    last = len(session.view) - 1
    for call_id, (line, number) in asked.items():
        if number == last:
            detail = f"tool call {call_id} has no result: it was running when the agent stopped"
            yield Problem(line, "unanswered-call", detail, note=True)
        else:
            detail = f"tool call {call_id} has no result in the view (the agent drops it)"
            yield Problem(line, "unanswered-call", detail)
