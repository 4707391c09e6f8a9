"""``micro --images``: the images of old turns become one-line markers, no model call (issue 26).

An image pasted by the user or returned by a tool is re-sent on every request, at up to about
1,534 tokens (and megabytes) each, long after the agent last looked at it. Every image block but
those of the newest ``keep_recent`` messages that hold images becomes a text block of its own
wire style: ``[image: png 1920x1080, 1.2 MB]``. "Turns" here are the messages that hold images,
so ``--keep-recent 3`` keeps the last three screenshots however much work came between them.
An image sent by reference (a URL, a file id) stays: its marker could not say where it is.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from ..conversation.formats import Message
from ..conversation.images import images_in, inspect, replace_with_text


def holds_images(message: Message) -> bool:
    return any(inspect(block).inline for block in images_in(message.get("content")))


def mark_old_images(messages: list[Message], keep_recent: int) -> tuple[list[Message], int]:
    """A new list in which the images of every message holding some but the newest
    ``keep_recent`` of them are markers (``<= 0``: every message's), and how many were replaced.
    ``messages`` is untouched; only the messages that change are copied."""
    holders = [number for number, message in enumerate(messages) if holds_images(message)]
    old = holders[: max(len(holders) - keep_recent, 0)] if keep_recent > 0 else holders
    marked = list(messages)
    replaced = 0
    for number in old:
        marked[number] = copy.deepcopy(messages[number])  # the base64 texts are shared
        replaced += mark_images([marked[number]])
    return marked, replaced


def mark_images(messages: Iterable[Message]) -> int:
    """Replace, in place, every inline image of these messages by its marker; how many."""
    replaced = 0
    for message in messages:
        for block in list(images_in(message.get("content"))):
            replaced += mark(block)
    return replaced


def mark(block: dict[str, Any]) -> int:
    """The image block becomes its marker, in place, if it is inline: 1 if it did, else 0."""
    image = inspect(block)
    if not image.inline:
        return 0
    replace_with_text(block, image.marker())
    return 1
