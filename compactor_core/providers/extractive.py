"""The built-in summarizer: offline, deterministic, and fast (SPEC §7).

It writes the six parts the prompt asks for — goal, work done, key constraints, important file
paths, key tool results (errors first), what is needed to continue — from the messages themselves:
user requests quoted, tool calls counted, files read and written listed, errors picked out, the
last assistant plan kept. The summary takes at most a quarter of the history it reads (a previous
summary counts whole) unless its essential lines need more, and never more than ``max_tokens``,
all by the estimate; when everything does not fit, the least important lines go first. A previous
summary of this format (a rolling compaction) is merged section by section, so its facts, file
paths above all, carry forward.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..estimate import estimate, quarters_to_tokens, text_quarters
from ..formats import Message
from ..micro import is_marker
from ..prompts import PROMPTS, SUMMARY_PREFIX
from ..text import clip as one_line
from ..tools import UNKNOWN_TOOL, blocks, is_block, tool_names
from .base import SummaryRequest

SECTIONS = {
    "zh": ("目标", "已完成工作", "关键约束", "重要文件路径", "工具执行结果要点", "后续所需上下文"),
    "en": (
        "Goal",
        "Work done",
        "Key constraints",
        "Important file paths",
        "Key tool results",
        "Needed to continue",
    ),
}
GOAL, WORK, CONSTRAINTS, PATHS, RESULTS, NEXT = range(6)
LABELS = {
    "zh": {
        "first": "最初请求",
        "later": "后续请求",
        "calls": "工具调用",
        "modified": "已修改",
        "error": "出错",
        "plan": "最近计划",
        "last": "最新请求",
        "unanswered": "尚无结果的调用",
        "earlier": "更早的摘要",
        "truncated": "条较早的工具结果已截断",
        "failed": "出错的调用（结果已截断）",
    },
    "en": {
        "first": "First request",
        "later": "Later request",
        "calls": "Tool calls",
        "modified": "modified",
        "error": "error",
        "plan": "Latest plan",
        "last": "Latest request",
        "unanswered": "Calls without a result yet",
        "earlier": "Earlier summary",
        "truncated": "older tool results truncated",
        "failed": "Failed calls (results truncated)",
    },
}

PATH_KEYS = frozenset({"path", "file_path", "filename", "notebook_path", "filepath", "paths"})
WRITING_TOOL = re.compile(r"(?i)edit|write|create|replace|patch|insert|move|delete|rm\b|notebook")
ERROR_LINE = re.compile(
    r"(?i)\b(error|exception|traceback|failed|failure|fatal|panic|denied|not found)\b"
    r"|exit (code|status) [1-9]|错误|失败|异常"
)
CONSTRAINT = re.compile(
    r"(?i)\b(must|never|do not|don't|should|shouldn't|without|only|keep|avoid|make sure|ensure|"
    r"required?|no need)\b|不要|必须|不能|不得|保持|只能|务必|禁止|避免|确保|别"
)
SENTENCE_END = re.compile(r"(?<=[。！？!?；;])|(?<=\.)\s|\n")
PATH_IN_TEXT = re.compile(r"(?:[\w.~-]*/)+[\w.-]+\.\w+")

FIRST_REQUEST_CHARS = 1200
LINE_CHARS = 240
SHARE = 4  # the summary takes at most 1/SHARE of the (new) history it reads ...
MIN_TOKENS = 256  # ... but may always take this much
ACKNOWLEDGEMENTS = frozenset(prompts.acknowledgement for prompts in PROMPTS.values())
SINGLE_WORD = re.compile(r"[A-Za-z_]+")


@dataclass
class Line:
    section: int
    text: str
    priority: int  # lower survives longer when the budget is tight


@dataclass
class Facts:
    """What the summary is made of, gathered in one pass over the history."""

    requests: list[str] = field(default_factory=list)
    calls: list[tuple[str, Any]] = field(default_factory=list)  # (tool name, input)
    results: list[tuple[str, str, bool]] = field(default_factory=list)  # (tool, text, is_error)
    assistant_texts: list[str] = field(default_factory=list)
    previous: str | None = None
    answered: set = field(default_factory=set)
    call_ids: list[tuple[Any, str]] = field(default_factory=list)


class ExtractiveSummarizer:
    """Summarizes by extraction: no model, no network, the same output for the same input."""

    name = "extractive"

    def summarize(self, request: SummaryRequest) -> str:
        lang = request.lang if request.lang in SECTIONS else "en"
        facts = gather(request.messages)
        lines = compose(facts, lang)
        budget = summary_budget(request.messages, facts, lines, request.max_tokens, lang)
        return render(fit(lines, budget, lang), lang)


def summary_budget(
    messages: list[Message], facts: Facts, lines: list[Line], max_tokens: int, lang: str
) -> int:
    """Tokens the summary may take, never more than ``max_tokens``: a quarter of what is new plus
    a previous summary whole, or what the essential lines (priority 0 and 1: the goal, the file
    paths, the plan) need, if that is more.

    A summary as long as the history it replaces saves nothing (and the no-gain guard refuses it);
    one that shrinks a previous summary again at every rolling compaction would wear its facts
    away; one without the files worked on is of little use to whoever carries on.
    """
    headings = text_quarters(f"## {name}\n\n" for name in SECTIONS[lang])
    previous = 0
    if facts.previous is not None:
        previous = quarters_to_tokens(text_quarters([facts.previous]) + headings)
    target = previous + max(estimate(messages) - previous, 0) // SHARE
    essential = headings + sum(
        text_quarters([line.text]) + 4 for line in lines if line.priority <= 1
    )
    return min(max_tokens, max(MIN_TOKENS, target, quarters_to_tokens(essential)))


# --- gathering -----------------------------------------------------------------------------------


def gather(messages: list[Message]) -> Facts:
    facts = Facts()
    names = tool_names(messages)
    for index, message in enumerate(messages):
        role = message.get("role")
        text = text_of(message.get("content"))
        if index == 0 and role == "user" and text.startswith(SUMMARY_PREFIX):
            facts.previous = text[len(SUMMARY_PREFIX) :]
            continue
        if index == 1 and facts.previous is not None and text in ACKNOWLEDGEMENTS:
            continue  # the acknowledgement of the previous summary says nothing new
        if role == "tool":
            call_id = message.get("tool_call_id")
            facts.answered.add(call_id)
            facts.results.append((names.get(call_id, UNKNOWN_TOOL), text, False))
            continue
        _gather_blocks(message, names, facts)
        if role == "user" and text.strip():
            facts.requests.append(text.strip())
        elif role == "assistant" and text.strip():
            facts.assistant_texts.append(text.strip())
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            name = function.get("name") if isinstance(function.get("name"), str) else UNKNOWN_TOOL
            facts.calls.append((name, _arguments(function.get("arguments"))))
            facts.call_ids.append((call.get("id"), name))
    return facts


def _gather_blocks(message: Message, names: dict, facts: Facts) -> None:
    for block in blocks(message):
        if is_block(block, "tool_use"):
            name = block.get("name") if isinstance(block.get("name"), str) else UNKNOWN_TOOL
            facts.calls.append((name, block.get("input")))
            facts.call_ids.append((block.get("id"), name))
        elif is_block(block, "tool_result"):
            call_id = block.get("tool_use_id")
            facts.answered.add(call_id)
            tool = names.get(call_id, UNKNOWN_TOOL)
            facts.results.append((tool, text_of(block.get("content")), bool(block.get("is_error"))))


def _arguments(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments


def text_of(content: Any) -> str:
    """The readable text of a content: a string, or the text blocks of a list."""
    if isinstance(content, str):
        return content
    parts = []
    for block in content if isinstance(content, list) else ():
        if isinstance(block, str):
            parts.append(block)
        elif is_block(block, "text") and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "\n".join(parts)


def paths_in(value: Any) -> list[str]:
    """File paths given to a tool: the values of path-like keys, at any depth of its input."""
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key in PATH_KEYS and isinstance(item, str) and item.strip():
                found.append(item.strip())
            elif key in PATH_KEYS and isinstance(item, list):
                found.extend(path for path in item if isinstance(path, str) and path.strip())
            else:
                found.extend(paths_in(item))
    elif isinstance(value, list):
        for item in value:
            found.extend(paths_in(item))
    return found


# --- composing -----------------------------------------------------------------------------------


def compose(facts: Facts, lang: str) -> list[Line]:
    label = LABELS[lang]
    lines: list[Line] = []
    if facts.previous is not None:
        lines.extend(carried_forward(facts.previous, lang))
    if facts.requests:
        first, *later = facts.requests
        lines.append(Line(GOAL, f"{label['first']}: “{clip(first, FIRST_REQUEST_CHARS)}”", 0))
        lines.extend(Line(GOAL, f"{label['later']}: “{clip(text)}”", 4) for text in later)
    lines.extend(_work_lines(facts, label))
    lines.extend(Line(CONSTRAINTS, clip(sentence), 3) for sentence in constraints(facts.requests))
    lines.extend(_path_lines(facts, label))
    lines.extend(_result_lines(facts, label))
    lines.extend(_next_lines(facts, label))
    return _unique(lines)


def _work_lines(facts: Facts, label: dict[str, str]) -> list[Line]:
    lines = []
    if facts.calls:
        counts = Counter(name for name, _ in facts.calls)
        summary = ", ".join(f"{name} ×{count}" for name, count in counts.most_common())
        lines.append(Line(WORK, f"{label['calls']}: {summary}", 1))
    truncated = sum(1 for _, text, _ in facts.results if is_marker(text))
    if truncated:
        lines.append(Line(WORK, f"{truncated} {label['truncated']}", 6))
    for name, arguments in facts.calls:
        if writes(name, arguments) or _command(arguments):
            lines.append(Line(WORK, clip(f"{name}: {_call_gist(arguments)}"), 5))
    lines.extend(Line(WORK, clip(first_sentence(text)), 6) for text in facts.assistant_texts)
    return lines


def _path_lines(facts: Facts, label: dict[str, str]) -> list[Line]:
    modified: dict[str, bool] = {}
    for name, arguments in facts.calls:
        for path in paths_in(arguments):
            modified[path] = modified.get(path, False) or writes(name, arguments)
    return [
        Line(PATHS, f"{path} ({label['modified']})" if changed else path, 1)
        for path, changed in modified.items()
    ]


def _result_lines(facts: Facts, label: dict[str, str]) -> list[Line]:
    errors, others = [], []
    failed = Counter(tool for tool, text, is_error in facts.results if is_error and is_marker(text))
    if failed:
        counts = ", ".join(f"{tool} ×{count}" for tool, count in failed.most_common())
        errors.append(Line(RESULTS, f"{label['failed']}: {counts}", 2))
    for tool, text, is_error in facts.results:
        if is_error and is_marker(text):
            continue  # counted above: the marker says nothing about the error
        key = error_line(text)
        if is_error or (key and not is_marker(text)):
            gist = key or first_line(text)
            errors.append(Line(RESULTS, clip(f"{tool} ({label['error']}): {gist}"), 2))
        elif text.strip() and not is_marker(text):
            others.append(Line(RESULTS, clip(f"{tool}: {first_line(text)}"), 7))
    return errors + others[-10:]


def _next_lines(facts: Facts, label: dict[str, str]) -> list[Line]:
    lines = []
    if facts.assistant_texts:
        lines.append(Line(NEXT, f"{label['plan']}: {clip(facts.assistant_texts[-1], 600)}", 1))
    if len(facts.requests) > 1:
        lines.append(Line(NEXT, f"{label['last']}: “{clip(facts.requests[-1], 600)}”", 1))
    unanswered = [name for call_id, name in facts.call_ids if call_id not in facts.answered]
    if unanswered:
        lines.append(Line(NEXT, f"{label['unanswered']}: {', '.join(unanswered)}", 2))
    return lines


def constraints(requests: list[str]) -> list[str]:
    found = []
    for request in requests:
        for sentence in SENTENCE_END.split(request):
            if sentence and CONSTRAINT.search(sentence) and len(sentence.strip()) > 3:
                found.append(sentence.strip())
    return found


def _command(arguments: Any) -> str | None:
    if isinstance(arguments, dict) and isinstance(arguments.get("command"), str):
        return arguments["command"]
    return None


def writes(name: str, arguments: Any) -> bool:
    """Whether a call changes files: a one-word ``command`` decides (an editor tool's ``view``
    or ``str_replace``), else the tool's name."""
    command = _command(arguments)
    if command is not None and SINGLE_WORD.fullmatch(command):
        return bool(WRITING_TOOL.search(command))
    return bool(WRITING_TOOL.search(name))


