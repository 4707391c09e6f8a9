"""Putting a file back as a snapshot has it (``restore FILE``), losing nothing on the way.

Decisions (also in the README):
- The file is replaced like any rewrite (``files.replace``): atomically, byte for byte, with its
  owner, group, mode and extended attributes; its current version is kept first as a
  ``replaced`` snapshot. A file that is already as in the snapshot is left alone; a file that is
  gone is created again, with the mode and owner it had.
- An agent's session file follows the rules of a rewrite (SPEC §8.4): not while another process
  holds it open for writing (not even with ``force``), nor within ``min_idle`` of a change that
  was not ctxpack's own (unless ``force``); exit 75.
- What the file holds beyond what ctxpack's last run left there (the lines its agent appended
  since, or any other change) would be set aside: the restore says so and is refused (exit 77)
  unless ``force``, which puts the original back and keeps the current version, those lines
  included, as the ``replaced`` snapshot it names; or, with ``keep_new``, which puts the original
  back followed by the lines appended since, re-linked to continue it
  (``session_files.appended``). A file whose last run left no record (an older snapshot) is
  restored as before, the current version kept all the same.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..disk.atomic import NewFile
from ..disk.metadata import Metadata
from ..disk.replace import FileState, Replacement, replace
from ..ends.sources import LocalFile
from ..errors import OutputError, WouldDrop, reading
from ..session_files.appended import follow_original
from ..session_files.in_use import refuse_in_use, writer_check
from ..session_files.registry import get
from ..settings import RunSettings
from ..text import counted
from .base import REPLACED, Details, Snapshot
from .local_store import SnapshotStore

Done = Literal["restored", "unchanged", "would restore"]
MESSAGE_SHAPES = (None, "array", "envelope", "jsonl")  # a conversation, not an agent's file
_BLOCK = 1 << 20


@dataclass(frozen=True)
class SetAside:
    """What the file holds that ctxpack's last run did not leave there."""

    run: Snapshot  # the snapshot of that run (it records what the run left)
    size: int  # bytes beyond what the run left; the whole file if it was changed otherwise
    lines: int  # lines among them
    appended: bool  # they were added at the end (an agent's turns); False: changed otherwise

    def describe(self) -> str:
        when = self.run.moment.isoformat(sep=" ", timespec="seconds")
        if self.appended:
            return f"{counted(self.lines, 'line')} added after ctxpack's run of {when}"
        return f"changes made after ctxpack's run of {when}"


@dataclass(frozen=True)
class Restored:
    done: Done
    set_aside: SetAside | None = None
    replaced: str | None = None  # the snapshot that keeps the version the file had
    kept_new: bool = False  # the lines appended since ctxpack's run follow the original


def restore_file(
    store: SnapshotStore,
    file: Path,
    snapshot: Snapshot,
    last_run: Snapshot | None,
    rules: RunSettings,
    dry_run: bool = False,
    keep_new: bool = False,
) -> Restored:
    """Put ``snapshot`` back at ``file``; keep the current version in ``store`` first.

    ``last_run`` is the newest snapshot of the file that records what ctxpack left there (None:
    none does); ``rules`` are the session rules (``force``: see the module's decisions);
    ``keep_new``: the lines its agent appended since that run follow the original."""
    label = str(file)
    if not os.path.exists(file):  # gone (a dangling link: its target is gone)
        if not dry_run:
            _create(file, snapshot, label)
        return Restored("would restore" if dry_run else "restored")
    with LocalFile(file, label).open() as handle:
        fd, path = handle.fileno(), Path(handle.name)
        status = os.fstat(fd)
        guarded = snapshot.shape not in MESSAGE_SHAPES
        if guarded and not dry_run:
            _refuse_in_use(label, status, rules, last_run)
        current = _sha256(fd, status.st_size)
        if (status.st_size, current) == (snapshot.size, snapshot.sha256):
            return Restored("unchanged")
        set_aside = _set_aside(fd, status, last_run)
        kept_new = keep_new and set_aside is not None and set_aside.appended
        if set_aside is not None and not (rules.force or kept_new):
            raise WouldDrop(
                f"{label}: restoring would set aside {set_aside.describe()}: not restored "
                "(restore_file(keep_new=True) puts the original back and those lines after it; "
                "restore_file(force=True) sets them aside in a 'replaced' snapshot)"
            )
        if dry_run:
            return Restored("would restore", None if kept_new else set_aside, kept_new=kept_new)
        chunks = snapshot.chunks()
        if kept_new and set_aside is not None:
            chunks = _with_new_turns(snapshot, fd, status.st_size - set_aside.size, status, label)
        how = Replacement(
            label,
            store,
            Details(snapshot.shape or "jsonl"),
            current,
            kind=REPLACED,
            doing="restored",
            writer=writer_check(rules.proc) if guarded else None,
        )
        replaced = replace(path, fd, FileState.of(status), chunks, how)
    return Restored("restored", None if kept_new else set_aside, replaced.snapshot, kept_new)


