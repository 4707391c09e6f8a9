"""Running micro, full or auto over every input and writing each result where the options say."""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import click

from compactor_core import pipeline
from compactor_core.atomic import atomic_write
from compactor_core.errors import CtxpackError
from compactor_core.files import InPlace, SourceFile, replace_file
from compactor_core.formats import dump, parse
from compactor_core.providers.base import Summarizer
from compactor_core.snapshots import SnapshotStore, check_session_id, session_id_for_file

from . import io
from .exit_codes import ExitStatus, status_for


@dataclass(frozen=True)
class Output:
    """Where results go and what is reported, from the shared output and snapshot options."""

    output: str | None
    in_place: bool
    pretty: bool
    backup: str | None
    stats: bool
    strict: bool
    snapshots: SnapshotStore | None
    session_id: str

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> Output:
        snapshots = None
        if not options["no_transcript"]:
            snapshots = SnapshotStore(Path(options["transcript_dir"]))
        return cls(
            output=options["output"],
            in_place=options["in_place"],
            pretty=options["pretty"],
            backup=options["backup"],
            stats=options["stats"],
            strict=options.get("strict", False),
            snapshots=snapshots,
            session_id=check_session_id(options["session_id"]),
        )


def transform(
    files: tuple[str, ...], job: pipeline.Job, out: Output, provider: Summarizer | None = None
) -> None:
    """Run ``job`` over every input; a failed file is reported and the rest go on."""
    names = io.input_names(files)
    _check(names, out)
    job = replace(job, measure=out.stats)
    failures: list[ExitStatus] = []
    for name in names:
        try:
            outcome = _one(name, job, out, provider)
        except CtxpackError as error:
            if len(names) == 1:
                raise
            io.warn(str(error))
            failures.append(status_for(error))
            continue
        failures.extend(_report(name, outcome, job, out))
    if failures:
        sys.exit(failures[0] if len(set(failures)) == 1 else ExitStatus.NOT_OVER)


def _check(names: tuple[str, ...], out: Output) -> None:
    if out.in_place:
        if out.output:
            raise click.UsageError("--in-place and --output cannot be used together")
        if io.STDIN in names:
            raise click.UsageError("--in-place needs file arguments, not standard input")
    elif out.backup:
        raise click.UsageError("--backup goes with --in-place")
    elif out.output and len(names) > 1:
        raise click.UsageError("--output takes one input; use --in-place for several files")


def _one(
    name: str, job: pipeline.Job, out: Output, provider: Summarizer | None
) -> pipeline.Outcome:
    if out.in_place:
        source = SourceFile.read(Path(name))
        context = pipeline.Context(provider, out.snapshots, session_id_for_file(Path(name)))
        outcome = pipeline.run(job, parse(source.data, name), context)
        if outcome.changed:
            settings = InPlace(out.pretty, out.backup, out.snapshots)
            replace_file(source, outcome.conversation, settings, name, bool(outcome.snapshots))
        return outcome
    context = pipeline.Context(provider, out.snapshots, out.session_id)
    outcome = pipeline.run(job, io.read_input(name).parse(), context)
    data = dump(outcome.conversation, out.pretty)
    if out.output and out.output != io.STDIN:
        atomic_write(Path(out.output), data)
    else:
        io.write_stdout(data)
    return outcome


def _report(
    name: str, outcome: pipeline.Outcome, job: pipeline.Job, out: Output
) -> list[ExitStatus]:
    """Warn about what went wrong with one input; return the exit statuses it calls for."""
    label = "<stdin>" if name == io.STDIN else name
    statuses = []
    if outcome.error is not None:
        kept = "micro-compacted result kept" if job.command == "auto" else "input left as it was"
        io.warn(f"{label}: summary failed, {kept}: {outcome.error}")
        if out.strict:
            statuses.append(status_for(outcome.error))
    if outcome.over_threshold:
        io.warn(
            f"{label}: still over the threshold of {job.threshold} tokens after compaction "
            "(the system messages and the pending turn alone are too big)"
        )
        if out.strict:
            statuses.append(ExitStatus.PROVIDER_FAILED)
    if out.stats:
        io.warn(_stats_line(label, outcome))
        for path in outcome.snapshots:
            io.warn(f"{label}: snapshot saved: {path}")
    return statuses


def _stats_line(label: str, outcome: pipeline.Outcome) -> str:
    parts = [
        f"{outcome.micro.truncated} tool results truncated",
        f"{outcome.micro.chars_removed} chars removed",
    ]
    if outcome.full != "not run":
        parts.append(f"summary: {outcome.full}")
    parts.append(f"tokens {outcome.tokens_before} -> {outcome.tokens_after}")
    return f"{label}: " + ", ".join(parts)
