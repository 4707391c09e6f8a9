"""``ctxpack restore``: put files back, print a snapshot, list snapshots, prune them."""

from __future__ import annotations

import os
import shlex
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from compactor_core.conversation.formats import dumps, parse
from compactor_core.disk.database_names import is_database_file, session_name
from compactor_core.ends.sources import local_file
from compactor_core.errors import CtxpackError, UsageError
from compactor_core.session_files.database import kept_sessions, restore_session
from compactor_core.session_files.registry import agent_formats, database_of
from compactor_core.settings import RunSettings
from compactor_core.snapshots.base import ORIGINAL, RESULT
from compactor_core.snapshots.finding import (
    Choice,
    choose,
    older_of_its_kind,
    parse_age,
    search,
    session_snapshots,
    snapshot_of_file,
    to_prune,
)
from compactor_core.snapshots.local_store import SnapshotStore
from compactor_core.snapshots.locations import legacy_folders
from compactor_core.snapshots.putting_back import newest, restore_file

from . import io, options
from .exit_codes import ExitStatus, combined, error_line, status_for
from .resolve import Resolver

if TYPE_CHECKING:
    from compactor_core.snapshots.base import Snapshot
    from compactor_core.snapshots.finding import Found
    from compactor_core.snapshots.putting_back import Restored

# Shapes ``restore --session-id`` prints as a JSON array of messages; an agent's session file
# is printed as it was (its own format: ``restore FILE`` puts it back where it was).
_MESSAGE_SHAPES = (None, "array", "envelope", "jsonl")


@click.command(
    epilog=options.epilog(
        "ctxpack restore session.json                   # the original of the last --in-place",
        "ctxpack restore --list",
        "ctxpack restore --session-id my-session > back.json",
        "ctxpack restore --prune --keep 5 --older-than 30d",
    )
)
@click.argument("files", nargs=-1, metavar="[FILE]...")
@click.option("--session-id", help="Print this session's newest original as a JSON array.")
@click.option("--result", is_flag=True, help="The newest result instead of the original.")
@click.option(
    "--nth",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="The Nth newest (1: newest).",
)
@click.option("--at", metavar="TIME", help="The snapshot taken at TIME, as --list shows it.")
@click.option("--list", "list_snapshots", is_flag=True, help="List snapshots, newest first.")
@click.option("--json", "as_json", is_flag=True, help="With --list: a JSON array.")
@click.option("--prune", is_flag=True, help="Remove old snapshots (with --keep, --older-than).")
@click.option("--keep", type=click.IntRange(min=0), metavar="N", help="Keep the N newest.")
@click.option("--older-than", metavar="AGE", help="Remove only those older than 90s, 12h, 7d...")
@click.option(
    "--dry-run", is_flag=True, help="Say what would be restored or removed; change nothing."
)
@options.snapshot_dir_option
@click.option("--pretty", is_flag=True, help="Indent the JSON output.")
@click.option(
    "--force",
    is_flag=True,
    help="Restore FILE even if lines were added to it after ctxpack's run (they are kept in "
    "the 'replaced' snapshot), or if its agent changed it within --min-idle.",
)
@click.option(
    "--keep-new",
    is_flag=True,
    help="Restore FILE and keep the turns its agent added after ctxpack's run, after the "
    "original, linked to continue it.",
)
@options.min_idle_option
def restore(
    files: tuple[str, ...],
    session_id: str | None,
    result: bool,
    nth: int,
    at: str | None,
    list_snapshots: bool,
    as_json: bool,
    prune: bool,
    keep: int | None,
    older_than: str | None,
    dry_run: bool,
    snapshot_dir: str | None,
    pretty: bool,
    force: bool,
    keep_new: bool,
    min_idle: float,
) -> None:
    """Put back the originals of files changed in place, or print, list or prune snapshots.

    \b
    ctxpack restore FILE...            each file as it was before the last in-place run
    ctxpack restore --session-id ID    print that session's newest original (--result,
                                       --nth N, --at TIME for another one)
    ctxpack restore --list [--json]    every snapshot, newest first
    ctxpack restore --prune --keep N   remove all but the N newest of each session

    Snapshots are looked for in --snapshot-dir (default ~/.local/state/ctxpack) and in the
    .transcripts folders older versions wrote: the working folder's and the file's own.
    """
    choice = Choice(RESULT if result else ORIGINAL, nth, at)
    action = _action(files, session_id, list_snapshots, prune)
    _check(action, result, nth, at, as_json, keep, older_than, dry_run, pretty, force or keep_new)
    if action == "files":
        rules = RunSettings(min_idle=min_idle, force=force, now=datetime.now(UTC))
        _restore_files(snapshot_dir, files, choice, rules, dry_run, keep_new)
        return
    stores = _stores(snapshot_dir)
    if action == "list":
        _list(stores, session_id, as_json)
    elif action == "prune":
        _prune(stores, session_id, keep, older_than, dry_run)
    else:
        _print(stores, session_id or "", choice, pretty)


