"""``rescue``: the limits a session breaks for good, and the repairs of a list of messages.

Every request of a session re-sends its history, so one bad part of it fails every later turn,
``/compact`` included. The providers' published limits (Anthropic's vision page, the tool-call
rules of the three wire styles): an inline image over 5 MB, or over 8000 pixels on a side (2000
when the request holds more than 20 images); a tool call with no result, a result with no call.
A record over 16 MiB is one Codex drops on migration and no agent re-sends whole.

The repairs are the ones the agents themselves tolerate: a call without a result is answered
with an error result (what an agent writes for a tool that failed), a result without its call is
dropped, an image beyond a limit becomes its marker (``[image: png 9000x40, 41 KB]``), and the
tool results of an oversized message become micro's markers. ``repair_messages`` does them on a
conversation of messages; ``session_files/rescue.py`` on an agent's session file, record by record.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from ..conversation.formats import Message, dumps
from ..conversation.images import Image, images_in, inspect, replace_with_text, size_text
from ..conversation.tools import blocks, is_block, tool_calls, tool_names
from .micro import content_length, is_marker, marker

IMAGE_BYTES = 5_000_000
IMAGE_SIDE = 8000
MANY_IMAGES = 20  # more than this many images in one request...
MANY_IMAGES_SIDE = 2000  # ...and each must fit this
RECORD_BYTES = 16 * 1024 * 1024
ANSWERED = "answered with an error"
NO_RESULT = (
    "Error: this tool call has no result (the session stopped before it was written). "
    "ctxpack rescue answered it so that the session opens again; run the tool again if needed."
)


def side_limit(images: int) -> int:
    """The most pixels an image's longest side may have in a request holding ``images``."""
    return MANY_IMAGES_SIDE if images > MANY_IMAGES else IMAGE_SIDE


def image_problem(image: Image, side: int) -> str | None:
    """Which limit an inline image breaks, or None."""
    if not image.inline:
        return None
    if image.size is not None and image.size > IMAGE_BYTES:
        return f"over {size_text(IMAGE_BYTES)}"
    if max(image.width or 0, image.height or 0) > side:
        return f"over {side} px"
    return None


def fix_images(messages: Iterable[Message], side: int) -> list[str]:
    """Every inline image of these messages beyond a limit becomes its marker, in place; one
    line for each (``image png 9000x40, 41 KB over 8000 px: now a marker``)."""
    done = []
    for message in messages:
        for block in list(images_in(message.get("content"))):
            image = inspect(block)
            why = image_problem(image, side)
            if why is not None:
                text = image.marker()
                replace_with_text(block, text)
                done.append(f"{text[1:-1]} {why}: now a marker")
    return done


def count_images(messages: Iterable[Message]) -> int:
    return sum(inspect(b).inline for m in messages for b in images_in(m.get("content")))


def shorten_results(messages: Iterable[Message], names: Any) -> list[str]:
    """The tool results of these messages become micro's markers, in place; one line each."""
    done = []
    for message in messages:
        holders = [message] if message.get("role") == "tool" else []
        holders += [block for block in blocks(message) if is_block(block, "tool_result")]
        for holder in holders:
            content = holder.get("content")
            if is_marker(content):
                continue
            call_id = holder.get("tool_call_id", holder.get("tool_use_id"))
            text = marker(names.get(call_id, "unknown"), content_length(content))
            holder["content"] = text
            done.append(f"result of {call_id} shortened to {text}")
    return done


# --- a conversation of messages ------------------------------------------------------------------


def repair_messages(messages: list[Message]) -> tuple[list[Message], list[str]]:
    """A repaired copy of ``messages`` and a line for each repair (the input is untouched).

    Pairs follow the APIs' own rule: each result answers a call of the message right before it
    (Anthropic) or of the last assistant message before its run of ``tool`` messages (OpenAI)."""
    messages = copy.deepcopy(messages)
    done = _drop_orphans(messages)
    messages, answered = _answered(messages)
    done += answered
    side = side_limit(count_images(messages))
    names = tool_names(messages)
    for number, message in enumerate(messages):
        done += [f"message {number + 1}: {line}" for line in fix_images([message], side)]
        if len(dumps(message)) > RECORD_BYTES:
            lines = shorten_results([message], names)
            done += [f"message {number + 1} over {size_text(RECORD_BYTES)}: {x}" for x in lines]
    return messages, done


def _drop_orphans(messages: list[Message]) -> list[str]:
    done = []
    asked: set[Any] = set()
    for number, message in enumerate(messages):
        if message.get("role") == "tool":
            if message.get("tool_call_id") not in asked:
                done.append(
                    f"message {number + 1}: result of {message.get('tool_call_id')} "
                    "without its call: dropped"
                )
                message["content"] = None
                message["_drop"] = True
            continue
        content = message.get("content")
        if isinstance(content, list):
            kept = [
                block
                for block in content
                if not is_block(block, "tool_result") or block.get("tool_use_id") in asked
            ]
            for block in content:
                if is_block(block, "tool_result") and block.get("tool_use_id") not in asked:
                    done.append(
                        f"message {number + 1}: result of {block.get('tool_use_id')} "
                        "without its call: dropped"
                    )
            if len(kept) != len(content):
                message["content"] = kept
                message["_drop"] = not kept
        asked = {call_id for call_id, _ in tool_calls(message)}
    messages[:] = [message for message in messages if not message.pop("_drop", False)]
    return done


def _answered(messages: list[Message]) -> tuple[list[Message], list[str]]:
    """Every call with no result in the message(s) after it gets an error result there."""
    out: list[Message] = []
    done = []
    number = 0
    while number < len(messages):
        message = messages[number]
        out.append(message)
        number += 1
        calls = list(tool_calls(message))
        place = f"message {number}"
        if not calls:
            continue
        if message.get("tool_calls"):  # OpenAI: the tool messages that follow
            answered = set()
            while number < len(messages) and messages[number].get("role") == "tool":
                answered.add(messages[number].get("tool_call_id"))
                out.append(messages[number])
                number += 1
            missing = [call for call in calls if call[0] not in answered]
            out += [{"role": "tool", "tool_call_id": c, "content": NO_RESULT} for c, _ in missing]
        else:  # Anthropic: the next message, a user's
            following = messages[number] if number < len(messages) else None
            if following is None or following.get("role") != "user":
                following = {"role": "user", "content": []}
                out.append(following)
            elif not isinstance(following.get("content"), list):
                text = following.get("content")
                following["content"] = [{"type": "text", "text": text}] if text else []
            answered = {block.get("tool_use_id") for block in blocks(following)}
            missing = [call for call in calls if call[0] not in answered]
            following["content"][:0] = [
                {"type": "tool_result", "tool_use_id": c, "content": NO_RESULT, "is_error": True}
                for c, _ in missing
            ]
        done += [f"{place}: call {c} ({tool}) without a result: {ANSWERED}" for c, tool in missing]
    return out, done
