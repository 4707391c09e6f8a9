"""The records Claude Code 2.1.328 writes for its own ``/compact``, written for ctxpack's summary.

Read from the records the real agent writes (tests/fixtures/claude_code/compacted.jsonl):

- a ``system`` record of subtype ``compact_boundary``: ``parentUuid`` null, ``logicalParentUuid``
  the last record, ``compactMetadata`` with ``trigger``, ``preTokens`` and what it keeps whole of
  the records before it: ``preservedSegment`` (``headUuid``, ``anchorUuid``, ``tailUuid``) and
  ``preservedMessages`` (``anchorUuid``, ``uuids``, ``allUuids``); the anchor is the summary;
- the summary: a ``user`` record (``isCompactSummary``, ``isVisibleInTranscriptOnly``) whose text
  is framed the way ``SUMMARY_INTRO`` … ``KEPT_NOTE`` frame it here.

What ``/compact`` keeps whole is the most recent messages, in place: their records stay where
they are, the resume chains them after the summary. ctxpack keeps the pending turn (the request
the user is waiting on, and the calls its results answer) or, when there is none, the last reply,
so the resumed request ends as it did before, with no turn made up to fill the gap (Claude Code
answers a conversation that ends with the user's message with "No response requested.").
Left out: ``/compact``'s measures of its own run (``durationMs``, ``postTokens``), its command's
echo (``<command-name>/compact</command-name>`` …), which the resume never sends.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..session_files.base import Compaction, Record
from ..session_files.table import RecordTable

# Keys every record of a session repeats; a new record takes them from the last one.
SESSION_KEYS = ("userType", "entrypoint", "cwd", "sessionId", "version", "gitBranch", "slug")
SUMMARY_INTRO = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The summary below covers the earlier portion of the conversation.\n\n"
)
TRANSCRIPT_NOTE = (
    "\n\nIf you need specific details from before compaction (like exact code snippets, error "
    "messages, or content you generated), read the full transcript at: "
)
CONTINUE_NOTE = (
    "\nContinue the conversation from where it left off without asking the user any further "
    "questions. Resume directly \u2014 do not acknowledge the summary, do not recap what was "
    'happening, do not preface with "I\'ll continue" or similar. Pick up the last task as if the '
    "break never happened."
)
KEPT_NOTE = (
    "\n\nThe messages after this summary are the most recent messages from before compaction, "
    "kept verbatim."
)
UNSEEN_NOTE = (
    " The summary was written without seeing them, so something it says has not happened yet "
    "may already have happened in them."
)


def kept_in_place(compaction: Compaction) -> list[Record]:
    """The records the boundary keeps whole, oldest first: the pending turn's, else those of
    the last message when it is a reply of the assistant's."""
    if compaction.pending:
        return [record for record, _ in compaction.pending]  # one message each
    infos: Any = compaction.infos
    if not compaction.view:
        return []
    last = compaction.view[-1].records
    if infos.role(last[0]) != "assistant":
        return []
    return [compaction.read(index) for index in last]


def compaction_records(compaction: Compaction, new_id: Callable[[], str]) -> list[Record]:
    last = compaction.last or {}
    shared = {key: last[key] for key in SESSION_KEYS if key in last}
    stamp = compaction.stamp
    kept = [record.get("uuid") for record in kept_in_place(compaction)]
    kept = [uuid for uuid in kept if isinstance(uuid, str)]
    boundary_id, summary_id = new_id(), new_id()
    metadata: dict[str, Any] = {"trigger": "manual", "preTokens": compaction.tokens_before}
    if kept:
        ends = {"headUuid": kept[0], "anchorUuid": summary_id, "tailUuid": kept[-1]}
        metadata["preservedSegment"] = ends
        metadata["preservedMessages"] = {"anchorUuid": summary_id, "uuids": kept, "allUuids": kept}
    boundary: Record = {
        "parentUuid": None,
        "logicalParentUuid": last.get("uuid"),
        "isSidechain": False,
        "type": "system",
        "subtype": "compact_boundary",
        "content": "Conversation compacted",
        "isMeta": False,
        "timestamp": stamp,
        "uuid": boundary_id,
        "level": "info",
        "compactMetadata": metadata,
        **shared,
    }
    summary: Record = {
        "parentUuid": boundary_id,
        "isSidechain": False,
        "type": "user",
        "message": {"role": "user", "content": summary_text(compaction, bool(kept))},
        "isVisibleInTranscriptOnly": True,
        "isCompactSummary": True,
        "uuid": summary_id,
        "timestamp": stamp,
        **shared,
    }
    return [boundary, summary]


def summary_text(compaction: Compaction, kept: bool) -> str:
    """The summary framed as ``/compact`` frames its own."""
    text = SUMMARY_INTRO
    tools = tools_used(compaction)
    if tools:
        used = ", ".join(tools)
        text += f"<system-reminder>\n<tools-used-before-summary>{used}</tools-used-before-summary>"
        text += "\n</system-reminder>\n"
    text += "Summary:\n" + compaction.summary
    if compaction.path is not None:
        text += TRANSCRIPT_NOTE + str(compaction.path)
    text += CONTINUE_NOTE
    if kept:
        text += KEPT_NOTE + (UNSEEN_NOTE if compaction.pending else "")
    return text


def tools_used(compaction: Compaction) -> list[str]:
    """The tools the summarized view called, in the order first used."""
    infos: RecordTable = compaction.infos  # type: ignore[assignment]
    names: dict[str, None] = {}
    for message in compaction.view:
        for index in message.records:
            for _, name, _ in infos.calls(index):
                if isinstance(name, str):
                    names.setdefault(name)
    return list(names)
