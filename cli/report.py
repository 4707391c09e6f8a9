"""What the compacting commands say on stderr (and, with ``--json``, on stdout) about each input."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import click

from compactor_core.compaction.outcome import Report
from compactor_core.compaction.status import Status
from compactor_core.conversation.formats import dumps
from compactor_core.errors import SessionInUse

from . import io
from .exit_codes import ExitStatus, error_line, in_flag_words, status_for


def warnings_of(report: Report, command: str, threshold: int, strict: bool) -> list[ExitStatus]:
    """Warn of a failed summary or a result still too big; return the statuses they call for."""
    outcome = report.outcome
    statuses = []
    for line in outcome.left:  # rescue: the file still will not open
        io.warn(f"{report.label}: not repaired: {line}")
        statuses.append(ExitStatus.PROBLEMS_LEFT)
    if outcome.error is not None:
        kept = "micro-compacted result kept" if command == "auto" else "input left as it was"
        io.warn(f"{report.label}: summary failed, {kept}: {in_flag_words(str(outcome.error))}")
        if strict:
            statuses.append(status_for(outcome.error))
    if outcome.cut_off is not None:
        io.warn(f"{report.label}: summary kept, but {in_flag_words(str(outcome.cut_off))}")
    if outcome.over_threshold:
        io.warn(
            f"{report.label}: still {outcome.tokens_after} tokens after compaction, over the "
            f"threshold of {threshold}: the system messages, the pending turn and the "
            "summary are kept whole and do not fit"
        )
        if strict:
            statuses.append(ExitStatus.PROVIDER_FAILED)
    return statuses


def repair_lines(report: Report, command: str, dry_run: bool) -> None:
    """rescue: a line for each repair made (or, in a dry run, that would be)."""
    outcome = report.outcome
    if command == "rescue" and not (outcome.repairs or outcome.left or report.error):
        io.warn(f"{report.label}: nothing to repair")
    verb = "would repair" if dry_run else "repaired"
    for line in outcome.repairs:
        io.warn(f"{report.label}: {verb}: {line}")


def rescue_verdict(report: Report) -> list[ExitStatus]:
    """rescue ends with check's verdict on the file it wrote: each problem still there (exit 1),
    or that there is none, so that its exit status is true."""
    from .agents import check_file

    found = check_file(report.label)["problems"]
    for problem in found:
        io.warn(
            f"{report.label}: check after rescue: line {problem['line']}: {problem['kind']}: "
            f"{problem['detail']}"
        )
    if not found:
        io.warn(f"{report.label}: check after rescue: healthy")
    return [ExitStatus.PROBLEMS_LEFT] if found else []


def stats_line(report: Report) -> str:
    outcome = report.outcome
    parts = [f"{len(outcome.repairs)} repairs"] if outcome.repairs else []
    parts.append(f"{outcome.truncated} tool results truncated")
    if outcome.images:
        parts.append(f"{outcome.images} images replaced")
    if outcome.full != Status.NOT_RUN:
        cut_off = " (cut off at max_tokens)" if outcome.cut_off else ""
        parts.append(f"summary: {outcome.full}{cut_off}")
    most = "at most " if outcome.full == Status.WOULD_RUN else ""  # a dry run asks no model
    parts.append(f"tokens {outcome.tokens_before} -> {most}{outcome.tokens_after}")
    return f"{report.label}: " + ", ".join(parts)


def in_use(report: Report) -> bool:
    """Skipped, not failed: an agent is using the session file (exit 75: try again later)."""
    return isinstance(report.error, SessionInUse)


def _failed(report: Report) -> bool:
    return report.error is not None and not in_use(report)


def summary_line(done: list[Report], total: int, dry_run: bool) -> str:
    ok = [report for report in done if not report.error]
    changed = sum(report.changed for report in done)
    failed = sum(map(_failed, done))
    before = sum(report.outcome.tokens_before or 0 for report in ok)
    after = sum(report.outcome.tokens_after or 0 for report in ok)
    verb = "would change" if dry_run else "changed"
    most = "at most " if any(report.outcome.full == Status.WOULD_RUN for report in done) else ""
    line = f"{total} files, {changed} {verb}, {failed} failed, tokens {before} -> {most}{after}"
    skipped = sum(report.skipped for report in done)
    if skipped:
        line += f", {skipped} skipped (output already current)"
    busy = sum(map(in_use, done))
    if busy:
        line += f", {busy} skipped (in use by their agent: see --force)"
    summaries_failed = _summaries_failed(done)
    if summaries_failed:  # done, but not summarized: without --strict they count as no failure
        line += f", {len(summaries_failed)} summaries failed: {_some(summaries_failed)}"
    if len(done) < total:
        line += f" ({total - len(done)} not done)"
    return line


def _summaries_failed(done: list[Report]) -> list[str]:
    return sorted(report.label for report in done if report.outcome.error is not None)


def _some(labels: list[str], most: int = 5) -> str:
    """The first few labels: each one also had its own warning line."""
    shown = ", ".join(labels[:most])
    return shown if len(labels) <= most else f"{shown} and {len(labels) - most} more"


def write_json(done: list[Report], total: int, dry_run: bool) -> None:
    """``--json``: the run's report on stdout, one JSON object."""
    table = _json_report(done, total, dry_run)
    io.write_stdout(dumps(table) + b"\n")


def _json_report(done: list[Report], total: int, dry_run: bool) -> dict[str, Any]:
    return {
        "files": total,
        "done": len(done),
        "changed": sum(report.changed for report in done),
        "failed": sum(map(_failed, done)),
        "skipped": sum(report.skipped or in_use(report) for report in done),
        "in_use": sum(map(in_use, done)),
        "summaries_failed": len(_summaries_failed(done)),
        "dry_run": dry_run,
        "tokens_before": sum(report.outcome.tokens_before or 0 for report in done),
        "tokens_after": sum(report.outcome.tokens_after or 0 for report in done),
        "results": [_json_result(report) for report in sorted(done, key=lambda r: r.label)],
    }


def _json_result(report: Report) -> dict[str, Any]:
    outcome = report.outcome
    return {
        "path": report.label,
        "changed": report.changed,
        "error": error_line(report.error) if _failed(report) else None,
        "summary": outcome.full,
        "summary_error": str(outcome.error) if outcome.error else None,
        "summary_cut_off": outcome.cut_off is not None,
        "truncated": outcome.truncated,
        "skipped": report.skipped or in_use(report),
        "in_use": error_line(report.error) if in_use(report) else None,  # why it was skipped
        "tokens_before": outcome.tokens_before,
        "tokens_after": outcome.tokens_after,
    }


def with_progress(reports: Iterator[Report], total: int | None) -> Iterator[Report]:
    """The reports, with a progress bar on stderr when it is a terminal and the total known."""
    if total is None or total < 2 or not sys.stderr.isatty():
        yield from reports
        return
    with click.progressbar(length=total, file=sys.stderr, label="compacting") as bar:
        for report in reports:
            bar.update(1)
            yield report
