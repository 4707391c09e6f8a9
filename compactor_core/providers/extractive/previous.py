"""A previous summary, read back section by section (a rolling compaction, SPEC §3.11).

ctxpack's own summary is read line by line under its six headings, its labels kept (its first
request stays the first). Another's — Claude Code's ``/compact`` ("1. Primary Request and
Intent:" … "9. Optional Next Step:"), Codex's handoff summary, any summary written in Markdown
or numbered sections — is parsed, not cut: each heading is matched to one of the six parts by
its words, each top-level item under it (its sub-items joined to it, code left out) becomes a
line of that part. A summary with no headings at all is kept as one line, with every path it
names.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from ...text import clip
from .fit import Line
from .wording import (
    CONSTRAINTS,
    FIRST_LABELS,
    GOAL,
    LABELS,
    NAMES_LABELS,
    NEXT,
    PATHS,
    RESULTS,
    SECTIONS,
    SUPERSEDED,
    WORK,
)

PATH_IN_TEXT = re.compile(r"(?:[\w.~-]*/)+[\w.-]+\.\w+")
CODE_FENCE = re.compile(r"^\s*```.*?^\s*```[^\n]*$", re.S | re.M)
HEADING = re.compile(
    r"^(?:#{1,6}\s+(?P<marked>.+?)|(?:\d{1,2}[.)]\s+)?(?:\*\*)?(?P<plain>[^\n:*#`]{2,60}?)"
    r"(?:\*\*)?:(?:\*\*)?)\s*$"
)
LEAD_LABEL = re.compile(r"^(?i:summary|摘要)\s*:\s*")  # "Summary:" before a summary's text
# "1. Primary Request and Intent: make the test pass.": a heading and its one item on a line.
INLINE = re.compile(
    r"^(?:\d{1,2}[.)]\s+)?(?:\*\*)?(?P<title>[^\n:*#`]{2,40}?)(?:\*\*)?:\s+(?P<rest>\S.*)$"
)
BULLET = re.compile(r"^(\s*)(?:[-*+•]|\d{1,2}[.)])\s+")
ITEM_CHARS = 240
EARLIER_CHARS = 2000
# The words of a heading that say which part it is, first match wins: (pattern, part, kind).
PARTS = (
    (r"analysis|分析", WORK, "analysis"),
    (r"pending|todo|remaining|待办|未完成", NEXT, "pending"),
    (r"next step|下一步|接下来", NEXT, "next"),
    (r"current (work|state|status)|where we are|当前", WORK, "current"),
    (r"problem solving|solving|progress|accomplish|done|completed|work|进展|完成", WORK, "work"),
    (r"error|fix|bug|issue|failure|错误|问题|修复", RESULTS, "errors"),
    (r"file|path|code|文件|路径|代码", PATHS, "files"),
    (r"user message|用户消息|用户的消息", GOAL, "requests"),
    (r"request|intent|goal|objective|task|目标|请求|意图|任务", GOAL, "goal"),
    (r"constraint|preference|rule|requirement|约束|偏好|要求|规则", CONSTRAINTS, "rules"),
    (r"concept|context|background|decision|note|概念|上下文|背景|决定", NEXT, "context"),
)
# (quota, priority of the first ``quota`` lines, priority of the rest) by kind: lower survives
# longer; the parts' own order ranks lines of one kind.
PRIORITY = {
    "goal": (2, 2, 3),
    "files": (2, 2, 3),
    "pending": (3, 2, 3),
    "rules": (2, 2, 3),
    "current": (1, 2, 3),
    "errors": (1, 3, 4),
    "next": (0, 3, 3),
    "work": (0, 4, 4),
    "requests": (0, 4, 4),
    "context": (0, 4, 5),
    "other": (0, 5, 5),
    "analysis": (0, 6, 6),
}
LABELLED = {"goal": "earlier_goal", "requests": "earlier_request", "pending": "pending_before"}


@dataclass(frozen=True)
class Item:
    kind: str
    section: int
    text: str


def carried_forward(previous: str, lang: str) -> list[Line]:
    """The lines of a previous summary, each under its part."""
    ours = read_ours(previous)
    if ours:
        return ours
    items = read_sections(previous)
    if items:
        return _lines(items, LABELS[lang])
    text = LEAD_LABEL.sub("", previous.strip())
    earlier = Line(GOAL, f"{LABELS[lang]['earlier']}: {clip(text, EARLIER_CHARS)}", 1)
    return [earlier, *(Line(PATHS, path, 1) for path in PATH_IN_TEXT.findall(previous))]


def read_ours(previous: str) -> list[Line]:
    """ctxpack's own summary: its first request stays the first; its latest request, latest
    reply, next step and open errors are priority 1 in the last part, for ``next_lines`` to
    keep or replace; a path line's names come apart from it, to be fitted on their own."""
    headings = {
        heading: index for names in SECTIONS.values() for index, heading in enumerate(names)
    }
    lines: list[Line] = []
    section = None
    for raw in previous.splitlines():
        if raw.startswith("## ") and raw[3:].strip() in headings:
            section = headings[raw[3:].strip()]
        elif raw.startswith("- ") and section is not None:
            lines.extend(_our_line(section, raw[2:]))
    return lines


