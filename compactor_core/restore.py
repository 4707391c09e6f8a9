"""Getting snapshots back: the one a user means, a file put back as it was, old ones pruned.

Decisions (also in the README):
- ``restore FILE`` takes the newest original of that file (the input of the last in-place run
  that changed it); ``nth=2`` the one before, and so on. The file is replaced atomically and
  byte for byte; its current version is kept first as a ``replaced`` snapshot, so a restore
  loses nothing either (an agent may have appended to the file since it was compacted).
- A file that is already as in the snapshot is left alone; a file that is gone is created again,
  with the mode it had.
- Pruning keeps, per session and kind, the ``keep`` newest snapshots, and removes only snapshots
  older than ``older_than``; with both, a snapshot must fail both to go.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Literal

from .atomic import atomic_write
from .errors import InputUnreadable, UsageError
from .files import FileState, Replacement, replacing
from .snapshots import ORIGINAL, REPLACED, STAMP_FORMAT, Details, Snapshot, SnapshotStore
from .sources import LocalFile

Done = Literal["restored", "unchanged", "would restore"]


@dataclass(frozen=True)
class Choice:
    """Which snapshot: of a kind, the ``nth`` newest (1: the newest), or the one at a stamp."""

    kind: str | None = ORIGINAL  # None: any kind
    nth: int = 1
    at: str | None = None  # a stamp as listed, 2025-03-09T14-05-07-123456, or an ISO time


def choose(candidates: Sequence[Snapshot], choice: Choice, what: str) -> Snapshot:
    """Pick one of ``candidates`` (newest first); ``what`` names them in the error."""
    if choice.at is not None:
        stamp = _as_stamp(choice.at)
        for snapshot in candidates:
            if snapshot.stamp == stamp:
                return snapshot
        raise InputUnreadable(f"{what}: no snapshot at {choice.at}")
    kind = candidates if choice.kind is None else [s for s in candidates if s.kind == choice.kind]
    if len(kind) < choice.nth:
        described = f"{choice.kind} " if choice.kind else ""
        found = f"only {len(kind)}" if kind else "none"
        raise InputUnreadable(f"{what}: no {described}snapshot number {choice.nth} ({found})")
    return kind[choice.nth - 1]


def session_snapshots(store: SnapshotStore, session_id: str) -> list[Snapshot]:
    """The snapshots of a session, newest first; a session with none is an error that names
    the sessions meant (an in-place file's id is its name plus a hash of its path)."""
    found = store.select(session_id)
    if found:
        return found
    meant = sorted(
        {s.session_id for s in store.select() if s.session_id.startswith(f"{session_id}-")}
    )
    hint = (
        f"; did you mean {' or '.join(meant[:3])}? (or give the file: ctxpack restore FILE)"
        if meant
        else " (ctxpack restore --list shows them)"
    )
    raise InputUnreadable(f"session {session_id!r}: no snapshot in {store.directory}{hint}")


def _as_stamp(text: str) -> str:
    """A stamp as the names have it, from itself or from an ISO 8601 time."""
    try:
        return datetime.strptime(text, STAMP_FORMAT).strftime(STAMP_FORMAT)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(
            f"--at {text!r}: give a snapshot's time as --list shows it "
            "(2025-03-09T14-05-07-123456 or 2025-03-09T14:05:07.123456)"
        ) from None
    if moment.tzinfo is not None:  # stamps are local time
        moment = moment.astimezone().replace(tzinfo=None)
    return moment.strftime(STAMP_FORMAT)


def snapshot_of_file(store: SnapshotStore, file: Path, choice: Choice) -> Snapshot:
    """The snapshot of ``file`` that ``choice`` names (the newest original by default)."""
    return choose(store.select(source=file), choice, str(file))


def restore_file(
    store: SnapshotStore, file: Path, snapshot: Snapshot, dry_run: bool = False
) -> Done:
    """Put ``snapshot`` back at ``file``, atomically; keep the current version first."""
    data = snapshot.read()  # checked against its hash: a damaged snapshot is never put back
    label = str(file)
    if not os.path.exists(file):  # gone (a dangling link: its target is gone)
        if not dry_run:
            mode = snapshot.mode if snapshot.mode is not None else 0o644
            atomic_write(file, data, new_file_mode=mode)
        return "would restore" if dry_run else "restored"
    with LocalFile(file, label).open() as handle:
        current = handle.read()
        path, status = Path(handle.name), os.fstat(handle.fileno())
    if current == data:
        return "unchanged"
    if dry_run:
        return "would restore"
    how = Replacement(
        label,
        store,
        Details(snapshot.shape or "jsonl"),
        hashlib.sha256(current).hexdigest(),
        kind=REPLACED,
        doing="restored",
    )
    with replacing(path, FileState.of(status), how) as check:
        atomic_write(path, data, check=check)
    return "restored"


def to_prune(
    snapshots: Sequence[Snapshot],
    keep: int | None,
    older_than: timedelta | None,
    now: datetime,
) -> list[Snapshot]:
    """The snapshots to remove (newest first in, newest first out)."""
    if keep is None and older_than is None:
        raise UsageError("--prune needs --keep N or --older-than AGE")
    seen: dict[tuple[str, str], int] = {}
    doomed = []
    for snapshot in snapshots:
        group = (snapshot.session_id, snapshot.kind)
        seen[group] = seen.get(group, 0) + 1
        beyond_keep = keep is None or seen[group] > keep
        too_old = older_than is None or now - snapshot.moment > older_than
        if beyond_keep and too_old:
            doomed.append(snapshot)
    return doomed


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: str) -> timedelta:
    """``90s``, ``30m``, ``12h``, ``7d``, ``2w`` (a bare number is days)."""
    number, unit = (text[:-1], text[-1]) if text[-1:] in _UNITS else (text, "d")
    try:
        value = float(number)
    except ValueError:
        value = -1.0
    if value < 0:
        raise UsageError(f"--older-than {text!r}: give an age such as 90s, 30m, 12h, 7d or 2w")
    return timedelta(seconds=value * _UNITS[unit])
