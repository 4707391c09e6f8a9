"""The turns an agent appended after ctxpack's run, made to follow the original (``restore
--keep-new``).

ctxpack rewrote a session file; its agent then went on and appended records to what ctxpack left.
Putting the original back must keep those turns, and they must continue the original: a record
whose parent is in neither the original nor the records appended before it (the first turn after
a summary ctxpack wrote follows the summary's records, which the original does not hold) follows
the record the agent resumes the original from, the last of its view. Every other record stays
byte for byte. A format whose records name no parent (Codex's rollouts) appends as it is.
"""

from __future__ import annotations

import io

import orjson

from .base import AgentFormat, RecordInfo
from .index import index_session, read_record
from .records import record_of


def follow_original(
    original: bytes, appended: bytes, agent_format: AgentFormat, label: str
) -> bytes:
    """``appended`` (whole lines) with each record that follows nothing it can reach re-linked
    to where the agent resumes ``original``."""
    ids = _ids(original, agent_format)
    leaf = _resumed_from(original, agent_format, label)
    lines = appended.splitlines(keepends=True)
    for number, line in enumerate(lines):
        record = record_of(line)
        if record is None:
            continue
        info = _info(record, agent_format)
        lost = info.parent is not None and info.parent not in ids
        if lost and leaf is not None and agent_format.relink(record, leaf):
            lines[number] = orjson.dumps(record) + b"\n"
        if info.id is not None:
            ids.add(info.id)
    return b"".join(lines)


def _ids(data: bytes, agent_format: AgentFormat) -> set[str]:
    found = set()
    for line in data.splitlines():
        record = record_of(line)
        if record is not None:
            found.add(_info(record, agent_format).id)
    found.discard(None)
    return found


def _resumed_from(data: bytes, agent_format: AgentFormat, label: str) -> str | None:
    """The id of the last record of the original's view: where its agent's resume goes on."""
    handle = io.BytesIO(data)
    session = index_session(handle, agent_format, label)
    if not session.view:
        return None
    last = session.view[-1].records[-1]
    return _info(read_record(handle, session.infos, last, session.source), agent_format).id


def _info(record: dict, agent_format: AgentFormat) -> RecordInfo:
    info = RecordInfo(0, 0, 0)
    agent_format.index(record, info)
    return info
