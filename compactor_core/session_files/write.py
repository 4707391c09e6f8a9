"""Pass 2: the session file again, with the changes made (SPEC §8.4).

What no rule changes is copied byte for byte, in large blocks between the changed lines (pass 1
knows where every line is); a changed record is written compactly with non-ASCII unescaped,
keeping its line's ending (and the file's BOM); appended records follow the last line, which first
gets a line ending if it had none. Whatever the file gained after pass 1 (an agent appending
meanwhile) is copied too, though the in-place check will then leave the file alone. Nothing is
held but a block or the line being changed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

from ..errors import InputError
from ..formats import dumps
from .compact import Rewrite
from .index import SessionIndex
from .records import Line, parse_exact

BLOCK = 1 << 20


def session_chunks(handle: BinaryIO, session: SessionIndex, rewrite: Rewrite) -> Iterator[bytes]:
    """The new file's bytes, a block (or a changed line, or the appended records) at a time."""
    position = 0
    last = b"\n"  # the last byte copied so far
    infos = session.infos
    for index in rewrite.touched if rewrite.change is not None else ():
        offset, length = infos.offset(index), infos.length(index)
        for block in _blocks(handle, position, offset):
            last = block[-1:]
            yield block
        handle.seek(offset)
        line = Line(infos.line(index), offset, handle.read(length))
        if len(line.data) != length:
            raise InputError(f"{session.source}: line {line.number}: changed while being read")
        record = parse_exact(line, session.source)
        data = (
            line.prefix + dumps(record) + line.ending
            if rewrite.change(index, record)
            else line.data
        )
        last = data[-1:]
        yield data
        position = offset + length
    for block in _blocks(handle, position, None):
        last = block[-1:]
        yield block
    if rewrite.append:
        if last not in (b"\n", b""):
            yield b"\n"
        yield b"".join(dumps(record) + b"\n" for record in rewrite.append)


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
