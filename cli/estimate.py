"""``ctxpack estimate``: the token count of each input, its breakdown (``--json``), or statistics
over folders (``--summary``, in ``corpus.py``).

Run on every agent turn (``if ctxpack estimate -q --over N …``), it imports only what counting one
file takes: the engines of ``-r`` and ``--summary`` load with ``corpus.py`` when asked for.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from compactor_core.compaction.estimate import HEURISTIC, Counter
from compactor_core.conversation.formats import dumps
from compactor_core.ends.documents import open_document

from . import io, options, resolve
from .exit_codes import ExitStatus, combined, for_each_input


@click.command(
    epilog=options.epilog(
        "ctxpack estimate session.json                  # -> 48213",
        "ctxpack estimate --json session.json           # per role, per tool",
        "ctxpack estimate a.json b.jsonl                # N<TAB>file per line",
        "if ctxpack estimate -q --over 50000 session.json; then ctxpack auto -i session.json; fi",
    )
)
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
@click.option("--json", "as_json", is_flag=True, help="Print a breakdown per role and per tool.")
@options.recursive_option
@options.glob_option
@click.option(
    "--summary",
    is_flag=True,
    help="Corpus statistics instead: files, total, mean, p50/p90/p99, max, the 10 largest.",
)
@options.jobs_option
@options.engine_options
@options.tokenizer_option
def estimate(
    files: tuple[str, ...],
    compat: str,
    format_name: str,
    threshold: int | None,
    quiet: bool,
    as_json: bool,
    tokenizer: str | None,
    **listing: Any,
) -> None:
    """Print the token count of a conversation: a fast heuristic, or exact with --tokenizer.

    For an agent's session file: the conversation the agent would send on resume.
    """
    counter = resolve.counter(tokenizer)
    bareagent = compat == "bareagent"
    io.one_pass()
    io.set_directory_hint("add -r/--recursive")
    names = io.input_names(files)
    if listing["summary"] or listing["recursive"]:
        from . import corpus  # the batch engines: not for a file or two

        if listing["summary"]:
            return corpus.summarize(names, format_name, bareagent, as_json, **listing)
        names = corpus.expand(names, listing["globs"])
    over: list[bool] = []

    def estimate_one(name: str) -> None:
        tokens, report = _estimate_file(name, format_name, bareagent, counter, as_json)
        if as_json:
            if len(names) > 1:
                report = {"file": name, **report}
            line = dumps(report).decode()
        else:
            line = str(tokens) if len(names) == 1 else f"{tokens}\t{name}"
        over.append(threshold is not None and tokens > threshold)
        if not quiet:
            io.write_stdout(line.encode() + b"\n")

    failures = for_each_input(names, estimate_one)
    if failures:  # a file that could not be counted decides, as in a batch
        sys.exit(combined(failures))
    if threshold is not None and not any(over):
        sys.exit(ExitStatus.NOT_OVER)


def _estimate_file(
    name: str, format_name: str, bareagent: bool, counter: Counter, as_json: bool
) -> tuple[int, dict[str, Any]]:
    """One input's tokens, and its breakdown when ``--json`` asks for it."""
    with open_document(io.source_of(name), format_name) as document:
        io.end_at_once(document)  # what it parsed: not worth freeing as the process ends
        tokens = document.tokens(counter, bareagent)
        if not as_json:
            return tokens, {}
        report = document.breakdown(counter, bareagent)
        if counter is not HEURISTIC:
            report["heuristic"] = _beside(document.tokens(HEURISTIC, bareagent), tokens)
        return tokens, report


def _beside(heuristic: int, exact: int) -> dict[str, Any]:
    """The heuristic's count next to the exact one, and their ratio (above 1: it counts more)."""
    return {"tokens": heuristic, "ratio": round(heuristic / exact, 3) if exact else None}
