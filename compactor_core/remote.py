"""Batch work on objects at URLs: finding them lazily, compacting one, skipping what is current.

The twin of ``batch.find_targets`` and ``batch.process`` for inputs or outputs at URLs (and local
inputs whose results go to a URL). Decisions (also in the README):

- Listing is lazy: ``iter_targets`` yields targets as the store pages them, so a prefix of
  millions of keys is never held in memory. The folder rules are those of local folders: hidden
  keys and "folders" (a path segment starting with ``.``) are skipped unless a ``--glob`` pattern
  starts with a dot, and so are the output and snapshot prefixes.
- Two results landing on one output object cannot be found without holding the whole listing,
  so with ``--output-dir`` a run takes one folder or prefix (files named directly are checked as
  for local files); several prefixes need one run each.
- A re-run skips an input whose output is current: each output object carries, in its S3
  metadata, the version (ETag) of the input it was made from and a key of the settings that made
  it (``settings_key``). Finding that costs one HEAD request per file; nothing is read or written.
  On stores that keep no metadata the file is compacted again and an identical local output is
  left untouched.
- ``--in-place`` on object storage keeps the original as for local files: a snapshot first (and
  the ``--backup`` copy), then the new object, only if the object is still the version that was
  read (its ETag is checked just before the write).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path, PurePosixPath

from . import storage
from .batch import DEFAULT_GLOBS, BatchSettings, FileReport, _holds, _matches
from .errors import CtxpackError, IsADirectory, OutputError
from .files import InPlace
from .formats import Conversation, dump, parse
from .pipeline import Context, Outcome, preview, run
from .providers.base import Summarizer
from .providers.registry import ProviderSettings
from .snapshots import session_id_for_file

SOURCE, SETTINGS, TOKENS = "ctxpack-source", "ctxpack-settings", "ctxpack-tokens"


@dataclass(frozen=True)
class ObjectTarget:
    """An input: where it is (a URL or local path), its version, and where its result goes."""

    name: str
    label: str
    destination: str | None = None  # None: in place
    version: str = ""
    size: int = 0


# --- finding the inputs --------------------------------------------------------------------------


def iter_targets(
    names: Sequence[str],
    recursive: bool,
    globs: Sequence[str] = DEFAULT_GLOBS,
    output_dir: str | None = None,
    skip: Sequence[str] = (),
) -> Iterator[ObjectTarget]:
    """The objects named, and the matching ones under the prefixes named, as they are listed."""
    folders = [name for name in names if storage.kind(name) == "directory"]
    for name in folders if not recursive else ():
        raise IsADirectory(f"{name}: is a directory")
    if output_dir is not None and folders and len(names) > 1:
        raise OutputError(
            f"{folders[0]}: with --output-dir, give one folder or prefix per run: results of "
            "several could collide, which cannot be checked without listing them all first"
        )
    skipped = tuple(_plain(name) + "/" for name in (*skip, *([output_dir] if output_dir else ())))
    claimed: dict[str, str] = {}
    for name in names:
        if name in folders:
            yield from _under(name, globs, output_dir, skipped)
        else:
            destination = _destination(output_dir, PurePosixPath(name).name)
            _claim(claimed, name, destination)
            yield ObjectTarget(name, name, destination)


def _under(
    root: str, globs: Sequence[str], output_dir: str | None, skipped: tuple[str, ...]
) -> Iterator[ObjectTarget]:
    for relative, info in storage.walk(root):
        *folders, base = relative.split("/")
        if any(folder.startswith(".") for folder in folders):
            continue
        if not any(_matches(base, pattern) for pattern in globs):
            continue
        if _plain(info.name).startswith(skipped):
            continue
        destination = _destination(output_dir, relative)
        yield ObjectTarget(info.name, info.name, destination, info.version, info.size)


def _destination(output_dir: str | None, relative: str) -> str | None:
    return storage.join(output_dir, relative) if output_dir is not None else None


def _claim(claimed: dict[str, str], name: str, destination: str | None) -> None:
    if destination is None:
        return
    if _plain(destination) == _plain(name):
        raise OutputError(f"{name}: its output would overwrite it: use --in-place instead")
    if destination in claimed:
        raise OutputError(
            f"{destination}: would hold the results of both {claimed[destination]} and {name}: "
            "compact them into different output folders"
        )
    claimed[destination] = name


def _plain(name: str) -> str:
    """A name to compare prefixes with: URLs as written, local paths made absolute."""
    return name.rstrip("/") if storage.is_url(name) else str(Path(name).absolute())


# --- knowing a result is current -----------------------------------------------------------------


def settings_key(settings: BatchSettings, provider: ProviderSettings) -> str:
    """What decides the bytes of a result: ctxpack's version, the job, the provider (no key)."""
    try:
        release = version("ctxpack")
    except PackageNotFoundError:
        release = "unknown"
    who = (provider.name, provider.model, provider.base_url, provider.command)
    text = repr((release, settings.job, settings.writing.pretty, who))
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _current(target: ObjectTarget, key: str) -> FileReport | None:
    """The report of a skipped input, if its output is current; None if it must be done."""
    record = storage.metadata(target.destination or target.name)
    if record.get(SETTINGS) != key:
        return None
    if target.destination is not None and record.get(SOURCE) != target.version:
        return None  # the input changed since its output was made
    before, _, after = record.get(TOKENS, "").partition(" ")
    return FileReport(
        target.label,
        skipped=True,
        tokens_before=int(before) if before.isdigit() else None,
        tokens_after=int(after) if after.isdigit() else None,
    )


def _record(source_version: str, key: str, outcome: Outcome) -> dict[str, str]:
    tokens = f"{outcome.tokens_before} {outcome.tokens_after}"
    return {SOURCE: source_version, SETTINGS: key, TOKENS: tokens}


# --- doing one -----------------------------------------------------------------------------------


def process_object(
    target: ObjectTarget, settings: BatchSettings, provider: Summarizer | None, key: str
) -> FileReport:
    """Compact one object and write the result; every failure becomes part of the report."""
    try:
        if not target.version:  # named directly, not listed: ask for its version first
            target = replace(target, version=storage.stat(target.name).version)
        if (skipped := _current(target, key)) is not None:
            return skipped
        data = storage.read(target.name)
        conversation = parse(data, target.label)
        if settings.dry_run:
            return FileReport.of(target.label, preview(settings.job, conversation))
        session = session_id_for_file(Path(PurePosixPath(target.name).name))
        context = Context(provider, settings.writing.snapshots, session)
        outcome = run(settings.job, conversation, context)
        _write(target, data, conversation, outcome, settings.writing, key)
        return FileReport.of(target.label, outcome)
    except CtxpackError as error:
        return FileReport(target.label, error=error)


def _write(
    target: ObjectTarget,
    data: bytes,
    original: Conversation,
    outcome: Outcome,
    writing: InPlace,
    key: str,
) -> None:
    result = dump(outcome.conversation, writing.pretty) if outcome.changed else data
    if target.destination is not None:
        if storage.is_url(target.destination) or not _holds(Path(target.destination), result):
            record = _record(target.version, key, outcome)
            storage.write(target.destination, result, record)
        return
    if not outcome.changed:
        return
    if writing.snapshots is not None and not outcome.snapshots:
        writing.snapshots.save(session_id_for_file(Path(target.label)), original.messages)
    if writing.backup_suffix:
        storage.write(target.name + writing.backup_suffix, data)
    if storage.stat(target.name).version != target.version:
        raise OutputError(f"{target.label}: file changed while it was being compacted, left as is")
    storage.write(target.name, result, _record(target.version, key, outcome))
