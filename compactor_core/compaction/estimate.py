"""The token estimate: a cheap, deterministic heuristic, not a tokenizer (SPEC §1).

Per character: CJK 1.5, ASCII letter or digit 0.25, whitespace 0.25, anything else 0.5; U+3000 is
CJK and whitespace and scores 1.25. Weights are whole quarters, so the sum is kept exactly as an
integer number of quarters and rounded up once, at the end.

Speed matters (this runs on every agent turn over multi-megabyte transcripts), so text is not
scanned per character in Python. All strings are gathered and counted with C-speed byte
operations: ``bytes.translate`` deletes the bytes of one class so the length difference counts them,
and the high bytes of the UTF-16 form tell CJK blocks apart. Short strings are joined into
batches, long ones counted on their own; ASCII-only text, usually most of a transcript, takes the
fastest path. Values counted as their JSON text (tool inputs) are written by orjson, all at once.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import orjson

from ..conversation.formats import Message
from ..conversation.images import IMAGE_TYPES, image_tokens, inspect, is_image
from ..conversation.tools import (
    UNKNOWN_TOOL,
    blocks,
    is_block,
    tool_name,
    tool_names,
    tool_result_turns,
)

_ASCII_ALNUM_WS = bytes(
    c for c in range(128) if chr(c).isalnum() or chr(c).isspace()
)  # [A-Za-z0-9] and the ten ASCII characters str.isspace() accepts

_ASCII = bytes(range(128))
# High bytes of UTF-16 code units whose whole 256-code-point block is CJK.
_CJK_FULL_BLOCKS = bytes(
    [0x30, *range(0x34, 0x4D), *range(0x4E, 0xA0), *range(0xAC, 0xD7), 0xF9, 0xFA]
)
# CJK ranges that cover part of a block (U+4D00–4DBF, U+D700–D7AF) or lie beyond the BMP; a
# pattern compiled on first use (re keeps it), since few texts need it.
_CJK_PARTIAL = "[\u4d00-\u4dbf\ud700-\ud7af\U00020000-\U0002a6df\U0002f800-\U0002fa1f]"
# Whitespace beyond ASCII, by the block of 256 code points it lies in (its UTF-16 high byte): a
# block that no character of the text is in is not searched.
_NON_ASCII_SPACES: dict[int, str] = {
    0x00: "\x85\xa0",
    0x16: "\u1680",
    0x20: "".join(map(chr, (*range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F, 0x205F))),
    0x30: "\u3000",
}


# Characters counted at a time: a batch's bytes, and the bytes made of them, stay in a core's own
# (L2) cache between the passes over them, which makes the count about a quarter faster than in
# one piece (and a tenth faster than in batches of 1 << 20, on both bench files). Every character
# counts on its own, so any split is exact.
BATCH_CHARS = 1 << 17
# A text this long is counted on its own (in pieces of BATCH_CHARS): copying it into a batch costs
# more than the few calls it saves. Shorter texts are joined, since each call has its cost too
# (counted alone, the many long tool outputs of real sessions cost more in calls than in copies).
ALONE_CHARS = 1 << 17


def text_quarters(texts: Iterable[str]) -> int:
    """The estimate of all ``texts`` together, in quarter tokens."""
    quarters = 0
    ascii_texts: list[str] = []
    other_texts: list[bytes] = []  # UTF-8
    batch_chars = 0
    for text in texts:
        if len(text) >= ALONE_CHARS:
            quarters += _long_text_quarters(text)
            continue
        if text.isascii():
            ascii_texts.append(text)
        else:
            other_texts.append(text.encode("utf-8", "surrogatepass"))
        batch_chars += len(text)
        if batch_chars >= BATCH_CHARS:
            quarters += _batch_quarters(ascii_texts, other_texts)
            ascii_texts, other_texts, batch_chars = [], [], 0
    return quarters + _batch_quarters(ascii_texts, other_texts)


def _long_text_quarters(text: str) -> int:
    quarters = 0
    for start in range(0, len(text), BATCH_CHARS):
        piece = text[start : start + BATCH_CHARS]  # the text itself if it is short enough
        if piece.isascii():
            quarters += _ascii_quarters(piece.encode("ascii"))
        else:
            quarters += _utf8_quarters(piece.encode("utf-8", "surrogatepass"))
    return quarters


def _batch_quarters(ascii_texts: list[str], other_texts: list[bytes]) -> int:
    # ASCII and other texts are joined apart: joined together, all would be copied at the width
    # of the widest character, only to be encoded again.
    quarters = _ascii_quarters("".join(ascii_texts).encode("ascii"))
    if other_texts:
        quarters += _utf8_quarters(b"".join(other_texts))
    return quarters


def _ascii_quarters(data: bytes) -> int:
    # letters, digits and whitespace weigh 1 quarter, everything else 2
    others = len(data.translate(None, _ASCII_ALNUM_WS))
    return len(data) + others


def _utf8_quarters(utf8: bytes) -> int:
    # Start from 2 quarters a character, take 1 off for each ASCII letter, digit or space and
    # for each other space, and add 4 for each CJK character (U+3000 ends at 2 - 1 + 4 = 5).
    not_alnum_ws = utf8.translate(None, _ASCII_ALNUM_WS)
    ascii_alnum_ws = len(utf8) - len(not_alnum_ws)
    # Even in Chinese-heavy text most bytes are ASCII: look at the rest only. Multi-byte
    # sequences stay whole, so they decode to the very characters of the text.
    multi_byte = not_alnum_ws.translate(None, _ASCII)
    others = multi_byte.decode("utf-8", "surrogatepass")
    chars = len(utf8) - len(multi_byte) + len(others)
    high_bytes = others.encode("utf-16-le", "surrogatepass")[1::2]
    spaces = sum(
        others.count(space)
        for block, group in _NON_ASCII_SPACES.items()
        if block in high_bytes
        for space in group
    )
    cjk = len(high_bytes) - len(high_bytes.translate(None, _CJK_FULL_BLOCKS))
    if b"\x4d" in high_bytes or b"\xd7" in high_bytes or len(high_bytes) > len(others):
        cjk += len(re.findall(_CJK_PARTIAL, others))
    return 2 * chars - ascii_alnum_ws - spaces + 4 * cjk


def quarters_to_tokens(quarters: int) -> int:
    return math.ceil(quarters / 4)


# --- who counts ----------------------------------------------------------------------------------


class Counter(Protocol):
    """Counts a list of texts in whole units, ``per_token`` units to a token.

    The heuristic counts quarter tokens; a real tokenizer (``tokenizers.py``) counts tokens,
    each text encoded on its own and the counts summed.
    """

    name: str
    per_token: int

    def units(self, texts: Sequence[str]) -> int: ...

    def json_units(self, values: Sequence[Any]) -> int:
        """The units of every value's JSON text (``json_text``)."""
        ...


