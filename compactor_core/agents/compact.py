"""Micro, full and auto compaction of a session file, decided from the index (SPEC §8.3).

Micro: the view's tool-result turns are found by the core's rule (``tools.tool_result_turns``)
over a skeleton of the view made from the index; every record holding tool results outside the
newest ``keep_recent`` of them (before the latest compaction and in sidechains too) is changed by
the core's own micro compaction, and the UI copies of those outputs shrink with them.

Full: the view's messages (old results already markers, so they take little memory) go to the
core's full compaction; its summary and the pending turn it set aside become the records the
format appends. The file's lines before them stay as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

from ..errors import ProviderError
from ..estimate import HEURISTIC, Counter, estimate, estimate_quarters, quarters_to_tokens
from ..full import find_pending_turn, full_compact, has_source
from ..micro import is_marker, micro_compact
from ..pipeline import Job, default_provider
from ..providers.base import Summarizer
from ..settings import Settings
from ..status import Status
from ..tokenizers import counter as counter_named
from ..tools import UNKNOWN_TOOL, tool_result_turns
from .base import Compaction, Record, ToolResult
from .session import (
    Session,
    load_view,
    pick,
    piece_quarters,
    read_record,
    result_holders,
    view_tokens,
)


@dataclass(frozen=True)
class MicroPlan:
    records: frozenset[int]  # records whose tool results get the marker
    outputs: dict[Any, str]  # call id -> tool name of every output that gets the marker
    copies: frozenset[int]  # other records holding UI copies of those outputs
    results: int  # tool results that get the marker
    # records of ``records`` that also hold parts of the newest turns: those parts stay whole
    # (one record may hold a whole history, as Gemini CLI's checkpoints do)
    kept_parts: dict[int, frozenset[int]] = field(default_factory=dict)

    def touches(self, index: int) -> bool:
        return index in self.records or index in self.copies

    def touches_view(self, session: Session) -> bool:
        return any(self.touches(index) for index in session.view_records)


def plan_micro(session: Session, settings: Settings) -> MicroPlan:
    infos = session.infos
    skeleton = [
        {
            "role": infos[message.records[0]].role,
            "content": [
                {"type": "tool_result", "tool_use_id": result.call_id}
                for index, part in message.pieces()
                for result in infos[index].results
                if part is None or result.part == part
            ],
        }
        for message in session.view
    ]
    turns = tool_result_turns(skeleton)
    keep = max(settings.keep_recent, 0)
    kept_turns = turns[len(turns) - keep :] if keep else []
    kept = {
        piece for turn in kept_turns for number in turn for piece in session.view[number].pieces()
    }
    whole = {index for index, part in kept if part is None}
    kept_parts: dict[int, set[int]] = {}
    for index, part in kept:
        if part is not None and index not in whole:
            kept_parts.setdefault(index, set()).add(part)
    kept_calls = {
        result.call_id
        for index, part in kept
        for result in infos[index].results
        if part is None or result.part == part
    }

    def old(index: int, result: ToolResult) -> bool:
        return index not in whole and result.part not in kept_parts.get(index, ())

    records: set[int] = set()
    outputs: dict[Any, str] = {}
    marked = 0
    for index, info in enumerate(infos):
        for result in info.results:
            tool = session.names.get(result.call_id, UNKNOWN_TOOL)
            if old(index, result) and _gets_marker(result, tool, settings):
                records.add(index)
                marked += 1
                if isinstance(result.call_id, str) and result.call_id not in kept_calls:
                    outputs[result.call_id] = tool
    copies = frozenset(
        index
        for index, info in enumerate(infos)
        if info.copies and index not in whole and any(call in outputs for call in info.copies)
    )
    partly = {index: frozenset(parts) for index, parts in kept_parts.items() if index in records}
    return MicroPlan(frozenset(records), outputs, copies, marked, partly)


def _gets_marker(result: ToolResult, tool: str, settings: Settings) -> bool:
    """The conditions of SPEC §2 for one result of an old turn (the core applies them again)."""
    if result.is_marker or tool in settings.exclude_tools:
        return False
    return result.chars >= settings.min_chars


def micro_change(session: Session, plan: MicroPlan, settings: Settings):
    """The change pass 2 makes to record ``index`` (returns whether it changed it)."""
    agent_format = session.format
    # The plan chose the records; within one, every result the rules allow gets the marker, by
    # the default profile's rules (a session file is never a BareAgent conversation).
    every_result = replace(settings, keep_recent=0, compat=False)

    def change(index: int, record: Record) -> bool:
        changed = False
        if index in plan.records:
            messages = agent_format.messages(record)
            kept = plan.kept_parts.get(index, frozenset())
            candidates = [m for part, m in enumerate(messages) if part not in kept]
            holders = list(result_holders(candidates))
            before = [is_marker(holder.get("content")) for _, holder in holders]
            calls = {call_id for call_id, _ in holders if isinstance(call_id, str)}
            asked = {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": call_id, "name": session.names.get(call_id)}
                    for call_id in calls
                    if call_id in session.names
                ],
            }
            compacted = micro_compact([asked, *candidates], every_result)[0][1:]
            truncated = {
                call_id: session.names.get(call_id, UNKNOWN_TOOL)
                for (call_id, holder), was in zip(result_holders(compacted), before, strict=True)
                if not was and is_marker(holder.get("content"))
            }
            for message, now in zip(candidates, compacted, strict=True):
                if now is not message:  # the format's messages may be the record's own dicts
                    message.clear()
                    message.update(now)
            if truncated:
                agent_format.store(record, messages, truncated)
                changed = True
        if index in plan.copies:
            changed = agent_format.shrink_copies(record, plan.outputs) or changed
        return changed

    return change


def view_tokens_after(
    handle: BinaryIO, session: Session, plan: MicroPlan, change: Callable[[int, Record], bool]
) -> int:
    """The view's estimate once the plan is done (the changed view records read again)."""
    quarters = session.view_quarters
    for index, part in session.view_pieces:
        if plan.touches(index):
            info = session.infos[index]
            record = read_record(handle, info, session.source)
            change(index, record)
            now = estimate_quarters(pick(session.format.messages(record), part))
            quarters += now - piece_quarters(info, part)
    return quarters_to_tokens(quarters)


