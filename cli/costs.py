"""``ctxpack report``: what the agents' sessions cost, why the cache was written, and what
ctxpack would have billed instead."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from compactor_core.conversation.formats import dumps
from compactor_core.disk.atomic import atomic_write
from compactor_core.report.bill import SessionBill
from compactor_core.report.collect import SessionPlace, collect, places_in_homes
from compactor_core.report.groups import add_up, moment
from compactor_core.report.ledger import Ledger
from compactor_core.report.plot import render
from compactor_core.report.prices import bundled, parse
from compactor_core.settings import Settings
from compactor_core.snapshots.base import ORIGINAL
from compactor_core.snapshots.local_store import SnapshotStore
from compactor_core.snapshots.locations import user_store

from . import io, options
from .agents import AGENTS, agent_homes
from .resolve import Resolver

if TYPE_CHECKING:
    from compactor_core.report.bill import Request
    from compactor_core.report.groups import Total

BY = ("day", "week", "month", "session", "project", "agent", "model")  # report.groups.BY (a test)


@click.command(
    epilog=options.epilog(
        "ctxpack report                                 # every session on this machine, by day",
        "ctxpack report --by project --since 2026-11-01",
        "ctxpack report --misses ~/.claude/projects/-home-me-app/1284c080-….jsonl",
        "ctxpack report --json --by month | jq .total.cost",
    )
)
@click.argument("paths", nargs=-1, metavar="[PATH]...")
@click.option(
    "--by", type=click.Choice(BY), default="day", show_default=True, help="One row per this."
)
@click.option(
    "--since",
    type=click.DateTime(["%Y-%m-%d"]),
    help="Only requests from this day on [default: the first].",
)
@click.option(
    "--until",
    type=click.DateTime(["%Y-%m-%d"]),
    help="Only requests up to this day [default: the last].",
)
@click.option(
    "--agent",
    type=click.Choice(AGENTS),
    help="Only this agent's sessions [default: every agent's].",
)
@click.option(
    "--project", metavar="TEXT", help="Only sessions whose project contains TEXT [default: all]."
)
@click.option("--misses", is_flag=True, help="Also list each cache miss with its cause and record.")
@click.option(
    "--prices",
    "prices_file",
    type=click.Path(exists=True, dir_okay=False),
    help="A price table (prices.json's shape) that overrides and extends the bundled one "
    "[default: the bundled one].",
)
@click.option(
    "--with-ctxpack/--no-with-ctxpack",
    default=True,
    show_default=True,
    help="Replay each session through the cache-aware policy (slower the first time; kept).",
)
@options.threshold_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object: total and groups.")
@click.option("--plot", metavar="FILE.svg|FILE.png", help="Cost per day by cause (ctxpack[plot]).")
def report(paths: tuple[str, ...], **chosen: Any) -> None:
    """Report the recorded bill of agent sessions, why their cache was written, and what the
    cache-aware policy of ctxpack would have billed.

    By default every session `ctxpack sessions` finds; or the session files and folders named.
    Tokens are as each agent recorded them (input, cache reads, 5-minute and 1-hour cache writes,
    output), priced per model from a dated table (an unknown model is named, never priced as
    another). Every cache write is the conversation's new turns or a miss with a cause: the
    first request, the cache expired, the agent's own compaction, a resume, a changed prompt
    (tools, system prompt, a skill), thinking dropped, a ctxpack rewrite, a model switch, or
    unexplained. Each file's bill is kept in the state folder until the file changes.
    """
    plot = chosen.pop("plot")
    if plot and not plot.lower().endswith((".svg", ".png")):
        raise click.UsageError(f"--plot {plot}: the picture's name must end in .svg or .png")
    prices = _prices(chosen.pop("prices_file"))
    bills: Iterable[SessionBill] = _bills(paths, chosen)
    if chosen["misses"] or plot:
        bills = list(bills)  # read again after the totals; otherwise streamed, memory flat
    zone = datetime.now().astimezone().tzinfo
    keep = _filter(chosen, zone)
    total, groups = add_up(bills, chosen["by"], prices, zone, keep)
    if chosen["as_json"]:
        _write_json(total, groups, chosen["by"], prices.as_of)
    else:
        io.write_stdout(_table(total, groups, chosen["by"], prices.as_of).encode())
        if chosen["misses"]:
            io.write_stdout(_misses(bills, keep).encode())
    if plot:
        _draw(bills, prices, zone, keep, plot)


def _prices(path: str | None):  # -> PriceTable
    table = bundled()
    if path is None:
        return table
    with open(path, encoding="utf-8") as file:
        return parse(file.read(), io.label(path), table)


def _bills(paths: tuple[str, ...], chosen: dict[str, Any]) -> Iterator[SessionBill]:
    """Each session's bill as it is read (or taken from the kept ones), one at a time."""
    places = list(_places(paths, chosen["agent"]))
    state = user_store(os.environ.get("XDG_STATE_HOME"), os.environ.get("HOME")) / "report"
    settings = Settings(threshold=chosen["threshold"])
    with Ledger(state) as ledger, _progress(places) as advance:
        for found in collect(
            places, ledger, settings, _rewrites(), chosen["with_ctxpack"], advance
        ):
            if isinstance(found, SessionBill):
                yield found
            else:
                io.warn(f"{io.label(found.path)}: not in the report: {found.reason}")


