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
from typing import Any, BinaryIO

from ..conversation.tools import result_holders, tool_calls
from .base import AgentFormat, Problem, RecordInfo
from .index import INVALID, SessionIndex, index_session, read_record
from .keys import NONE, KeyMap, key
from .pairs import unpaired
from .registry import agent_formats
from .table import MISSING


def check_report(handle: BinaryIO, agent_format: AgentFormat, label: str) -> dict[str, Any]:
    """What ``ctxpack check`` says of a session file: its make-up, every problem and note."""
    others = [other for other in agent_formats() if other.name != agent_format.name]
    session = index_session(handle, agent_format, label, others)
    found = findings(session, handle)
    return {
        "file": label,
        "format": agent_format.name,
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


def problems(session: SessionIndex, handle: BinaryIO | None = None) -> list[Problem]:
    """What breaks or changes the resume."""
    return [finding for finding in findings(session, handle) if not finding.note]


def findings(session: SessionIndex, handle: BinaryIO | None = None) -> list[Problem]:
    """Every problem and note, in the order of the file; with the file's ``handle``, the ids
    they name are spelled as in the file (the index keeps their keys)."""
    resumed = set(session.format.resumed(session.infos, session.view))
    spell = Speller(session, handle)
    found = [
        *_line_problems(session),
        *_id_findings(session, resumed, spell),
        *_loops(session, resumed),
        *_pair_findings(session, spell),
    ]
    return sorted(found, key=lambda finding: finding.line)


class Speller:
    """An id as the file spells it: its record read again and indexed afresh by the format."""

    def __init__(self, session: SessionIndex, handle: BinaryIO | None) -> None:
        self.session = session
        self.handle = handle

    def __call__(self, index: int, item: int) -> Any:
        if self.handle is None:
            return item
        session = self.session
        record = read_record(self.handle, session.infos, index, session.source)
        info = RecordInfo(session.infos.line(index), 0, 0)
        session.format.index(record, info)
        spelled = [info.id, info.parent, info.logical_parent, *info.copies]
        for message in session.format.messages(record):
            spelled += [call for call, _ in tool_calls(message)]
            spelled += [call for call, _ in result_holders([message])]
        return next((value for value in spelled if value is not None and key(value) == item), item)


def _line_problems(session: SessionIndex) -> Iterator[Problem]:
    infos = session.infos
    last = len(infos) - 1
    for index in range(len(infos)):
        line, problem = infos.line(index), infos.problem(index)
        if infos.kind(index) == INVALID:
            if index == last and not session.ends_with_newline:
                yield Problem(line, "torn-line", f"torn last line: {problem}")
            else:
                yield Problem(line, "invalid-line", str(problem))
        elif problem:  # a valid record that something else said is out of place
            yield Problem(line, "foreign-record", problem)


def _id_findings(session: SessionIndex, resumed: set[int], spell: Speller) -> Iterator[Problem]:
    infos = session.infos
    first = KeyMap("l")
    for index in range(len(infos)):
        item = infos.id(index)
        if item == NONE:
            continue
        other = first.get(item)
        if other is None:
            first[item] = index
            continue
        shared = f"id {spell(index, item)} is also on line {infos.line(other)}"
        yield Problem(infos.line(index), "duplicate-id", shared, note=not {index, other} & resumed)
    for index in range(len(infos)):
        line = infos.line(index)
        if infos.parent_at(index) == MISSING:
            gap = index in resumed
            detail = f"parent {spell(index, infos.parent_key(index))} is in no record"
            if gap:
                detail += ": a gap in what the agent resumes (it guesses, or stops there)"
            yield Problem(line, "dangling-parent", detail, note=not gap)
        logical = infos.logical_parent(index)
        if logical is not None and logical not in first:
            # across a compaction: never followed by a resume
            detail = f"logical parent {spell(index, logical)} is in no record"
            yield Problem(line, "dangling-parent", detail, note=True)


def _loops(session: SessionIndex, resumed: set[int]) -> Iterator[Problem]:
    """Parent links that come back to where they started, each loop once."""
    infos = session.infos
    state = bytearray(len(infos))  # 0: not seen, 1: on the path being followed, 2: done
    for start in range(len(infos)):
        path: list[int] = []
        index = start
        while index >= 0 and state[index] == 0:
            state[index] = 1
            path.append(index)
            index = infos.parent_at(index)  # NO_PARENT and MISSING end it
        if index >= 0 and state[index] == 1:  # back on this path: a loop
            loop = path[path.index(index) :]
            lines = " -> ".join(f"line {infos.line(n)}" for n in (*loop, loop[0]))
            detail = f"parent links loop: {lines}"
            note = not set(loop) & resumed
            yield Problem(infos.line(loop[0]), "parent-loop", detail, note=note)
        for done in path:
            state[done] = 2


def _pair_findings(session: SessionIndex, spell: Speller) -> Iterator[Problem]:
    """Calls and results of the view that have no partner in it."""
    last = len(session.view) - 1
    for found in unpaired(session):
        line, call = session.infos.line(found.index), spell(found.index, found.call)
        if not found.is_call:
            detail = f"tool result for {call} without its call in the view"
            yield Problem(line, "orphan-result", detail)
        elif found.message == last:
            detail = f"tool call {call} has no result: it was running when the agent stopped"
            yield Problem(line, "unanswered-call", detail, note=True)
        else:
            detail = f"tool call {call} has no result in the view (the agent drops it)"
            yield Problem(line, "unanswered-call", detail)
