"""Pass 2: the session file again, line by line, with the changes made (SPEC §8.4).

A line that no rule changes is copied byte for byte; a changed record is written compactly with
non-ASCII unescaped, keeping its line's ending (and the file's BOM); appended records follow the
last line, which first gets a line ending if it had none. Lines the file gained after pass 1 (an
agent appending meanwhile) are copied too, though the in-place check will then leave the file
alone. Nothing is kept but the line being copied.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

from ..errors import InputError
from ..formats import dumps
from .compact import SessionOutcome
from .records import lines, parse_exact
from .session import Session


def session_chunks(handle: BinaryIO, session: Session, outcome: SessionOutcome) -> Iterator[bytes]:
    """The new file's bytes, a line (or a few appended records) at a time."""
    infos = session.infos
    last_ending = b"\n"
    for index, line in enumerate(lines(handle)):
        if index < len(infos) and (infos[index].offset, infos[index].length) != (
            line.offset,
            len(line.data),
        ):
            raise InputError(f"{session.source}: line {line.number}: changed while being read")
        last_ending = line.ending
        if outcome.change is not None and index in outcome.touched:
            record = parse_exact(line, session.source)
            if outcome.change(index, record):
                yield line.prefix + dumps(record) + line.ending
                continue
        yield line.data
    if outcome.append:
        if not last_ending:
            yield b"\n"
        yield b"".join(dumps(record) + b"\n" for record in outcome.append)