def _with_new_turns(
    snapshot: Snapshot, fd: int, left: int, status: os.stat_result, label: str
) -> Iterator[bytes]:
    """The original, then what its agent appended after ``left`` (the bytes ctxpack's run left),
    made to follow it."""
    original = b"".join(snapshot.chunks())
    appended = b"".join(_blocks(fd, left, status.st_size))
    yield original
    yield follow_original(original, appended, get(snapshot.shape or ""), label)


def _refuse_in_use(
    label: str, status: os.stat_result, rules: RunSettings, last_run: Snapshot | None
) -> None:
    def rewritten_by_us() -> bool:
        return (
            last_run is not None
            and last_run.rewritten is not None
            and (last_run.rewritten.is_now(status))
        )

    refuse_in_use(label, status, rules, rewritten_by_us, "restored")


def _set_aside(fd: int, status: os.stat_result, last_run: Snapshot | None) -> SetAside | None:
    """What would be set aside: the file's bytes beyond what the last run left, if any."""
    if last_run is None or last_run.rewritten is None:
        return None
    left = last_run.rewritten
    if left.is_now(status):
        return None
    if status.st_size >= left.size and _sha256(fd, left.size) == left.sha256:
        extra = status.st_size - left.size
        if extra == 0:
            return None  # the same bytes (copied, touched): nothing would be lost
        return SetAside(last_run, extra, _lines(fd, left.size, status.st_size), appended=True)
    lines = _lines(fd, 0, status.st_size)
    return SetAside(last_run, status.st_size, lines, appended=False)


def _create(file: Path, snapshot: Snapshot, label: str) -> None:
    """Make the file again, as the snapshot records it (its mode and owner), never over a file
    that appeared meanwhile."""
    real = Path(os.path.realpath(file))
    like = Metadata(
        snapshot.uid if snapshot.uid is not None else os.geteuid(),
        snapshot.gid if snapshot.gid is not None else os.getegid(),
        snapshot.mode if snapshot.mode is not None else 0o644,
    )
    new = NewFile.write(real.parent, real.name, snapshot.chunks(), label, like)
    try:
        os.link(new.path, real)
    except FileExistsError:
        raise OutputError(f"{label}: created while being restored, left as is") from None
    except OSError as error:
        raise OutputError(f"{label}: cannot write: {error.strerror or error}") from None
    finally:
        new.discard()


def newest(snapshots: Sequence[Snapshot], keep: Callable[[Snapshot], bool]) -> Snapshot | None:
    """The newest of ``snapshots`` (from any store) that ``keep`` accepts."""
    kept = [snapshot for snapshot in snapshots if keep(snapshot)]
    return max(kept, key=lambda snapshot: snapshot.stamp, default=None)


def _blocks(fd: int, start: int, end: int) -> Iterator[bytes]:
    with reading(f"/proc/self/fd/{fd}"):
        for offset in range(start, end, _BLOCK):
            yield os.pread(fd, min(_BLOCK, end - offset), offset)


def _sha256(fd: int, size: int) -> str:
    digest = hashlib.sha256()
    for block in _blocks(fd, 0, size):
        digest.update(block)
    return digest.hexdigest()


def _lines(fd: int, start: int, end: int) -> int:
    count, last = 0, b"\n"
    for block in _blocks(fd, start, end):
        count += block.count(b"\n")
        last = block[-1:] or last
    return count + (last != b"\n")
