"""Option bundles shared by several commands."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from compactor_core import defaults

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

EXIT_POINTER = "Exit statuses, environment variables, completion: see 'ctxpack --help'."


def epilog(*examples: str) -> str:
    """A subcommand's epilog: its examples (kept as written: "\b" stops click re-wrapping them),
    then a pointer to the one exit-status table, in ``ctxpack --help``."""
    lines = "\n".join(f"  {example}" for example in examples)
    return f"\b\nExamples:\n{lines}\n\n{EXIT_POINTER}"


class RawArgsCommand(click.Command):
    """Keeps its arguments as given (``raw_args``): to hand them on exactly as written."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["raw_args"] = list(args)
        return super().parse_args(ctx, args)


def raw_args() -> list[str]:
    """The current ``RawArgsCommand``'s arguments, as given."""
    return list(click.get_current_context().meta["raw_args"])


def bundle(*decorators: Decorator) -> Decorator:
    def apply(function: Callable[..., Any]) -> Callable[..., Any]:
        for decorator in reversed(decorators):
            function = decorator(function)
        return function

    return apply


files_argument = click.argument("files", nargs=-1, metavar="[FILE]...")

compat_option = click.option(
    "--compat",
    type=click.Choice(["default", "bareagent"]),
    default="default",
    show_default=True,
    help="bareagent: reproduce the reference implementation exactly, quirks included.",
)

tokenizer_option = click.option(
    "--tokenizer",
    metavar="NAME",
    help="Count exactly with a tokenizer: o200k (GPT-4o/4.1/5), cl100k (GPT-4/3.5), qwen3 "
    "(Qwen2.5/3), or heuristic; needs ctxpack[tokenizers] [default: heuristic; "
    "env CTXPACK_TOKENIZER].",
)

FORMATS = (  # compactor_core.session_files.registry's
    "auto",
    "messages",
    "claude-code",
    "codex",
    "gemini-cli",
    "qwen-code",
    "pi",
    "copilot-cli",
    "cline",
    "opencode",
)

format_option = click.option(
    "--format",
    "format_name",
    type=click.Choice(FORMATS),
    default="auto",
    show_default=True,
    help="What the input is: a conversation of messages, or an agent's session file "
    "(auto: told from its first records).",
)

min_idle_option = click.option(
    "--min-idle",
    type=click.FloatRange(min=0),
    default=defaults.MIN_IDLE,
    show_default=True,
    metavar="SECONDS",
    help="An agent's session file changed less than this long ago is in use: left alone.",
)

session_options = bundle(
    format_option,
    min_idle_option,
    click.option(
        "--force",
        is_flag=True,
        help="Rewrite an agent's session file even while it is in use (open for writing, or "
        "changed within --min-idle).",
    ),
)

# auto's, and serve's (which runs auto's policy on every request)
threshold_option = click.option(
    "--threshold",
    type=click.IntRange(min=0),
    default=defaults.THRESHOLD,
    show_default=True,
    help="Full compaction when the micro-compacted estimate is greater than this.",
)

micro_options = bundle(
    click.option(
        "--keep-recent",
        type=int,
        default=defaults.KEEP_RECENT,
        show_default=True,
        help="Tool-result turns kept whole, newest first; 0 or less truncates them all.",
    ),
    click.option(
        "--exclude-tool",
        "exclude_tools",
        multiple=True,
        metavar="NAME",
        help="Never truncate this tool's results (repeatable).",
    ),
    click.option(
        "--min-chars",
        type=click.IntRange(min=0),
        default=0,
        show_default=True,
        help="Leave tool results shorter than this alone.",
    ),
    click.option(
        "--age-only",
        is_flag=True,
        help="Replace old results by age alone; by default a result a later one made stale "
        "(the same file read again or edited, the same command run again) goes first.",
    ),
    click.option(
        "--recall",
        is_flag=True,
        help="Markers carry a recall handle ([truncated: Bash result, 1204 chars; recall "
        "HANDLE]) and the originals are kept, for the recall tool of `ctxpack mcp`.",
    ),
)

images_option = click.option(
    "--images",
    is_flag=True,
    help="Old images become markers too ([image: png 1920x1080, 1.2 MB]): all but those of the "
    "newest --keep-recent messages that hold images.",
)

# BareAgent's micro compaction exactly unless asked: SPEC §2.
min_gain_option = click.option(
    "--min-gain",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    metavar="TOKENS",
    help="Markers in batches: the old tool-result turns, oldest first, get theirs only once "
    "they free this many tokens together (0: every old turn).",
)

policy_options = bundle(
    click.option(
        "--policy",
        type=click.Choice(defaults.POLICIES),
        default=defaults.CACHE_AWARE,
        show_default=True,
        help="cache-aware: change the prompt rarely, so the provider's prompt cache keeps "
        "hitting (markers in batches of --min-gain, a summary that stays put until the next "
        "one); every-turn: micro on every call, BareAgent's policy (as --compat bareagent).",
    ),
    click.option(
        "--min-gain",
        type=click.IntRange(min=0),
        metavar="TOKENS",
        help="New markers only in batches that free this many tokens together [default: "
        f"{defaults.MIN_GAIN} with cache-aware, 0 with every-turn].",
    ),
)

output_options = bundle(
    click.option(
        "-o", "--output", metavar="FILE", help="Write the result to FILE (atomically), not stdout."
    ),
    click.option(
        "-i",
        "--in-place",
        is_flag=True,
        help="Rewrite each input file (original kept as a snapshot).",
    ),
    click.option(
        "--pretty", is_flag=True, help="Indent JSON output (JSONL stays one line a message)."
    ),
    click.option(
        "--backup",
        metavar="SUFFIX",
        help="With --in-place: also keep the original beside the file, as FILE+SUFFIX.",
    ),
    click.option(
        "--stats", is_flag=True, help="Report what was done and tokens before -> after on stderr."
    ),
)

