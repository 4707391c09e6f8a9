"""The ``ctxpack`` commands. Each body resolves options, calls the core, writes the result."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

import click

from compactor_core import defaults
from compactor_core.errors import CtxpackError

from . import io, options
from .agents import check, sessions
from .exit_codes import TABLE, ExitStatus, status_for
from .restore import restore

if TYPE_CHECKING:
    from compactor_core.estimate import Counter
    from compactor_core.micro import MicroSettings
    from compactor_core.pipeline import Command

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
        except Exception as error:  # a bug of ctxpack: one line and 70, never a traceback
            io.internal_error(error)
            sys.exit(ExitStatus.SOFTWARE)
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
@options.format_option
@click.option(
    "--threshold",
    "--over",
    "threshold",
    type=int,
    metavar="N",
    help="Exit 0 if the estimate is greater than N, else 1 (like grep).",
)
@click.option("-q", "--quiet", is_flag=True, help="Print nothing; use with --threshold.")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print a breakdown per role and per tool (with --tokenizer: the heuristic beside it).",
)
@options.tokenizer_option
def estimate(
    files: tuple[str, ...],
    compat: str,
    format_name: str,
    threshold: int | None,
    quiet: bool,
    as_json: bool,
    tokenizer: str | None,
) -> None:
    """Print the token count of a conversation: a fast heuristic, or exact with --tokenizer.

    For an agent's session file: the conversation the agent would send on resume.
    """
    from compactor_core.estimate import HEURISTIC, breakdown, estimate
    from compactor_core.formats import dumps

    from . import agent_files

    counter = _counter(tokenizer)
    names = io.input_names(files)
    bareagent = compat == "bareagent"
    any_over = False
    for name in names:
        with agent_files.opened(name, format_name) as given:
            if isinstance(given, agent_files.Opened):
                if counter is not HEURISTIC:
                    raise click.UsageError(f"{name}: --tokenizer does not count session files yet")
                session = agent_files.index(given)
                tokens = session.tokens
                report = agent_files.estimate_report(given, session) if as_json else {}
            else:
                conversation = given.parse()
                tokens = estimate(conversation.messages, conversation.system, bareagent, counter)
                report = (
                    breakdown(conversation.messages, conversation.system, bareagent, counter)
                    if as_json
                    else {}
                )
                if as_json and counter is not HEURISTIC:
                    heuristic = estimate(conversation.messages, conversation.system, bareagent)
                    report["heuristic"] = _beside(heuristic, tokens)
        if as_json:
            if len(names) > 1:
                report = {"file": name, **report}
            line = dumps(report).decode()
        else:
            line = str(tokens) if len(names) == 1 else f"{tokens}\t{name}"
        any_over = any_over or (threshold is not None and tokens > threshold)
        if not quiet:
            io.write_stdout(line.encode() + b"\n")
    if threshold is not None and not any_over:
        sys.exit(ExitStatus.NOT_OVER)


def _counter(flag: str | None) -> Counter:
    """The counter the flag, CTXPACK_TOKENIZER or the config file names (heuristic: no import)."""
    from .config import environment, resolve_tokenizer

    name = resolve_tokenizer(flag, environment())
    if name == "heuristic":
        from compactor_core.estimate import HEURISTIC

        return HEURISTIC
    from compactor_core.tokenizers import counter

    return counter(name)


def _beside(heuristic: int, exact: int) -> dict[str, Any]:
    """The heuristic's count next to the exact one, and their ratio (above 1: it counts more)."""
    return {"tokens": heuristic, "ratio": round(heuristic / exact, 3) if exact else None}


# --- micro, full, auto ---------------------------------------------------------------------------


@cli.command(epilog=TABLE)
@options.files_argument
@options.micro_options
@options.session_options
@options.compat_option
@options.output_options
@options.batch_options
@options.snapshot_options
def micro(files: tuple[str, ...], **settings: Any) -> None:
    """Replace old tool results with [truncated: TOOL result, N chars] markers (no model call)."""
    from compactor_core.pipeline import Job
    from compactor_core.providers.registry import ProviderSettings

    from .transform import Output, transform

    job = Job("micro", _micro_settings(settings), compat=settings["compat"] == "bareagent")
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


def _micro_settings(settings: dict[str, Any]) -> MicroSettings:
    from compactor_core.micro import MicroSettings

    return MicroSettings(
        settings["keep_recent"], tuple(settings["exclude_tools"]), settings["min_chars"]
    )


def _summarizing(command: Command, files: tuple[str, ...], settings: dict[str, Any]) -> None:
    from compactor_core.full import FullSettings
    from compactor_core.pipeline import Job

    from .config import environment, resolve_provider
    from .transform import Output, transform

    compat = settings["compat"] == "bareagent"
    tokenizer = _counter(settings["tokenizer"]).name  # an unknown name fails before any work
    full_settings = FullSettings(
        lang=settings["lang"],
        instructions=settings["instructions"],
        max_tokens=settings["max_tokens"],
        max_prompt_tokens=settings["max_prompt_tokens"],
        micro=_micro_settings(settings),
        compat=compat,
        tokenizer=tokenizer,
    )
    job = Job(
        command,
        full_settings.micro,
        full_settings,
        threshold=settings.get("threshold", defaults.THRESHOLD),
        compat=compat,
        tokenizer=tokenizer,
    )
    out = Output.from_options(settings)
    transform(files, job, out, resolve_provider(settings, environment()))


# --- restore -------------------------------------------------------------------------------------

cli.add_command(restore)
cli.add_command(check)
cli.add_command(sessions)
