"""Micro compaction: old tool results become one-line markers, no model call (SPEC §2).

Every tool-result turn but the newest ``keep_recent`` has each tool result's ``content`` replaced
by ``[truncated: {tool} result, {N} chars]``, where N is the length in code points of the original
content. Nothing else in the conversation changes, and a second run changes nothing more.

Stale results go first (staleness.py, issue 35): an old one's marker names what superseded it,
and of the newest turns the results a later one repeats are replaced too. With ``recall`` a
marker carries the handle of the content it replaced (handles.py).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..conversation.formats import Message
from ..conversation.tools import (
    UNKNOWN_TOOL,
    ToolNames,
    blocks,
    is_block,
    tool_names,
    tool_result_ids,
    tool_result_turns,
)
from ..settings import DEFAULT_SETTINGS, Settings
from . import bareagent
from .estimate import Counter, json_text, message_units
from .handles import handle
from .old_images import mark_old_images
from .staleness import NONE, SUPERSEDED_PREFIX, Analysis, Staleness, analyse

MARKER_PREFIX = "[truncated:"
MARKERS = (MARKER_PREFIX, SUPERSEDED_PREFIX)  # what a result already replaced starts with


@dataclass(frozen=True)
class MicroResult:
    """What a micro compaction did."""

    truncated: int  # tool results replaced by a marker
    chars_removed: int  # code points of content removed, net of the markers written
    images: int = 0  # image blocks replaced by a marker (``Settings.images``: old_images.py)


@dataclass(frozen=True)
class Take:
    """The results of some tool-result turns that get a marker: all of them, or those of
    ``only`` (call ids); ``before``: the request (a history length) they are marked at, whose
    staleness their markers show (None: the whole conversation's)."""

    indexes: list[int]  # the turns' messages, in order
    before: int | None = None
    only: Collection[str] | None = None


def marker(tool: str, chars: int, recall: str = "") -> str:
    """``[truncated: bash result, 1204 chars]``; with a recall handle, ``…chars; recall H]``."""
    return f"[truncated: {tool} result, {chars} chars{f'; recall {recall}' if recall else ''}]"


def content_length(content: Any) -> int:
    """Code points of a tool result's content: a string as is, null 0, anything else as JSON."""
    if isinstance(content, str):
        return len(content)
    if content is None:
        return 0
    return len(json_text(content))


def is_marker(content: Any) -> bool:
    return isinstance(content, str) and content.startswith(MARKERS)


def staleness_of(messages: list[Message], settings: Settings) -> Staleness:
    """The conversation's stale results, when the settings put them first."""
    return analyse(messages, settings.tool_rules) if settings.stale_first else NONE


def micro_compact(
    messages: list[Message], settings: Settings = DEFAULT_SETTINGS
) -> tuple[list[Message], MicroResult]:
    """A new list with old tool results as markers, and what was done; ``messages`` is untouched.

    Every tool-result turn but the newest ``settings.keep_recent`` is truncated (``<= 0``: every
    turn), except the results ``worth_a_marker`` leaves alone. ``settings.compat`` follows the
    BareAgent reference (bareagent.py): OpenAI ``tool`` messages stay whole. Only the messages
    that change are copied (with their content lists and result blocks); the rest are shared, so
    this is cheap on huge conversations.
    """
    compat = settings.compat
    turns, names, stale = _marked_by(messages, settings)
    keep = settings.keep_recent
    old = len(turns) - keep if keep > 0 else len(turns)
    # the old turns in one take (not one each: most turns of a long session are old ones)
    takes = [Take(_indexes(turns[: max(old, 0)]))] if old > 0 else []
    compacted, done = _truncate(
        messages, takes + duplicates(turns[max(old, 0) :], stale), settings, stale, names
    )
    if settings.images and not compat:
        return with_old_images(compacted, done, settings)
    return compacted, done


def _marked_by(
    messages: list[Message], settings: Settings
) -> tuple[list[list[int]], ToolNames | None, Staleness]:
    """The tool-result turns, each call's tool (None: found when needed) and the stale
    results: with stale results first, all three from the one walk of the analysis."""
    if settings.stale_first:
        analysis = Analysis(settings.tool_rules)
        analysis.read(messages)
        return analysis.turns, analysis.names, analysis.staleness()
    turns = (bareagent.tool_result_turns if settings.compat else tool_result_turns)(messages)
    return turns, None, NONE


def duplicates(turns: list[list[int]], stale: Staleness, before: int | None = None) -> list[Take]:
    """Of these turns (the newest, kept whole), the results a later one repeats (staleness.py):
    stale by the request before ``before``."""
    repeated = stale.duplicates(before)
    return [Take(_indexes(turns), None, repeated)] if repeated else []


def _indexes(turns: list[list[int]]) -> list[int]:
    """The messages of these turns, in order."""
    return [index for turn in turns for index in turn]


def mark_all_but(
    messages: list[Message],
    settings: Settings,
    kept: Collection[int] = (),
    stale: Staleness = NONE,
) -> tuple[list[Message], MicroResult]:
    """Every tool result of ``messages`` gets its marker, as far as the rules allow, but those of
    the ``kept`` messages (indexes), which lose only the results a later one repeats: what a
    session file's record gets, once its plan chose it (session_files/micro_plan.py).
    Default profile only."""
    turns = tool_result_turns(messages)
    old = [index for turn in turns for index in turn if index not in kept]
    kept_turns = [[index for index in turn if index in kept] for turn in turns]
    newest = duplicates([turn for turn in kept_turns if turn], stale)
    return _truncate(messages, [Take(old), *newest], replace(settings, compat=False), stale)


def with_old_images(
    messages: list[Message], done: MicroResult, settings: Settings
) -> tuple[list[Message], MicroResult]:
    """``--images``: the old turns' images become markers too (old_images.py)."""
    marked, images = mark_old_images(messages, settings.keep_recent)
    return marked, replace(done, images=images)


@dataclass(frozen=True)
class Layout:
    """Where a conversation's tool results are (``tools.tool_result_turns``) and the tool each
    answers (``tools.tool_names``): what every marking of it reads, found once for them all."""

    turns: list[list[int]]
    names: ToolNames
    length: int = 0  # of the messages it is the layout of

    @classmethod
    def of(cls, messages: list[Message]) -> Layout:
        return cls(tool_result_turns(messages), tool_names(messages), len(messages))

    def then(self, messages: list[Message]) -> Layout:
        """The layout of ``messages``, whose first ``length`` this one is of: what comes after
        them is read on (a proxy's conversation goes on)."""
        start = self.length
        turns = list(self.turns)  # the turns themselves are shared: a layout is never changed
        rest = [[start + index for index in turn] for turn in tool_result_turns(messages[start:])]
        if rest and turns and _runs_on(messages, start):
            turns[-1] = turns[-1] + rest.pop(0)
        return Layout(turns + rest, tool_names(messages[start:], self.names), len(messages))


def _runs_on(messages: list[Message], start: int) -> bool:
    """Whether a run of ``role: "tool"`` messages (one turn) goes on across ``start``."""
    return messages[start - 1].get("role") == "tool" and messages[start].get("role") == "tool"


def mark_turns(
    messages: list[Message],
    settings: Settings,
    selected: Collection[int],
    marked_at: Mapping[int, int] | None = None,
    single: Collection[str] = (),
    stale: Staleness | None = None,
    layout: Layout | None = None,
    within: set[int] | None = None,
) -> tuple[list[Message], MicroResult]:
    """Micro compaction of the chosen tool-result turns only (positions in
    ``tool_result_turns(messages)``, oldest 0), by the same rules: the cache-aware policy picks
    the turns (cache_plan.py), this writes their markers. Default profile only.

    ``marked_at``: the request (history length) each turn was marked at, whose staleness its
    markers show; ``single``: stale results of other turns (call ids) marked as well; ``stale``:
    the conversation's staleness, when the caller has it already (None: found here); ``layout``:
    the conversation's, likewise; ``within``: the messages (indexes) whose markers are read,
    the turns of others left as they are (None: every one)."""
    layout = layout or Layout.of(messages)
    turns = layout.turns
    if within is None:
        chosen: Collection[int] = range(len(turns))
    else:
        chosen = {position for position, turn in enumerate(turns) if within.issuperset(turn)}
    at = marked_at or {}
    takes = [Take(turns[p], at.get(p)) for p in sorted(selected) if p in chosen]
    if single:
        only = frozenset(single)
        takes += [
            Take(turns[position], None, only)
            for position in sorted(chosen)
            if _answers(messages, turns[position], only)
        ]
    settings = replace(settings, compat=False)
    found = stale if stale is not None else staleness_of(messages, settings)
    return _truncate(messages, takes, settings, found, layout.names)


def marked_units(
    messages: list[Message],
    settings: Settings,
    layout: Layout,
    counter: Counter,
    positions: Collection[int] | None = None,
) -> dict[int, int]:
    """The count of each message of these tool-result turns (positions in ``layout.turns``;
    None: every one) with all its results truncation markers, stale ones too: what the turns'
    markers leave of them, by age alone."""
    chosen = range(len(layout.turns)) if positions is None else positions
    every, _ = mark_turns(messages, replace(settings, stale=False), chosen, layout=layout)
    return {
        index: message_units(every[index], counter)
        for position in chosen
        for index in layout.turns[position]
    }


def _answers(messages: list[Message], turn: list[int], calls: frozenset[str]) -> bool:
    """Whether a result of the turn answers one of ``calls``: the other turns' messages are
    left as they are, not copied."""
    return any(call in calls for index in turn for call in tool_result_ids(messages[index]))


def _truncate(
    messages: list[Message],
    takes: list[Take],
    settings: Settings,
    stale: Staleness = NONE,
    names: dict[str, str] | None = None,
) -> tuple[list[Message], MicroResult]:
    compat = settings.compat
    compacted = list(messages)
    if not takes:
        return compacted, MicroResult(0, 0)
    results = _reference_results if compat else _tool_results
    if names is None:
        names = (bareagent.tool_names if compat else tool_names)(messages)
    truncated = removed = 0
    for take in takes:
        for holder, tool, chars, call_id in results(compacted, messages, take.indexes, names):
            if take.only is not None and call_id not in take.only:
                continue
            text = _marker(holder.get("content"), tool, chars, call_id, take, stale, settings)
            if text is not None:
                holder["content"] = text
                truncated += 1
                removed += chars - len(text)
    return compacted, MicroResult(truncated, removed)


def _marker(
    content: Any,
    tool: str,
    chars: int,
    call_id: Any,
    take: Take,
    stale: Staleness,
    settings: Settings,
) -> str | None:
    """The marker that replaces one result, or None where the result stays whole
    (``worth_a_marker``): superseded if it was stale when marked, else truncated."""
    if tool in settings.exclude_tools or chars < settings.min_chars:
        return None  # told before a marker (and with --recall, its handle) is made
    recall = handle(content) if settings.recall and not settings.compat else ""
    superseded = stale.of(call_id, take.before)
    text = superseded.marker(recall) if superseded else marker(tool, chars, recall)
    return text if worth_a_marker(tool, chars, settings, text) else None


def worth_a_marker(tool: str, chars: int, settings: Settings, text: str | None = None) -> bool:
    """Whether an old result of ``chars`` code points from ``tool`` gets the marker ``text``
    (None: the truncation marker) (SPEC §2).

    Not a result of an excluded tool, nor one shorter than ``min_chars``; and, but for the
    BareAgent profile (which marks every result, as the reference does), never a result the
    marker would not make shorter: ``[truncated: bash result, 2 chars]`` in place of ``ok``
    would grow the conversation it is meant to shrink.
    """
    if tool in settings.exclude_tools or chars < settings.min_chars:
        return False
    return settings.compat or len(text or marker(tool, chars)) < chars


def _copy_results(message: Message) -> Message:
    """A copy of the message that its tool results can be rewritten in."""
    copied = dict(message)
    if isinstance(copied.get("content"), list):
        copied["content"] = [
            dict(block) if is_block(block, "tool_result") else block for block in copied["content"]
        ]
    return copied


# what holds the content, its tool, its length, the call id it answers
ToolResult = tuple[dict[str, Any], str, int, Any]


def _own(compacted: list[Message], messages: list[Message], index: int) -> Message:
    """The message at ``index`` of ``compacted``, a copy of ``messages``' that its results can
    be rewritten in: copied here, just before its results are read, while it is still in the
    processor's cache (copying all of a long session's old messages first, then reading them
    again, costs a tenth more)."""
    message = compacted[index]
    if message is messages[index]:
        message = compacted[index] = _copy_results(message)
    return message


def _tool_results(
    compacted: list[Message], messages: list[Message], turn: list[int], names: Any
) -> Iterator[ToolResult]:
    """Each tool result of this turn not yet truncated (SPEC §2), in its message's copy."""
    for index in turn:
        message = _own(compacted, messages, index)
        if message.get("role") == "tool":
            holders: Iterable[tuple[dict[str, Any], Any]] = (
                (message, message.get("tool_call_id")),
            )
        else:
            holders = (
                (block, block.get("tool_use_id"))
                for block in blocks(message)
                if isinstance(block, dict) and block.get("type") == "tool_result"
            )
        for holder, call_id in holders:
            content = holder.get("content")
            if isinstance(content, str):  # most results: told a marker or measured at once
                if content.startswith(MARKERS):
                    continue
                chars = len(content)
            else:
                chars = content_length(content)
            yield holder, names.get(call_id, UNKNOWN_TOOL), chars, call_id


def _reference_results(
    compacted: list[Message], messages: list[Message], turn: list[int], names: dict[str, str]
) -> Iterator[ToolResult]:
    """The same, by the reference's rules: a missing content is "", ``null`` is "null"."""
    for index in turn:
        for block in bareagent.tool_results(_own(compacted, messages, index)):
            text = bareagent.stringify(block.get("content", ""))
            if not text.startswith(MARKER_PREFIX):
                yield block, bareagent.result_tool(block, names), len(text), None
