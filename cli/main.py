"""The ``ctxpack`` commands. Each body resolves options, calls the core, writes the result."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from compactor_core import defaults
from compactor_core.errors import CtxpackError

from . import io, options
from .exit_codes import TABLE, ExitStatus, status_for

if TYPE_CHECKING:
    from compactor_core.pipeline import Command
    from compactor_core.settings import Settings

# Only what every command needs is imported here: a filter run on every agent turn should start
# fast, so each command imports the rest of the core itself.


class CtxpackGroup(click.Group):
    """Turns every error into its exit status and a one-line message, in one place."""

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        try:
            status = super().main(*args, standalone_mode=False, **kwargs)
        except click.UsageError as error:  # one line, not click's usage block
            command = error.ctx.command_path if error.ctx else "ctxpack"
            io.warn(f"{error.format_message()} (see '{command} --help')")
            sys.exit(ExitStatus.USAGE)
        except click.ClickException as error:
            io.warn(error.format_message())
            sys.exit(error.exit_code)
        except click.Abort:
            io.warn("interrupted")
            sys.exit(ExitStatus.INTERRUPTED)
        sys.exit(status if isinstance(status, int) else ExitStatus.OK)

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
    from compactor_core.estimate import breakdown, estimate
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
            tokens = estimate(conversation.messages, conversation.system, bareagent)
            line = str(tokens) if len(names) == 1 else f"{tokens}\t{name}"
        any_over = any_over or (threshold is not None and tokens > threshold)
        if not quiet:
            io.write_stdout(line.encode() + b"\n")
    if threshold is not None and not any_over:
        sys.exit(ExitStatus.NOT_OVER)


# --- micro, full, auto ---------------------------------------------------------------------------


@cli.command(epilog=TABLE)
@options.files_argument
@options.micro_options
@options.compat_option
@options.output_options
@options.batch_options
@options.snapshot_options
def micro(files: tuple[str, ...], **settings: Any) -> None:
    """Replace old tool results with [truncated: TOOL result, N chars] markers (no model call)."""
    from compactor_core.pipeline import Job
    from compactor_core.providers.registry import ProviderSettings

    from .transform import Output, transform

    job = Job("micro", _settings(settings))
    transform(files, job, Output.from_options(settings), ProviderSettings())


@cli.command(epilog=TABLE)
@options.files_argument
@options.summarizing_options
def full(files: tuple[str, ...], **settings: Any) -> None:
    """Have a provider summarize the history; keep system messages and the pending turn.

    Saves a snapshot of the input first; on any failure the input comes back unchanged.
    """
    _summarizing("full", files, settings)


@cli.command(epilog=TABLE)
@options.files_argument
@click.option(
    "--threshold",
    type=click.IntRange(min=0),
    default=defaults.THRESHOLD,
    show_default=True,
    help="Full compaction when the micro-compacted estimate is greater than this.",
)
@options.summarizing_options
def auto(files: tuple[str, ...], **settings: Any) -> None:
    """Micro compaction every time; full compaction when the estimate is over the threshold."""
    _summarizing("auto", files, settings)


def _settings(options: dict[str, Any]) -> Settings:
    """The core's settings from the options given (micro has no summary options)."""
    from compactor_core.settings import Settings

    summary = {
        name: options[name]
        for name in ("lang", "instructions", "max_tokens", "max_prompt_tokens", "threshold")
        if name in options
    }
    return Settings(
        keep_recent=options["keep_recent"],
        exclude_tools=tuple(options["exclude_tools"]),
        min_chars=options["min_chars"],
        compat=options["compat"] == "bareagent",
        keep_cut_off=not options.get("strict", False),
        **summary,
    )


def _summarizing(command: Command, files: tuple[str, ...], settings: dict[str, Any]) -> None:
    from compactor_core.pipeline import Job

    from .config import environment, resolve_provider
    from .transform import Output, transform

    job = Job(command, _settings(settings))
    out = Output.from_options(settings)
    transform(files, job, out, resolve_provider(settings, environment()))


# --- restore -------------------------------------------------------------------------------------


@cli.command(epilog=TABLE)
@click.option("--session-id", help="Print the newest snapshot of this session as a JSON array.")
@click.option("--list", "list_sessions", is_flag=True, help="List sessions, newest first.")
@click.option(
    "--transcript-dir",
    type=click.Path(file_okay=False),
    default=defaults.TRANSCRIPT_DIR,
    show_default=True,
    envvar="CTXPACK_TRANSCRIPT_DIR",
)
@click.option("--pretty", is_flag=True, help="Indent the JSON output.")
def restore(session_id: str | None, list_sessions: bool, transcript_dir: str, pretty: bool) -> None:
    """Print a saved transcript snapshot (like /resume), or list the saved sessions."""
    from compactor_core.formats import dumps
    from compactor_core.snapshots import SnapshotStore

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