def _our_line(section: int, text: str) -> list[Line]:
    if text.startswith(FIRST_LABELS):
        return [Line(section, text, 0)]
    if section == PATHS and ": " in text:
        path, names = text.split(": ", 1)
        if path in NAMES_LABELS:  # no file of its own: the heading goes or stays with its names
            return [Line(PATHS, names, 4, anchor=path, lead=f"{path}: ")]
        return [Line(PATHS, path, 1), Line(PATHS, names, 4, anchor=path)]
    if section in (PATHS, GOAL) or text.startswith(SUPERSEDED):
        return [Line(section, text, 1)]
    return [Line(section, text, 3 if section == RESULTS else 4)]


def read_sections(text: str) -> list[Item]:
    """The items of a summary written under headings, each with the part its heading names."""
    items: list[Item] = []
    kind, section, current = "other", GOAL, ""
    base: int | None = None  # the indentation of the section's top-level items
    for raw in CODE_FENCE.sub("", text).splitlines():
        heading = _heading(raw)
        bullet = BULLET.match(raw)
        inline = INLINE.match(raw)
        if heading is None and inline is not None and not raw[:1].isspace():
            part = _part(inline.group("title"))
            if part[0] != "other":  # a heading of a known part, its item after the colon
                items.extend(_item(kind, section, current))
                items.extend(_item(*part, inline.group("rest")))
                kind, section, current, base = *part, "", None
                continue
        if heading is not None:
            items.extend(_item(kind, section, current))
            kind, section, current, base = *heading, "", None
        elif not raw.strip():
            if base is None:  # paragraphs, no bullets: one item each
                items.extend(_item(kind, section, current))
                current = ""
        elif bullet and (base is None or len(bullet.group(1)) <= base):
            items.extend(_item(kind, section, current))
            base, current = len(bullet.group(1)), raw[bullet.end() :]
        else:
            joint = "; " if bullet else " "
            current = f"{current}{joint}{raw[bullet.end() if bullet else 0 :].strip()}"
    items.extend(_item(kind, section, current))
    return items if any(item.kind != "other" for item in items) else []


def _heading(raw: str) -> tuple[str, int] | None:
    """(kind, part) of a heading line; None for any other line."""
    match = HEADING.match(raw)
    if match is None or raw[:1].isspace():
        return None
    return _part(match.group("marked") or match.group("plain") or "")


def _part(title: str) -> tuple[str, int]:
    """(kind, part) that a heading's words name."""
    title = title.strip(" *").lower()
    for pattern, section, kind in PARTS:
        if re.search(pattern, title):
            return kind, section
    return "other", WORK


def _item(kind: str, section: int, text: str) -> list[Item]:
    text = " ".join(text.replace("**", "").split()).strip("; ")
    return [Item(kind, section, clip(text, ITEM_CHARS))] if text else []


def _lines(items: list[Item], label: dict[str, str]) -> list[Line]:
    """Lines of another's summary: labelled where the part alone would mislead (an earlier
    goal is not the latest request), the user's messages newest first."""
    lines = []
    kinds = Counter(item.kind for item in items)
    seen: Counter[str] = Counter()
    for item in items:
        text = item.text
        if item.kind == "next":
            text = f"{label['next']}: {text}"
        elif item.kind in LABELLED:
            text = f"{label[LABELLED[item.kind]]}: {text}"
        rank = seen[item.kind]
        seen[item.kind] += 1
        if item.kind == "requests":
            rank = kinds[item.kind] - seen[item.kind]  # the newest first
        quota, top, rest = PRIORITY[item.kind]
        lines.append(Line(item.section, text, top if rank < quota else rest, rank))
    return lines
