"""Prompt-cache bills of piping every request through auto, on the bundled real sessions (issue 20).

Each session is replayed request by request (``compactor_core.replay.run``: a request before each
assistant message, the history up to it) in both ways of use, an agent loop that keeps ctxpack's
output and a caller that re-sends its raw history (a proxy), and billed at Anthropic's 5-minute
cache prices (read 0.1x, write 1.25x; a gap over 5 minutes is a miss). The sessions: the
transcripts of tests/corpus, the two real Claude Code session files they came from
(tests/corpus/originals, with their timestamps) and the agents' session files of tests/fixtures.

Targets with ``--threshold 20000``: the default policy billed in total at most 0.40x the history
untouched in both ways of use, no session billed above untouched, tokens sent at most 0.6x
untouched, no request over 1.5x the threshold; at the default threshold at most 0.50x in total.
``cache.sweep`` replays the default policy with other ``--min-gain`` values: how its default was
chosen (README).

    python bench/run.py cache
    python bench/bench_cache.py            # the per-session table at --threshold 20000
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from harness import ROOT, Report

from compactor_core.conversation.formats import parse
from compactor_core.defaults import MIN_GAIN, THRESHOLD
from compactor_core.replay import recordings
from compactor_core.replay.pricing import PROFILES
from compactor_core.replay.report import figures, table
from compactor_core.replay.run import (
    CHOSEN,
    KEEPS,
    SEED,
    UNTOUCHED,
    USES,
    Recording,
    Replay,
    replay,
)
from compactor_core.session_files.index import index_session
from compactor_core.session_files.registry import detect
from compactor_core.settings import Settings

sys.path.insert(0, str(ROOT / "tests"))

from helpers import corpus_files

PRICES = PROFILES["anthropic-5m"]
SMALL_THRESHOLD = 20_000
SWEEP = (0, 1000, 2000, 3000, 4000, 5000, 6000, 8000, 12000)


def sessions() -> list[tuple[str, Recording]]:
    """Every bundled real session, named by its file."""
    found = [
        (path, recordings.from_conversation(parse(path.read_bytes()))) for path in corpus_files()
    ]
    files = sorted((ROOT / "tests" / "corpus" / "originals").glob("*__full.jsonl"))
    files += sorted((ROOT / "tests" / "fixtures").glob("*/*.jsonl"))
    for path in files:
        with path.open("rb") as handle:
            agent_format = detect(handle, "auto", str(path))
            if agent_format is not None:
                session = index_session(handle, agent_format, str(path))
                found.append((path, recordings.from_session(handle, session)))
    return [(str(path.relative_to(ROOT / "tests")), recording) for path, recording in found]


def run(report: Report) -> None:
    bundled = sessions()
    report.case("cache.threshold20k", lambda: _targets(report, bundled, SMALL_THRESHOLD, 0.40))
    report.case("cache.default", lambda: _targets(report, bundled, THRESHOLD, 0.50))
    report.case("cache.sweep", lambda: _sweep(report, bundled))


def replayed(bundled: Sequence[tuple[str, Recording]], threshold: int) -> list[Replay]:
    return [replay(recording, Settings(threshold=threshold), PRICES) for _, recording in bundled]


def _targets(
    report: Report, bundled: Sequence[tuple[str, Recording]], threshold: int, target: float
) -> None:
    name = "cache.threshold20k" if threshold == SMALL_THRESHOLD else "cache.default"
    replays = replayed(bundled, threshold)
    for line in per_session(bundled, replays).splitlines():
        report.log(line)
    rows = {(row["use"], row["policy"]): row for row in figures(replays)}
    base = rows[("any", UNTOUCHED)]
    for use in USES:
        chosen, seed = rows[(use, CHOSEN)], rows[(use, SEED)]
        report.ratio(f"{name}.{use}", chosen["billed"], base["billed"], target, unit="tokens")
        report.info(f"{name}.{use}.vs_seed", chosen["billed"], seed["billed"], unit="tokens")
    worst = max(
        (replay.find(use, CHOSEN).bill.billed / replay.find(KEEPS, UNTOUCHED).bill.billed, label)
        for (label, _), replay in zip(bundled, replays, strict=True)
        for use in USES
    )
    report.ratio(f"{name}.worst_session", worst[0], 1.0, 1.0, unit="x", note=worst[1])
    if threshold != SMALL_THRESHOLD:
        return
    sent = max(rows[(use, CHOSEN)]["sent"] for use in USES)
    report.ratio(f"{name}.sent", sent, base["sent"], 0.6, unit="tokens")
    biggest = max(rows[(use, CHOSEN)]["biggest"] for use in USES)
    report.ratio(f"{name}.biggest", biggest, threshold, 1.5, unit="tokens")


def per_session(bundled: Sequence[tuple[str, Recording]], replays: Sequence[Replay]) -> str:
    """Billed vs untouched per session: the seed's and the default policy, both ways of use."""
    header = ("session", "requests", "untouched", "seed keeps", "new keeps")
    header += ("seed re-sends", "new re-sends", "hits new")
    lines = [header]
    for (label, _), result in zip(bundled, replays, strict=True):
        base = result.find(KEEPS, UNTOUCHED).bill.billed
        cells = [label, str(result.requests), f"{base:,.0f}"]
        for use in USES:
            for policy in (SEED, CHOSEN):
                cells.append(f"{result.find(use, policy).bill.billed / base:.2f}x")
        cells.append(f"{result.find(KEEPS, CHOSEN).bill.hit_rate:.0%}")
        lines.append(tuple(cells))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    rendered = [
        "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(line, widths, strict=True))
        )
        for line in lines
    ]
    return "\n".join([*rendered, "total:", table(figures(replays))])


def _sweep(report: Report, bundled: Sequence[tuple[str, Recording]]) -> None:
    """The default policy's bill in total (keeps its output) at each --min-gain."""
    for threshold in (SMALL_THRESHOLD, THRESHOLD):
        totals = []
        for gain in SWEEP:
            settings = Settings(threshold=threshold, min_gain=gain)
            results = [
                replay(recording, settings, PRICES, policies=(CHOSEN,), uses=(KEEPS,))
                for _, recording in bundled
            ]
            billed = sum(result.find(KEEPS, CHOSEN).bill.billed for result in results)
            base = sum(result.find(KEEPS, UNTOUCHED).bill.billed for result in results)
            worst = max(
                result.find(KEEPS, CHOSEN).bill.billed / result.find(KEEPS, UNTOUCHED).bill.billed
                for result in results
            )
            totals.append((gain, billed / base, worst))
        best = min(totals, key=lambda item: item[1])
        for gain, ratio, worst in totals:
            mark = " (default)" if gain == MIN_GAIN else ""
            mark += " (lowest)" if gain == best[0] else ""
            report.log(
                f"threshold {threshold}: --min-gain {gain}: {ratio:.3f}x untouched, "
                f"worst session {worst:.2f}x{mark}"
            )
        chosen = next(ratio for gain, ratio, _ in totals if gain == MIN_GAIN)
        report.info(
            f"cache.sweep.{threshold}", chosen, best[1], unit="x", note=f"lowest at {best[0]}"
        )


if __name__ == "__main__":
    bundled = sessions()
    print(per_session(bundled, replayed(bundled, SMALL_THRESHOLD)))
