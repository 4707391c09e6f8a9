"""What an agent recorded of its bill: the usage of each model request its session file holds.

The format says how its records hold usage (``AgentFormat.recorded_usage``); this reads the file
for it, as a stream, one record at a time. ``replay`` turns the calls into its receipt
(``replay.receipt``); any command that wants the recorded bill of a file starts here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, BinaryIO

from .base import AgentFormat, Record, RecordedCall
from .records import lines, milliseconds, parse_fast


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


def seconds(value: Any) -> float | None:
    """A recorded time in seconds since the epoch: an ISO timestamp, or JavaScript's epoch
    milliseconds (a number); None for anything else."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value / 1000
    stamp = milliseconds(value)
    return None if stamp is None else stamp / 1000


def recorded_call(
    line: int,
    *,
    time: Any,
    model: Any,
    plain: Any = 0,
    prompt: Any = None,
    read: Any = 0,
    written: Any = 0,
    output: int = 0,
    change: str | None = None,
) -> RecordedCall:
    """One request as an agent's record counts it. ``prompt``, where given, is the whole input
    with what was read from and written to the cache inside it (OpenAI's and Gemini's way of
    counting); otherwise ``plain`` is the input neither read nor written (Anthropic's way)."""
    read, written = token_count(read), token_count(written)
    if prompt is not None:
        plain = token_count(prompt) - read - written
    return RecordedCall(
        line=line,
        time=seconds(time),
        input=token_count(plain),
        cache_read=read,
        cache_write_5m=written,
        model=model if isinstance(model, str) else None,
        output=output,
        change=change,
    )


def calls_of(
    records: Iterable[tuple[int, Record]],
    usage_of: Callable[[Record], dict[str, Any] | None],
    change_of: Callable[[Record], str | None] = lambda _record: None,
) -> list[RecordedCall]:
    """A call for each record in which ``usage_of`` finds usage (``recorded_call``'s keyword
    arguments); a record ``change_of`` names a change for changed what the next call sent."""
    calls: list[RecordedCall] = []
    change = None
    for index, record in records:
        change = change_of(record) or change
        usage = usage_of(record)
        if usage is not None:
            calls.append(recorded_call(index, change=change, **usage))
            change = None
    return calls
