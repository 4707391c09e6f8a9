"""Running micro, full or auto over the inputs, and writing each result where the options say.

Standard input and single files stream to stdout (or ``-o``). ``--in-place`` and ``--output-dir``
turn the run into a batch over files and folders, done in parallel by the core's batch module.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from compactor_core import defaults, pipeline
from compactor_core.agents.in_place import SessionSettings
from compactor_core.atomic import atomic_write
from compactor_core.batch import (
    DEFAULT_GLOBS,
    BatchSettings,
    FileReport,
    clean_up_after_killed_runs,
    find_targets,
    run_batch,
)
from compactor_core.files import InPlace
from compactor_core.formats import dump, dumps
from compactor_core.providers.base import Summarizer
from compactor_core.providers.registry import ProviderSettings, build_provider
from compactor_core.snapshots import SnapshotStore, check_session_id
from compactor_core.status import Status
from compactor_core.storage import ObjectSnapshotStore, is_url, snapshot_store, write

from . import agent_files, io, scale
from .exit_codes import ExitStatus, combined, for_each_input, status_for


@dataclass(frozen=True)
class Output:
    """Where results go and what is reported, from the shared options."""

    output: str | None = None
    in_place: bool = False
    output_dir: str | None = None
    pretty: bool = False
    backup: str | None = None
    stats: bool = False
    strict: bool = False
    snapshots: SnapshotStore | ObjectSnapshotStore | None = None
    session_id: str = defaults.SESSION_ID
    recursive: bool = False
    globs: tuple[str, ...] = DEFAULT_GLOBS
    jobs: int | None = None
    max_concurrency: int = defaults.MAX_CONCURRENCY
    dry_run: bool = False
    fail_fast: bool = False
    json_report: bool = False
    sessions: SessionSettings = field(default_factory=SessionSettings)  # agents' session files
    engine: str | None = None  # local | dask; None: local, or dask when a scheduler is named
    scheduler: str | None = None

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> Output:
        snapshots = None
        if not options["no_transcript"]:
            snapshots = snapshot_store(options["transcript_dir"])
        return cls(
            output=options["output"],
            in_place=options["in_place"],
            output_dir=options["output_dir"],
            pretty=options["pretty"],
            backup=options["backup"],
            stats=options["stats"],
            strict=options.get("strict", False),
            snapshots=snapshots,
            session_id=check_session_id(options["session_id"]),
            recursive=options["recursive"],
            globs=tuple(options["globs"]) or DEFAULT_GLOBS,
            jobs=options["jobs"],
            max_concurrency=options.get("max_concurrency", defaults.MAX_CONCURRENCY),
            dry_run=options["dry_run"],
            fail_fast=options["fail_fast"],
            json_report=options["json_report"],
            sessions=SessionSettings(
                options["format_name"],
                options["min_idle"],
                options["force"],
                now=datetime.now(UTC),
            ),
            engine=options.get("engine"),
            scheduler=options.get("scheduler"),
        )

    @property
    def is_batch(self) -> bool:
        return self.in_place or self.output_dir is not None


def transform(
    files: tuple[str, ...], job: pipeline.Job, out: Output, provider: ProviderSettings
) -> None:
    """Run ``job`` over every input; a failed input is reported and the rest go on."""
    names = io.input_names(files)
    _check(names, out)
    io.set_directory_hint(_directory_hint(out))
    if out.is_batch:
        _batch(names, job, out, provider)
    else:
        _stream(names, replace(job, measure=out.stats), out, provider)


def _check(names: tuple[str, ...], out: Output) -> None:
    conflicts = [
        (out.in_place and out.output_dir is not None, "--in-place and --output-dir"),
        (out.is_batch and out.output is not None, "--output and --in-place or --output-dir"),
        (out.backup is not None and not out.in_place, "--backup without --in-place"),
        (out.dry_run and not out.is_batch, "--dry-run without --in-place or --output-dir"),
        (out.is_batch and io.STDIN in names, "standard input with --in-place or --output-dir"),
        (out.output is not None and len(names) > 1, "--output with several inputs"),
    ]
    for conflict, what in conflicts:
        if conflict:
            raise click.UsageError(f"cannot use {what}")


def _directory_hint(out: Output) -> str:
    """The flags a folder among the inputs still needs, given those already there."""
    if out.is_batch:
        return "add -r/--recursive"
    if out.recursive:
        return "-r needs --in-place or --output-dir"
    return "add -r with --in-place or --output-dir"


# --- streaming to stdout -------------------------------------------------------------------------


def _stream(
    names: tuple[str, ...], job: pipeline.Job, out: Output, provider_settings: ProviderSettings
) -> None:
    provider = build_provider(provider_settings) if job.command != "micro" else None
    _exit_for(for_each_input(names, lambda name: _stream_one(name, job, out, provider)))


def _stream_one(
    name: str, job: pipeline.Job, out: Output, provider: Summarizer | None
) -> list[ExitStatus]:
    """Compact one input onto stdout (or ``-o``); return the statuses its warnings call for."""
    with agent_files.opened(name, out.sessions.format) as given:
        if isinstance(given, agent_files.Opened):  # an agent's session file
            report = agent_files.stream(given, job, out.sessions, provider, out.output)
            snapshots: tuple[Path, ...] = ()
        else:
            report, snapshots = _stream_messages(given, name, job, out, provider)
    statuses = _warn(report, job, out)
    if out.stats:
        io.warn(_stats_line(report))
        for path in snapshots:
            io.warn(f"{report.label}: snapshot saved: {path}")
    return statuses


def _stream_messages(
    given: io.Input, name: str, job: pipeline.Job, out: Output, provider: Summarizer | None
) -> tuple[FileReport, tuple[Path, ...]]:
    source = None if name == io.STDIN else Path(name)
    context = pipeline.Context(provider, out.snapshots, out.session_id, given.data, source)
    outcome = pipeline.run(job, given.parse(), context)
    data = dump(outcome.conversation, out.pretty)
    if out.output and out.output != io.STDIN:
        (write if is_url(out.output) else atomic_write)(out.output, data)
    else:
        io.write_stdout(data)
    return FileReport.of(io.label(name), outcome), outcome.snapshots


# --- batches -------------------------------------------------------------------------------------


def _batch(
    names: tuple[str, ...], job: pipeline.Job, out: Output, provider: ProviderSettings
) -> None:
    stop = threading.Event()  # --fail-fast: start nothing more, report what is in progress
    if scale.wanted(names, out):  # URLs or a Dask cluster: the inputs are listed as they go
        settings = _batch_settings(job, out, many_files=True)
        _report(scale.reports(names, settings, provider, out, stop), None, job, out, stop)
        return
    output_dir = Path(out.output_dir) if out.output_dir else None
    skip = [out.snapshots.directory] if out.snapshots else []
    targets = find_targets(names, out.recursive, out.globs, output_dir, skip)
    if not out.dry_run:  # a dry run writes (and deletes) nothing
        clean_up_after_killed_runs(targets, skip)
    settings = _batch_settings(job, out, many_files=len(targets) > 1)
    reports = run_batch(
        targets, settings, provider, out.jobs or os.cpu_count() or 1, out.max_concurrency, stop
    )
    _report(_with_progress(reports, len(targets)), len(targets), job, out, stop)


def _batch_settings(job: pipeline.Job, out: Output, many_files: bool) -> BatchSettings:
    """Estimates before and after are made only when someone will see them."""
    measure = out.stats or out.json_report or out.dry_run or many_files
    return BatchSettings(
        replace(job, measure=measure),
        InPlace(out.pretty, out.backup, out.snapshots),
        out.dry_run,
        out.sessions,
    )


def _report(
    reports: Iterator[FileReport],
    total: int | None,
    job: pipeline.Job,
    out: Output,
    stop: threading.Event,
) -> None:
    """Warn of each failure as it comes, then the summary line (and ``--json``) and the exit.

    ``total`` is None when the inputs are listed as they are done: then all of them were done.
    """
    done: list[FileReport] = []
    failures: list[ExitStatus] = []
    for report in reports:
        done.append(report)
        statuses = [status_for(report.error)] if report.error else _warn(report, job, out)
        if report.warning:
            io.warn(report.warning)
        if report.error:
            io.warn(io.error_line(report.error))
        elif out.stats:
            io.warn(_stats_line(report))
        failures.extend(statuses)
        if statuses and out.fail_fast:
            stop.set()
    listed = total is None
    total = len(done) if total is None else total
    if total > 1 or out.stats or out.dry_run:
        stopped = " (stopped: the rest not started)" if listed and stop.is_set() else ""
        io.warn(_summary_line(done, total, out.dry_run) + stopped)
    if out.json_report:
        io.write_stdout(dumps(_json_report(done, total, out.dry_run)) + b"\n")
    _exit_for(failures)


def _with_progress(reports: Iterator[FileReport], total: int) -> Iterator[FileReport]:
    if not sys.stderr.isatty() or total < 2:
        yield from reports
        return
    with click.progressbar(length=total, file=sys.stderr, label="compacting") as bar:
        for report in reports:
            bar.update(1)
            yield report


# --- reporting -----------------------------------------------------------------------------------


def _warn(report: FileReport, job: pipeline.Job, out: Output) -> list[ExitStatus]:
    """Warn of a failed summary or a result still too big; return the statuses they call for."""
    statuses = []
    if report.summary_error is not None:
        kept = "micro-compacted result kept" if job.command == "auto" else "input left as it was"
        io.warn(f"{report.label}: summary failed, {kept}: {report.summary_error}")
        if out.strict:
            statuses.append(status_for(report.summary_error))
    if report.summary_cut_off is not None:
        io.warn(f"{report.label}: summary kept, but {report.summary_cut_off}")
    if report.over_threshold:
        io.warn(
            f"{report.label}: still {report.tokens_after} tokens after compaction, over the "
            f"threshold of {job.settings.threshold}: the system messages, the pending turn and the "
            "summary are kept whole and do not fit"
        )
        if out.strict:
            statuses.append(ExitStatus.PROVIDER_FAILED)
    return statuses


def _stats_line(report: FileReport) -> str:
    parts = [f"{report.truncated} tool results truncated"]
    if report.summary != Status.NOT_RUN:
        cut_off = " (cut off at max_tokens)" if report.summary_cut_off else ""
        parts.append(f"summary: {report.summary}{cut_off}")
    most = "at most " if report.summary == Status.WOULD_RUN else ""  # a dry run asks no model
    parts.append(f"tokens {report.tokens_before} -> {most}{report.tokens_after}")
    return f"{report.label}: " + ", ".join(parts)


def _summary_line(done: list[FileReport], total: int, dry_run: bool) -> str:
    changed = sum(report.changed for report in done)
    failed = sum(report.error is not None for report in done)
    before = sum(report.tokens_before or 0 for report in done if not report.error)
    after = sum(report.tokens_after or 0 for report in done if not report.error)
    verb = "would change" if dry_run else "changed"
    most = "at most " if any(report.summary == Status.WOULD_RUN for report in done) else ""
    line = f"{total} files, {changed} {verb}, {failed} failed, tokens {before} -> {most}{after}"
    skipped = sum(report.skipped for report in done)
    if skipped:
        line += f", {skipped} skipped (output already current)"
    summaries_failed = _summaries_failed(done)
    if summaries_failed:  # done, but not summarized: without --strict they count as no failure
        line += f", {len(summaries_failed)} summaries failed: {_some(summaries_failed)}"
    if len(done) < total:
        line += f" ({total - len(done)} not done)"
    return line


def _summaries_failed(done: list[FileReport]) -> list[str]:
    return sorted(report.label for report in done if report.summary_error is not None)


def _some(labels: list[str], most: int = 5) -> str:
    """The first few labels: each one also had its own warning line."""
    shown = ", ".join(labels[:most])
    return shown if len(labels) <= most else f"{shown} and {len(labels) - most} more"


def _json_report(done: list[FileReport], total: int, dry_run: bool) -> dict[str, Any]:
    return {
        "files": total,
        "done": len(done),
        "changed": sum(report.changed for report in done),
        "failed": sum(report.error is not None for report in done),
        "skipped": sum(report.skipped for report in done),
        "summaries_failed": len(_summaries_failed(done)),
        "dry_run": dry_run,
        "tokens_before": sum(report.tokens_before or 0 for report in done),
        "tokens_after": sum(report.tokens_after or 0 for report in done),
        "results": [
            {
                "path": report.label,
                "changed": report.changed,
                "error": io.error_line(report.error) if report.error else None,
                "summary": report.summary,
                "summary_error": str(report.summary_error) if report.summary_error else None,
                "summary_cut_off": report.summary_cut_off is not None,
                "truncated": report.truncated,
                "skipped": report.skipped,
                "tokens_before": report.tokens_before,
                "tokens_after": report.tokens_after,
            }
            for report in sorted(done, key=lambda report: report.label)
        ],
    }


def _exit_for(failures: list[ExitStatus]) -> None:
    if failures:
        sys.exit(combined(failures))
