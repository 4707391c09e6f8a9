"""Every setting of a run, each in one place (their defaults in defaults.py).

- ``Settings``: how a conversation is compacted. One frozen object serves micro, full and auto
  alike, so what micro compaction keeps is what the summarizer sees (``keep_recent=0`` truncates
  every result for both), and ``compat`` is one switch for the whole BareAgent profile.
- ``RunSettings``: the one settings object of a run: its command with those settings, who
  writes its summaries (``providers.catalog.ProviderSettings``), how results are written
  (layout, backups, snapshots and their session, or nothing: a dry run), and how an agent's
  session file is told apart and guarded while its agent runs. Every entry point takes it:
  ``compact``, ``compact_file``, ``process``, a batch, ``serve`` and ``replay``.

All plain frozen data: they cross to batch worker processes and Dask workers.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

from . import defaults

if TYPE_CHECKING:
    from .conversation.tool_rules import Rules
    from .providers.catalog import ProviderSettings
    from .recall.store import OriginalsStore
    from .snapshots.base import Snapshots

Command = Literal["micro", "full", "auto", "rescue"]
COMMANDS: tuple[Command, ...] = ("micro", "full", "auto", "rescue")


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
    policy: str = defaults.CACHE_AWARE
    min_gain: int | None = None  # tokens a batch of markers frees at least (None: the command's)
    images: bool = False  # micro: old images become markers too (the newest keep_recent stay)
    stale: bool = True  # stale results first (staleness.py); False: by age alone, as before
    tool_rules: Rules = ()  # the config file's [tools]: what each tool does (tool_rules.py)
    recall: bool = False  # markers carry a recall handle (handles.py; ``ctxpack mcp``)

    @property
    def stale_first(self) -> bool:
        """Whether stale results go first (never under the BareAgent profile)."""
        return self.stale and not self.compat

    @property
    def touch_rules(self) -> Rules | None:
        """The tool rules a session file's pass 1 keeps what the calls touched by, for stale
        results (session_files/stale.py); None: by age alone, nothing kept."""
        return self.tool_rules if self.stale_first else None

    @property
    def cache_aware(self) -> bool:
        """Whether auto follows the cache-aware policy (never under the BareAgent profile)."""
        return self.policy == defaults.CACHE_AWARE and not self.compat


DEFAULT_SETTINGS = Settings()


@dataclass(frozen=True)
class RunSettings:
    """Everything a run is told, for any of its inputs: the command and how it compacts, who
    summarizes, how results are written, how agents' session files are guarded."""

    # what is done: rescue is its repairs, then auto's steps while over threshold
    command: Command = "micro"
    settings: Settings = DEFAULT_SETTINGS
    provider: ProviderSettings | None = None  # who writes the summaries; None: extractive
    measure: bool = False  # estimate before and after, for statistics
    # how a result is written, wherever it goes
    pretty: bool = False  # indented JSON (JSONL stays one line a message)
    backup_suffix: str | None = None  # in place: the original is also kept beside the file
    snapshots: Snapshots | None = None  # where originals and results are kept; None: nowhere
    session_id: str | None = None  # what they are kept under; None: each input's own name
    originals: OriginalsStore | None = None  # where ``recall``'s originals are kept
    dry_run: bool = False  # decide and report, call no provider, write nothing
    # how an agent's session file is told apart and when it may be rewritten (SPEC §8.4)
    format: str = "auto"  # auto, messages, or an agent format's name
    min_idle: float = defaults.MIN_IDLE  # seconds a session must be unchanged to be rewritten
    force: bool = False  # rewrite a session even while its agent is using it
    now: datetime | None = None  # the time of the run (None: the clock, when asked)
    proc: str = "/proc"  # where the running processes are listed (Linux)

    def time(self) -> datetime:
        return self.now or datetime.now(UTC)

    @property
    def may_summarize(self) -> bool:
        """Whether the command can call a provider at all (micro never does)."""
        return self.command != "micro"

    @property
    def needs_provider(self) -> bool:
        """Whether a provider may be asked for a summary (never in a dry run or by micro)."""
        return self.may_summarize and not self.dry_run
