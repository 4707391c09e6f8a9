"""``ctxpack rescue``: make a session its agent refuses to open open again, in place.

The options become a ``rescue`` job (its window is the job's threshold) over in-place targets,
and every file goes through the core's one path, as ``micro --in-place`` does: the same guards
(not while the agent writes it), the same snapshot of the original (``ctxpack restore`` undoes
it), the same report, each repair one more line of it.
"""

from __future__ import annotations

from typing import Any

import click

from compactor_core import defaults

from . import options, resolve
from .run import Output, compact_inputs, run_settings


@click.command(
    epilog=options.epilog(
        "ctxpack rescue ~/.claude/projects/-home-me-app/SESSION.jsonl",
        "ctxpack rescue --dry-run ~/.codex/sessions/2026/12/03/rollout-*.jsonl",
        "ctxpack rescue --window 120000 session.json",
    )
)
@options.files_argument
@click.option(
    "--window",
    type=click.IntRange(min=1),
    default=defaults.RESCUE_WINDOW,
    show_default=True,
    metavar="TOKENS",
    help="While the resumed view is over this estimate: micro, then a summary, until it fits.",
)
@click.option("--dry-run", is_flag=True, help="Say what would be repaired; write nothing.")
@click.option("--json", "json_report", is_flag=True, help="Print a JSON report on stdout.")
@click.option("--stats", is_flag=True, help="Also report tokens before -> after on stderr.")
@options.recursive_option
@options.glob_option
@options.session_options
@options.micro_options
@options.prompt_options
@options.provider_options
@options.snapshot_options
def rescue(files: tuple[str, ...], window: int, **given: Any) -> None:
    """Repair a session its agent will not open: tool calls without results and results
    without calls, cut parent chains, images over the APIs' limits, oversized records,
    characters that break the agent's reader; then micro and full while over --window.

    In place, the original kept as a snapshot (ctxpack restore FILE undoes it). Each repair is
    one line on stderr; exit 1 if something could not be repaired.
    """
    given |= {
        "threshold": window,
        "policy": defaults.EVERY_TURN,
        "compat": "default",
        "tokenizer": None,
        "in_place": True,
        "output": None,
        "output_dir": None,
        "backup": None,
        "pretty": False,
        "fail_fast": False,
    }
    resolver = resolve.resolver(given)
    settings = resolve.settings(given, resolver, summarizing=True)
    out = Output.from_options(given)
    told = run_settings("rescue", settings, resolver, given, out)
    compact_inputs(files, told, out, given, resolver)