def _stores(flag: str | None, files: tuple[str, ...] = ()) -> list[SnapshotStore]:
    """The store in use (first), then the ``.transcripts`` of older versions, each once."""
    primary = Path(Resolver({"snapshot_dir": flag}, os.environ).snapshot_dir())
    seen = {os.path.realpath(primary)}
    stores = [SnapshotStore(primary)]
    for folder in legacy_folders(Path.cwd(), map(Path, files)):
        if os.path.realpath(folder) not in seen:
            seen.add(os.path.realpath(folder))
            stores.append(SnapshotStore(folder))
    return stores


def _action(files: tuple[str, ...], session_id: str | None, listing: bool, prune: bool) -> str:
    actions = [
        name
        for name, given in (("files", bool(files)), ("list", listing), ("prune", prune))
        if given
    ]
    if len(actions) > 1:
        raise click.UsageError("give one of FILE..., --list or --prune")
    if actions:
        return actions[0]
    if session_id is None:
        raise click.UsageError("give FILE..., --session-id ID, --list or --prune")
    return "print"


def _check(
    action: str,
    result: bool,
    nth: int,
    at: str | None,
    as_json: bool,
    keep: int | None,
    older_than: str | None,
    dry_run: bool,
    pretty: bool,
    force: bool,
) -> None:
    """Refuse every flag that does not apply to the action, rather than ignore it."""
    picking = result or nth != 1 or at is not None
    pruning = keep is not None or older_than is not None
    misplaced = [
        ("--result", result and action != "print"),
        ("--nth or --at", picking and action not in ("print", "files")),
        ("--at with --nth", at is not None and nth != 1),
        ("--json", as_json and action != "list"),
        ("--keep or --older-than", pruning and action != "prune"),
        ("--dry-run", dry_run and action not in ("files", "prune")),
        ("--pretty", pretty and action != "print"),
        ("--force", force and action != "files"),
    ]
    for flags, wrong in misplaced:
        if wrong:
            hint = {"files": "FILE...", "list": "--list", "prune": "--prune"}.get(action, "")
            raise click.UsageError(f"cannot use {flags} {f'with {hint}' if hint else 'here'}")


def _restore_files(
    snapshot_dir: str | None,
    files: tuple[str, ...],
    choice: Choice,
    rules: RunSettings,
    dry_run: bool,
    keep_new: bool = False,
) -> None:
    failures: list[ExitStatus] = []
    for name in files:
        if _database(name):  # its sessions' rows are put back, not a file
            store = _stores(snapshot_dir)[0]  # older versions' folders hold no database's rows
            failures.extend(_restore_sessions(store, name, choice, dry_run))
            continue
        file = Path(name)
        try:
            stores = _stores(snapshot_dir, (name,))
            found = search(stores, lambda store: store.select(source=file))  # noqa: B023
            _warn_unusable(found)
            snapshot = snapshot_of_file(found, file, choice, _where(stores))
            last_run = newest(found.snapshots, lambda s: s.rewritten is not None)
            done = restore_file(stores[0], file, snapshot, last_run, rules, dry_run, keep_new)
        except CtxpackError as error:
            io.warn(error_line(error))
            failures.append(status_for(error))
            continue
        _say(name, snapshot, done)
        _say_older(name, older_of_its_kind(found.snapshots, snapshot), choice)
        if done.done == "restored" and snapshot.shape not in _MESSAGE_SHAPES:
            _tell_the_agent(file, snapshot.shape or "")
    if failures:
        sys.exit(combined(failures))


def _where(stores: list[SnapshotStore]) -> str:
    return " or ".join(str(store.directory) for store in stores)


def _warn_unusable(found: Found) -> None:
    for line in found.unusable:
        io.warn(line)


