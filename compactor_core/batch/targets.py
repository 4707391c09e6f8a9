"""The inputs of a batch: the files and objects named, and those in the folders and prefixes named.

Decisions (also in the README):
- Folders are walked with ``recursive``; hidden files and folders (``.git``, ``.transcripts``),
  the snapshot folder and the output folder are skipped, unless a ``--glob`` pattern starts with
  a dot, as in a shell; symbolic links to folders are not followed (no cycles), and a file
  reached twice (through a link) is done once.
- Local inputs are listed before anything is done, so that two inputs whose results would land
  on one output file (``a/x.json`` and ``b/x.json``), or an input that would be its own output,
  are refused first. Prefixes at URLs are listed lazily, a page at a time, so a prefix of
  millions of keys is never held in memory; two results landing on one object cannot be found
  without holding the whole listing, so with ``--output-dir`` a run takes one folder or prefix
  (files named directly are checked as for local files).
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..disk.atomic import remove_stale_temp_files
from ..disk.database_names import is_database_file, session_name
from ..ends import object_store as storage
from ..ends.destinations import Destination, InPlace, ToFile, ToObject
from ..ends.sources import LocalFile, RemoteObject, local_file
from ..ends.urls import is_url, join
from ..errors import IsADirectory, OutputError
from ..process import Target

DEFAULT_GLOBS = ("*.json", "*.jsonl")


@dataclass(frozen=True)
class Listing:
    """What to list: the names given, and how folders among them are read."""

    names: Sequence[str]
    recursive: bool = False
    globs: Sequence[str] = DEFAULT_GLOBS
    output_dir: str | None = None  # None: in place
    skip: Sequence[str] = ()  # folders (or prefixes) never walked: the snapshot store's
    settings_key: str = ""  # what an output object records of the settings that made it

    @property
    def local(self) -> bool:
        return not any(is_url(name) for name in (*self.names, self.output_dir or ""))


def find_targets(listing: Listing) -> list[Target] | Iterator[Target]:
    """Every input to do: a list for local inputs (checked first), an iterator with URLs."""
    if listing.local:
        return _local_targets(listing)
    return _listed_targets(listing)


# --- local files ---------------------------------------------------------------------------------


def _local_targets(listing: Listing) -> list[Target]:
    output_dir = Path(listing.output_dir) if listing.output_dir else None
    skipped = {os.path.realpath(path) for path in (*listing.skip, *filter(None, [output_dir]))}
    targets: list[Target] = []
    seen: set[str] = set()
    claimed: dict[str, str] = {}  # destination -> the input whose result goes there
    for name in listing.names:
        path = Path(name)
        if path.is_dir():
            if not listing.recursive:
                raise IsADirectory(f"{name}: is a directory")
            found = _walk(path, listing.globs, skipped)
        else:
            found = [(path, Path(path.name))]
        for file, relative in found:
            real = os.path.realpath(file)
            if real in seen:
                continue
            seen.add(real)
            destination: Destination = InPlace(listing.settings_key)
            if output_dir is not None:
                _claim(claimed, os.path.realpath(output_dir / relative), str(file), real)
                destination = ToFile(output_dir / relative, mirror=True)
            targets.extend(Target(source, destination) for source in _sources(file))
    return targets


def _sources(file: Path) -> list[LocalFile]:
    """The inputs a file is: itself, or each session of a database (``FILE#SESSION``), or the
    session a name of that shape names."""
    if not is_database_file(file):
        named = local_file(str(file))
        return [named if named.session is not None else LocalFile(file, str(file))]
    from ..session_files.registry import stored_sessions

    sessions = stored_sessions(file)
    if not sessions:
        return [LocalFile(file, str(file))]  # refused when it is read: no sessions ctxpack knows
    return [LocalFile(file, session_name(file, session), session) for session in sessions]


def _walk(root: Path, globs: Sequence[str], skipped: set[str]) -> list[tuple[Path, Path]]:
    """Matching files under ``root``; hidden files and folders only if a pattern asks for them,
    and never the files an agent keeps beside its sessions (Cline's ``<id>.json``)."""
    from ..session_files.registry import beside_a_session

    found = []
    for directory, subdirectories, names in os.walk(root):
        subdirectories[:] = sorted(
            sub
            for sub in subdirectories
            if not sub.startswith(".")
            and os.path.realpath(os.path.join(directory, sub)) not in skipped
        )
        for name in sorted(names):
            if any(matches(name, pattern) for pattern in globs):
                file = Path(directory) / name
                if not beside_a_session(file):
                    found.append((file, file.relative_to(root)))
    return found


def matches(name: str, pattern: str) -> bool:
    """Like a shell glob: ``*.json`` does not match ``.hidden.json``, ``.*.json`` does."""
    if name.startswith(".") and not pattern.startswith("."):
        return False
    return fnmatch.fnmatch(name, pattern)


def _claim(claimed: dict[str, str], destination: str, name: str, real: str) -> None:
    if destination == real:
        raise OutputError(f"{name}: its output would overwrite it: use output_dir=None instead")
    if destination in claimed:
        raise OutputError(
            f"{destination}: would hold the results of both {claimed[destination]} and {name}: "
            "compact them into different output folders"
        )
    claimed[destination] = name


def clean_up_after_killed_runs(targets: Sequence[Target], extra: Sequence[str] = ()) -> int:
    """Remove temporary files that runs killed midway left beside these local files."""
    directories = {Path(path) for path in extra if not is_url(path)}
    for target in targets:
        folders = (target.source.folder, target.destination.folder)
        directories.update(Path(folder) for folder in folders if folder is not None)
    return sum(remove_stale_temp_files(directory) for directory in directories)


# --- objects at URLs, listed as they go ----------------------------------------------------------


def _listed_targets(listing: Listing) -> Iterator[Target]:
    names, output_dir = listing.names, listing.output_dir
    folders = [name for name in names if storage.kind(name) == "directory"]
    for name in folders if not listing.recursive else ():
        raise IsADirectory(f"{name}: is a directory")
    if output_dir is not None and folders and len(names) > 1:
        raise OutputError(
            f"{folders[0]}: with output_dir=FOLDER, give one folder or prefix per run: results of "
            "several could collide, which cannot be checked without listing them all first"
        )
    skipped = tuple(_plain(name) + "/" for name in (*listing.skip, *filter(None, [output_dir])))
    claimed: dict[str, str] = {}
    for name in names:
        if name in folders:
            yield from _under(name, listing, skipped)
            continue
        destination = _destination(listing, name.rstrip("/").rsplit("/", 1)[-1])
        if destination.output_name is not None:
            _claim(claimed, _plain(destination.output_name), name, _plain(name))
        yield Target(_source(name), destination)


def _under(root: str, listing: Listing, skipped: tuple[str, ...]) -> Iterator[Target]:
    for relative, info in storage.walk(root):
        *folders, base = relative.split("/")
        if any(folder.startswith(".") for folder in folders):
            continue
        if not any(matches(base, pattern) for pattern in listing.globs):
            continue
        if _plain(info.name).startswith(skipped):
            continue
        source = (
            RemoteObject(info.name, info.name, info.version, info.size)
            if is_url(info.name)
            else LocalFile(Path(info.name), info.name)
        )
        yield Target(source, _destination(listing, relative))


def _source(name: str) -> RemoteObject | LocalFile:
    return RemoteObject(name, name) if is_url(name) else LocalFile(Path(name), name)


def _destination(listing: Listing, relative: str) -> Destination:
    if listing.output_dir is None:
        return InPlace(listing.settings_key)
    where = join(listing.output_dir, relative)
    if is_url(where):
        return ToObject(where, mirror=True, settings_key=listing.settings_key)
    return ToFile(Path(where), mirror=True)


def _plain(name: str) -> str:
    """A name to compare prefixes with: URLs as written, local paths made absolute."""
    return name.rstrip("/") if is_url(name) else str(Path(name).absolute())
