"""Every setting of a compaction, each in one place (defaults in defaults.py).

One frozen ``Settings`` serves micro, full and auto alike, so what micro compaction keeps is what
the summarizer sees (``keep_recent=0`` truncates every result for both), and ``compat`` is one
switch for the whole BareAgent profile. Plain data: it crosses to batch worker processes.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import defaults


@dataclass(frozen=True)
class Settings:
    keep_recent: int = defaults.KEEP_RECENT  # tool-result turns kept whole; <= 0: none
    exclude_tools: tuple[str, ...] = ()  # tools whose results are never truncated
    min_chars: int = 0  # results shorter than this are left alone
    threshold: int = defaults.THRESHOLD  # auto: full compaction above this estimate
    lang: str = "auto"  # "zh", "en", or the conversation's language (Chinese under compat)
    instructions: str | None = None  # the user's own focus, added to the system prompt
    max_tokens: int = defaults.MAX_TOKENS  # the summary's budget
    max_prompt_tokens: int = defaults.MAX_PROMPT_TOKENS  # what is sent is shrunk to fit
    keep_cut_off: bool = True  # a summary that stopped at max_tokens is kept (False: it fails)
    compat: bool = False  # the BareAgent profile: its rules, no extensions, no guards
    tokenizer: str = "heuristic"  # who counts for the threshold, max_prompt_tokens and statistics
    # auto, default profile: "cache-aware" (cache_policy.py) or "every-turn" (micro every call)
    policy: str = "cache-aware"
    min_gain: int | None = None  # tokens a batch of markers frees at least (None: the command's)


DEFAULT_SETTINGS = Settings()
