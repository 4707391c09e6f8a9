"""A previous summary, read back line by line under its sections (a rolling compaction)."""

from __future__ import annotations

import re

from ...text import clip
from .fit import Line
from .wording import (
    FIRST_LABELS,
    GOAL,
    LABELS,
    PATHS,
    RESULTS,
    SECTIONS,
    SUPERSEDED,
)

PATH_IN_TEXT = re.compile(r"(?:[\w.~-]*/)+[\w.-]+\.\w+")


def carried_forward(previous: str, lang: str) -> list[Line]:
    """Lines of a previous summary, each under its section; anything else kept whole in the goal.

    Its first request stays the first; its latest request, latest reply, next step and open
    errors are priority 1 in the last part, for ``next_lines`` to keep or replace."""
    headings = {
        heading: index for names in SECTIONS.values() for index, heading in enumerate(names)
    }
    lines: list[Line] = []
    section = None
    for raw in previous.splitlines():
        if raw.startswith("## ") and raw[3:].strip() in headings:
            section = headings[raw[3:].strip()]
        elif raw.startswith("- ") and section is not None:
            text = raw[2:]
            if text.startswith(FIRST_LABELS):
                priority = 0
            elif section in (PATHS, GOAL) or text.startswith(SUPERSEDED):
                priority = 1
            else:
                priority = 3 if section == RESULTS else 4
            lines.append(Line(section, text, priority))
    if lines:
        return lines
    # not one of ours: keep its text, and every path it names
    earlier = Line(GOAL, f"{LABELS[lang]['earlier']}: {clip(previous, 2000)}", 1)
    return [earlier, *(Line(PATHS, path, 1) for path in PATH_IN_TEXT.findall(previous))]
