"""A saved conversation as the replay reads it: its messages, and when each was written.

An agent's session file is read as its conversation view (what the agent would send on resume,
SPEC §8.2); each record carries its ``timestamp`` (Claude Code and Codex alike), and a view
message made of several records has the time of its last one. A plain conversation has times
only where its messages carry a ``timestamp`` key themselves, as some exports do.

A session file that records the usage of its model requests (``session_files.usage``) is read
whole: a request before each recorded one (a subagent's aside), each the view as it stood
before the record the request came before, across the agent's own compactions; and the
calibration of the estimate against the recorded tokens (``receipt.calibrate``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import BinaryIO

from ..compaction.cache_plan import message_times, parse_time
from ..compaction.estimate import quarters_to_tokens
from ..conversation.formats import Conversation, Message
from ..ends.documents import Document, MessagesDocument
from ..session_files.base import Record, RecordedCall, ViewMessage
from ..session_files.index import SessionIndex, join, load_view, pick, read_record, view_before
from ..session_files.usage import recorded_calls
from .pricing import DEFAULT_PROFILE, PROFILES
from .receipt import calibrate, recorded_profile
from .run import Recording, Request


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
    calls = recorded_calls(handle, session.format)
    if not calls:
        return Recording(messages, times)
    return _whole_session(handle, session, Recording(messages, times), calls)


def _whole_session(
    handle: BinaryIO, session: SessionIndex, final: Recording, calls: Sequence[RecordedCall]
) -> Recording:
    """A request before each recorded main-thread call, calibrated on the recorded tokens."""
    views = _Views(handle, session)
    main = [call for call in calls if not call.side]
    requests, estimated = [], []
    for call in main:
        view = view_before(session, call.line)
        requests.append(views.request(view, call.time))
        estimated.append(quarters_to_tokens(views.quarters(view)))
    profile = recorded_profile(calls, session.format.cache_rules)
    lifetime = PROFILES[profile or DEFAULT_PROFILE].ttl
    return Recording(
        final.messages,
        final.times,
        requests=tuple(requests),
        calibration=calibrate(main, estimated, lifetime),
        recorded=tuple(calls),
        profile=profile,
    )


class _Views:
    """The view messages of many requests, each read and joined once: a message is the same
    object in every request that holds it (the meter counts it once)."""

    def __init__(self, handle: BinaryIO, session: SessionIndex) -> None:
        self.handle, self.session = handle, session
        self._records: dict[int, tuple[list[Message], float | None]] = {}
        self._messages: dict[tuple, tuple[Message, float | None] | None] = {}

    def request(self, view: Sequence[ViewMessage], time: float | None) -> Request:
        held = [self._message(message) for message in view]
        kept = [item for item in held if item is not None]
        return Request([message for message, _ in kept], [when for _, when in kept], time)

    def quarters(self, view: Sequence[ViewMessage]) -> int:
        infos = self.session.infos
        return sum(
            infos.piece_quarters(index, part)
            for message in view
            for index, part in message.pieces()
        )

    def _message(self, message: ViewMessage) -> tuple[Message, float | None] | None:
        pieces = tuple(message.pieces())
        if pieces not in self._messages:
            parts: list[Message] = []
            times: list[float] = []
            for index, part in pieces:
                record_messages, time = self._record(index)
                parts.extend(pick(record_messages, part))
                times.extend([time] if time is not None else [])
            self._messages[pieces] = (join(parts), max(times, default=None)) if parts else None
        return self._messages[pieces]

    def _record(self, index: int) -> tuple[list[Message], float | None]:
        if index not in self._records:
            session = self.session
            record = read_record(self.handle, session.infos, index, session.source)
            time = parse_time(record.get("timestamp"))
            self._records[index] = (session.format.messages(record), time)
        return self._records[index]
