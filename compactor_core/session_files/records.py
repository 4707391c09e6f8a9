"""A session file's lines, read as a stream: each line's place, bytes and record.

A line keeps its own ending (``\\n``, ``\\r\\n``, or nothing for a last line without one), so a
copy of the lines is the file byte for byte. A line that is not a JSON object is not a record: it
is kept as it is and ``check`` reports it. The last line without a line ending that is not valid
JSON is *torn*: what an agent leaves when it is killed while writing.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple

import orjson

from ..conversation.formats import UTF8_BOM, json_type, load_value
from ..errors import InputError

# A line this long is no record an agent wrote (a file of zeros, a device): the file is not
# read further. Larger than rescue's limit for a record (16 MiB), which it shortens.
MAX_LINE = 256 << 20
MAX_FIRST_LINE = 1 << 20  # a header or first record, read to place a file: a few kilobytes

if TYPE_CHECKING:
    from pathlib import Path

# Every digit to "0", every other byte to "x": a run of 19 digits is then a plain substring.
_DIGITS_ONLY = bytes(
    ord("0") if chr(byte).isdigit() and byte < 128 else ord("x") for byte in range(256)
)
_LONG_DIGIT_RUN = b"0" * 19
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MILLISECOND = timedelta(milliseconds=1)


class Line(NamedTuple):  # a NamedTuple: made for every line, and cheap to define at start-up
    number: int  # 1-based
    offset: int  # of its first byte in the file
    data: bytes  # the line as it is in the file, its ending included

    @property
    def body(self) -> bytes:
        """The line without its ending (and without a UTF-8 BOM on the first line)."""
        body = self.data.rstrip(b"\n").removesuffix(b"\r")
        return body[len(UTF8_BOM) :] if self.number == 1 and body.startswith(UTF8_BOM) else body

    @property
    def ending(self) -> bytes:
        if self.data.endswith(b"\r\n"):
            return b"\r\n"
        return b"\n" if self.data.endswith(b"\n") else b""

    @property
    def prefix(self) -> bytes:
        """What comes before the JSON: a UTF-8 BOM on the first line."""
        return UTF8_BOM if self.number == 1 and self.data.startswith(UTF8_BOM) else b""


def lines(handle: BinaryIO, start: int = 0) -> Iterator[Line]:
    """Every line of an open binary file from byte ``start``, one at a time; InputError for a
    line over ``MAX_LINE`` bytes (a file of zeros, a device: not a session), read no further."""
    handle.seek(start)
    offset = start
    for number, data in enumerate(iter(lambda: handle.readline(MAX_LINE + 1), b""), start=1):
        if len(data) > MAX_LINE:
            raise InputError(f"line {number}: longer than {MAX_LINE >> 20} MiB: not a session")
        yield Line(number, offset, data)
        offset += len(data)


def record_of(line: bytes) -> dict[str, Any] | None:
    """A line's JSON object, or None (a torn line, anything else): for the readers that skip
    what is not a record."""
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def parse_fast(line: Line) -> tuple[Any, str | None]:
    """The line's record and None, or None and why it is not one.

    orjson first (pass 1 reads every line); what it refuses goes to the exact reader, which
    accepts every valid JSON document.
    """
    body = line.body
    if not body.strip():
        return None, "blank"
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        try:
            value = load_value(body, "", line.number)
        except InputError as error:
            return None, _without_source(str(error))
    if not isinstance(value, dict):
        return None, f"a record must be an object, got {json_type(value)}"
    return value, None


def parse_exact(line: Line, source: str) -> dict[str, Any]:
    """The record of a line that is about to be changed and written again: read exactly, so an
    integer beyond 64 bits comes back as it was (orjson would make it a float; such a number
    has at least 19 digits in a row, and only a line holding such a run takes the slow road)."""
    body = line.body
    value: Any = None
    if _LONG_DIGIT_RUN not in body.translate(_DIGITS_ONLY):
        try:
            value = orjson.loads(body)
        except orjson.JSONDecodeError:
            value = None
    if value is None:
        value = load_value(body, source, line.number)
    if not isinstance(value, dict):  # pass 1 said it was a record
        raise InputError(f"{source}: line {line.number}: changed while it was being read")
    return value


def _without_source(message: str) -> str:
    # load_value names the place as "<source>: line N, column C: ..."; the source was empty
    return message.split(": ", 1)[1] if message.startswith(": ") else message


def first_record(path: Path) -> dict[str, Any]:
    """The file's first line as a record (a header, a session's metadata); {} if it is not one
    (or the file is no regular file, or its first line is over ``MAX_FIRST_LINE`` bytes)."""
    try:
        with open_regular(path) as handle:
            record = orjson.loads(handle.readline(MAX_FIRST_LINE))
    except (OSError, orjson.JSONDecodeError):
        return {}
    return record if isinstance(record, dict) else {}


def first_value(path: Path, name: str, lines: int = 20) -> Any:
    """The value of key ``name`` in the first of the file's first ``lines`` records that has
    one as a string (the folder an agent ran in, say); None if none does."""
    try:
        with open_regular(path) as handle:
            read = iter(lambda: handle.readline(MAX_FIRST_LINE), b"")
            for _, line in zip(range(lines), read, strict=False):
                try:
                    record = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(record, dict) and isinstance(record.get(name), str):
                    return record[name]
    except OSError:
        return None
    return None


def open_regular(path: Path) -> BinaryIO:
    """``path`` open for reading if it is a regular file (a link to one will do); OSError for
    anything else — a FIFO is never waited on, a device never read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return os.fdopen(fd, "rb")


def is_regular(path: Path) -> bool:
    """Whether ``path`` is a regular file (through links), without opening it."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def milliseconds(value: Any) -> int | None:
    """A record's ISO ``timestamp`` in milliseconds since the epoch, as JavaScript's ``Date``
    reads it (no zone: UTC); None if it is not one."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // _MILLISECOND
