"""Token statistics of a whole corpus (``estimate --summary``), gathered in mergeable parts.

Each worker tallies the files of its chunks; the tallies are merged as they come back, in any
order, with the same result. A tally keeps how many files had each token count (not one entry per
file), so its size is bounded by the number of distinct counts, and the percentiles are exact:
nearest rank, the smallest count with at least p % of the files at or below it.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

LARGEST = 10  # files listed by name
PERCENTILES = (50, 90, 99)


@dataclass
class Tally:
    counts: Counter[int] = field(default_factory=Counter)  # token count -> files with it
    largest: list[tuple[int, str]] = field(default_factory=list)  # (tokens, label), biggest first

    def add(self, label: str, tokens: int) -> None:
        self.counts[tokens] += 1
        self.largest = _biggest([*self.largest, (tokens, label)])

    def merge(self, other: Tally) -> None:
        self.counts.update(other.counts)
        self.largest = _biggest([*self.largest, *other.largest])

    @property
    def files(self) -> int:
        return sum(self.counts.values())

    @property
    def total(self) -> int:
        return sum(tokens * files for tokens, files in self.counts.items())

    def percentile(self, p: float) -> int | None:
        """Nearest rank: the smallest count with at least ``p`` % of the files at or below it."""
        if not self.counts:
            return None
        rank = max(1, math.ceil(p / 100 * self.files))
        seen = 0
        for tokens in sorted(self.counts):
            seen += self.counts[tokens]
            if seen >= rank:
                return tokens
        raise AssertionError("rank beyond the number of files")

    def summary(self) -> dict[str, Any]:
        files = self.files
        return {
            "files": files,
            "total": self.total,
            "mean": round(self.total / files, 1) if files else None,
            **{f"p{p}": self.percentile(p) for p in PERCENTILES},
            "max": max(self.counts) if self.counts else None,
            "largest": [{"path": label, "tokens": tokens} for tokens, label in self.largest],
        }


def _biggest(entries: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The LARGEST biggest, ties broken by name so that the merge order never matters."""
    return heapq.nsmallest(LARGEST, entries, key=lambda entry: (-entry[0], entry[1]))


def render(summary: dict[str, Any], failed: int) -> str:
    """The summary as aligned text lines, the way ``estimate --summary`` prints it."""
    lines = [f"{name:<8}{summary[name]}" for name in ("files", "total", "mean")]
    lines += [f"{f'p{p}':<8}{summary[f'p{p}']}" for p in PERCENTILES]
    lines.append(f"{'max':<8}{summary['max']}")
    if failed:
        lines.append(f"{'failed':<8}{failed}")
    if summary["largest"]:
        lines.append("largest:")
        width = len(str(summary["largest"][0]["tokens"]))
        lines += [f"  {item['tokens']:>{width}}  {item['path']}" for item in summary["largest"]]
    return "\n".join(lines)
