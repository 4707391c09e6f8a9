"""Pass 2: the session file again, with the changes made (SPEC §8.4).

What no rule changes is copied byte for byte, in large blocks between the changed lines (pass 1
knows where every line is); a changed record is written compactly with non-ASCII unescaped,
keeping its line's ending (and the file's BOM), but for the characters the agent's reader splits
lines on (``AgentFormat.line_breaks``), which are escaped; appended records follow the last line,
which first gets a line ending if it had none; ``rescue`` may also insert records after a line,
or leave a line out. Whatever the file gained after pass 1 (an agent appending meanwhile) is
copied too, though the in-place check will then leave the file alone. Nothing is held but a
block or the line being changed.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

from ..conversation.formats import dumps
from ..errors import InputError
from .base import Record
from .index import SessionIndex
from .keys import LineSet
from .records import Line, parse_exact

BLOCK = 1 << 20


@dataclass(frozen=True)
class Rewrite:
    """What pass 2 does to a session file: the records to change (and how), the records to add.

    Only ``rescue`` inserts records after a line or leaves lines out (compaction never does)."""

    change: Callable[[int, Record], bool] | None = None
    touched: LineSet = field(default_factory=LineSet)  # the records ``change`` may change
    append: tuple[Record, ...] = ()
    insert: dict[int, tuple[Record, ...]] = field(default_factory=dict)  # after the line
    dropped: frozenset[int] = frozenset()  # lines left out


UNCHANGED = Rewrite()


def session_chunks(handle: BinaryIO, session: SessionIndex, rewrite: Rewrite) -> Iterator[bytes]:
    """The new file's bytes, a block (or a changed line, or the appended records) at a time."""
    position = 0
    last = b"\n"  # the last byte copied so far
    infos = session.infos
    breaks = session.format.line_breaks
    touched = rewrite.touched if rewrite.change is not None else ()
    for index in _lines(touched, rewrite):
        offset, length = infos.offset(index), infos.length(index)
        for block in _blocks(handle, position, offset):
            last = block[-1:]
            yield block
        position = offset + length
        if index not in rewrite.dropped:
            data = _read(handle, session, index)
            if index in touched:
                data = _changed(data, session, rewrite, index)
            last = data[-1:]
            yield data
        added = rewrite.insert.get(index, ())
        if added:
            if last not in (b"\n", b""):  # a last line without its ending gets one
                yield b"\n"
            data = b"".join(_escaped(dumps(record), breaks) + b"\n" for record in added)
            last = data[-1:]
            yield data
    for block in _blocks(handle, position, None):
        last = block[-1:]
        yield block
    if rewrite.append:
        if last not in (b"\n", b""):
            yield b"\n"
        yield b"".join(_escaped(dumps(record), breaks) + b"\n" for record in rewrite.append)


def _lines(touched: Iterable[int], rewrite: Rewrite) -> Iterator[int]:
    """The lines pass 2 does anything to, in order, each once (``touched`` is in order)."""
    if not rewrite.dropped and not rewrite.insert:
        yield from touched
        return
    previous = -1
    for index in heapq.merge(touched, sorted(rewrite.dropped), sorted(rewrite.insert)):
        if index != previous:
            yield index
        previous = index


def _read(handle: BinaryIO, session: SessionIndex, index: int) -> bytes:
    offset, length = session.infos.offset(index), session.infos.length(index)
    handle.seek(offset)
    data = handle.read(length)
    if len(data) != length:
        line = session.infos.line(index)
        raise InputError(f"{session.source}: line {line}: changed while being read")
    return data


def _changed(data: bytes, session: SessionIndex, rewrite: Rewrite, index: int) -> bytes:
    """The line as ``rewrite.change`` leaves it (itself, if it does not change it)."""
    infos = session.infos
    line = Line(infos.line(index), infos.offset(index), data)
    record = parse_exact(line, session.source)
    assert rewrite.change is not None
    if not rewrite.change(index, record):
        return data
    return line.prefix + _escaped(dumps(record), session.format.line_breaks) + line.ending


def _escaped(data: bytes, breaks: tuple[str, ...]) -> bytes:
    """``data`` with the characters the agent's reader takes for line breaks written as JSON
    escapes (a raw one can only stand inside a JSON string, where the escape means the same)."""
    for character in breaks:
        data = data.replace(character.encode(), f"\\u{ord(character):04x}".encode())
    return data


def _blocks(handle: BinaryIO, start: int, end: int | None) -> Iterator[bytes]:
    """The file's bytes from ``start`` to ``end`` (None: to its end), a block at a time."""
    handle.seek(start)
    remaining = None if end is None else end - start
    while remaining is None or remaining > 0:
        block = handle.read(BLOCK if remaining is None else min(BLOCK, remaining))
        if not block:
            if remaining:
                raise InputError(f"{handle.name}: the file shrank while it was being read")
            return
        if remaining is not None:
            remaining -= len(block)
        yield block
