"""Stale results first against age alone, on the bundled real sessions (issue 35).

Per session (the corpus's transcripts and its two Claude Code session files):

- **stale share**: of the tool-result tokens, those a later result made stale (the same file read
  again or edited, the same command, listing or search repeated): ``estimate --json``'s figure;
  target about 45% on the real Claude Code sessions;
- **left**: the tokens micro compaction leaves at the defaults (the newest 3 tool-result turns
  kept), stale first against age alone;
- **replayed**: every request of the session through the default cache-aware policy as ``serve``
  runs it (a caller that re-sends its raw history), billed by Anthropic's cache rules: the tokens
  sent and the bill, stale first against age alone. Targets on the coding sessions: tokens sent
  at most 0.90x, the bill at most 1.00x;
- **identifier recall**: of the identifiers (paths and names, ``tests/recall.py``) that the last
  quarter of the session uses again from the first three quarters, the share the first three
  quarters still hold once micro-compacted (what the model can still see): stale first at least
  what age alone keeps (as bench_full measures a summary's recall).

And on the session files themselves (``stale.session_files``: ``micro`` on each file, as
``micro --in-place`` writes it, its view read back): the results replaced as superseded and the
view's tokens left, stale first against age alone at the defaults.

    python bench/run.py stale
"""

from __future__ import annotations

import io
import sys
from dataclasses import dataclass, replace
from typing import Any

from harness import ROOT, Report

sys.path.insert(0, str(ROOT / "tests"))

from bench_cache import prices_for, session_file_formats, session_files, transcripts
from helpers import session_result
from recall import identifiers, texts

from compactor_core.compaction.estimate import estimate
from compactor_core.compaction.micro import is_marker, micro_compact
from compactor_core.compaction.staleness import SUPERSEDED_PREFIX, stale_report
from compactor_core.conversation.tools import result_holders
from compactor_core.replay.run import CHOSEN, RESENDS, replay
from compactor_core.session_files.index import index_session, load_view
from compactor_core.settings import RunSettings, Settings

SENT_TARGET = 0.90
BILL_TARGET = 1.00
STALE_SHARE = 0.45  # about this share of a real Claude Code session's tool-result tokens
CODING = ("cc_", "oai_openhands", "claude")  # the sessions of coding agents


@dataclass(frozen=True)
class Row:
    label: str
    share: float
    freed_stale: int
    freed_age: int
    sent_stale: int
    sent_age: int
    billed_stale: float
    billed_age: float
    recall_stale: float
    recall_age: float


def run(report: Report) -> None:
    report.case("stale.replay", lambda: _replays(report))
    report.case("stale.session_files", lambda: _session_files(report))


def _replays(report: Report) -> None:
    bundled = transcripts() + session_files()
    rows = [measure(label, recording) for label, recording in bundled if _has_tools(recording)]
    for line in table(rows):
        report.log(line)
    coding = [row for row in rows if any(mark in row.label for mark in CODING)]
    sent = sum(row.sent_stale for row in coding), sum(row.sent_age for row in coding)
    billed = sum(row.billed_stale for row in coding), sum(row.billed_age for row in coding)
    report.ratio("stale.sent", *sent, SENT_TARGET, unit="tokens", note="coding sessions")
    report.ratio("stale.billed", *billed, BILL_TARGET, unit="tokens", note="coding sessions")
    left = sum(row.freed_stale for row in rows), sum(row.freed_age for row in rows)
    report.info("stale.micro_left", *left, unit="tokens", note="micro at the defaults")
    real = [row for row in rows if row.label.startswith("corpus/")]
    kept = sum(row.recall_stale for row in real), sum(row.recall_age for row in real)
    report.ratio("stale.recall", *kept, None, unit="share", note="real sessions, summed")
    worse = [row.label for row in real if row.recall_stale < row.recall_age]
    report.ratio("stale.recall_lower", len(worse), 1, None, unit="sessions", note=" ".join(worse))
    claude = [row.share for row in real if "/cc_" in row.label]
    share = sum(claude) / len(claude)
    report.info("stale.share_claude_code", share, STALE_SHARE, unit="share", note="mean")


def _session_files(report: Report) -> None:
    """Micro on the session files (the file's two passes), stale first against age alone."""
    left = {True: 0, False: 0}
    superseded = 0
    for path, agent_format in session_file_formats():
        data = path.read_bytes()
        for stale in (True, False):
            job = RunSettings("micro", replace(Settings(), stale=stale))
            view = view_of(session_result(data, agent_format, job)[0], agent_format)
            left[stale] += estimate(view)
            marked = [h["content"] for _, h in result_holders(view) if is_marker(h["content"])]
            found = sum(text.startswith(SUPERSEDED_PREFIX) for text in marked)
            superseded += found if stale else 0
            if stale:
                report.log(f"{path.name}: {found} superseded of {len(marked)} markers")
    note = f"view tokens micro leaves; {superseded} results superseded"
    report.info("stale.session_files", left[True], left[False], unit="tokens", note=note)


def view_of(data: bytes, agent_format: Any) -> list:
    handle = io.BytesIO(data)
    return load_view(handle, index_session(handle, agent_format, "<session>"))


def measure(label: str, recording) -> Row:
    messages = recording.messages
    settings = Settings()
    age = replace(settings, stale=False)
    prices = prices_for(recording, "anthropic")
    replays = {
        name: replay(recording, chosen, prices, policies=(CHOSEN,), uses=(RESENDS,))
        for name, chosen in (("stale", settings), ("age", age))
    }
    bills = {name: result.find(RESENDS, CHOSEN).bill for name, result in replays.items()}
    return Row(
        label,
        stale_report(messages)["share"],
        estimate(micro_compact(messages, settings)[0]),
        estimate(micro_compact(messages, age)[0]),
        bills["stale"].sent,
        bills["age"].sent,
        bills["stale"].billed,
        bills["age"].billed,
        identifier_recall(messages, settings),
        identifier_recall(messages, age),
    )


def identifier_recall(messages: list, settings: Settings) -> float:
    """Of the identifiers the last quarter uses again from the rest, the share the rest still
    holds once micro-compacted."""
    cut = len(messages) * 3 // 4
    earlier, later = messages[:cut], messages[cut:]
    wanted = _identifiers(later) & _identifiers(earlier)
    if not wanted:
        return 1.0
    kept = _identifiers(micro_compact(earlier, settings)[0])
    return len(wanted & kept) / len(wanted)


def _identifiers(messages: list) -> set[str]:
    return {name for text in texts(messages) for name in identifiers(text)}


def _has_tools(recording) -> bool:
    return stale_report(recording.messages)["results"] > 0


def table(rows: list[Row]) -> list[str]:
    header = ("session", "stale", "left: age", "left: stale", "sent", "billed", "recall age/stale")
    lines = [header]
    for row in rows:
        lines.append(
            (
                row.label,
                f"{row.share:.0%}",
                f"{row.freed_age:,}",
                f"{row.freed_stale:,}",
                f"{row.sent_stale / row.sent_age:.3f}x" if row.sent_age else "-",
                f"{row.billed_stale / row.billed_age:.3f}x" if row.billed_age else "-",
                f"{row.recall_age:.0%}/{row.recall_stale:.0%}",
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return [
        "  ".join(
            cell.ljust(width) if i == 0 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(line, widths, strict=True))
        )
        for line in lines
    ]
