"""The summary's lines: the most important that fit in the budget, rendered under their headings."""

from __future__ import annotations

from dataclasses import dataclass

from ...estimate import text_quarters
from .wording import SECTIONS


@dataclass
class Line:
    section: int
    text: str
    priority: int  # lower survives longer when the budget is tight
    rank: int = 0  # among equal priorities, lower survives longer (newest first: minus the age)


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
        cost = text_quarters([lines[index].text]) + 4  # "- " and the line break
        if used + cost > budget and lines[index].priority == 0:
            lines[index] = Line(
                lines[index].section, shorten(lines[index].text, budget - used - 4), 0
            )
            cost = text_quarters([lines[index].text]) + 4
        if used + cost <= budget and lines[index].text:
            chosen.add(index)
            used += cost
    return [line for index, line in enumerate(lines) if index in chosen]


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
        items = [line.text for line in lines if line.section == index]
        if items:
            parts.append(f"## {heading}\n" + "\n".join(f"- {item}" for item in items))
    return "\n\n".join(parts)


def unique(lines: list[Line]) -> list[Line]:
    seen: set[tuple[int, str]] = set()
    unique = []
    for line in lines:
        if (line.section, line.text) not in seen:
            seen.add((line.section, line.text))
            unique.append(line)
    return unique
