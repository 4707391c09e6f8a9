"""A run as a front end asks for it, checked and completed in one call.

The command line layers each setting (flag > environment > config file > default) into a
``RunSettings`` and hands ``resolve`` what the run's stores and rules are made from: the
config file's ``[tools]`` table, whether snapshots are kept and where, and ``XDG_STATE_HOME``
and ``HOME`` as its environment has them. ``resolve`` checks the run before any input is read
(its snapshots' session id, the ``[tools]`` rules) and builds what it names: the store of
recall's originals, the snapshot store (the folder or URL named, else the user's). The core
never reads the environment itself: the front end passes it in.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from . import defaults
from .conversation.tool_rules import parse_rules  # loaded by every run already (staleness)
from .errors import ConfigError
from .settings import RunSettings


def resolve(
    run: RunSettings,
    *,
    tools: Any = None,
    config_path: str = "",
    keeps_snapshots: bool = False,
    snapshot_dir: str | None = None,
    state_home: str | None = None,
    home: str | None = None,
) -> RunSettings:
    """``run`` checked, with its stores and tool rules; a ``CtxpackError`` says what is wrong
    (a session id that cannot name a file, a ``[tools]`` table that is no rules).

    ``tools``: the config file's ``[tools]`` table as read (None: none), which an error names by
    ``config_path``; ``keeps_snapshots``: whether the run keeps snapshots at all, in
    ``snapshot_dir`` (a folder or URL; None: the user's store). Only what the run needs is
    loaded (a run of ``micro`` to standard output loads none of it)."""
    settings = run.settings
    originals = snapshots = None
    if settings.recall:
        from .recall.store import user_originals

        originals = user_originals(state_home, home)
    if keeps_snapshots:
        from .ends.object_store import run_snapshot_store

        snapshots = run_snapshot_store(snapshot_dir, settings.compat, state_home, home)
    session_id = run.session_id
    if session_id is not None and session_id != defaults.SESSION_ID:  # the default is valid
        from .snapshots.base import check_session_id

        session_id = check_session_id(session_id)
    if tools is not None:
        try:
            settings = replace(settings, tool_rules=parse_rules(tools, f"[{defaults.TOOLS_TABLE}]"))
        except ValueError as error:
            raise ConfigError(f"{config_path}: {error}") from None
    return replace(
        run, settings=settings, originals=originals, snapshots=snapshots, session_id=session_id
    )
