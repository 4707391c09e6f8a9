"""The ``ctxpack`` commands. Each body resolves options, calls the core, writes the result."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click

from compactor_core.errors import CtxpackError

from . import config, io, options
from .exit_codes import (
    TABLE,
    ExitStatus,
    internal_error,
    status_for,
    warn,
)
from .resolve import environment_help

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

    from compactor_core.settings import Command

# Only what every command needs is imported here: a filter run on every agent turn should start
# fast, so each command imports the rest of the core itself.


class CtxpackGroup(click.Group):
    """Turns every error into its exit status and a one-line message, in one place.

    ``lazy_commands`` maps a command's name to ``"module:attribute"`` and the first sentence of
    its help: that module is imported only when the command runs (click's "Lazily Loading
    Subcommands"), or when a config file sets a key that no command loaded already takes
    (``has_option``); ``--help`` lists the command by that sentence. So a command module imports
    the core it runs on at its top, and the other commands never pay for it.
    """

    def __init__(
        self,
        *args: Any,
        lazy_commands: Mapping[str, tuple[str, str]] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands = dict(lazy_commands or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = self._loaded(ctx, cmd_name)
        if command is not None and isinstance(ctx.default_map, config.DefaultMap):
            files, names = ctx.default_map.files, set(self.list_commands(ctx))
            config.check(command, files, names, lambda name: self.has_option(ctx, name))
        return command

    def _loaded(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy_commands and cmd_name not in self.commands:
            module, attribute = self.lazy_commands[cmd_name][0].split(":")
            self.add_command(getattr(importlib.import_module(module), attribute), cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The list of commands in ``--help``: a command not loaded yet by its first sentence."""
        self._listing(ctx).format_commands(ctx, formatter)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
        """Completing a command's name loads no command's module either."""
        return self._listing(ctx).shell_complete(ctx, incomplete)

    def _listing(self, ctx: click.Context) -> click.Group:
        """This group as its lists show it: each command not loaded yet stands in by its name and
        first sentence."""
        listed = {
            name: self.commands.get(name) or click.Command(name, help=self.lazy_commands[name][1])
            for name in self.list_commands(ctx)
        }
        return click.Group(self.name, commands=listed, params=self.params)

    def has_option(self, ctx: click.Context, option: str) -> bool:
        """Whether some command takes ``option``: the commands loaded already are asked first (a
        file's common keys are micro's, full's and auto's), another command's module is loaded
        only while none has it."""
        names = sorted(self.list_commands(ctx), key=lambda name: name not in self.commands)
        return any(option in _option_names(self._loaded(ctx, name)) for name in names)

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        # every option from the config files and the environment (cli/config.py)
        kwargs.setdefault("default_map", config.DefaultMap(os.environ, config.working_folder()))
        kwargs.setdefault("auto_envvar_prefix", config.ENV_PREFIX)
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        try:
            status = super().main(*args, standalone_mode=False, **kwargs)
        except click.exceptions.NoArgsIsHelpError as error:  # bare `ctxpack`: what there is
            click.echo(_short_usage(error.ctx), err=True, nl=False)
            sys.exit(ExitStatus.USAGE)
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
            internal_error(error)
            sys.exit(ExitStatus.SOFTWARE)
        sys.exit(status if isinstance(status, int) else ExitStatus.OK)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except CtxpackError as error:
            warn(error)
            ctx.exit(status_for(error))
        except BrokenPipeError:
            _silence_stdout()
            ctx.exit(ExitStatus.BROKEN_PIPE)
        except KeyboardInterrupt:
            io.warn("interrupted")
            ctx.exit(ExitStatus.INTERRUPTED)


def _option_names(command: click.Command | None) -> set[str]:
    return {param.name for param in command.params if param.name} if command else set()


def _short_usage(ctx: click.Context) -> str:
    """The usage line and the command list: what a bare ``ctxpack`` prints."""
    formatter = ctx.make_formatter()
    ctx.command.format_usage(ctx, formatter)
    if isinstance(ctx.command, click.Group):
        ctx.command.format_commands(ctx, formatter)
    formatter.write_paragraph()
    formatter.write_text(f"Try '{ctx.command_path} --help' for options, examples and more.")
    return formatter.getvalue()


def _silence_stdout() -> None:
    # Python would complain again when it flushes stdout at exit; point it at /dev/null.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


EXAMPLES = """\
\b
Examples:
  ctxpack estimate session.json                   # one number: the estimated tokens
  ctxpack auto session.json > smaller.json        # micro always, a summary when over 50000
  cat request.json | ctxpack auto | curl -d @- …  # on every agent turn
  ctxpack auto --in-place -r ~/agent-sessions     # a folder, originals kept as snapshots
  ctxpack CMD --help                              # each command's options and examples"""


def _environment() -> str:
    rows = "\n".join(
        f"  {variable:<24} {meaning}".rstrip() for variable, meaning in environment_help()
    )
    return (
        "\b\nEnvironment (a flag wins over its variable, a variable over the config file):\n" + rows
    )


COMPLETION = """\
\b
Shell completion (add the line to your shell's start-up file):
  bash  eval "$(_CTXPACK_COMPLETE=bash_source ctxpack)"
  zsh   eval "$(_CTXPACK_COMPLETE=zsh_source ctxpack)"
  fish  _CTXPACK_COMPLETE=fish_source ctxpack | source"""


@click.group(
    cls=CtxpackGroup,
    lazy_commands={
        "check": (
            "cli.agents:check",
            "Check session files (and conversations) for damage; exit 1 if any problem is found.",
        ),
        "config": (
            "cli.config:show",
            "Print the settings in force and where each comes from: flag > "
            "CTXPACK_<COMMAND>_<OPTION> > CTXPACK_<OPTION> > ./.ctxpack.toml (or a folder above) > "
            "the user's config file > default.",
        ),
        "estimate": (
            "cli.estimate:estimate",
            "Print the token count of a conversation: a fast heuristic, or exact with --tokenizer.",
        ),
        "mcp": (
            "cli.mcp:mcp",
            "An MCP server (stdio) with a recall tool: the original of a marker's handle.",
        ),
        "replay": (
            "cli.replay:replay",
            "Replay saved sessions request by request and print what each policy would be billed.",
        ),
        "report": (
            "cli.costs:report",
            "Report the recorded bill of agent sessions, why their cache was written, and what the "
            "cache-aware policy of ctxpack would have billed.",
        ),
        "rescue": (
            "cli.rescue:rescue",
            "Repair a session its agent will not open: tool calls without results and results "
            "without calls, cut parent chains, images over the APIs' limits, oversized records, "
            "characters that break the agent's reader; then micro and full while over --window.",
        ),
        "run": (
            "cli.wrap:run",
            "Run AGENT (claude, codex, qwen, copilot) with ctxpack serve in front of it.",
        ),
        "restore": (
            "cli.restore:restore",
            "Put back the originals of files changed in place, or print, list or prune snapshots.",
        ),
        "serve": (
            "cli.serve:serve",
            "Compact each request an agent sends its model, on the way: point the agent here.",
        ),
        "setup": (
            "cli.setup:setup",
            "Make AGENT go through a running ctxpack serve every time, in its own settings.",
        ),
        "statusline": (
            "cli.statusline_command:statusline",
            "Claude Code's statusLine command: one line from the JSON it passes on standard input.",
        ),
        "sessions": (
            "cli.agents:sessions",
            "List the agents' sessions on this machine, newest first.",
        ),
    },
    epilog="\n\n".join([EXAMPLES, _environment(), COMPLETION, TABLE]),
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(package_name="ctxpack")
def cli() -> None:
    """Keep an LLM agent's conversation inside its context window.

    Reads a conversation (a JSON array of messages, a request envelope with a "messages" array,
    or JSONL) from files or standard input and writes it back smaller, in the same shape.
    """


def main() -> None:
    cli(prog_name="ctxpack")


# --- micro, full, auto ---------------------------------------------------------------------------


@cli.command(
    epilog=options.epilog(
        "ctxpack micro session.json > smaller.json",
        "ctxpack micro --keep-recent 1 --exclude-tool Read session.json",
        "ctxpack micro --images --in-place ~/.claude/projects/-home-me-app/SESSION.jsonl",
        "ctxpack micro --in-place -r ~/agent-sessions --stats",
        "ctxpack micro -i ~/.local/share/opencode/opencode.db#ses_…  # one session of a database",
    )
)
@options.files_argument
@options.micro_options
@options.images_option
@options.min_gain_option
@options.session_options
@options.compat_option
@options.output_options
@options.batch_options
@options.snapshot_options
def micro(files: tuple[str, ...], **settings: Any) -> None:
    """Replace old tool results with [truncated: TOOL result, N chars] markers (no model call)."""
    _compact("micro", files, settings)


@cli.command(
    epilog=options.epilog(
        "ctxpack full session.json -o compacted.json    # offline, built-in summarizer",
        "ctxpack full --lang en --instructions 'keep the API decisions' session.json",
        "ANTHROPIC_API_KEY=… ctxpack full --provider anthropic session.json",
        "ctxpack full --provider openai --base-url http://localhost:11434/v1 "
        "--model llama3.2 session.json",
    )
)
@options.files_argument
@options.summarizing_options
def full(files: tuple[str, ...], **settings: Any) -> None:
    """Have a provider summarize the history; keep system messages and the pending turn.

    Saves a snapshot of the input first; on any failure the input comes back unchanged.
    """
    _compact("full", files, settings)


@cli.command(
    epilog=options.epilog(
        "cat request.json | ctxpack auto | curl -d @- …  # on every agent turn",
        "ctxpack auto --threshold 20000 --stats session.json",
        "ctxpack auto --in-place -r ~/agent-sessions -j 4 --dry-run --stats",
    )
)
@options.files_argument
@options.threshold_option
@options.policy_options
@options.summarizing_options
def auto(files: tuple[str, ...], **settings: Any) -> None:
    """Compact for every request: old tool results as markers, a summary over the threshold.

    The default policy (cache-aware) changes the prompt rarely and in big steps, so that a
    provider's prompt cache keeps hitting; --policy every-turn micro-compacts on every call.
    """
    _compact("auto", files, settings)


def _compact(command: Command, files: tuple[str, ...], options: dict[str, Any]) -> None:
    from .run import compact  # the core's one path: not for --help, nor for another command

    compact(command, files, options)
