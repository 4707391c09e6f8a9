"""The library's two calls: ``compact`` a list of messages, ``compact_file`` any input file.

Both tell a summary that failed or was cut off at ``max_tokens`` instead of hiding it: a
``CompactionWarning`` (Python's ``warnings``, so a caller may turn it into an error, log it, or
filter it), or, with ``strict=True``, the ``ProviderError`` itself. What the command line prints
as ``summary failed, …`` is the warning's text.
"""

from __future__ import annotations

import warnings
from datetime import datetime
from pathlib import Path
from typing import Any

from . import defaults
from .compaction.outcome import Outcome, Report
from .compaction.pipeline import failure, run
from .conversation.formats import Conversation, Message
from .ends.destinations import InPlace, ToFile
from .ends.object_store import snapshot_store
from .ends.sources import LocalFile
from .process import Target, process
from .providers.base import Summarizer
from .settings import Command, RunSettings, Settings
from .snapshots.base import DEFAULT_SESSION, Snapshots
from .snapshots.locations import user_store

USER_STORE: Any = object()  # compact_file's default: the per-user store (locations.user_store)


class CompactionWarning(UserWarning):
    """A summary failed (the input, or micro compaction's result, was kept) or was cut off."""


def compact(
    conversation: list[Message],
    command: Command,
    settings: Settings | None = None,
    provider: Summarizer | None = None,
    snapshots: Snapshots | None = None,
    session_id: str = DEFAULT_SESSION,
    *,
    strict: bool = False,
) -> list[Message]:
    """The compacted conversation (a new list; ``conversation`` is left as it was).

    ``command`` is ``"micro"``, ``"full"`` or ``"auto"``. ``provider`` writes summaries (default:
    the built-in extractive one, offline). A summary that fails leaves the conversation as it
    came (micro's result for ``auto``) and warns; ``strict`` raises the failure instead.
    """
    told = RunSettings(command, settings or Settings(), snapshots=snapshots, session_id=session_id)
    outcome = run(told, Conversation(conversation), provider)
    _tell(outcome, strict, "the conversation")
    assert outcome.conversation is not None
    return outcome.conversation.messages


def compact_file(
    path: str | Path,
    command: Command = "auto",
    settings: Settings | None = None,
    *,
    output: str | Path | None = None,
    provider: Summarizer | None = None,
    snapshots: Snapshots | str | Path | None = USER_STORE,
    format: str = defaults.AUTO_FORMAT,
    pretty: bool = False,
    backup_suffix: str | None = None,
    dry_run: bool = False,
    force: bool = False,
    min_idle: float = defaults.MIN_IDLE,
    now: datetime | None = None,
    strict: bool = False,
) -> Report:
    """Compact one file — a conversation of messages or an agent's session file (told from its
    content, or as ``format`` says) — in place, or into ``output``.

    In place, the original is kept in ``snapshots``: a folder, a URL, a store, or None for
    nothing; by default the per-user store ``~/.local/state/ctxpack`` of the account running
    (``locations.user_store``: its home from the password database, since the library reads no
    environment; to follow ``$XDG_STATE_HOME`` as the command line does, pass
    ``snapshots=user_store(state_home)`` with its value). An agent's session file in use by its
    agent is refused (``SessionInUse``): always while another process holds it open for writing,
    and within ``min_idle`` seconds of a change that was not ctxpack's own unless ``force``.
    Raises the input's error (``InputError``, ``OutputError``, …); returns the report of what was
    done.
    """
    store = snapshots
    if snapshots is USER_STORE:
        snapshots = user_store()
    if isinstance(snapshots, str | Path):
        store = snapshot_store(str(snapshots))
    run_settings = RunSettings(
        command,
        settings or Settings(),
        measure=True,
        pretty=pretty,
        backup_suffix=backup_suffix,
        snapshots=store,
        dry_run=dry_run,
        format=format,
        min_idle=min_idle,
        force=force,
        now=now,
    )
    destination = InPlace() if output is None else ToFile(Path(output))
    report = process(Target(LocalFile(Path(path), str(path)), destination), run_settings, provider)
    if report.error is not None:
        raise report.error
    _tell(report.outcome, strict, str(path))
    return report


def _tell(outcome: Outcome, strict: bool, what: str) -> None:
    problem = failure(outcome)
    if problem is None:
        return
    if strict:
        raise problem
    kept = "kept" if outcome.error is None else "not used"
    warnings.warn(f"{what}: summary {kept}: {problem}", CompactionWarning, stacklevel=3)
