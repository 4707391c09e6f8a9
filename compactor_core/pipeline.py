"""One conversation through one command: what the CLI and batch workers both call.

``run`` takes a parsed conversation and a frozen ``Job`` (plain data, so it can cross to a worker
process) and returns an ``Outcome``: the new conversation, whether anything changed, and the
figures worth reporting.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .estimate import estimate
from .formats import Conversation
from .micro import DEFAULT_KEEP_RECENT, MicroResult, micro_compact


@dataclass(frozen=True)
class MicroSettings:
    keep_recent: int = DEFAULT_KEEP_RECENT
    exclude_tools: tuple[str, ...] = ()
    min_chars: int = 0


@dataclass(frozen=True)
class Job:
    command: str = "micro"  # micro | full | auto
    micro: MicroSettings = field(default_factory=MicroSettings)
    compat: bool = False
    measure: bool = False  # estimate before and after, for statistics


@dataclass(frozen=True)
class Outcome:
    conversation: Conversation
    changed: bool
    micro: MicroResult
    tokens_before: int | None = None
    tokens_after: int | None = None
    snapshots: tuple[Path, ...] = ()  # snapshots already taken of this input and its result
    warnings: tuple[str, ...] = ()


def measure(conversation: Conversation, compat: bool) -> int:
    return estimate(conversation.messages, conversation.system, compat)


def run(job: Job, conversation: Conversation) -> Outcome:
    before = measure(conversation, job.compat) if job.measure else None
    settings = job.micro
    result = micro_compact(
        conversation.messages, settings.keep_recent, settings.exclude_tools, settings.min_chars
    )
    after = measure(conversation, job.compat) if job.measure else None
    return Outcome(conversation, result.truncated > 0, result, before, after)
