"""A session kept as one JSON document whose records are the elements of one array (Cline's
``{"version": 1, …, "messages": […]}``): where each record lies, and the document written again.

The document is read once; each element of the array is parsed where it lies, so its place in
the text is known (``JsonDocument.spans``). The document is written again around its records: every
byte outside the array, and every record that did not change, is copied from the original text,
so only a changed record is written anew, in the layout the agent writes (``json.dumps`` with
two-space indentation and non-ASCII unescaped is what ``JSON.stringify(value, null, 2)`` writes),
indented as deep as the array's elements are. The separators between the elements are those of
the original array.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..conversation.formats import UTF8_BOM
from ..errors import InputError

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _not_json(name: str) -> Any:
    raise _NotAnObject(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_not_json)
_SPACE = re.compile(r"[ \t\n\r]*")
INDENT = 2  # spaces per level, as the agent indents


@dataclass
class JsonDocument:
    """A JSON object read with the places of the elements of its array under ``key``."""

    text: str  # the document, decoded (without a BOM)
    bom: bool
    key: str
    value: dict[str, Any]  # the whole document, parsed
    records: list[Any]  # the elements of the array (``value[key]``)
    spans: list[tuple[int, int]]  # each element's (start, end) in ``text``
    array: tuple[int, int] | None  # the array's own (start, end), brackets included

    def written(self, records: Sequence[Any], unchanged: dict[int, int]) -> Iterator[bytes]:
        """The document with its array holding ``records``; ``unchanged`` maps a position in
        ``records`` to the position of the original element it is, which is copied as it was."""
        text = self.text
        if self.array is None:
            raise InputError(f'the document has no "{self.key}" array to write records into')
        start, end = self.array
        opening, separator, closing = self._layout()
        indentation = opening.rpartition("\n")[2]
        parts = []
        for position, record in enumerate(records):
            original = unchanged.get(position)
            if original is not None:
                first, last = self.spans[original]
                parts.append(text[first:last])
            else:
                parts.append(_laid_out(record, indentation))
        body = opening + separator.join(parts) + closing if parts else ""
        new = text[: start + 1] + body + text[end - 1 :]
        if self.bom:
            yield UTF8_BOM
        yield new.encode("utf-8")

    def _layout(self) -> tuple[str, str, str]:
        """The array's own whitespace: before the first element, between two, after the last."""
        assert self.array is not None
        spans, text = self.spans, self.text
        if not spans:  # an empty array: as the agent lays out a key's array at the top level
            inner = "\n" + " " * 2 * INDENT
            return inner, "," + inner, "\n" + " " * INDENT
        opening = text[self.array[0] + 1 : spans[0][0]]
        closing = text[spans[-1][1] : self.array[1] - 1]
        separator = text[spans[0][1] : spans[1][0]] if len(spans) > 1 else "," + opening
        return opening, separator, closing


def read_document(data: bytes, key: str, label: str) -> JsonDocument:
    """Parse ``data`` as one JSON object, finding the elements of its array under ``key``;
    InputError naming ``label`` and the place if it is not valid JSON or not an object."""
    bom = data.startswith(UTF8_BOM)
    try:
        text = data[len(UTF8_BOM) :].decode("utf-8") if bom else data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(f"{label}: byte {error.start}: not UTF-8 text", label) from None
    try:
        return _scan(text, bom, key)
    except json.JSONDecodeError as error:
        place = f"line {error.lineno}, column {error.colno}"
        torn = not text.rstrip().endswith("}")  # an agent killed while writing it
        what = f"{error.msg}: the document ends early (torn?)" if torn else error.msg
        raise InputError(f"{label}: {place}: {what}", label, place) from None
    except _NotAnObject as error:
        raise InputError(f"{label}: {error}", label) from None


class _NotAnObject(ValueError):
    pass


def _scan(text: str, bom: bool, key: str) -> JsonDocument:
    position = _skip(text, 0)
    if text[position : position + 1] != "{":
        raise _NotAnObject("a session document must be one JSON object")
    value: dict[str, Any] = {}
    records: list[Any] = []
    spans: list[tuple[int, int]] = []
    array = None
    position = _skip(text, position + 1)
    if text[position : position + 1] == "}":
        position += 1
    else:
        while True:
            name, position = _DECODER.raw_decode(text, position)
            if not isinstance(name, str):
                raise json.JSONDecodeError("Expecting property name", text, position)
            position = _expect(text, _skip(text, position), ":")
            position = _skip(text, position)
            if name == key and text[position : position + 1] == "[":
                start = position
                records, spans, position = _elements(text, position)
                array = (start, position)
                value[name] = records
            else:
                value[name], position = _DECODER.raw_decode(text, position)
            position = _skip(text, position)
            if text[position : position + 1] == ",":
                position = _skip(text, position + 1)
                continue
            position = _expect(text, position, "}")
            break
    if _skip(text, position) != len(text):
        raise json.JSONDecodeError("Extra data after the document", text, _skip(text, position))
    return JsonDocument(text, bom, key, value, records, spans, array)


def _elements(text: str, position: int) -> tuple[list[Any], list[tuple[int, int]], int]:
    """The elements of the array starting at ``position``, their spans, and where it ends."""
    records, spans = [], []
    position = _skip(text, position + 1)
    if text[position : position + 1] == "]":
        return records, spans, position + 1
    while True:
        element, end = _DECODER.raw_decode(text, position)
        records.append(element)
        spans.append((position, end))
        position = _skip(text, end)
        if text[position : position + 1] == ",":
            position = _skip(text, position + 1)
            continue
        return records, spans, _expect(text, position, "]")


def _skip(text: str, position: int) -> int:
    return _SPACE.match(text, position).end()  # type: ignore[union-attr]


def _expect(text: str, position: int, character: str) -> int:
    if text[position : position + 1] != character:
        raise json.JSONDecodeError(f"Expecting '{character}'", text, position)
    return position + 1


def _laid_out(record: Any, indentation: str) -> str:
    """A record as the agent writes it (``JSON.stringify(record, null, 2)``), at its depth."""
    text = json.dumps(record, ensure_ascii=False, indent=INDENT)
    # a lone surrogate came in as an escape, and goes out as one (as JSON.stringify writes it)
    text = _LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)
    return text.replace("\n", "\n" + indentation)
