"""A saved conversation as the replay reads it: its messages, and when each was written.

An agent's session file is read as its conversation view (what the agent would send on resume,
SPEC §8.2); each record carries its ``timestamp`` (Claude Code and Codex alike), and a view
message made of several records has the time of its last one. A plain conversation has times
only where its messages carry a ``timestamp`` key themselves, as some exports do.
"""

from __future__ import annotations

from typing import BinaryIO

from ..compaction.cache_plan import message_times, parse_time
from ..conversation.formats import Conversation
from ..ends.documents import Document, MessagesDocument
from ..session_files.base import Record
from ..session_files.index import SessionIndex, load_view
from .run import Recording


def of(document: Document) -> Recording:
    """What the replay reads of a document: a conversation, or a session file's view."""
    if isinstance(document, MessagesDocument):
        return from_conversation(document.conversation)
    return from_session(document.handle, document.index())


def from_conversation(conversation: Conversation) -> Recording:
    messages = conversation.messages
    return Recording(messages, message_times(messages), conversation.system)


def from_session(handle: BinaryIO, session: SessionIndex) -> Recording:
    stamps: dict[int, float | None] = {}

    def note_time(index: int, record: Record) -> None:
        stamps[index] = parse_time(record.get("timestamp"))

    messages = load_view(handle, session, note_time)
    times = [
        max((stamps[i] for i in message.records if stamps.get(i) is not None), default=None)
        for message in session.view
        if any(session.infos[i].role is not None for i in message.records)  # load_view's too
    ]
    return Recording(messages, times)
