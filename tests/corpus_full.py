"""The corpus figures of issue 3, per transcript: shared by the tests and bench/bench_full.py.

``measure(path)`` runs ``auto --threshold 1000`` with the extractive summarizer on one transcript,
in process, then a second ``full`` on the result, and checks both with the independent oracles of
``checks_full``. The bars:

- size: the output is at most 20% of the input's estimate; when the system messages and the kept
  tail alone are larger than that, at most those plus 20% of the rest (the summary and the
  acknowledgement may take a fifth of what they replace);
- no tool result without its call in an earlier message;
- the summary names at least 95% of the distinct file paths given to tools (fields ``path``,
  ``file_path``, ``filename``, ``notebook_path``) in the summarized part, verbatim;
- it quotes the first user request: its first 200 characters, runs of whitespace squeezed to one
  space on both sides, appear in the summary;
- a second ``full`` on the result succeeds and names every path the first summary named;
- issue 10: no summary line carries harness boilerplate (``checks_full.boilerplate_lines``), the
  latest user request is quoted too, a re-summary keeps one "First request" line, and the part
  "what is needed to continue" is there.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from checks_full import (
    boilerplate_lines,
    first_request,
    latest_request,
    named,
    pair_violations,
    quotes_request,
    request_labels,
    summary_of,
    tool_paths,
)

from compactor_core.compaction import pipeline
from compactor_core.compaction.estimate import estimate
from compactor_core.compaction.full import find_pending_turn, full_compact
from compactor_core.conversation.formats import Conversation, parse
from compactor_core.providers.extractive import ExtractiveSummarizer
from compactor_core.settings import RunSettings, Settings

THRESHOLD = 1000
RATIO_TARGET = 0.20
PATHS_TARGET = 0.95
FIRST_LABELS = ("First request", "最初请求")  # the labels in English and in Chinese
NEXT_HEADINGS = ("Needed to continue", "后续所需上下文")
NEXT_STEP_LABELS = ("Next step", "下一步")
WORK_HEADINGS = ("Work done", "已完成工作")


def work_done(summary: str) -> list[str]:
    """The lines of the "work done" part that say what was done: not a count of tool calls."""
    lines, inside = [], False
    for line in summary.splitlines():
        if line.startswith("## "):
            inside = line[3:] in WORK_HEADINGS
        elif inside and line.startswith("- ") and " ×" not in line:
            lines.append(line)
    return lines


@dataclass(frozen=True)
class Figures:
    name: str
    status: str  # of the full compaction that auto ran
    tokens_in: int
    tokens_out: int
    fixed: int  # system messages plus the kept tail: what no summary can remove
    bound: float  # the most the output may be
    pair_problems: int
    paths: int  # distinct paths given to tools in the summarized part
    paths_named: int
    first_quoted: bool
    carried: int  # of the first summary's paths, how many the second summary names
    carried_of: int
    second_status: str
    seconds: float
    boilerplate: tuple[str, ...] = ()  # lines of either summary that carry harness text
    latest_quoted: bool = True
    first_labels: int = 1  # "First request" lines in the second summary
    continues: bool = True  # the summary has its "needed to continue" part
    next_step: bool = True  # ... and in it a next step
    work_lines: int = 0  # "work done" lines that say what was done (not tool counts)
    summary: str = ""

    @property
    def ratio(self) -> float:
        return self.tokens_out / self.tokens_in

    @property
    def paths_share(self) -> float:
        return self.paths_named / self.paths if self.paths else 1.0

    @property
    def carried_share(self) -> float:
        return self.carried / self.carried_of if self.carried_of else 1.0

    @property
    def ok(self) -> bool:
        return (
            self.status == "compacted"
            and self.tokens_out <= self.bound
            and not self.pair_problems
            and self.paths_share >= PATHS_TARGET
            and self.first_quoted
            and self.second_status == "compacted"
            and self.carried == self.carried_of
            and not self.boilerplate
            and self.latest_quoted
            and self.first_labels == 1
            and self.continues
            and self.next_step
        )


def size_bound(tokens_in: int, fixed: int) -> float:
    """20% of the input; if what must stay is bigger than that, it plus 20% of the rest."""
    if fixed <= RATIO_TARGET * tokens_in:
        return RATIO_TARGET * tokens_in
    return fixed + RATIO_TARGET * (tokens_in - fixed)


def measure(path: Path) -> Figures:
    conversation = parse(path.read_bytes(), str(path))
    messages = conversation.messages
    pending = find_pending_turn(messages)
    kept = [messages[index] for index in pending.indexes]
    systems = [message for message in messages if message.get("role") == "system"]
    summarized = [
        message
        for index, message in enumerate(messages)
        if index not in pending.indexes and message.get("role") != "system"
    ]
    tokens_in = estimate(messages)
    fixed = estimate(systems + kept)

    provider = ExtractiveSummarizer()
    job = RunSettings("auto", Settings(threshold=THRESHOLD, policy="every-turn"))  # one summary
    started = time.perf_counter()
    outcome = pipeline.run(job, conversation, provider)
    seconds = time.perf_counter() - started
    output = outcome.conversation.messages
    summary = summary_of(output) or ""

    paths = tool_paths(summarized)
    request = first_request(summarized)
    first_paths = named(summary, paths)
    second = pipeline.run(RunSettings("full"), Conversation(output), provider)
    second_summary = summary_of(second.conversation.messages) or ""
    latest = latest_request(summarized)
    return Figures(
        name=path.stem,
        status=outcome.full,
        tokens_in=tokens_in,
        tokens_out=estimate(output),
        fixed=fixed,
        bound=size_bound(tokens_in, fixed),
        pair_problems=len(pair_violations(output)),
        paths=len(paths),
        paths_named=len(first_paths),
        first_quoted=request is not None and quotes_request(summary, request),
        carried=len(named(second_summary, first_paths)),
        carried_of=len(first_paths),
        second_status=second.full,
        seconds=seconds,
        boilerplate=tuple(
            boilerplate_lines(summary, summarized) + boilerplate_lines(second_summary, summarized)
        ),
        latest_quoted=latest is not None and quotes_request(summary, latest),
        first_labels=sum(len(request_labels(second_summary, label)) for label in FIRST_LABELS),
        continues=any(f"## {heading}" in summary for heading in NEXT_HEADINGS),
        next_step=any(f"- {label}: " in summary for label in NEXT_STEP_LABELS),
        work_lines=len(work_done(summary)),
        summary=summary,
    )


def ctxpack_summary(span: list[dict]) -> str:
    """ctxpack's summary of an agent's span (issue 23's measure): full compaction as a user runs
    it, with the built-in summarizer and the default budget."""
    return full_compact(span, ExtractiveSummarizer(), Settings()).summary or ""
