"""The checks on what a real agent sent after resuming a session ctxpack changed (SPEC §8.6).

``before`` is what the agent sent when it resumed the unchanged session, ``after`` what it sent
when it resumed the changed one, both with the same prompt.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from helpers import original_length

from agents.conversation import Conversation, text_of
from compactor_core.compaction.staleness import NONE, Staleness, analyse

KEEP_RECENT = 3  # ctxpack micro's default


@dataclass(frozen=True)
class Shrink:
    """Figures of one resume: bytes and ctxpack's estimate of the conversation, before -> after."""

    bytes_before: int
    bytes_after: int
    tokens_before: int
    tokens_after: int

    def __str__(self) -> str:
        return (
            f"bytes {self.bytes_before} -> {self.bytes_after}, "
            f"tokens {self.tokens_before} -> {self.tokens_after}"
        )


def assert_well_formed(before: Conversation, after: Conversation, scratch: Path) -> Shrink:
    """Smaller, nothing orphaned, the prompt the user just typed intact at the end."""
    assert after.pairing_problems() == []
    assert after.user_texts()[-1] == before.user_texts()[-1]
    shrink = Shrink(before.size, after.size, before.estimate(scratch), after.estimate(scratch))
    assert shrink.bytes_after < shrink.bytes_before, shrink
    assert shrink.tokens_after < shrink.tokens_before, shrink
    return shrink


def assert_micro(before: Conversation, after: Conversation, scratch: Path) -> Shrink:
    """Only older tool results changed, each into its exact marker — the truncation marker, or
    the one naming the later result that made it stale (issue 35) — and of the newest turns only
    such stale duplicates."""
    shrink = assert_well_formed(before, after, scratch)
    assert after.calls == before.calls
    assert after.user_texts() == before.user_texts()
    stale = analyse(before.messages)
    assert_newest_whole(before, after, KEEP_RECENT, stale)
    markers = after.markers()
    assert markers or stale.superseded, "no tool result became a marker"
    for call_id, match in markers.items():
        assert match["tool"] == before.calls[call_id]
        assert int(match["chars"]) == original_length(before.results[call_id])
    for call_id, content in after.results.items():
        assert (
            call_id in markers
            or content == before.results[call_id]
            or _superseded(stale, call_id, content)
        )
    return shrink


def _superseded(stale: Staleness, call_id: str, content: object) -> bool:
    found = stale.of(call_id)
    return found is not None and text_of(content) == found.marker()


def assert_full(before: Conversation, after: Conversation, scratch: Path) -> Shrink:
    """A summary replaced the history: every result still sent is whole or its exact marker."""
    shrink = assert_well_formed(before, after, scratch)
    markers = after.markers()
    for call_id, content in after.results.items():
        assert call_id in before.results, f"result {call_id} was not in the session"
        assert call_id in markers or content == before.results[call_id]
    return shrink


def assert_newest_whole(
    before: Conversation, after: Conversation, keep: int, stale: Staleness = NONE
) -> None:
    """The newest ``keep`` turns whole, but for the ``stale`` duplicates a later result repeats."""
    newest = [call_id for turn in before.result_turns()[-keep:] for call_id in turn]
    assert newest
    for call_id in newest:
        content = after.results.get(call_id)
        if content != before.results[call_id]:
            assert _superseded(stale, call_id, content), f"{call_id} not whole"


def assert_same_conversation(before: Conversation, after: Conversation) -> None:
    """The same tool calls and results, the same user requests (after a restore)."""
    assert after.calls == before.calls
    assert after.results == before.results
    assert after.user_texts() == before.user_texts()