def _call_gist(arguments: Any) -> str:
    command = _command(arguments)
    paths = ", ".join(paths_in(arguments))
    if command and paths:
        return f"{command} {paths}"
    if command or paths:
        return command or paths
    return json.dumps(arguments, ensure_ascii=False)


def error_line(text: str) -> str | None:
    """The first line that reports an error, and the next if it only introduces it (``ERROR:``)."""
    lines = [line.strip() for line in text[:20000].splitlines() if line.strip()]
    for index, line in enumerate(lines):
        if ERROR_LINE.search(line):
            if line.endswith(":") and index + 1 < len(lines):
                return f"{line} {lines[index + 1]}"
            return line
    return None


def first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def first_sentence(text: str) -> str:
    for sentence in SENTENCE_END.split(text):
        if sentence and sentence.strip():
            return sentence.strip()
    return ""


def clip(text: str, limit: int = LINE_CHARS) -> str:
    return one_line(text, limit)


def _unique(lines: list[Line]) -> list[Line]:
    seen: set[tuple[int, str]] = set()
    unique = []
    for line in lines:
        if (line.section, line.text) not in seen:
            seen.add((line.section, line.text))
            unique.append(line)
    return unique


# --- a previous summary --------------------------------------------------------------------------


def carried_forward(previous: str, lang: str) -> list[Line]:
    """Lines of a previous summary, each under its section; anything else kept whole in the goal."""
    headings = {
        heading: index for names in SECTIONS.values() for index, heading in enumerate(names)
    }
    lines: list[Line] = []
    section = None
    for raw in previous.splitlines():
        if raw.startswith("## ") and raw[3:].strip() in headings:
            section = headings[raw[3:].strip()]
        elif raw.startswith("- ") and section is not None:
            lines.append(Line(section, raw[2:], 1 if section in (PATHS, GOAL) else 3))
    if lines:
        return lines
    # not one of ours: keep its text, and every path it names
    earlier = Line(GOAL, f"{LABELS[lang]['earlier']}: {clip(previous, 2000)}", 1)
    return [earlier, *(Line(PATHS, path, 1) for path in PATH_IN_TEXT.findall(previous))]


# --- fitting and rendering -----------------------------------------------------------------------


def fit(lines: list[Line], max_tokens: int, lang: str) -> list[Line]:
    """The most important lines that fit in ``max_tokens``, in their original order.

    Lines are taken by priority (earlier first among equals); one that does not fit is passed
    over, so a shorter, less important line may still make it in. A line of priority 0 (the first
    request) is shortened instead: to half the budget at most, and to what is left if need be.
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
    for index in sorted(range(len(lines)), key=lambda i: (lines[i].priority, i)):
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