# --- one file through one command ----------------------------------------------------------------


@dataclass
class SessionOutcome:
    """What a command does to a session file: the records to change, the records to append."""

    change: Callable[[int, Record], bool] | None = None
    touched: frozenset[int] = frozenset()  # the records ``change`` may change
    append: list[Record] = field(default_factory=list)
    truncated: int = 0  # tool results that get the marker
    full: Status = Status.NOT_RUN
    error: ProviderError | None = None
    tokens_before: int | None = None  # the view's estimate (None: not measured)
    tokens_after: int | None = None
    over_threshold: bool = False
    summary: str | None = None

    @property
    def changed(self) -> bool:
        return bool(self.touched or self.append)


@dataclass(frozen=True)
class Surroundings:
    """What a full compaction of a session file needs besides the file."""

    provider: Summarizer | None = None
    now: datetime | None = None  # stamps the new records (UTC)
    path: Path | None = None  # the session file, named in the summary record
    new_id: Callable[[], str] | None = None
    dry_run: bool = False  # decide, but call no provider


def run_session(
    handle: BinaryIO, session: Session, job: Job, around: Surroundings = Surroundings()
) -> SessionOutcome:
    """What ``job`` (micro, full or auto) does to the session; nothing is written here."""
    settings = job.settings
    plan = plan_micro(session, settings)
    change = micro_change(session, plan, settings)
    counter = counter_named(settings.tokenizer)
    before = view_tokens(handle, session, counter) if session.measured else None
    if job.command == "micro" or job.command == "auto":
        after = before
        if plan.touches_view(session) and session.measured:
            after = (
                view_tokens_after(handle, session, plan, change)
                if counter is HEURISTIC
                else view_tokens(handle, session, counter, _micro_first(plan, change))
            )
        outcome = SessionOutcome(
            change,
            plan.records | plan.copies,
            [],
            plan.results,
            Status.NOT_RUN,
            None,
            before,
            after,
        )
        if job.command == "micro" or (after or 0) <= settings.threshold:
            return outcome
    else:
        outcome = SessionOutcome(tokens_before=before, tokens_after=before)
    outcome = _full(handle, session, settings, plan, change, around, outcome, counter)
    if job.command == "auto" and outcome.error is None and outcome.full != Status.WOULD_RUN:
        outcome.over_threshold = (outcome.tokens_after or 0) > settings.threshold
    return outcome


def _full(
    handle: BinaryIO,
    session: Session,
    settings: Settings,
    plan: MicroPlan,
    change: Callable[[int, Record], bool],
    around: Surroundings,
    outcome: SessionOutcome,
    counter: Counter,
) -> SessionOutcome:
    # old results: markers, little memory
    in_view = load_view(handle, session, _micro_first(plan, change))
    pending = find_pending_turn(in_view, settings.compat)
    if around.dry_run:
        outcome.full = Status.WOULD_RUN if has_source(in_view, pending) else Status.NOTHING
        return outcome
    result = full_compact(in_view, around.provider or default_provider(), settings)
    outcome.full, outcome.error = result.status, result.error
    if result.status != Status.COMPACTED or result.summary is None:
        return outcome
    pending_records = [
        (read_record(handle, session.infos[index], session.source), part)
        for number in pending.indexes
        for index, part in session.view[number].pieces()
    ]
    last = session.view[-1].records[-1] if session.view else None
    compaction = Compaction(
        summary=result.summary,
        messages=result.messages,
        view=session.view,
        pending=pending_records,
        last=read_record(handle, session.infos[last], session.source) if last is not None else None,
        infos=session.infos,
        tokens_before=outcome.tokens_before or 0,
        now=around.now or datetime.now().astimezone(),
        path=around.path,
        new_id=around.new_id,
    )
    outcome.append = session.format.compaction_records(compaction)
    outcome.summary = result.summary
    appended = [message for record in outcome.append for message in session.format.messages(record)]
    outcome.tokens_after = estimate(appended, counter=counter)
    return outcome


def _micro_first(
    plan: MicroPlan, change: Callable[[int, Record], bool]
) -> Callable[[int, Record], None]:
    """``change`` for the records the plan touches: the view as micro compaction leaves it."""

    def micro_first(index: int, record: Record) -> None:
        if plan.touches(index):
            change(index, record)

    return micro_first
