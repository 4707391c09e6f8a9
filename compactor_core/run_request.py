"""A run as a front end asks for it, checked and resolved whole in one call.

The command line layers each setting (flag > environment > config file > default) and hands the
core plain values: a ``RunRequest``. ``resolve`` checks them and builds what they name, before
any input is read: the store of recall's originals, the snapshot store (the folder or URL named,
else the user's, from ``XDG_STATE_HOME`` and ``HOME`` as given), the provider's settings (its
key and base URL from the environment given), the snapshots' session id and the config file's
``[tools]`` rules; for a run done in this process, the provider itself, built once. The core
never reads the environment itself: the front end passes it in.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from . import defaults
from .compaction.outcome import Report
from .conversation.tool_rules import parse_rules  # loaded by every run already (staleness)
from .ends.destinations import Destination
from .ends.sources import Source
from .errors import ConfigError
from .process import Target, process
from .settings import RunSettings

if TYPE_CHECKING:
    from .providers.base import Summarizer
    from .providers.catalog import ProviderRequest, ProviderSettings


@dataclass(frozen=True)
class RunRequest:
    """Plain values: what the run is told (``run``, without its stores and tool rules) and what
    ``resolve`` builds them from."""

    run: RunSettings
    session_id: str = defaults.SESSION_ID  # what snapshots of standard input and files are under
    tools: Any = None  # the config file's [tools] table, as read; None: none
    config_path: str = ""  # the config file, which an error in its [tools] names
    keeps_snapshots: bool = False  # whether the run keeps snapshots at all
    snapshot_dir: str | None = None  # their folder or URL; None: the user's store
    state_home: str | None = None  # XDG_STATE_HOME, as the environment has it
    home: str | None = None  # HOME, as the environment has it
    provider: ProviderRequest | None = None  # None: a run that asks no provider (micro)
    here: bool = False  # its inputs are done in this process (not by a batch's workers)


@dataclass(frozen=True)
class ResolvedRun:
    """A run's settings whole, every value checked; ``process`` does one of its inputs here."""

    run: RunSettings
    session_id: str = defaults.SESSION_ID
    provider: ProviderSettings | None = None  # what a batch's workers build theirs from
    summarizer: Summarizer | None = None  # the provider, built once for a run done here

    def process(self, source: Source, destination: Destination) -> Report:
        """One input of the run, done in this process, its result written to ``destination``;
        its failure is part of its report."""
        return process(Target(source, destination, self.session_id), self.run, self.summarizer)


def resolve(request: RunRequest) -> ResolvedRun:
    """The run ``request`` asks for, checked; a ``CtxpackError`` says what is wrong (an unknown
    provider, a session id that cannot name a file, a ``[tools]`` table that is no rules).

    Only what the run needs is loaded (a run of ``micro`` to standard output loads none of it)."""
    told, settings = request.run, request.run.settings
    originals = snapshots = provider = summarizer = None
    if settings.recall:
        from .recall.store import user_originals

        originals = user_originals(request.state_home, request.home)
    if request.keeps_snapshots:
        from .ends.object_store import run_snapshot_store

        where = (request.snapshot_dir, settings.compat, request.state_home, request.home)
        snapshots = run_snapshot_store(*where)
    if request.provider is not None:
        provider = request.provider.settings()
        if request.here and told.needs_provider:  # a batch's workers build their own
            from .providers.registry import build_provider

            summarizer = build_provider(provider)
    session_id = request.session_id
    if session_id != defaults.SESSION_ID:  # the default is valid: no need to load the rules
        from .snapshots.base import check_session_id

        session_id = check_session_id(session_id)
    if request.tools is not None:
        try:
            rules = parse_rules(request.tools, f"[{defaults.TOOLS_TABLE}]")
            settings = replace(settings, tool_rules=rules)
        except ValueError as error:
            raise ConfigError(f"{request.config_path}: {error}") from None
    run = replace(told, settings=settings, originals=originals, snapshots=snapshots)
    return ResolvedRun(run, session_id, provider, summarizer)
