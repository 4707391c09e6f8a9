"""Fitting what is sent to the model under ``--max-prompt-tokens`` (SPEC §3 step 10).

A conversation already too big for the model can still be compacted: what is *sent* shrinks in
fixed steps until the prompt fits — every tool result becomes a marker, then the middle of each
long text is cut out, then the oldest messages are dropped (a previous summary stays first).
The conversation itself is never changed here; shrinking works on copies.
"""

from __future__ import annotations

from typing import Any

from .estimate import json_text, quarters_to_tokens, text_quarters
from .formats import Message
from .micro import copy_tool_results, micro_compact
from .prompts import SUMMARY_PREFIX, user_prompt
from .serialize import serialize

DEFAULT_MAX_PROMPT_TOKENS = 100_000
LONG_TEXT = 2000  # characters; longer texts lose their middle in the second step
KEEP_HEAD, KEEP_TAIL = 1200, 600


def fit_prompt(
    source: list[Message],
    names: dict[Any, str],
    lang: str,
    system: str,
    budget: int | None,
) -> tuple[list[Message], str]:
    """The messages to send and the user prompt built from them, within ``budget`` tokens."""
    prompt = user_prompt(lang, serialize(source, names))
    if budget is None or _tokens(system, prompt) <= budget:
        return source, prompt
    for step in (_all_results_as_markers, _cut_long_texts):
        source = step(source)
        prompt = user_prompt(lang, serialize(source, names))
        if _tokens(system, prompt) <= budget:
            return source, prompt
    source = _drop_oldest(source, names, lang, system, budget)
    return source, user_prompt(lang, serialize(source, names))


def _tokens(*texts: str) -> int:
    return quarters_to_tokens(text_quarters(texts))


def _all_results_as_markers(source: list[Message]) -> list[Message]:
    copied = copy_tool_results(source)
    micro_compact(copied, keep_recent=0)
    return copied


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
    cut = dict(block)
    for key in ("text", "content"):
        if isinstance(block.get(key), str):
            cut[key] = cut_middle(block[key])
    if block.get("type") == "tool_result" and isinstance(block.get("content"), list):
        cut["content"] = [_cut_block(item) for item in block["content"]]
    if block.get("type") == "tool_use" and len(json_text(block.get("input"))) > LONG_TEXT:
        cut["input"] = cut_middle(json_text(block.get("input")))
    return cut


def _cut_call(call: Any) -> Any:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("arguments"), str):
        return call
    return {**call, "function": {**function, "arguments": cut_middle(function["arguments"])}}


# --- dropping the oldest messages ----------------------------------------------------------------


def _drop_oldest(
    source: list[Message], names: dict[Any, str], lang: str, system: str, budget: int
) -> list[Message]:
    """Keep the newest messages that fit, and a previous summary in front of them."""
    keep_first = bool(source) and _is_previous_summary(source[0])
    head = source[:1] if keep_first else []
    rest = source[1:] if keep_first else source
    fixed = text_quarters([system, user_prompt(lang, serialize(head, names))])
    room = budget * 4 - fixed
    kept: list[Message] = []
    for message in reversed(rest):
        # each message adds its block of lines plus the blank line that separates it
        room -= text_quarters([serialize([message], names)]) + 2
        if room < 0 and kept:
            break
        kept.append(message)
    return head + kept[::-1]


def _is_previous_summary(message: Message) -> bool:
    content = message.get("content")
    return (
        message.get("role") == "user"
        and isinstance(content, str)
        and (content.startswith(SUMMARY_PREFIX))
    )
