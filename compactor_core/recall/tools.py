"""What ``ctxpack mcp`` offers the model: ``recall`` (what a marker replaced, by the handle it
shows), ``estimate`` (a conversation's or session's tokens, and their stale share) and
``stats`` (what the store of originals holds)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .mcp import Tool, ToolFailed

if TYPE_CHECKING:
    from ..ends.sources import Source
    from .store import OriginalsStore

INSTRUCTIONS = (
    "ctxpack replaces old tool results in this conversation with markers such as "
    "[truncated: Bash result, 1204 chars; recall HANDLE] or [superseded: Read src/app.py, read "
    "again 4 turns later; recall HANDLE], where HANDLE is 12 hex digits. When you need what such "
    "a marker replaced, call recall with its handle rather than running the tool again."
)

RECALL = (
    "The original content a ctxpack marker replaced: give the handle (12 hex digits) the marker "
    'shows after "recall".'
)
ESTIMATE = (
    "Tokens of a conversation file or an agent's session file, by role and tool, and the share "
    "of its tool-result tokens that later results made stale."
)
STATS = "How many originals the recall store holds, their bytes, and its limit."

COUNTS = {"type": "integer", "minimum": 0}
STATS_SCHEMA = {
    "type": "object",
    "properties": {"originals": COUNTS, "bytes": COUNTS, "limit": COUNTS},
    "required": ["originals", "bytes", "limit"],
}
BREAKDOWN_SCHEMA = {"type": "object", "additionalProperties": True}


def ctxpack_tools(store: OriginalsStore, source_of: Callable[[str], Source]) -> tuple[Tool, ...]:
    """The three tools over ``store``; ``estimate`` reads where ``source_of`` says a path is."""

    def recall(handle: str) -> str:
        found = store.find(handle)
        if found.text is None:  # not held, malformed, or ambiguous: the model is told which
            raise ToolFailed(found.answer)
        return found.answer

    def estimate(path: str) -> dict[str, Any]:
        from ..ends.documents import open_document  # the first estimate pays for it, not start-up

        with open_document(source_of(path), "auto") as document:
            return {"tokens": document.tokens(), **document.breakdown()}

    return (
        Tool("recall", RECALL, recall, {"handle": "the handle a marker shows after recall"}),
        Tool("estimate", ESTIMATE, estimate, {"path": "a file's path"}, BREAKDOWN_SCHEMA),
        Tool("stats", STATS, store.stats, output_schema=STATS_SCHEMA),
    )
