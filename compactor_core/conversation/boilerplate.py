"""Text an agent harness injects into user turns, told apart from what the user wrote.

Claude Code (the corpus's harness) wraps reminders, the echo of local and slash commands and hook
output in tags, sends a skill's whole body as a user turn, marks an interruption with a bracketed
line, frames its own compaction summary ("This session is being continued …"), and answers a
tool call the user refused with a sentence of its own before the user's words; Codex introduces
its handoff summary with a paragraph ("Another language model started to solve this problem
…"); ctxpack frames its summaries with ``[Context Compressed]``. None of it is the user's goal or
rule, so the extractive summary never quotes it, and the language detection does not count it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .formats import Message
from .prompts import PROMPTS, SUMMARY_PREFIX
from .tools import blocks, is_block

INJECTED_TAGS = (
    "system-reminder",
    "local-command-caveat",
    "local-command-stdout",
    "local-command-stderr",
    "command-name",
    "command-message",
    "command-args",
    "command-contents",
    "bash-input",
    "bash-stdout",
    "bash-stderr",
    "user-prompt-submit-hook",
    "task-notification",  # Claude Code: a background task's news, sent as a user turn
    "environment_details",
    "env",
)
TAGGED = re.compile(r"<({})>.*?</\1>".format("|".join(map(re.escape, INJECTED_TAGS))), re.S)
SKILL_BODY = "Base directory for this skill:"  # a skill's whole body, sent as a user turn
INTERRUPTED = re.compile(r"^\[Request interrupted by user[^\]\n]*\]\s*", re.M)
CONTINUATION_START = "This session is being continued from a previous conversation"
# The framing sentences around a harness's own summary; what lies between them is the summary
# (Claude Code's words, in the corpus's version and in 2.1.3xx's).
FRAMING = re.compile(
    r"This session is being continued from a previous conversation[^\n]*\n?"
    r"|If you need specific details from before compaction[^\n]*\n?"
    r"|Please continue the conversation from where we left it off[^\n]*\n?"
    r"|Continue the conversation from where it left off without asking[^\n]*\n?"
    r"|The messages after this summary are the most recent messages from before compaction"
    r"[^\n]*\n?"
)
# What Codex puts before the summary it writes (and before ctxpack's, in a rollout).
CODEX_SUMMARY_INTRO = (
    "Another language model started to solve this problem and produced a summary of its "
    "thinking process. You also have access to the state of the tools that were used by that "
    "language model. Use this to build on the work that has already been done and avoid "
    "duplicating work. Here is the summary produced by the other language model, use the "
    "information in this summary to assist with your own analysis:\n"
)
# Claude Code's answer to a tool call the user refused; the user's words, if any, follow it.
REFUSAL = re.compile(
    r"The user doesn't want to (?:proceed with|take) this (?:tool use|action)\b.*?"
    r"(?:To tell you how to proceed, the user said:\s*|\Z)",
    re.S,
)
ACKNOWLEDGEMENTS = frozenset(prompts.acknowledgement for prompts in PROMPTS.values())


@dataclass(frozen=True)
class UserText:
    """One user text, split into what the user wrote and an earlier summary it carries."""

    written: str  # the user's own words, harness text removed ("" if there are none)
    earlier_summary: str | None = None  # a harness's compaction summary, its framing removed


def split_user_text(text: str) -> UserText:
    """What the user wrote in ``text``, and the earlier summary if the harness sent one."""
    stripped = text.strip()
    if stripped.startswith(SUMMARY_PREFIX.strip()):
        return UserText("", stripped[len(SUMMARY_PREFIX.strip()) :].strip())
    if stripped.startswith(CONTINUATION_START):
        return UserText("", TAGGED.sub("", FRAMING.sub("", stripped)).strip())
    if stripped.startswith(CODEX_SUMMARY_INTRO.strip()):
        return UserText("", stripped[len(CODEX_SUMMARY_INTRO.strip()) :].strip())
    written = INTERRUPTED.sub("", TAGGED.sub("", stripped)).strip()
    if written in ACKNOWLEDGEMENTS or written.startswith(SKILL_BODY):
        return UserText("")
    return UserText(written)


def user_texts(message: Message) -> list[UserText]:
    """Each text of a user message (its string content, or each text block), split."""
    content = message.get("content")
    texts = [content] if isinstance(content, str) else []
    texts += [
        block["text"]
        for block in blocks(message)
        if is_block(block, "text") and isinstance(block.get("text"), str)
    ]
    return [split_user_text(text) for text in texts]


def refusal(result: str) -> str | None:
    """The user's words when a tool result says the user refused the call ("" when they gave
    none); None for any other result."""
    match = REFUSAL.match(result.strip())
    if match is None:
        return None
    return INTERRUPTED.sub("", result.strip()[match.end() :]).strip()
