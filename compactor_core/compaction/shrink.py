"""Fitting what is sent to the model under ``--max-prompt-tokens`` (SPEC §3 step 10).

A conversation already too big for the model can still be compacted: what is *sent* shrinks in
fixed steps until the prompt fits — every tool result becomes a marker, then the middle of each
long text is cut out, then the oldest messages are dropped (a previous summary and the first
user request stay).
The conversation itself is never changed here; shrinking works on copies.
"""

from __future__ import annotations

import json
from typing import Any

from ..conversation.formats import Message
from ..conversation.prompts import SUMMARY_PREFIX, user_prompt
from ..settings import Settings
from .estimate import HEURISTIC, Counter, json_text, tokens_of
from .micro import micro_compact
from .serialize import serialize

LONG_TEXT = 2000  # characters; longer texts lose their middle in the second step
# A tool input still longer than this once its long strings are cut goes as its JSON text, cut.
LONG_INPUT = 4 * LONG_TEXT
KEEP_HEAD, KEEP_TAIL = 1200, 600
# what the summarizer is shown of a history too long for it: every result as its SPEC §2 marker
EVERY_RESULT = Settings(keep_recent=0, stale=False)


def fit_prompt(
    source: list[Message],
    names: dict[Any, str],
    lang: str,
    system: str,
    budget: int,
    counter: Counter = HEURISTIC,
) -> tuple[list[Message], str]:
    """The messages to send and the user prompt built from them, within ``budget`` tokens."""
    prompt = user_prompt(lang, serialize(source, names))
    if tokens_of([system, prompt], counter) <= budget:
        return source, prompt
    for step in (_all_results_as_markers, _cut_long_texts):
        source = step(source)
        prompt = user_prompt(lang, serialize(source, names))
        if tokens_of([system, prompt], counter) <= budget:
            return source, prompt
    source = _drop_oldest(source, names, lang, system, budget, counter)
    return source, user_prompt(lang, serialize(source, names))


def _all_results_as_markers(source: list[Message]) -> list[Message]:
    return micro_compact(source, EVERY_RESULT)[0]


# --- cutting the middle out of long texts --------------------------------------------------------


def cut_middle(text: str) -> str:
    if len(text) <= LONG_TEXT:
        return text
    cut = len(text) - KEEP_HEAD - KEEP_TAIL
    return f"{text[:KEEP_HEAD]}\n[... {cut} chars cut ...]\n{text[-KEEP_TAIL:]}"


def _cut_long_texts(source: list[Message]) -> list[Message]:
    return [_cut_message(message) for message in source]


def _cut_message(message: Message) -> Message:
    cut = dict(message)
    content = message.get("content")
    if isinstance(content, str):
        cut["content"] = cut_middle(content)
    elif isinstance(content, list):
        cut["content"] = [_cut_block(block) for block in content]
    if message.get("tool_calls"):
        cut["tool_calls"] = [_cut_call(call) for call in message["tool_calls"]]
    return cut


def _cut_block(block: Any) -> Any:
    if isinstance(block, str):
        return cut_middle(block)
    if not isinstance(block, dict):
        return block
    if block.get("type") not in ("text", "tool_use", "tool_result"):
        # Another block goes out as its content, its text or its whole JSON (a thinking block
        # with its signature, an image with its data): any long string in it is cut.
        return _cut_strings(block)
    cut = dict(block)
    for key in ("text", "content"):
        if isinstance(block.get(key), str):
            cut[key] = cut_middle(block[key])
    if block.get("type") == "tool_result" and isinstance(block.get("content"), list):
        cut["content"] = [_cut_block(item) for item in block["content"]]
    if block.get("type") == "tool_use" and "input" in block:
        cut["input"] = _cut_input(block["input"])
    return cut


def _cut_input(value: Any) -> Any:
    """A long tool input with the middle of each long string cut out, so that its keys (a file
    path, a command) still reach the model; if that is not enough, its JSON text, cut."""
    if len(json_text(value)) <= LONG_TEXT:
        return value
    cut = _cut_strings(value)
    text = json_text(cut)
    return cut if len(text) <= LONG_INPUT else cut_middle(text)


def _cut_strings(value: Any) -> Any:
    if isinstance(value, str):
        return cut_middle(value)
    if isinstance(value, dict):
        return {key: _cut_strings(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_cut_strings(item) for item in value]
    return value


def _cut_call(call: Any) -> Any:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("arguments"), str):
        return call
    arguments = function["arguments"]
    if len(arguments) <= LONG_TEXT:
        return call
    try:
        parsed = json.loads(arguments)
    except ValueError:
        parsed = None
    cut = _cut_input(parsed) if isinstance(parsed, dict | list) else arguments
    arguments = cut_middle(cut) if isinstance(cut, str) else json_text(cut)
    return {**call, "function": {**function, "arguments": arguments}}


# --- dropping the oldest messages ----------------------------------------------------------------


def _drop_oldest(
    source: list[Message],
    names: dict[Any, str],
    lang: str,
    system: str,
    budget: int,
    counter: Counter,
) -> list[Message]:
    """Keep the newest messages that fit, behind those that say what the work is for.

    A previous summary and the first user request stay, whatever their age: without them the
    summary would lose the goal of the whole session.
    """
    pinned = _pinned(source)
    head = [source[index] for index in pinned]
    fixed = counter.units([system, user_prompt(lang, serialize(head, names))])
    room = budget * counter.per_token - fixed
    separator = counter.units(["\n\n"])
    kept: list[int] = []
    for index in range(len(source) - 1, -1, -1):
        if index in pinned:
            continue
        # each message adds its block of lines plus the blank line that separates it
        room -= counter.units([serialize([source[index]], names)]) + separator
        if room < 0 and (kept or pinned):
            break
        kept.append(index)
    return [source[index] for index in sorted({*pinned, *kept})]


def _pinned(source: list[Message]) -> tuple[int, ...]:
    """Indexes of a previous summary (if the source starts with one) and the first request."""
    pinned = [0] if source and _is_previous_summary(source[0]) else []
    for index, message in enumerate(source):
        if index not in pinned and message.get("role") == "user" and _has_text(message):
            pinned.append(index)
            break
    return tuple(pinned)


def _has_text(message: Message) -> bool:
    content = message.get("content")
    if isinstance(content, str):
        return bool(content.strip())
    return any(
        isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
        and block["text"].strip()
        for block in content or ()
    )


def _is_previous_summary(message: Message) -> bool:
    content = message.get("content")
    return (
        message.get("role") == "user"
        and isinstance(content, str)
        and content.startswith(SUMMARY_PREFIX)
    )
