"""``micro``, ``full`` and ``auto`` over the inputs: the options become the core's settings, each
input a target, and every target goes through the core's one path (``process``).

Standard input and single files stream to stdout (or ``-o``), one after the other.
``--in-place`` and ``--output-dir`` make the run a batch over files, folders and URLs, which the
core's engines do in parallel (local processes or threads, or a Dask cluster).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import click

from compactor_core import defaults, run_request
from compactor_core.compaction.outcome import Report
from compactor_core.compaction.pipeline import summarizer_of
from compactor_core.ends.destinations import Destination, ToFile, ToObject, ToStream
from compactor_core.ends.urls import is_url
from compactor_core.process import Target, process
from compactor_core.settings import Command, RunSettings, Settings

from . import io, report, resolve
from .exit_codes import ExitStatus, combined, for_each_input, status_for, warn

if TYPE_CHECKING:
    from compactor_core.batch.engines import Engine


@dataclass(frozen=True)
class Output:
    """Where results go and what is said about them, from the shared options."""

    output: str | None = None
    in_place: bool = False
    backup: str | None = None
    output_dir: str | None = None
    stats: bool = False
    strict: bool = False
    recursive: bool = False
    globs: tuple[str, ...] = ()
    dry_run: bool = False
    fail_fast: bool = False
    json_report: bool = False

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> Output:
        return cls(
            output=options["output"],
            in_place=options["in_place"],
            backup=options["backup"],
            output_dir=options["output_dir"],
            stats=options["stats"],
            strict=options.get("strict", False),
            recursive=options["recursive"],
            globs=tuple(options["globs"]),
            dry_run=options["dry_run"],
            fail_fast=options["fail_fast"],
            json_report=options["json_report"],
        )

    @property
    def is_batch(self) -> bool:
        return self.in_place or self.output_dir is not None

    @property
    def measures(self) -> bool:
        """Whether the tokens before and after are counted: for ``--stats``, and for a batch's
        summary line, ``--json`` and dry run."""
        return self.stats or (self.is_batch and (self.json_report or self.dry_run))


def compact(command: Command, files: tuple[str, ...], options: dict[str, Any]) -> None:
    """micro, full or auto: every option resolved once, then the core does each input."""
    resolver = resolve.resolver(options)
    summarizing = command != "micro"
    settings = resolve.settings(options, resolver, summarizing)
    out = Output.from_options(options)
    told = run_settings(command, settings, resolver, options, out)
    compact_inputs(files, told, out, options, resolver)


def run_settings(
    command: Command,
    settings: Settings,
    resolver: resolve.Resolver,
    options: dict[str, Any],
    out: Output,
) -> RunSettings:
    """What the run is told: its command and settings, who summarizes, what the shared options
    say (the core adds the stores: ``run_request.resolve``)."""
    return RunSettings(
        command,
        settings,
        provider=resolver.provider() if command != "micro" else None,
        session_id=resolver.get("session_id"),
        measure=out.measures,
        pretty=options["pretty"],
        backup_suffix=options["backup"],
        dry_run=options["dry_run"],
        format=options["format_name"],
        min_idle=options["min_idle"],
        force=options["force"],
        now=datetime.now(UTC),
    )


def compact_inputs(
    files: tuple[str, ...],
    told: RunSettings,
    out: Output,
    options: dict[str, Any],
    resolver: resolve.Resolver,
) -> None:
    """Do the run over every input; a failed input is reported and the rest go on."""
    names = io.input_names(files)
    _check(names, out)
    io.set_directory_hint(_directory_hint(out))
    engine = engine_of(options) if out.is_batch else None
    keeps = told.may_summarize or out.is_batch  # only a summary or a rewrite saves a snapshot
    run = run_request.resolve(
        told,
        tools=resolver.config.get(defaults.TOOLS_TABLE),
        config_path=resolver.file_of(defaults.TOOLS_TABLE),
        keeps_snapshots=keeps and not options["no_snapshot"],
        snapshot_dir=resolver.get("snapshot_dir"),
        state_home=resolver.environ.get("XDG_STATE_HOME"),
        home=resolver.environ.get("HOME"),
    )
    if engine is not None:
        _batch(names, run, out, engine)
    else:
        _stream(names, run, out)


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


# --- one input after the other, to stdout or -o --------------------------------------------------


def _stream(names: tuple[str, ...], run: RunSettings, out: Output) -> None:
    io.one_pass()
    io.end_at_once()  # one input after the other in this process: nothing to tear down
    destination = _stream_destination(out.output)
    copies = _CopyNote(run)
    summarizer = summarizer_of(run)  # one for every input, built once a summary is asked of it

    def one(name: str) -> list[ExitStatus]:
        done = process(Target(io.source_of(name), destination), run, summarizer)
        if done.error is not None:
            raise done.error
        statuses = report.warnings_of(done, run.command, _threshold(run), out.strict)
        copies.tell(done)
        if out.stats:
            io.warn(report.stats_line(done))
            for path in done.outcome.snapshots:
                io.warn(f"{done.label}: snapshot saved: {path}")
        return statuses

    _exit_for(for_each_input(names, one))


def _stream_destination(output: str | None) -> Destination:
    if output is None or output == io.STDIN:
        return ToStream(io.write_stdout_chunks, terminal=io.stdout_is_a_terminal())
    if is_url(output):
        return ToObject(output)
    from pathlib import Path  # here: pathlib takes 4 ms to import, a filter to stdout needs none

    return ToFile(Path(output))


def _threshold(run: RunSettings) -> int:
    return run.settings.threshold


# --- batches -------------------------------------------------------------------------------------


def _batch(names: tuple[str, ...], run: RunSettings, out: Output, engine: Engine) -> None:
    from compactor_core.batch.start import start_batch  # the engines: only for a batch

    listing = {"recursive": out.recursive, "globs": out.globs, "output_dir": out.output_dir}
    batch = start_batch(names, run, engine, **listing)
    stop = threading.Event()  # --fail-fast: start nothing more, report what is in progress
    reports = report.with_progress(batch.reports(stop), batch.total)
    _report(reports, batch.total, run, out, stop)


def _report(
    reports: Iterator[Report],
    total: int | None,
    run: RunSettings,
    out: Output,
    stop: threading.Event,
) -> None:
    """Warn of each failure as it comes, then the summary line (and ``--json``) and the exit.

    ``total`` is None when the inputs are listed as they are done: then all of them were done.
    """
    done: list[Report] = []
    failures: list[ExitStatus] = []
    copies = _CopyNote(run)
    for each in reports:
        done.append(each)
        copies.tell(each)
        report.repair_lines(each, run.command, out.dry_run)
        if each.error:
            statuses = [status_for(each.error)]
        else:
            statuses = report.warnings_of(each, run.command, _threshold(run), out.strict)
            if run.command == "rescue" and each.outcome.repairs and not (out.dry_run or statuses):
                statuses = report.rescue_verdict(each)
        if each.warning:
            io.warn(each.warning)
        if each.error:
            warn(each.error)
        elif out.stats:
            io.warn(report.stats_line(each))
        failures.extend(statuses)
        if statuses and out.fail_fast and not report.in_use(each):  # a skip is no failure
            stop.set()
    listed = total is None
    total = len(done) if total is None else total
    if total > 1 or out.stats or out.dry_run:
        stopped = " (stopped: the rest not started)" if listed and stop.is_set() else ""
        io.warn(report.summary_line(done, total, out.dry_run) + stopped)
    status = combined(failures)
    if out.json_report:
        report.write_json(done, total, out.dry_run)
    if failures:
        sys.exit(status)


class _CopyNote:
    """Says once a run that originals are copied into the snapshot folder, not hard-linked."""

    def __init__(self, run: RunSettings) -> None:
        self.location = run.snapshots.location if run.snapshots else ""
        self.told = False

    def tell(self, done: Report) -> None:
        if done.copied and not self.told:
            self.told = True
            io.warn(
                f"{done.label}: its original was copied into {self.location}, not hard-linked "
                f"({done.copied}); so are the others of this run that cannot be linked"
            )


def engine_of(options: dict[str, Any]) -> Engine:
    """Where a batch runs, from ``--engine``, ``--scheduler``, ``-j`` and ``--max-concurrency``."""
    from compactor_core.batch.engines import Engine

    engine, scheduler = options.get("engine"), options.get("scheduler")
    if scheduler is not None and engine == "local":
        raise click.UsageError("cannot use --scheduler with --engine local")
    kind = "dask" if engine == "dask" or scheduler is not None else "local"
    workers = options.get("jobs") or os.cpu_count() or 1
    return Engine(kind, workers, options.get("max_concurrency", 8), scheduler)


def _exit_for(failures: list[ExitStatus]) -> None:
    if failures:
        sys.exit(combined(failures))
