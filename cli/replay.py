"""``ctxpack replay``: what piping every request through ``auto`` would have been billed."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from compactor_core import defaults
from compactor_core.conversation.formats import dumps
from compactor_core.disk.atomic import atomic_write
from compactor_core.ends.documents import open_document
from compactor_core.replay import recordings
from compactor_core.replay.plot import render as render_plot
from compactor_core.replay.pricing import DEFAULT_PROFILE, pricing
from compactor_core.replay.report import as_json as figures_json
from compactor_core.replay.report import figures, table
from compactor_core.replay.report import render as render_report
from compactor_core.replay.run import replay as replay_recording
from compactor_core.settings import Settings

from . import io, options
from .exit_codes import combined, for_each_input

if TYPE_CHECKING:
    from compactor_core.replay.run import Replay

PROFILES = (
    "anthropic-5m",
    "anthropic-1h",
    "openai",
)  # compactor_core.replay.pricing's (a test checks)


@click.command(
    epilog=options.epilog(
        "ctxpack replay session.json                     # the bill, three policies, two uses",
        "ctxpack replay --threshold 20000 ~/.claude/projects/-home-me-app/*.jsonl",
        "ctxpack replay --pricing openai --json session.json | jq .rows",
        "ctxpack replay --read 0.25 --write 1 --plot bill.svg session.json",
    )
)
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@options.format_option
@click.option(
    "--pricing",
    "profile",
    type=click.Choice(PROFILES),
    help="Cache rules, prices and time to live: anthropic-5m (read 0.1x, write 1.25x, 5 min), "
    "anthropic-1h (0.1x, 2x, 1 h), openai (0.1x, 1x, 5 min) [default: what the session file "
    "records (Claude Code: anthropic-5m or -1h; Codex: openai), else anthropic-5m].",
)
@click.option(
    "--read",
    type=click.FloatRange(min=0),
    metavar="X",
    help="A cached input token costs X input tokens [default: the pricing's].",
)
@click.option(
    "--write",
    type=click.FloatRange(min=0),
    metavar="Y",
    help="An input token written into the cache costs Y [default: the pricing's].",
)
@click.option(
    "--ttl",
    type=click.FloatRange(min=0),
    metavar="SECONDS",
    help="How long a cached prefix lives unused [default: the pricing's].",
)
@options.threshold_option
@options.policy_options
@options.micro_options
@options.compat_option
@click.option(
    "--max-tokens",
    type=click.IntRange(min=1),
    default=defaults.MAX_TOKENS,
    show_default=True,
    help="Token budget of each summary (the built-in extractive summarizer's, offline).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per file, for scripts.")
@click.option(
    "--plot",
    metavar="FILE.svg|FILE.png",
    help="Draw the bill: cumulative billed input per policy, and each request as read, "
    "written and plain (one input; needs ctxpack[plot]).",
)
def replay(files: tuple[str, ...], **chosen: Any) -> None:
    """Replay saved sessions request by request and print what each policy would be billed.

    A request is made before each assistant message, with the history up to it; a session file
    that records its usage (Claude Code, Codex) gives its own requests, across its compactions,
    and its bill as recorded, the first row. Each request goes through auto as an agent loop
    that keeps ctxpack's output would send it, and as a caller that re-sends its raw history
    every time (a proxy). Beside the history untouched and BareAgent's policy (micro on every
    call): input tokens billed by the provider's cache rules (Anthropic's breakpoints, placed
    where Claude Code places them, and 20-block lookback; OpenAI's prefix cache), the cache hit
    rate, the tokens sent and the biggest request. A file without a record is a simulation.
    """
    plot = chosen.pop("plot")
    if plot and len(files) > 1:
        raise click.UsageError("--plot draws one session: name one input")
    image_format = plot.rpartition(".")[2].lower() if plot else None
    if image_format is not None and image_format not in ("svg", "png"):
        raise click.UsageError(f"--plot {plot}: the picture's name must end in .svg or .png")
    prices = {name: chosen.pop(name) for name in ("profile", "read", "write", "ttl")}
    as_json, format_name = chosen.pop("as_json"), chosen.pop("format_name")
    settings = _settings(chosen)
    done: list[Replay] = []

    def replay_one(name: str) -> None:
        result = _replay_file(name, format_name, settings, prices)
        done.append(result)
        _report(result, io.label(name), as_json)
        if plot:
            _draw(result, io.label(name), plot, image_format or "svg")

    failures = for_each_input(files, replay_one)
    if len(done) > 1 and not as_json:
        io.write_stdout(f"total of {len(done)} files\n{table(figures(done))}\n".encode())
    if failures:
        sys.exit(combined(failures))


def _settings(chosen: dict[str, Any]) -> Settings:
    return Settings(
        keep_recent=chosen["keep_recent"],
        exclude_tools=tuple(chosen["exclude_tools"]),
        min_chars=chosen["min_chars"],
        threshold=chosen["threshold"],
        max_tokens=chosen["max_tokens"],
        compat=chosen["compat"] == "bareagent",
        policy=chosen["policy"],
        min_gain=chosen["min_gain"],
    )


def _replay_file(name: str, format_name: str, settings: Settings, prices: dict[str, Any]) -> Replay:
    """The file replayed at the prices chosen, on the file's own profile where none was."""
    with open_document(io.source_of(name), format_name) as document:
        recording = recordings.of(document)
    profile = prices["profile"] or recording.profile or DEFAULT_PROFILE
    chosen = pricing(profile, prices["read"], prices["write"], prices["ttl"])
    return replay_recording(recording, settings, chosen)


def _report(result: Replay, label: str, as_json: bool) -> None:
    if as_json:
        io.write_stdout(dumps(figures_json(result, label)) + b"\n")
    else:
        io.write_stdout(render_report(result, label).encode())


def _draw(result: Replay, label: str, path: str, image_format: str) -> None:
    atomic_write(Path(path), render_plot(result, label, image_format))
