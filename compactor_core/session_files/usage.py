"""What an agent recorded of its bill: the usage of each model request its session file holds.

The format says how its records hold usage (``AgentFormat.recorded_usage``); this reads the file
for it, as a stream, one record at a time. ``replay`` turns the calls into its receipt
(``replay.receipt``); any command that wants the recorded bill of a file starts here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

from .base import AgentFormat, Record, RecordedCall
from .records import lines, parse_fast


def recorded_calls(handle: BinaryIO, agent_format: AgentFormat) -> list[RecordedCall]:
    """Every model request the open session file records the usage of, oldest first."""
    return agent_format.recorded_usage(_records(handle))


def _records(handle: BinaryIO) -> Iterator[tuple[int, Record]]:
    for index, line in enumerate(lines(handle)):
        record, _ = parse_fast(line)
        if record is not None:
            yield index, record


def token_count(value: Any) -> int:
    """A recorded count of tokens: a positive integer, or 0 for anything else."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
