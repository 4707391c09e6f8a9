"""A marker's recall handle: the first hex digits of the SHA-256 of the content it replaced.

The handle is the content's hash, so the same content gives the same marker request after
request (a cached prefix stays cached), and two stores of originals agree on it. Twelve hex
digits (48 bits) make a collision between the originals one store holds practically impossible;
a shorter prefix the model copies is looked up too, as long as it names one original.
"""

from __future__ import annotations

import re
from typing import Any

from ..conversation.formats import Message
from ..conversation.tools import result_holders
from .estimate import json_text

HANDLE_DIGITS = 12
SHORTEST = 6  # hex digits a handle must have to be looked up
HANDLE = re.compile(rf"^[0-9a-f]{{{SHORTEST},64}}$")
IN_MARKER = re.compile(rf"; recall ([0-9a-f]{{{SHORTEST},64}})\]")


def content_text(content: Any) -> str:
    """A tool result's content as one text: a string as is, anything else as its JSON."""
    return content if isinstance(content, str) else json_text(content)


def digest(content: Any) -> str:
    """The whole SHA-256 of the content's text: the name the store keeps it under."""
    import hashlib  # here: 5 ms of start-up, and only --recall asks

    return hashlib.sha256(content_text(content).encode("utf-8", "surrogatepass")).hexdigest()


def handle(content: Any) -> str:
    """The handle a marker carries for this content."""
    return digest(content)[:HANDLE_DIGITS]


def handles_in(text: str) -> list[str]:
    """The handles the markers in a text carry, in order."""
    return IN_MARKER.findall(text)


def replaced_originals(before: list[Message], after: list[Message]) -> list[Any]:
    """The contents of ``before``'s tool results whose handle a marker of ``after`` carries:
    what a store of originals must keep for those markers to be recalled."""
    wanted = {
        found
        for _, holder in result_holders(after)
        if isinstance(holder.get("content"), str)
        for found in handles_in(holder["content"])
    }
    if not wanted:
        return []
    originals = {}
    for _, holder in result_holders(before):
        content = holder.get("content")
        name = handle(content)
        if name in wanted:
            originals[name] = content
    return list(originals.values())