def _say(name: str, snapshot: Snapshot, done: Restored) -> None:
    taken = f"the snapshot of {_when(snapshot)} ({snapshot.path})"
    if done.done == "unchanged":
        io.warn(f"{name}: already as in {taken}")
        return
    line = f"{name}: {done.done} from {taken}"
    if done.kept_new:
        line += "; the turns added since ctxpack's run follow it"
    if done.set_aside is not None:
        kept = f", kept in {done.replaced}" if done.replaced else ""
        line += f"; set aside {done.set_aside.describe()}{kept}"
    elif done.replaced:
        line += f"; the version it had is kept in {done.replaced}"
    io.warn(line)


def _say_older(name: str, older: int, choice: Choice) -> None:
    """A file ctxpack rewrote more than once (micro, then full): the original it had before the
    first of those runs is an older snapshot; say how to reach it."""
    if older == 0 or choice.at is not None:
        return
    kind = choice.kind or "snapshot"
    plural = "s" if older > 1 else ""
    io.warn(
        f"{name}: {older} older {kind}{plural} kept too (ctxpack rewrote it again since): "
        f"ctxpack restore --nth {choice.nth + 1} {shlex.quote(name)} goes one run further back"
    )


def _database(name: str) -> bool:
    return is_database_file(local_file(name).path)


def _restore_sessions(
    store: SnapshotStore, name: str, choice: Choice, dry_run: bool
) -> list[ExitStatus]:
    """``restore DB#SESSION``: that session put back; ``restore DB``: each session kept."""
    failures: list[ExitStatus] = []
    try:
        found = database_of(name)
        if found is None:
            raise UsageError(f"{name}: a database of no agent ctxpack knows")
        agent_format, path, session = found
        sessions = [session] if session else kept_sessions(store, path)
        if not sessions:
            raise UsageError(f"{name}: no session of it has a snapshot in {store.location}")
    except CtxpackError as error:
        io.warn(error_line(error))
        return [status_for(error)]
    for each in sessions:
        label = session_name(path, each)
        try:
            done, snapshot = restore_session(
                store, path, each, agent_format.store_type, choice, dry_run
            )
        except CtxpackError as error:
            io.warn(error_line(error))
            failures.append(status_for(error))
            continue
        _say(label, snapshot, done)
    return failures


def _tell_the_agent(path: Path, format_name: str) -> None:
    """Let an agent's format keep its own index of the session right (``after_replace``)."""
    for agent_format in agent_formats():
        if agent_format.name != format_name:
            continue
        warning = agent_format.after_replace(path)
        if warning:
            io.warn(f"{path}: {warning}")


def _when(snapshot: Snapshot) -> str:
    return snapshot.moment.isoformat(sep=" ", timespec="seconds")


def _print(stores: list[SnapshotStore], session_id: str, choice: Choice, pretty: bool) -> None:
    snapshot = choose(session_snapshots(stores, session_id), choice, f"session {session_id!r}")
    data = snapshot.read()
    if snapshot.shape in _MESSAGE_SHAPES:
        data = dumps(parse(data, str(snapshot.path)).messages, pretty) + b"\n"
    io.write_stdout(data)


def _list(stores: list[SnapshotStore], session_id: str | None, as_json: bool) -> None:
    found = search(stores, lambda store: store.select(session_id))
    _warn_unusable(found)
    snapshots = found.snapshots
    if as_json:
        io.write_stdout(dumps([snapshot.as_dict() for snapshot in snapshots]) + b"\n")
        return
    lines = []
    for snapshot in snapshots:
        columns = (
            snapshot.moment.isoformat(),
            snapshot.session_id,
            snapshot.kind,
            _count(snapshot.messages),
            _count(snapshot.tokens),
            snapshot.source or "-",
        )
        lines.append("\t".join(columns) + "\n")
    io.write_stdout("".join(lines).encode())


def _count(value: int | None) -> str:
    return "?" if value is None else str(value)


def _prune(
    stores: list[SnapshotStore],
    session_id: str | None,
    keep: int | None,
    older_than: str | None,
    dry_run: bool,
) -> None:
    age = parse_age(older_than) if older_than is not None else None
    found = search(stores, lambda store: store.select(session_id))
    _warn_unusable(found)
    doomed = to_prune(found.snapshots, keep, age, datetime.now())
    for snapshot in doomed:
        if not dry_run:
            snapshot.reader.remove(snapshot)
        io.write_stdout(f"{snapshot.path}\n".encode())
    verb = "would remove" if dry_run else "removed"
    io.warn(f"{verb} {len(doomed)} snapshots from {_where(stores)}")
