"""The summary's lines: the most important that fit in the budget, rendered under their headings."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ...compaction.estimate import text_quarters
from .wording import SECTIONS


@dataclass(frozen=True)
class Line:
    section: int
    text: str
    priority: int  # lower survives longer when the budget is tight
    rank: int = 0  # among equal priorities, lower survives longer (newest first: the age)
    # The text of the line this one continues (a file's names after the file's path line):
    # rendered on that line when both are chosen, on its own, after ``lead``, when not.
    anchor: str | None = None
    lead: str = ""


def tiered(lines: list[Line], quota: int, top: int, rest: int) -> list[Line]:
    """The lines of one kind, the ``quota`` best ranked at priority ``top``, the rest at
    ``rest``: the budget takes a few of every kind before more of any."""
    return [replace(line, priority=top if line.rank < quota else rest) for line in lines]


def fit(lines: list[Line], max_tokens: int, lang: str) -> list[Line]:
    """The most important lines that fit in ``max_tokens``, in their original order.

    Lines are taken by priority (by rank, then earlier first, among equals); one that does not
    fit is passed over, so a shorter, less important line may still make it in. A line of
    priority 0 (the first request) is shortened instead: to half the budget at most, and to what
    is left if need be.
    """
    budget = max_tokens * 4 - text_quarters(f"## {heading}\n\n" for heading in SECTIONS[lang])
    lines = [
        Line(line.section, shorten(line.text, budget // 2), 0)
        if line.priority == 0 and text_quarters([line.text]) > budget // 2
        else line
        for line in lines
    ]
    chosen: set[int] = set()
    used = 0
    for index in sorted(range(len(lines)), key=lambda i: (lines[i].priority, lines[i].rank, i)):
        line = lines[index]
        cost = line_cost(line)
        if used + cost > budget and line.priority == 0:
            line = lines[index] = Line(line.section, shorten(line.text, budget - used - 4), 0)
            cost = text_quarters([line.text]) + 4
        if used + cost <= budget and line.text:
            chosen.add(index)
            used += cost
    return [line for index, line in enumerate(lines) if index in chosen]


def line_cost(line: Line) -> int:
    """What a line takes of the budget, in quarters of a token: its text, "- " and a break."""
    return text_quarters([line.lead, line.text]) + 4


def shorten(text: str, quarters: int) -> str:
    """The longest start of ``text``, marked with "…", within ``quarters``; "" if none fits."""
    low, high = 0, len(text)  # text[:low] + "…" fits; text[:high + 1] + "…" does not
    if text_quarters(["…"]) > quarters:
        return ""
    while low < high:
        middle = (low + high + 1) // 2
        if text_quarters([text[:middle], "…"]) <= quarters:
            low = middle
        else:
            high = middle - 1
    return text[:low] + "…"


def render(lines: list[Line], lang: str) -> str:
    parts = []
    for index, heading in enumerate(SECTIONS[lang]):
        items = _items([line for line in lines if line.section == index])
        if items:
            parts.append(f"## {heading}\n" + "\n".join(f"- {item}" for item in items))
    return "\n\n".join(parts)


def _items(lines: list[Line]) -> list[str]:
    """One item per line, a line that continues another joined to it (``path: a, b, c``)."""
    items: list[str] = []
    where: dict[str, int] = {}  # a line's text -> its item
    continued: set[int] = set()  # items that already carry a continuation
    for line in lines:
        if line.anchor is None or line.anchor not in where:
            where[line.anchor or line.text] = len(items)
            items.append(f"{line.lead}{line.text}" if line.anchor else line.text)
            continued.update([len(items) - 1] if line.anchor else [])
            continue
        item = where[line.anchor]
        items[item] += (", " if item in continued else ": ") + line.text
        continued.add(item)
    return items


def unique(lines: list[Line]) -> list[Line]:
    seen: set[tuple[int, str, str | None]] = set()
    found = []
    for line in lines:
        key = (line.section, line.text, line.anchor)
        if key not in seen:
            seen.add(key)
            found.append(line)
    return found
