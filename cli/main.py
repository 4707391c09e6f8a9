"""The ``ctxpack`` commands. Each body resolves options, calls the core, writes the result."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from compactor_core import pipeline
from compactor_core.atomic import atomic_write
from compactor_core.errors import CtxpackError
from compactor_core.files import InPlace, SourceFile, replace_file
from compactor_core.formats import dump, parse
from compactor_core.snapshots import SnapshotStore, check_session_id

from . import io, options
from .exit_codes import TABLE, ExitStatus, status_for


class CtxpackGroup(click.Group):
    """Turns every core error into its exit status and a one-line message, in one place."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except CtxpackError as error:
            io.warn(str(error))
            ctx.exit(status_for(error))
        except BrokenPipeError:
            _silence_stdout()
            ctx.exit(ExitStatus.BROKEN_PIPE)
        except KeyboardInterrupt:
            io.warn("interrupted")
            ctx.exit(ExitStatus.INTERRUPTED)


def _silence_stdout() -> None:
    # Python would complain again when it flushes stdout at exit; point it at /dev/null.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


@click.group(
    cls=CtxpackGroup, epilog=TABLE, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.version_option(package_name="ctxpack")
def cli() -> None:
    """Keep an LLM agent's conversation inside its context window.

    Reads a conversation (a JSON array of messages, a request envelope with a "messages" array,
    or JSONL) from files or standard input and writes it back smaller, in the same shape.
    """


def main() -> None:
    cli(prog_name="ctxpack")


# --- estimate ------------------------------------------------------------------------------------


@cli.command(epilog=TABLE)
@options.files_argument
@options.compat_option
@click.option(
    "--threshold",
    "--over",
    "threshold",
    type=int,
    metavar="N",
    help="Exit 0 if the estimate is greater than N, else 1 (like grep).",
)
@click.option("-q", "--quiet", is_flag=True, help="Print nothing; use with --threshold.")
@click.option("--json", "as_json", is_flag=True, help="Print a breakdown per role and per tool.")
def estimate(
    files: tuple[str, ...], compat: str, threshold: int | None, quiet: bool, as_json: bool
) -> None:
    """Print the estimated token count of a conversation (a fast heuristic, not a tokenizer)."""
    from compactor_core.estimate import breakdown
    from compactor_core.formats import dumps

    names = io.input_names(files)
    bareagent = compat == "bareagent"
    any_over = False
    for name in names:
        conversation = io.read_input(name).parse()
        if as_json:
            report = breakdown(conversation.messages, conversation.system, bareagent)
            tokens = report["tokens"]
            if len(names) > 1:
                report = {"file": name, **report}
            line = dumps(report).decode()
        else:
            tokens = pipeline.measure(conversation, bareagent)
            line = str(tokens) if len(names) == 1 else f"{tokens}\t{name}"
        any_over = any_over or (threshold is not None and tokens > threshold)
        if not quiet:
            io.write_stdout(line.encode() + b"\n")
    if threshold is not None and not any_over:
        sys.exit(ExitStatus.NOT_OVER)


# --- micro ---------------------------------------------------------------------------------------


@cli.command(epilog=TABLE)
@options.files_argument
@options.micro_options
@options.compat_option
@options.output_options
@options.snapshot_options
def micro(files: tuple[str, ...], **settings: Any) -> None:
    """Replace old tool results with [truncated: TOOL result, N chars] markers (no model call)."""
    job = pipeline.Job("micro", _micro_settings(settings), settings["compat"] == "bareagent")
    _transform(files, job, settings)


def _micro_settings(settings: dict[str, Any]) -> pipeline.MicroSettings:
    return pipeline.MicroSettings(
        settings["keep_recent"], tuple(settings["exclude_tools"]), settings["min_chars"]
    )


def _transform(files: tuple[str, ...], job: pipeline.Job, settings: dict[str, Any]) -> None:
    """Run ``job`` over every input and write each result where the options say."""
    names = io.input_names(files)
    _check_output_options(names, settings)
    job = replace(job, measure=settings["stats"])
    runner = _in_place_runner(settings) if settings["in_place"] else _stream_runner(settings)
    failures: list[ExitStatus] = []
    for name in names:
        try:
            outcome = runner(name, job)
        except CtxpackError as error:
            if len(names) == 1:
                raise
            io.warn(str(error))
            failures.append(status_for(error))
            continue
        for warning in outcome.warnings:
            io.warn(warning)
        if settings["stats"]:
            io.warn(_stats_line(name, outcome))
    if failures:
        sys.exit(failures[0] if len(set(failures)) == 1 else ExitStatus.NOT_OVER)


def _check_output_options(names: tuple[str, ...], settings: dict[str, Any]) -> None:
    if settings["in_place"]:
        if settings["output"]:
            raise click.UsageError("--in-place and --output cannot be used together")
        if io.STDIN in names:
            raise click.UsageError("--in-place needs file arguments, not standard input")
    elif settings["backup"]:
        raise click.UsageError("--backup goes with --in-place")
    elif settings["output"] and len(names) > 1:
        raise click.UsageError("--output takes one input; use --in-place for several files")


def _stream_runner(settings: dict[str, Any]) -> Callable[[str, pipeline.Job], pipeline.Outcome]:
    def run(name: str, job: pipeline.Job) -> pipeline.Outcome:
        outcome = pipeline.run(job, io.read_input(name).parse())
        data = dump(outcome.conversation, settings["pretty"])
        if settings["output"] and settings["output"] != io.STDIN:
            atomic_write(Path(settings["output"]), data)
        else:
            io.write_stdout(data)
        return outcome

    return run


def _in_place_runner(settings: dict[str, Any]) -> Callable[[str, pipeline.Job], pipeline.Outcome]:
    rewrite = InPlace(settings["pretty"], settings["backup"], _snapshot_store(settings))

    def run(name: str, job: pipeline.Job) -> pipeline.Outcome:
        source = SourceFile.read(Path(name))
        outcome = pipeline.run(job, parse(source.data, name))
        if outcome.changed:
            replace_file(source, outcome.conversation, rewrite, name, bool(outcome.snapshots))
        return outcome

    return run


def _snapshot_store(settings: dict[str, Any]) -> SnapshotStore | None:
    if settings["no_transcript"]:
        return None
    check_session_id(settings["session_id"])
    return SnapshotStore(Path(settings["transcript_dir"]))


def _stats_line(name: str, outcome: pipeline.Outcome) -> str:
    label = "<stdin>" if name == io.STDIN else name
    micro_result = outcome.micro
    return (
        f"{label}: {micro_result.truncated} tool results truncated, "
        f"{micro_result.chars_removed} chars removed, "
        f"tokens {outcome.tokens_before} -> {outcome.tokens_after}"
    )


# --- restore -------------------------------------------------------------------------------------


@cli.command(epilog=TABLE)
@click.option("--session-id", help="Print the newest snapshot of this session as a JSON array.")
@click.option("--list", "list_sessions", is_flag=True, help="List sessions, newest first.")
@click.option(
    "--transcript-dir",
    type=click.Path(file_okay=False),
    default=".transcripts",
    show_default=True,
    envvar="CTXPACK_TRANSCRIPT_DIR",
)
@click.option("--pretty", is_flag=True, help="Indent the JSON output.")
def restore(session_id: str | None, list_sessions: bool, transcript_dir: str, pretty: bool) -> None:
    """Print a saved transcript snapshot (like /resume), or list the saved sessions."""
    from compactor_core.formats import dumps

    store = SnapshotStore(Path(transcript_dir))
    if list_sessions == (session_id is not None):
        raise click.UsageError("give either --session-id ID or --list")
    if list_sessions:
        newest: dict[str, list] = {}
        for info in store.snapshots():
            newest.setdefault(info.session_id, []).append(info)
        for sid, infos in newest.items():
            io.write_stdout(f"{sid}\t{infos[0].stamp}\t{len(infos)}\t{infos[0].path}\n".encode())
        return
    info = store.newest(session_id)
    io.write_stdout(dumps(store.load(info), pretty) + b"\n")