def _places(paths: tuple[str, ...], agent: str | None) -> Iterator[SessionPlace]:
    if not paths:
        yield from places_in_homes(agent_homes(agent))
        return
    for name in paths:
        path = Path(name)
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for file in files:
            yield SessionPlace(file, None)


def _rewrites() -> Callable[[Path], list[float]]:
    """When ctxpack rewrote each file: its snapshots of the file's originals."""
    times: dict[str, list[float]] = {}
    try:
        store = SnapshotStore(Path(Resolver({}, os.environ).snapshot_dir()))
        for snapshot in store.snapshots():
            if snapshot.kind == ORIGINAL and snapshot.source and snapshot.time:
                moment = datetime.fromisoformat(snapshot.time).timestamp()
                times.setdefault(snapshot.source, []).append(moment)
    except (OSError, ValueError):
        pass  # no store, or one not safe to read: no rewrite is known
    return lambda path: times.get(os.path.abspath(path), [])


class _progress:
    """A progress bar over the bytes to read, on a terminal only (stderr)."""

    def __init__(self, places: list[SessionPlace]) -> None:
        self.total = sum(_size(place.path) for place in places)
        self.bar: Any = None

    def __enter__(self) -> Callable[[int], None]:
        if sys.stderr.isatty() and self.total:
            self.bar = click.progressbar(length=self.total, label="reading", file=sys.stderr)
            self.bar.__enter__()
            return self.bar.update
        return lambda _size: None

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _filter(chosen: dict[str, Any], zone: Any) -> Callable[[Request, SessionBill], bool]:
    since: date | None = chosen["since"].date() if chosen["since"] else None
    until: date | None = chosen["until"].date() if chosen["until"] else None
    agent, project = chosen["agent"], chosen["project"]

    def keep(request: Request, bill: SessionBill) -> bool:
        if (agent and bill.agent != agent) or (project and project not in bill.project):
            return False
        day = moment(request, zone)
        if day is None:
            return since is None and until is None
        return (since is None or day.date() >= since) and (until is None or day.date() <= until)

    return keep


def _write_json(total: Total, groups: list[Total], by: str, as_of: str) -> None:
    document = {
        "by": by,
        "prices_as_of": as_of,
        "total": total.as_json(),
        "groups": [group.as_json() for group in groups],
    }
    io.write_stdout(dumps(document) + b"\n")


def _money(value: float) -> str:
    return f"${value:,.2f}"


def _tokens(value: int) -> str:
    return f"{value:,}"


def _table(total: Total, groups: list[Total], by: str, as_of: str) -> str:
    header = [by.upper(), "REQUESTS", "INPUT", "CACHE READ", "CACHE WRITE", "OUTPUT", "COST"]
    header += ["WITH CTXPACK", "SAVED"]
    rows = [header] + [_row(group) for group in groups] + [_row(total, "TOTAL")]
    widths = [max(len(row[column]) for row in rows) for column in range(len(header))]
    lines = [
        "  ".join(
            _cell(cell, width, column)
            for column, (cell, width) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    ]
    text = "\n".join(lines) + "\n\n" + _causes(total)
    unknown = ", ".join(sorted(total.unknown_models))
    if unknown:
        text += f"no price for: {unknown} (their tokens are counted, not priced; see --prices)\n"
    return text + f"prices as of {as_of}; the cache-aware policy at the same settings as auto\n"


def _row(group: Total, key: str | None = None) -> list[str]:
    saved = group.cost - group.with_ctxpack
    share = f" ({saved / group.cost:.0%})" if group.cost else ""
    return [
        key or group.key,
        _tokens(group.requests),
        _tokens(group.input),
        _tokens(group.cache_read),
        _tokens(group.cache_write),
        _tokens(group.output),
        _money(group.cost),
        _money(group.with_ctxpack),
        _money(saved) + share,
    ]


def _cell(cell: str, width: int, column: int) -> str:
    return cell.ljust(width) if column == 0 else cell.rjust(width)


def _causes(total: Total) -> str:
    fresh = sum(total.causes.values())
    if not fresh:
        return ""
    lines = ["why the cache was written:"]
    ranked = sorted(total.causes.items(), key=lambda item: -item[1])
    for cause, tokens in ranked:
        if tokens:
            share = tokens / fresh if fresh else 0
            cost = _money(total.causes_cost.get(cause, 0.0))
            lines.append(f"  {cause:<17} {_tokens(tokens):>14} tokens {share:>5.0%}  {cost:>10}")
    return "\n".join(lines) + "\n"


def _misses(bills: list[SessionBill], keep: Callable[[Request, SessionBill], bool]) -> str:
    lines = ["\ncache misses, one by one (the request came before the line named):"]
    for bill in bills:
        for request in bill.requests:
            if request.cause is None or not keep(request, bill):
                continue
            when = "?" if request.time is None else f"{datetime.fromtimestamp(request.time):%c}"
            gap = "" if request.gap is None else f", {request.gap:,.0f} s after the previous"
            lines.append(
                f"  {when}  {request.cause:<17} {_tokens(request.missed):>10} tokens  "
                f"{io.label(bill.path)}: line {request.line + 1}{gap}"
            )
    return "\n".join(lines) + "\n"


def _draw(bills, prices, zone, keep, path: str) -> None:
    image_format = path.rpartition(".")[2].lower()
    atomic_write(Path(path), render(bills, prices, zone, keep, image_format))