snapshot_dir_option = click.option(
    "--snapshot-dir",
    "--transcript-dir",
    "snapshot_dir",
    type=click.Path(file_okay=False),
    help="Where snapshots are kept: a folder or a URL [default: "
    f"{defaults.USER_SNAPSHOT_DIR}, or {defaults.BAREAGENT_SNAPSHOT_DIR} with --compat "
    "bareagent; env CTXPACK_SNAPSHOT_DIR].",
)

snapshot_options = bundle(
    snapshot_dir_option,
    click.option(
        "--session-id",
        help="Session id in snapshot names ([A-Za-z0-9._:@+-], 1-128 characters) "
        f"[default: {defaults.SESSION_ID}; env CTXPACK_SESSION_ID].",
    ),
    click.option(
        "--no-snapshot", "--no-transcript", "no_snapshot", is_flag=True, help="Keep no snapshots."
    ),
)

# What the summary is asked for (serve too); the commands that write a result add --strict.
prompt_options = bundle(
    click.option(
        "--lang",
        type=click.Choice(["auto", "zh", "en"]),
        help="Language of the prompt, the summary's headings and the acknowledgement. auto: the "
        "user's (Chinese for a Chinese conversation, else English; Chinese with --compat "
        "bareagent) [default: auto; env CTXPACK_LANG; config key lang].",
    ),
    click.option(
        "--instructions", metavar="TEXT", help="Your own focus, added to the system prompt."
    ),
    click.option(
        "--max-tokens",
        type=click.IntRange(min=1),
        default=defaults.MAX_TOKENS,
        show_default=True,
        help="Token budget of the summary.",
    ),
    click.option(
        "--max-prompt-tokens",
        type=click.IntRange(min=1),
        default=defaults.MAX_PROMPT_TOKENS,
        show_default=True,
        help="Shrink what is sent to the provider until the prompt fits (by the estimate).",
    ),
)

summary_options = bundle(
    prompt_options,
    click.option(
        "--strict",
        is_flag=True,
        help="A failed summary is an error: exit 69 (75 when worth retrying), output unchanged.",
    ),
)

provider_options = bundle(
    click.option(
        "--provider",
        type=click.Choice(defaults.PROVIDER_NAMES),
        help="Who writes the summary [default: extractive, offline; env CTXPACK_PROVIDER].",
    ),
    click.option(
        "--model",
        help="Model name for a network provider [default: the provider's; env CTXPACK_MODEL].",
    ),
    click.option(
        "--base-url",
        help="API base URL [default: the provider's; env CTXPACK_BASE_URL, then "
        "OPENAI_BASE_URL / ANTHROPIC_BASE_URL].",
    ),
    click.option(
        "--timeout",
        type=click.FloatRange(min=0),
        help="Seconds per request, 0 for no limit [default: 60; env CTXPACK_TIMEOUT].",
    ),
    click.option(
        "--retries",
        type=click.IntRange(min=0),
        help="Retries on 429, 5xx and connection errors [default: 2; env CTXPACK_RETRIES].",
    ),
    click.option(
        "--command",
        metavar="CMD",
        help="provider command: the program to run (split like a shell, never run by one) "
        "[env CTXPACK_COMMAND].",
    ),
)

recursive_option = click.option(
    "-r", "--recursive", is_flag=True, help="Folders among the inputs: do their files too."
)
glob_option = click.option(
    "--glob",
    "globs",
    multiple=True,
    metavar="PATTERN",
    help="Which files in folders (repeatable) [default: *.json, *.jsonl].",
)
jobs_option = click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    help="Worker processes for a batch [default: the number of cores].",
)

# Beyond one machine (docs/scaling.md): inputs and outputs may also be URLs (s3://bucket/prefix/).
engine_options = bundle(
    click.option(
        "--engine",
        type=click.Choice(["local", "dask"]),
        help="Where a batch runs: local processes, or a Dask cluster of -j workers started "
        "here to try it out [default: local; dask with --scheduler].",
    ),
    click.option(
        "--scheduler",
        metavar="tcp://HOST:PORT",
        help="Run the batch on the Dask cluster of this scheduler (needs ctxpack[dask]).",
    ),
)

batch_options = bundle(
    recursive_option,
    glob_option,
    click.option(
        "-O",
        "--output-dir",
        type=click.Path(file_okay=False),
        help="Write results here (a folder or URL), mirroring the folders, not over the inputs.",
    ),
    jobs_option,
    engine_options,
    click.option("--dry-run", is_flag=True, help="Report what would change; write nothing."),
    click.option(
        "--fail-fast",
        is_flag=True,
        help="Start no new file after one fails (files in progress finish).",
    ),
    click.option("--json", "json_report", is_flag=True, help="Print a JSON report on stdout."),
)

# Only for the commands that may call a model (micro never does).
concurrency_option = click.option(
    "--max-concurrency",
    type=click.IntRange(min=1),
    default=defaults.MAX_CONCURRENCY,
    show_default=True,
    help="Summary requests in flight at once in a batch when a model writes the summaries.",
)

summarizing_options = bundle(
    micro_options,
    session_options,
    compat_option,
    summary_options,
    tokenizer_option,
    provider_options,
    output_options,
    batch_options,
    concurrency_option,
    snapshot_options,
)
