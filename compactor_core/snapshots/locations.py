"""Where snapshots live: one store per user, and the folders older versions wrote into.

- The default store is the user's XDG state folder: ``$XDG_STATE_HOME/ctxpack`` (only an
  absolute ``XDG_STATE_HOME`` counts, as the XDG spec says), else ``~/.local/state/ctxpack``.
  Snapshots of every file go there, named after the file's absolute path (``snapshots``), so
  ``restore FILE`` finds them from any folder, and nothing lands in the folder a command runs
  in (a project's repository would stage it with ``git add -A``).
- ``--compat bareagent`` keeps the seed's ``.transcripts`` in the working folder.
- ``restore`` and ``restore --list`` still read the ``.transcripts`` folders earlier versions
  wrote into: the working folder's and, for ``restore FILE``, the one beside the file.

The core never reads the environment: the command line passes ``XDG_STATE_HOME`` and ``HOME``
in; without them, the account's home comes from the password database.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Iterable
from pathlib import Path

from .. import defaults

LEGACY_FOLDER = defaults.BAREAGENT_SNAPSHOT_DIR


def user_store(state_home: str | None = None, home: str | None = None) -> Path:
    """The per-user snapshot store, from ``XDG_STATE_HOME`` and ``HOME`` as given."""
    if state_home and os.path.isabs(state_home):
        return Path(state_home) / "ctxpack"
    return Path(home or _account_home()) / ".local" / "state" / "ctxpack"


def snapshot_location(
    given: str | None, bareagent: bool, state_home: str | None, home: str | None
) -> str:
    """Where a run's snapshots go: the folder or URL ``given``, else (the BareAgent profile) the
    seed's ``.transcripts`` in the working folder, else the per-user store."""
    if given:
        return given
    if bareagent:
        return LEGACY_FOLDER
    return str(user_store(state_home, home))


def legacy_folders(cwd: Path, files: Iterable[Path] = ()) -> list[Path]:
    """The ``.transcripts`` folders ``restore`` still reads: the working folder's, then each
    file's own; each once."""
    found: list[Path] = []
    for folder in (cwd, *(Path(os.path.realpath(file)).parent for file in files)):
        candidate = Path(os.path.abspath(folder)) / LEGACY_FOLDER
        if candidate not in found:
            found.append(candidate)
    return found


def _account_home() -> str:
    return pwd.getpwuid(os.geteuid()).pw_dir
