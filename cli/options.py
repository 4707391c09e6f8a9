"""Option bundles shared by several commands."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from compactor_core import defaults
from compactor_core.providers.registry import PROVIDERS

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


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
        help="Leave tool results shorter than this alone.",
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

snapshot_options = bundle(
    click.option(
        "--transcript-dir",
        type=click.Path(file_okay=False),
        default=defaults.TRANSCRIPT_DIR,
        show_default=True,
        envvar="CTXPACK_TRANSCRIPT_DIR",
        help="Where transcript snapshots are saved.",
    ),
    click.option(
        "--session-id",
        default=defaults.SESSION_ID,
        show_default=True,
        envvar="CTXPACK_SESSION_ID",
        help="Session id in snapshot names ([A-Za-z0-9._:@+-], 1-128 characters).",
    ),
    click.option("--no-transcript", is_flag=True, help="Save no transcript snapshots."),
)

summary_options = bundle(
    click.option(
        "--lang",
        type=click.Choice(["zh", "en"]),
        default="zh",
        show_default=True,
        help="Language of the summary prompt and the acknowledgement.",
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
    click.option(
        "--strict",
        is_flag=True,
        help="A failed summary is an error: exit 69 (75 when worth retrying), output unchanged.",
    ),
)

provider_options = bundle(
    click.option(
        "--provider",
        type=click.Choice(list(PROVIDERS)),
        help="Who writes the summary [default: extractive, offline; env CTXPACK_PROVIDER].",
    ),
    click.option("--model", help="Model name for a network provider [env CTXPACK_MODEL]."),
    click.option("--base-url", help="API base URL [env OPENAI_BASE_URL / ANTHROPIC_BASE_URL]."),
    click.option(
        "--timeout",
        type=click.FloatRange(min=0),
        help="Seconds per request, 0 for no limit [default: 60].",
    ),
    click.option(
        "--retries", type=click.IntRange(min=0), help="Retries on 429, 5xx and connection errors."
    ),
    click.option(
        "--command",
        metavar="CMD",
        help="provider command: the program to run (split like a shell, never run by one).",
    ),
)

batch_options = bundle(
    click.option(
        "-r", "--recursive", is_flag=True, help="Folders among the inputs: do their files too."
    ),
    click.option(
        "--glob",
        "globs",
        multiple=True,
        metavar="PATTERN",
        help="Which files in folders (repeatable) [default: *.json, *.jsonl].",
    ),
    click.option(
        "-O",
        "--output-dir",
        type=click.Path(file_okay=False),
        help="Write results here, mirroring the folders, instead of over the inputs.",
    ),
    click.option(
        "-j",
        "--jobs",
        type=click.IntRange(min=1),
        help="Worker processes for a batch [default: the number of cores].",
    ),
    click.option(
        "--max-concurrency",
        type=click.IntRange(min=1),
        default=defaults.MAX_CONCURRENCY,
        show_default=True,
        help="Summary requests in flight at once when a model writes the summaries.",
    ),
    click.option("--dry-run", is_flag=True, help="Report what would change; write nothing."),
    click.option(
        "--fail-fast",
        is_flag=True,
        help="Start no new file after one fails (files in progress finish).",
    ),
    click.option("--json", "json_report", is_flag=True, help="Print a JSON report on stdout."),
)

summarizing_options = bundle(
    micro_options,
    compat_option,
    summary_options,
    provider_options,
    output_options,
    batch_options,
    snapshot_options,
)
