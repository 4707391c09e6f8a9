"""``ctxpack check`` and ``ctxpack sessions``: the agents' session files, read only (SPEC §8.3)."""

from __future__ import annotations

import os
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from compactor_core.conversation.formats import dumps
from compactor_core.ends.documents import open_document
from compactor_core.ends.session_documents import SessionDocument
from compactor_core.errors import InputError
from compactor_core.session_files.check import check_report
from compactor_core.session_files.listing import list_sessions
from compactor_core.session_files.registry import agent_formats

from . import io, options
from .exit_codes import ExitStatus, combined, for_each_input, in_flag_words

if TYPE_CHECKING:
    from compactor_core.session_files.base import AgentFormat

# The agents whose sessions ctxpack finds (each format's ``agent``; a test checks the registry).
AGENTS = ("claude", "codex", "gemini", "qwen", "pi", "copilot", "cline", "opencode")

# --- check ---------------------------------------------------------------------------------------


@click.command(
    epilog=options.epilog(
        "ctxpack check ~/.claude/projects/-home-me-app/SESSION.jsonl",
        "ctxpack check --json rollout-*.jsonl | jq .problems",
    )
)
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@options.format_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object per file, for scripts.")
def check(files: tuple[str, ...], format_name: str, as_json: bool) -> None:
    """Check session files (and conversations) for damage; exit 1 if any problem is found.

    Read only. Problems break or change what the agent resumes: torn or invalid lines, records
    of another format, and in what the resume reads, parents that are in no record, parent
    links that loop, shared ids, tool results without their call and calls without their
    result. Notes (exit 0) are the same found where the resume does not look.
    """

    def check_one(name: str) -> list[ExitStatus]:
        report = check_file(name, format_name)
        if as_json:
            io.write_stdout(dumps(report) + b"\n")
        else:
            io.write_stdout("".join(line + "\n" for line in _check_lines(report)).encode())
        return [ExitStatus.NOT_OVER] if report["problems"] else []

    failures = for_each_input(io.each_session(files), check_one)
    if failures:
        sys.exit(combined(failures))


def check_file(name: str, format_name: str = "auto") -> dict[str, Any]:
    """What ``ctxpack check`` finds in one file (its report, as ``--json`` prints it)."""
    with open_document(io.source_of(name), format_name) as document:
        if isinstance(document, SessionDocument):
            return check_report(document.handle, document.format, document.label)
        report: dict[str, Any] = {"file": document.label, "format": "messages"}
        report["bytes"] = len(document.data)
        try:
            tokens = document.tokens()
        except InputError as error:
            problem = {"line": 0, "kind": "invalid", "detail": str(error)}
            return {**report, "problems": [problem], "notes": []}
        messages = len(document.conversation.messages)
        return {**report, "messages": messages, "tokens": tokens, "problems": [], "notes": []}


def _check_lines(report: dict[str, Any]) -> list[str]:
    label = report["file"]
    parts = [report["format"], f"{report['bytes']} bytes"]
    if "records" in report:
        parts.append(f"{report['records']} records")
        parts.append(f"view: {report['view_messages']} messages, {report['tokens']} tokens")
    elif "tokens" in report:
        parts.append(f"{report['messages']} messages, {report['tokens']} tokens")
    found, notes = report["problems"], report.get("notes", [])
    verdict = _count(len(found), "problem") if found else "healthy"
    if notes:
        verdict += f", {_count(len(notes), 'note')}"
    lines = [f"{label}: {', '.join(parts)}: {verdict}"]
    for finding in sorted(found + notes, key=lambda finding: finding["line"]):
        place = f"line {finding['line']}: " if finding["line"] else ""
        note = "note: " if finding in notes else ""
        lines.append(f"{label}: {place}{note}{finding['kind']}: {finding['detail']}")
    return lines


def _count(number: int, what: str) -> str:
    return f"{number} {what}{'s' * (number != 1)}"


# --- sessions ------------------------------------------------------------------------------------


@click.command(
    epilog=options.epilog(
        "ctxpack sessions --over 100000                 # the ones worth shrinking",
        "ctxpack sessions --agent codex --json",
    )
)
@click.option(
    "--agent",
    type=click.Choice(AGENTS),
    help="Only this agent's sessions [default: every agent's].",
)
@click.option(
    "--over",
    type=click.IntRange(min=0),
    metavar="TOKENS",
    help="Only sessions whose conversation is estimated at more than TOKENS.",
)
@options.min_idle_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object per session, for scripts.")
def sessions(agent: str | None, over: int | None, min_idle: float, as_json: bool) -> None:
    """List the agents' sessions on this machine, newest first.

    Each agent's from its own home: $CLAUDE_CONFIG_DIR (default ~/.claude), $CODEX_HOME
    (~/.codex), $GEMINI_CLI_HOME (~, its .gemini), $QWEN_HOME (~/.qwen), $PI_CODING_AGENT_DIR
    (~/.pi/agent), $COPILOT_HOME (~/.copilot), $CLINE_DIR (~/.cline), $XDG_DATA_HOME
    (~/.local/share, its opencode/opencode.db: each session a row, DB#SESSION). A row: agent,
    id, project, size, estimate, last change, in use, path.
    """
    found = list_sessions(agent_homes(agent), time.time(), min_idle)
    if over is not None:
        found = [entry for entry in found if entry.tokens is not None and entry.tokens > over]
    if as_json:
        for entry in found:
            row = {
                "agent": entry.agent,
                "id": entry.session_id,
                "project": entry.project,
                "path": str(entry.path),
                "bytes": entry.size,
                "tokens": entry.tokens,
                "modified": datetime.fromtimestamp(entry.mtime).astimezone().isoformat(),
                "in_use": entry.in_use is not None,
                # why it is in use (null when it is not)
                "in_use_reason": entry.in_use and in_flag_words(entry.in_use),
            }
            io.write_stdout(dumps(row) + b"\n")
        return
    rows = [["AGENT", "ID", "PROJECT", "SIZE", "TOKENS", "CHANGED", "IN USE", "PATH"]]
    for entry in found:
        rows.append(
            [
                entry.agent,
                entry.session_id,
                entry.project,
                _size(entry.size),
                "?" if entry.tokens is None else str(entry.tokens),
                datetime.fromtimestamp(entry.mtime).strftime("%Y-%m-%d %H:%M"),
                "yes" if entry.in_use else "no",
                str(entry.path),
            ]
        )
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]) - 1)]
    text = "".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
        + "  "
        + row[-1]
        + "\n"
        for row in rows
    )
    io.write_stdout(text.encode())


def agent_homes(agent: str | None = None) -> list[tuple[AgentFormat, Path]]:
    """Each agent's format and its home folder, from its variable (else the default under ~);
    only ``agent``'s where one is named."""
    return [
        (each, _home(each.home_variable, each.home_default))
        for each in agent_formats()
        if agent in (None, each.agent)
    ]


def _home(variable: str, default: str) -> Path:
    value = os.environ.get(variable)
    return Path(value) if value else Path.home() / default


def _size(size: int) -> str:
    if size < 1024:
        return f"{size}B"
    value = size / 1024
    for unit in ("K", "M"):
        if value < 1024:
            return f"{value:.1f}{unit}"
        value /= 1024
    return f"{value:.1f}G"
