"""The replay's figures as a table for people and as JSON for scripts, per file and in total."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..compaction.cache_plan import min_gain
from ..defaults import CACHE_AWARE, EVERY_TURN
from .run import BAREAGENT, CHOSEN, KEEPS, RESENDS, UNTOUCHED, USES, Replay

USE_LABELS = {KEEPS: "keeps its output", RESENDS: "re-sends history"}
RECORDED = "recorded"  # the row of the bill as the agent recorded it
RUNS = ((KEEPS, UNTOUCHED), *((use, policy) for use in USES for policy in (BAREAGENT, CHOSEN)))


def settings_line(replay: Replay) -> str:
    settings = replay.settings
    parts = [_chosen_name(replay), f"threshold {settings.threshold}"]
    if settings.policy == CACHE_AWARE and not settings.compat:
        parts.append(f"min-gain {min_gain(settings)}")
    parts.append(f"keep-recent {settings.keep_recent}")
    return ", ".join(parts)


def _chosen_name(replay: Replay) -> str:
    return "bareagent" if replay.settings.compat else replay.settings.policy


def figures(replays: Sequence[Replay]) -> list[dict[str, Any]]:
    """One row per way of use and policy, the files added up: what was billed (in input
    tokens), and how that compares with the history untouched and with BareAgent's policy."""
    sums = {run: {"billed": 0.0, "sent": 0, "cached": 0, "biggest": 0} for run in RUNS}
    for replay in replays:
        for use, policy in RUNS:
            bill, tally = replay.find(use, policy).bill, sums[(use, policy)]
            tally["billed"] += bill.billed
            tally["sent"] += bill.sent
            tally["cached"] += bill.cached
            tally["biggest"] = max(tally["biggest"], bill.biggest)
    base = sums[(KEEPS, UNTOUCHED)]
    rows = [] if (recorded := _recorded(replays, base)) is None else [recorded]
    for use, policy in RUNS:
        tally = sums[(use, policy)]
        every_turn = sums[(use, BAREAGENT)]["billed"]
        vs_every_turn = None if policy == UNTOUCHED else _ratio(tally["billed"], every_turn)
        rows.append(
            {
                "use": "any" if policy == UNTOUCHED else use,
                "policy": policy,
                "name": {UNTOUCHED: UNTOUCHED, BAREAGENT: EVERY_TURN}.get(
                    policy, _chosen_name(replays[0])
                ),
                "billed": round(tally["billed"], 2),
                "vs_untouched": _ratio(tally["billed"], base["billed"]),
                "vs_every_turn": vs_every_turn,
                "hit_rate": _ratio(tally["cached"], tally["sent"]) or 0.0,
                "sent": tally["sent"],
                "sent_vs_untouched": _ratio(tally["sent"], base["sent"]),
                "biggest": tally["biggest"],
            }
        )
    return rows


def _recorded(replays: Sequence[Replay], base: dict[str, Any]) -> dict[str, Any] | None:
    """The bill as the files record it, first; None unless every file records its usage."""
    receipts = [replay.recorded for replay in replays]
    if not receipts or any(receipt is None for receipt in receipts):
        return None
    billed = sum(receipt.billed for receipt in receipts if receipt)
    sent = sum(receipt.sent for receipt in receipts if receipt)
    read = sum(receipt.cache_read for receipt in receipts if receipt)
    return {
        "use": "any",
        "policy": RECORDED,
        "name": "as recorded",
        "billed": round(billed, 2),
        "vs_untouched": _ratio(billed, base["billed"]),
        "vs_every_turn": None,
        "hit_rate": _ratio(read, sent) or 0.0,
        "sent": sent,
        "sent_vs_untouched": _ratio(sent, base["sent"]),
        "biggest": max(receipt.biggest for receipt in receipts if receipt),
    }


def _ratio(value: float, base: float) -> float | None:
    return round(value / base, 4) if base else None


def as_json(replay: Replay, label: str) -> dict[str, Any]:
    """One file's figures, and each request's tokens and cached tokens per run."""
    prices = replay.prices
    return {
        "file": label,
        "requests": replay.requests,
        "pricing": {
            "name": prices.name,
            "rules": prices.rules,
            "read": prices.read,
            "write": prices.write,
            "ttl": prices.ttl,
        },
        "recorded": replay.recorded.as_json() if replay.recorded else None,
        "calibration": {
            "extras": replay.calibration.extras,
            "scale": round(replay.calibration.scale, 4),
            "prefix_changes": len(replay.calibration.changes),
        },
        "settings": settings_line(replay),
        "rows": figures([replay]),
        "per_request": {
            f"{'any' if policy == UNTOUCHED else use}/{policy}": [
                [request.tokens, request.cached, request.written]
                for request in replay.find(use, policy).bill.requests
            ]
            for use, policy in RUNS
        },
    }


def render(replay: Replay, label: str) -> str:
    """The table for one file, under a line saying what was replayed and how it was priced."""
    title = f"{label}: {replay.requests} requests; {replay.prices.describe()}"
    chosen = f"  chosen: {settings_line(replay)}"
    return f"{title}\n  basis: {_basis(replay)}\n{chosen}\n{table(figures([replay]))}\n"


def _basis(replay: Replay) -> str:
    """What the figures stand on: the agent's record, or a simulation alone."""
    if replay.recorded is None:
        return "a simulation (the file records no usage)"
    calibration = replay.calibration
    return (
        f"recorded usage of {replay.recorded.requests} requests; simulated with "
        f"{calibration.extras:,} tokens of system prompt and tools a request, "
        f"{calibration.scale:.2f} tokens per estimated token"
    )


HEADER = ("way of use", "policy", "billed", "vs untouched", "vs every-turn", "cache hits", "sent")


def table(rows: Sequence[dict[str, Any]]) -> str:
    lines = [(*HEADER, "biggest")]
    for row in rows:
        lines.append(
            (
                "either" if row["use"] == "any" else USE_LABELS[row["use"]],
                f"{row['name']} (BareAgent's)" if row["policy"] == BAREAGENT else row["name"],
                f"{row['billed']:,.0f}",
                _times(row["vs_untouched"]),
                _times(row["vs_every_turn"]),
                f"{100 * row['hit_rate']:.1f}%",
                f"{row['sent']:,} ({_times(row['sent_vs_untouched'])})",
                f"{row['biggest']:,}",
            )
        )
    widths = [max(len(line[column]) for line in lines) for column in range(len(HEADER) + 1)]
    return "\n".join(
        "  "
        + "  ".join(
            cell.ljust(width) if column < 2 else cell.rjust(width)
            for column, (cell, width) in enumerate(zip(line, widths, strict=True))
        ).rstrip()
        for line in lines
    )


def _times(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio:.2f}x"
