"""Full and automatic compaction on the real transcripts of tests/corpus (issue 3's bar).

Per transcript: ``auto --threshold 1000`` with the built-in extractive summarizer, in process, and
a second ``full`` on its result. Figures: input and output tokens (by the estimate) and their ratio
against the size bound (20% of the input, or the system messages and kept tail plus 20% of the rest
when those alone are larger); the share of distinct file paths given to tools in the summarized
part that the summary names (target 95%); whether it quotes the first user request (its first 200
characters, whitespace squeezed); the share of the first summary's paths the second summary carries
forward (target 100%); the time of one ``auto`` run. Issue 10's figures: summary lines carrying
harness boilerplate in either summary (target 0), whether the latest user request is quoted, the
"First request" lines of the second summary (target 1), whether the next step is there, and the
"work done" lines that say what was done. The checks are tests/corpus_full.py's, which the test
suite runs too.

Issue 23's figures (``tests/recall.py``): on each real session that holds a compaction the agent
made itself, the share of the span's identifiers that the continuation uses again which
ctxpack's summary of the span names, beside the agent's own summary (target: at least as many,
in no more characters), and the same for the paths among them.

    python bench/run.py full
    python bench/bench_full.py            # the figures as a plain table
"""

from __future__ import annotations

import sys

from harness import ROOT, Report

sys.path.insert(0, str(ROOT / "tests"))  # the checks the tests use

from corpus_full import PATHS_TARGET, Figures, ctxpack_summary, measure
from helpers import corpus_files
from recall import Recall, measure_all


def run(report: Report) -> None:
    files = corpus_files()
    if not files:
        report.note("full: no corpus in tests/corpus: skipped")
        return
    rows = []
    for path in files:
        case = f"full.{path.stem}"
        if not report.wants(case):
            continue
        figures = measure(path)
        rows.append(figures)
        _record(report, case, figures)
    for line in table(rows).splitlines() if rows else ():
        report.log(line)
    if report.wants("full.recall"):
        recalls = measure_all(ctxpack_summary)
        for recall in recalls:
            _record_recall(report, recall)
        for line in recall_table(recalls).splitlines():
            report.log(line)


def _record_recall(report: Report, recall: Recall) -> None:
    case = f"full.recall.{recall.name}"
    report.ratio(
        f"{case}.names",
        recall.named,
        recall.agent_named,
        target=1.0,
        unit="names",
        higher_is_better=True,
        note=f"of {recall.wanted} the continuation uses again; vs the agent's own summary",
    )
    report.ratio(
        f"{case}.chars",
        recall.chars,
        recall.agent_chars,
        target=1.0,
        unit="chars",
        note="the summary's length vs the agent's own",
    )


def _record(report: Report, case: str, figures: Figures) -> None:
    report.ratio(
        f"{case}.size",
        figures.tokens_out,
        figures.tokens_in,
        target=figures.bound / figures.tokens_in,
        unit="tokens",
        note=f"bound {figures.bound:.0f} tokens; system messages + kept tail {figures.fixed}",
    )
    if figures.paths:
        report.ratio(
            f"{case}.paths",
            figures.paths_named,
            figures.paths,
            target=PATHS_TARGET,
            unit="paths",
            higher_is_better=True,
        )
    else:
        report.note(f"{figures.name}: no file paths given to tools")
    report.ratio(
        f"{case}.first_request",
        float(figures.first_quoted),
        1.0,
        target=1.0,
        unit="quoted",
        higher_is_better=True,
    )
    if figures.carried_of:
        report.ratio(
            f"{case}.carried",
            figures.carried,
            figures.carried_of,
            target=1.0,
            unit="paths",
            higher_is_better=True,
            note=f"second full: {figures.second_status}",
        )
    else:
        report.note(f"{figures.name}: second full {figures.second_status}, no paths to carry")
    report.ratio(
        f"{case}.boilerplate",
        float(len(figures.boilerplate)),
        1.0,
        target=0.0,
        unit="lines",
        note="summary lines that carry harness text (both summaries)",
    )
    report.ratio(
        f"{case}.latest_request",
        float(figures.latest_quoted),
        1.0,
        target=1.0,
        unit="quoted",
        higher_is_better=True,
    )
    report.note(
        f"{figures.name}: {figures.first_labels} 'First request' line(s) after a re-summary, "
        f"next step {'there' if figures.next_step else 'missing'}, "
        f"{figures.work_lines} work-done lines"
    )
    report.note(
        f"{figures.name}: summary {figures.status}, {figures.pair_problems} tool results "
        f"without their call, auto in {figures.seconds * 1000:.0f} ms"
    )


def table(rows: list[Figures]) -> str:
    headers = ("transcript", "in", "out", "ratio", "bound", "paths named", "1st request")
    headers += ("carried forward", "boilerplate", "latest", "1st labels", "next step", "work")
    headers += ("time",)
    lines = [
        (
            row.name,
            str(row.tokens_in),
            str(row.tokens_out),
            f"{row.ratio:.1%}",
            f"{row.bound:.0f}",
            f"{row.paths_named}/{row.paths} {row.paths_share:.0%}",
            "yes" if row.first_quoted else "no",
            f"{row.carried}/{row.carried_of} {row.carried_share:.0%}",
            str(len(row.boilerplate)),
            "yes" if row.latest_quoted else "no",
            str(row.first_labels),
            "yes" if row.next_step else "no",
            str(row.work_lines),
            f"{row.seconds * 1000:.0f} ms",
        )
        for row in rows
    ]
    return aligned(headers, lines)


def aligned(headers: tuple[str, ...], lines: list[tuple[str, ...]]) -> str:
    """A plain table: the first column to the left, the figures to the right."""
    widths = [max(len(cell) for cell in column) for column in zip(headers, *lines, strict=False)]

    def render(cells: tuple[str, ...]) -> str:
        return "  ".join(
            cell.ljust(width) if i == 0 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
        )

    return "\n".join([render(headers), *(render(line) for line in lines)])


def recall_table(rows: list[Recall]) -> str:
    headers = ("compaction", "wanted", "agent", "ctxpack", "agent chars", "ctxpack chars")
    headers += ("paths", "agent paths", "ctxpack paths")
    lines = [
        (
            row.name,
            str(row.wanted),
            f"{row.agent_named} {row.agent_share:.1%}",
            f"{row.named} {row.share:.1%}",
            str(row.agent_chars),
            str(row.chars),
            str(row.paths),
            str(row.agent_paths_named),
            str(row.paths_named),
        )
        for row in rows
    ]
    total = sum(row.wanted for row in rows)
    agent, ours = sum(row.agent_named for row in rows), sum(row.named for row in rows)
    lines.append(
        (
            "all",
            str(total),
            f"{agent} {agent / total:.1%}" if total else "0",
            f"{ours} {ours / total:.1%}" if total else "0",
            str(sum(row.agent_chars for row in rows)),
            str(sum(row.chars for row in rows)),
            str(sum(row.paths for row in rows)),
            str(sum(row.agent_paths_named for row in rows)),
            str(sum(row.paths_named for row in rows)),
        )
    )
    return aligned(headers, lines)


if __name__ == "__main__":
    print(table([measure(path) for path in corpus_files()]))
    print()
    print(recall_table(measure_all(ctxpack_summary)))
