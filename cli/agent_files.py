"""The commands on an agent's session file that is not rewritten in place: to stdout or ``-o``,
and ``estimate``. Batches (``--in-place``, ``-O``) go through the core's batch module instead.
"""

from __future__ import annotations

import io as bytes_io
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple

from compactor_core.agents.records import open_file
from compactor_core.agents.registry import MESSAGES, detect

from . import io

# Only what tells a session file from a conversation of messages is imported at start-up: the
# session machinery (pass 1, compaction, writing) is imported by the functions that use it, so
# `estimate` or `micro` of a plain conversation never loads it.
if TYPE_CHECKING:
    from compactor_core.agents.base import AgentFormat
    from compactor_core.agents.in_place import SessionSettings
    from compactor_core.agents.session import Session
    from compactor_core.batch import FileReport
    from compactor_core.estimate import Counter
    from compactor_core.pipeline import Job
    from compactor_core.providers.base import Summarizer


class Opened(NamedTuple):  # not a dataclass, which costs ten times as much at start-up
    """An input that is an agent's session file, open for reading."""

    handle: BinaryIO
    format: AgentFormat
    label: str


@contextmanager
def opened(name: str, format_name: str) -> Iterator[Opened | io.Input]:
    """The input as an agent's session file, or (a conversation of messages) as read whole."""
    if format_name == MESSAGES:
        yield io.read_input(name)
        return
    label = io.label(name)
    in_memory = name == io.STDIN or "://" in name  # standard input or an object: read whole
    if in_memory:  # read twice, so kept in memory
        given = io.read_input(name)
        handle: BinaryIO = bytes_io.BytesIO(given.data)
    else:
        handle = open_file(name, label)
    with handle:
        agent_format = detect(handle, format_name, label)
        if agent_format is None:
            yield given if in_memory else io.read_input(name)
        else:
            yield Opened(handle, agent_format, label)


def stream(
    source: Opened,
    job: Job,
    settings: SessionSettings,
    provider: Summarizer | None,
    output: str | None,
) -> FileReport:
    """The command's result, the whole new file, to stdout or (atomically) to ``output``."""
    from pathlib import Path

    from compactor_core.agents.in_place import report, transform
    from compactor_core.agents.write import session_chunks
    from compactor_core.atomic import atomic_write_chunks, write_chunks

    session, outcome = transform(
        source.handle, source.format, source.label, job, settings, provider
    )
    chunks = session_chunks(source.handle, session, outcome)
    if output and output != io.STDIN:
        atomic_write_chunks(Path(output), chunks)
    else:
        io.write_stdout(b"")  # anything buffered goes first
        write_chunks(sys.stdout.fileno(), chunks, "<stdout>")
    return report(source.label, outcome)


def index(source: Opened) -> Session:
    from compactor_core.agents.session import index_session

    return index_session(source.handle, source.format, source.label)


def estimate_report(source: Opened, session: Session, counter: Counter) -> dict[str, Any]:
    """``estimate --json`` of a session file: the view's breakdown, and the file's make-up."""
    from compactor_core.agents.session import load_view
    from compactor_core.estimate import breakdown

    return {
        **breakdown(load_view(source.handle, session), counter=counter),
        "format": source.format.name,
        "bytes": session.size,
        "records": session.records(),
        "lines": len(session.infos),
        "bytes_by_type": session.bytes_by_kind(),
    }
