"""Exact token counts (issue 13): speed against the heuristic, and how far off the heuristic is.

``tokenizers.estimate_o200k``: ``estimate --tokenizer o200k`` of the big benchmark file as a whole
process (vocabulary loaded, every counted text encoded) against the heuristic ``estimate`` of the
same file in the same run; target 3x. ``tokenizers.error.<file>.<tokenizer>``: for each real
transcript of tests/corpus and each tokenizer, the heuristic's count against the exact one (the
ratio is heuristic / exact: above 1 the heuristic counts too much), for context.

    python bench/run.py tokenizers
    python bench/bench_tokenizers.py      # the error table alone
"""

from __future__ import annotations

import sys
from pathlib import Path

import generate
from harness import CTXPACK, ROOT, Report

TOKENIZERS = ("o200k", "cl100k", "qwen3")


def run(report: Report) -> None:
    report.case("tokenizers.estimate_o200k", lambda: _speed(report))
    rows = [row for row in _errors() if report.wants(f"tokenizers.error.{row[0]}.{row[1]}")]
    for path, name, exact, heuristic in rows:
        report.info(
            f"tokenizers.error.{path}.{name}",
            heuristic,
            exact,
            "tokens",
            note=f"heuristic {heuristic} vs {name} {exact}",
        )
    for line in table(rows).splitlines():
        report.log(line)


def _speed(report: Report) -> None:
    big = str(generate.ensure(log=report.log))
    ours, base = report.time_pair(
        [CTXPACK, "estimate", "--tokenizer", "o200k", big], [CTXPACK, "estimate", big]
    )
    note = "whole process, vocabulary load included, vs the heuristic estimate"
    report.ratio("tokenizers.estimate_o200k", ours, base, target=3.0, note=note)


def _errors() -> list[tuple[str, str, int, int]]:
    """(file, tokenizer, exact tokens, heuristic tokens) for every corpus file and tokenizer."""
    sys.path.insert(0, str(ROOT))
    from compactor_core.compaction.estimate import counted_texts, tokens_of
    from compactor_core.compaction.tokenizers import counter
    from compactor_core.conversation.formats import parse

    rows = []
    for path in sorted((ROOT / "tests" / "corpus").glob("*.json")):
        if path.name == "manifest.json":
            continue
        conversation = parse(path.read_bytes(), str(path))
        texts = counted_texts(conversation.messages, conversation.system)
        heuristic = tokens_of(texts)
        for name in TOKENIZERS:
            rows.append((Path(path).stem, name, tokens_of(texts, counter(name)), heuristic))
    return rows


def table(rows: list[tuple[str, str, int, int]]) -> str:
    lines = [f"{'transcript':34} {'tokenizer':9} {'exact':>9} {'heuristic':>9} {'error':>7}"]
    for path, name, exact, heuristic in rows:
        error = (heuristic - exact) / exact if exact else 0.0
        lines.append(f"{path:34} {name:9} {exact:9d} {heuristic:9d} {error:+7.1%}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(_errors()))
