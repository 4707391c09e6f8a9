"""Finding snapshots again: the one a user means, and the old ones to prune.

Decisions (also in the README):
- ``restore FILE`` takes the newest original of that file (the input of the last in-place run
  that changed it); ``nth=2`` the one before, and so on (``restoring`` puts it back).
- Pruning keeps, per session and kind, the ``keep`` newest snapshots, and removes only snapshots
  older than ``older_than``; with both, a snapshot must fail both to go.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from ..errors import InputUnreadable, UnsafeLocation, UsageError
from .base import ORIGINAL, STAMP_FORMAT, Snapshot
from .local_store import SnapshotStore


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


def session_snapshots(stores: Sequence[SnapshotStore], session_id: str) -> list[Snapshot]:
    """The snapshots of a session in the stores, newest first; a session with none is an error
    that names the sessions meant (an in-place file's id is its name plus a hash of its path)."""
    found = search(stores, lambda store: store.select(session_id)).snapshots
    if found:
        return found
    every = search(stores, lambda store: store.select()).snapshots
    meant = sorted({s.session_id for s in every if s.session_id.startswith(f"{session_id}-")})
    hint = (
        f"; did you mean {' or '.join(meant[:3])}? (or give the file instead)"
        if meant
        else " (SnapshotStore.select() lists them)"
    )
    where = " or ".join(str(store.directory) for store in stores)
    raise InputUnreadable(f"session {session_id!r}: no snapshot in {where}{hint}")


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
            f"at={text!r}: give a snapshot's time as SnapshotStore.select() lists it "
            "(2025-03-09T14-05-07-123456 or 2025-03-09T14:05:07.123456)"
        ) from None
    if moment.tzinfo is not None:  # stamps are local time
        moment = moment.astimezone().replace(tzinfo=None)
    return moment.strftime(STAMP_FORMAT)


@dataclass(frozen=True)
class Found:
    """Snapshots found in several stores, newest first, and why some store was not read."""

    snapshots: list[Snapshot]
    unusable: list[str]  # one line each: a folder of older versions that is not safe to use


def search(
    stores: Sequence[SnapshotStore], query: Callable[[SnapshotStore], list[Snapshot]]
) -> Found:
    """``query`` in each store, the results merged. The first store is the one in use: if it
    is not safe, that is the error; a later one (an older version's ``.transcripts``) that is
    not safe is skipped, and said so."""
    found: list[Snapshot] = []
    unusable: list[str] = []
    for number, store in enumerate(stores):
        try:
            found.extend(query(store))
        except UnsafeLocation as error:
            if number == 0:
                raise
            unusable.append(str(error))
    found.sort(key=lambda snapshot: (snapshot.stamp, snapshot.path.name), reverse=True)
    return Found(found, unusable)


def snapshot_of_file(found: Found, file: Path, choice: Choice, where: str) -> Snapshot:
    """The snapshot of ``file`` that ``choice`` names (the newest original by default), among
    the file's own snapshots ``found`` in the stores ``where`` names."""
    if not found.snapshots:
        raise InputUnreadable(
            f"{file}: ctxpack never rewrote this file: no snapshot of it in {where}"
        )
    return choose(found.snapshots, choice, str(file))


def older_of_its_kind(candidates: Sequence[Snapshot], chosen: Snapshot) -> int:
    """How many snapshots of the chosen one's kind are older than it (``candidates`` newest
    first): a file rewritten twice has an older original than the newest."""
    same = [snapshot for snapshot in candidates if snapshot.kind == chosen.kind]
    return len(same) - 1 - same.index(chosen) if chosen in same else 0


def to_prune(
    snapshots: Sequence[Snapshot],
    keep: int | None,
    older_than: timedelta | None,
    now: datetime,
) -> list[Snapshot]:
    """The snapshots to remove (newest first in, newest first out)."""
    if keep is None and older_than is None:
        raise UsageError("to_prune needs keep=N or older_than=AGE")
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
        raise UsageError(f"older_than={text!r}: give an age such as 90s, 30m, 12h, 7d or 2w")
    return timedelta(seconds=value * _UNITS[unit])