class Heuristic:
    name = "heuristic"
    per_token = 4

    def units(self, texts: Sequence[str]) -> int:
        return text_quarters(texts)

    def json_units(self, values: Sequence[Any]) -> int:
        return json_quarters(values)


HEURISTIC = Heuristic()


def units_to_tokens(units: int, counter: Counter) -> int:
    return -(-units // counter.per_token)


def tokens_of(texts: Sequence[str], counter: Counter = HEURISTIC) -> int:
    return units_to_tokens(counter.units(texts), counter)


# --- what is counted -----------------------------------------------------------------------------


# json.dumps would build a new encoder on every call, since ensure_ascii is not its default.
_JSON_TEXT = json.JSONEncoder(ensure_ascii=False)


def json_text(value: Any) -> str:
    """JSON with the standard library's default spacing and non-ASCII unescaped (SPEC §1, §2)."""
    return _JSON_TEXT.encode(value)


def json_quarters(values: Sequence[Any]) -> int:
    """The quarters of every value's ``json_text``, from one orjson serialization of them all.

    A tool call's input is counted as its JSON text, and a transcript has thousands of them:
    orjson writes them all at once several times faster than the standard library one by one.
    It writes strings, integers, booleans and null exactly as ``json_text`` does, but "," and
    ":" without the space after them, and floats in its own notation (1e-7 for 1e-07).
    """
    if not values:
        return 0
    try:  # first, which also proves the values finite (no cycle) for the walks below
        data = orjson.dumps(values)
    except TypeError:  # a key not a string, a lone surrogate, an integer beyond 64 bits...
        return text_quarters([json_text(value) for value in values])
    plain: list[Any] = []  # written by orjson as by json_text, but for the spaces
    written: list[str] = []  # the others, by the standard library
    separators = 0
    for value in values:
        count = _separators(value)
        if count is None:
            written.append(json_text(value))
        else:
            plain.append(value)
            separators += count
    if not plain:
        return text_quarters(written)
    if written:  # rare: the plain ones written again, without them
        data = orjson.dumps(plain)
    # Each separator lacks its space (1 quarter); the array around the values adds two brackets
    # and the commas between them (2 quarters each).
    plain_quarters = _utf8_quarters(data) + separators - 2 * (len(plain) + 1)
    return plain_quarters + text_quarters(written)


_SCALARS = (str, int, bool, type(None))


def _separators(value: Any) -> int | None:
    """How many "," and ":" ``json_text`` writes in ``value`` (which orjson could write); None if
    orjson writes it otherwise: it holds a float, or a type that is not JSON's."""
    count = 0
    pending = [value]
    while pending:
        item = pending.pop()
        kind = type(item)
        if kind is dict:
            if item:
                count += 2 * len(item) - 1
                pending.extend(item.values())
        elif kind is list:
            if item:
                count += len(item) - 1
                pending.extend(item)
        elif kind not in _SCALARS:
            return None
    return count


class TextCollector:
    """Collects what counts toward the estimate; ``compat`` is the BareAgent profile.

    ``texts`` count as they are, ``values`` as their JSON text, which a counter may count without
    writing each one out (``Counter.json_units``), ``images`` by their pixels (``images.py``;
    the BareAgent profile counts them 0, as the reference does).
    """

    __slots__ = ("compat", "images", "texts", "values")  # a plain class: a dataclass costs time

    def __init__(self, compat: bool = False) -> None:
        self.compat = compat
        self.texts: list[str] = []
        self.values: list[Any] = []
        self.images: list[dict[str, Any]] = []

    def value(self, value: Any) -> None:
        if value is None:  # the commonest: a key the block does not have
            return
        if isinstance(value, str):
            self.texts.append(value)
        elif isinstance(value, list):
            for item in value:
                if type(item) is dict:  # the commonest item: a block, sent on at once
                    self.block(item)
                else:
                    self.value(item)
        elif isinstance(value, dict):
            self.block(value)
        else:  # numbers and booleans: their JSON text
            self.values.append(value)

    def block(self, block: dict[str, Any]) -> None:
        kind = block.get("type")
        if kind == "tool_use":
            self.name(block, "")
            self.tool_input(block.get("input"))
            return
        # A key the block lacks adds nothing: it is not looked into (a block has few of them).
        text = block.get("text")
        if text is not None:
            self.value(text)
        content = block.get("content")
        if kind == "tool_result" and isinstance(content, dict) and not self.compat:
            self.values.append(content)  # any JSON value is a result: as its text
        elif content is not None:
            self.value(content)
        tool_input = block.get("input")
        if tool_input is not None:
            self.tool_input(tool_input)
        if kind != "tool_result":
            if "name" in block:  # without one, neither profile counts a name here
                self.name(block, None)
            # an image's tokens are its pixels' (a Gemini part has no type, but inlineData)
            if kind is None:
                if "inlineData" in block and not self.compat:
                    self.images.append(block)
            elif kind.__class__ is str and kind in IMAGE_TYPES and not self.compat:
                self.images.append(block)

    def name(self, block: dict[str, Any], missing: Any) -> None:
        # The reference counts a name through str(), so {"k": null} is "{'k': None}", null "None".
        if not self.compat:
            self.value(block.get("name"))
        elif "name" in block or missing is not None:
            self.texts.append(str(block.get("name", missing)))

    def tool_input(self, value: Any) -> None:
        # The reference walks a dict input like a block, so {"command": "ls"} counts 0.
        if isinstance(value, dict | list) and not self.compat:
            self.values.append(value)
        else:
            self.value(value)

    def message(self, message: Message) -> None:
        self.value(message.get("content"))
        if self.compat:
            return
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            self.value(function.get("name"))
            self.tool_input(function.get("arguments"))

    def units(self, counter: Counter) -> int:
        units = counter.units(self.texts) + counter.json_units(self.values)
        if self.images:
            units += image_tokens(self.images) * counter.per_token
        return units

    def all_texts(self) -> list[str]:
        return self.texts + [json_text(value) for value in self.values]


def _collected(messages: list[Message], system: Any, compat: bool) -> TextCollector:
    collector = TextCollector(compat)
    for message in messages:
        collector.message(message)
    if not compat:
        collector.value(system)
    return collector


def message_units(message: Message, counter: Counter = HEURISTIC) -> int:
    """One message's count in the counter's units: these add up over the messages."""
    collector = TextCollector()
    collector.message(message)
    return collector.units(counter)


def quarters_and_images(message: Message) -> tuple[int, int]:
    """One message's estimate in quarter tokens, and how many inline images it holds."""
    collector = TextCollector()
    collector.message(message)
    quarters = collector.units(HEURISTIC)
    if not collector.images:
        return quarters, 0
    return quarters, sum(is_image(block) and inspect(block).inline for block in collector.images)


def counted_texts(messages: list[Message], system: Any = None, compat: bool = False) -> list[str]:
    """Every text the estimate counts, the JSON values written out."""
    return _collected(messages, system, compat).all_texts()


def estimate_quarters(messages: list[Message], system: Any = None, compat: bool = False) -> int:
    return _collected(messages, system, compat).units(HEURISTIC)


def estimate(
    messages: list[Message],
    system: Any = None,
    compat: bool = False,
    counter: Counter = HEURISTIC,
) -> int:
    """The token count of a conversation (and a request envelope's ``system``), by ``counter``."""
    return units_to_tokens(_collected(messages, system, compat).units(counter), counter)


# --- where the tokens go -------------------------------------------------------------------------


def breakdown(
    messages: list[Message],
    system: Any = None,
    compat: bool = False,
    counter: Counter = HEURISTIC,
) -> dict[str, Any]:
    """The count with its parts: per role, per tool, and the number of tool-result turns.

    Parts are exact (the heuristic's are multiples of 0.25); only ``tokens`` is rounded up.
    """
    by_role: dict[str, int] = {}
    by_tool: dict[str, dict[str, int]] = {}
    names = tool_names(messages)

    def units_of(part: str, value: Any, profile: bool = compat) -> int:
        return _units_of(counter, profile, part, value)

    def tokens(units: int) -> float | int:
        return units / counter.per_token if counter.per_token > 1 else units

    def tool(name: str) -> dict[str, int]:
        return by_tool.setdefault(name, {"calls": 0, "call_q": 0, "results": 0, "result_q": 0})

    images: list[dict[str, Any]] = []
    for message in messages:
        role = message["role"]
        collector = TextCollector(compat)
        collector.message(message)
        by_role[role] = by_role.get(role, 0) + collector.units(counter)
        images += collector.images
        for block in blocks(message):
            if is_block(block, "tool_use"):  # a call is counted under its own name
                entry = tool(tool_name(block.get("name")))
                entry["calls"] += 1
                entry["call_q"] += units_of("block", block)
            elif is_block(block, "tool_result"):
                entry = tool(names.get(block.get("tool_use_id"), UNKNOWN_TOOL))
                entry["results"] += 1
                entry["result_q"] += units_of("value", block.get("content"))
        if not compat:
            for call in message.get("tool_calls") or ():
                entry = tool(tool_name((call.get("function") or {}).get("name")))
                entry["calls"] += 1
                entry["call_q"] += units_of("message", {"tool_calls": [call]}, False)
        if role == "tool":
            entry = tool(names.get(message.get("tool_call_id"), UNKNOWN_TOOL))
            entry["results"] += 1
            entry["result_q"] += units_of("value", message.get("content"))
    system_q = 0 if compat else units_of("value", system, False)
    total = sum(by_role.values()) + system_q
    report: dict[str, Any] = {
        "tokens": units_to_tokens(total, counter),
        "exact": tokens(total),
        "tokenizer": counter.name,
        "profile": "bareagent" if compat else "default",
        "messages": len(messages),
        "tool_result_turns": len(tool_result_turns(messages)),
        "by_role": {role: tokens(q) for role, q in by_role.items()},
        "by_tool": {
            name: {
                "calls": entry["calls"],
                "call_tokens": tokens(entry["call_q"]),
                "results": entry["results"],
                "result_tokens": tokens(entry["result_q"]),
            }
            for name, entry in sorted(by_tool.items(), key=lambda item: -item[1]["result_q"])
        },
    }
    if not compat:  # the BareAgent profile counts no image
        report["images"] = images_report(images)
    if system is not None and not compat:
        report["envelope_system"] = tokens(system_q)
    return report


def images_report(blocks: list[dict[str, Any]]) -> dict[str, int]:
    """The images' line of a breakdown: how many, their tokens, their bytes (decoded)."""
    found = [inspect(block) for block in blocks]
    return {
        "count": len(found),
        "tokens": sum(image.tokens for image in found),
        "bytes": sum(image.size or 0 for image in found),
    }


def _units_of(counter: Counter, compat: bool, part: str, value: Any) -> int:
    """The units of one part (``"message"``, ``"block"`` or ``"value"``) on its own."""
    collector = TextCollector(compat)
    getattr(collector, part)(value)
    return collector.units(counter)
