"""The built-in summarizer: offline, deterministic, and fast (SPEC §7, issue 10).

It writes the six parts the prompt asks for — goal, work done, key constraints, important file
paths, key tool results (errors first), what is needed to continue — from the messages themselves:
the user's own requests quoted (never text the harness injected, see ``boilerplate``), what was
done newest first (files edited with the gist of the edit, commands with their outcome, test runs,
decisions; ``worklog``), every file path given to a tool, errors picked out, and always the latest
request, the errors still open and the next step. The summary takes at most a quarter of the
history it reads (a previous summary counts whole) unless its essential lines need more, and never
more than ``max_tokens``, all by the estimate; when everything does not fit, the least important
lines go first, and among equals the oldest. A previous summary of this format (a rolling
compaction) is merged section by section, so its facts, file paths above all, carry forward, and
its first request stays the only one so labelled.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from ..boilerplate import ACKNOWLEDGEMENTS, user_texts
from ..estimate import estimate, quarters_to_tokens, text_quarters
from ..formats import Message
from ..micro import is_marker
from ..prompts import SUMMARY_PREFIX
from ..text import clip
from ..tools import UNKNOWN_TOOL, blocks, is_block
from .base import SummaryRequest
from .worklog import (
    Call,
    command_of,
    error_line,
    failed,
    is_test_run,
    paths_in,
    work_line,
    writes,
)

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
        "last": "最新请求",
        "same": "即最初请求",
        "state": "最近回复",
        "next": "下一步",
        "answer": "回应最新请求",
        "open": "未解决的错误",
        "unanswered": "尚无结果的调用",
        "earlier": "更早的摘要",
        "looked": "查看过",
        "decided": "决定",
        "modified": "已修改",
        "error": "出错",
        "failed": "失败",
        "ok": "成功",
        "passed": "通过",
        "no_result": "尚无结果",
        "ran": "运行",
        "tests": "测试",
        "lines": "行",
        "removed": "删除",
        "whitespace": "仅空白变化",
        "truncated": "条较早的工具结果已截断",
    },
    "en": {
        "first": "First request",
        "later": "Later request",
        "last": "Latest request",
        "same": "the first request",
        "state": "Latest reply",
        "next": "Next step",
        "answer": "answer the latest request",
        "open": "Open error",
        "unanswered": "Calls without a result yet",
        "earlier": "Earlier summary",
        "looked": "Looked at",
        "decided": "Decided",
        "modified": "modified",
        "error": "error",
        "failed": "failed",
        "ok": "ok",
        "passed": "passed",
        "no_result": "no result yet",
        "ran": "Ran",
        "tests": "Tests",
        "lines": "lines",
        "removed": "removed",
        "whitespace": "whitespace only",
        "truncated": "older tool results truncated",
    },
}

CONSTRAINT = re.compile(
    r"(?i)\b(must|never|do not|don't|should|shouldn't|without|only|keep|avoid|make sure|ensure|"
    r"required?|no need)\b|不要|必须|不能|不得|保持|只能|务必|禁止|避免|确保|别"
)
DECISION = re.compile(
    r"(?i)\b(decided|decision|instead of|rather than|going with|we'll use|i'll use|chose|"
    r"the fix is|root cause)\b|决定|改为|改用|根因|原因是"
)
PLAN = re.compile(
    r"(?i)\b(next|then|remaining|todo|still need|i'll|i will|let me)\b|接下来|下一步|然后"
)
SENTENCE_END = re.compile(r"(?<=[。！？!?；;])|(?<=\.)\s|\n")
CODE_FENCE = re.compile(r"```.*?(```|$)", re.S)
PATH_IN_TEXT = re.compile(r"(?:[\w.~-]*/)+[\w.-]+\.\w+")

FIRST_REQUEST_CHARS = 1200
LATEST_CHARS = 600
LINE_CHARS = 240
CONSTRAINT_CHARS = 300  # a longer "sentence" is a pasted log or code, not a rule
OPEN_ERRORS = 3
SHARE = 4  # the summary takes at most 1/SHARE of the (new) history it reads ...
MIN_TOKENS = 256  # ... but may always take this much


@dataclass
class Line:
    section: int
    text: str
    priority: int  # lower survives longer when the budget is tight
    rank: int = 0  # among equal priorities, lower survives longer (newest first: minus the age)


@dataclass
class Facts:
    """What the summary is made of, gathered in one pass over the history."""

    requests: list[str] = field(default_factory=list)  # the user's own words, oldest first
    calls: list[Call] = field(default_factory=list)
    results: list[tuple[str, str, bool]] = field(default_factory=list)  # (tool, text, is_error)
    assistant_texts: list[str] = field(default_factory=list)
    previous: str | None = None  # our own previous summary, or a model's
    earlier: list[str] = field(default_factory=list)  # summaries a harness sent as user turns


class ExtractiveSummarizer:
    """Summarizes by extraction: no model, no network, the same output for the same input."""

    name = "extractive"
    deterministic = True  # a history's summary can be written again word for word (cache_aware)

    def summarize(self, request: SummaryRequest) -> str:
        lang = request.lang if request.lang in SECTIONS else "en"
        facts = gather(request.messages, tool_outputs(request.original))
        lines = compose(facts, lang)
        budget = summary_budget(request.messages, facts, lines, request.max_tokens, lang)
        return render(fit(lines, budget, lang), lang)


def summary_budget(
    messages: list[Message], facts: Facts, lines: list[Line], max_tokens: int, lang: str
) -> int:
    """Tokens the summary may take, never more than ``max_tokens``: a quarter of what is new plus
    a previous summary whole, or what the essential lines (priority 0 and 1: the goal, the file
    paths, the latest request, the next step) need, if that is more.

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
    wanted = max(MIN_TOKENS, target, quarters_to_tokens(essential))
    # never as big as the history itself, which the no-gain guard would refuse whole
    return min(max_tokens, wanted, max(MIN_TOKENS, estimate(messages) - 1))


# --- gathering -----------------------------------------------------------------------------------


def gather(messages: list[Message], outputs: dict[str, str] | None = None) -> Facts:
    """The facts of ``messages``; ``outputs`` are the tool results before micro compaction, by
    call id, so that old commands still tell how they ended."""
    facts = Facts()
    calls: dict[Any, Call] = {}
    for index, message in enumerate(messages):
        role = message.get("role")
        if index == 0 and role == "user" and _text_of(message).startswith(SUMMARY_PREFIX):
            facts.previous = _text_of(message)[len(SUMMARY_PREFIX) :]
            continue
        if role == "tool":
            _answer(calls, facts, message.get("tool_call_id"), message.get("content"), False, False)
            continue
        for block in blocks(message):
            if is_block(block, "tool_use"):
                _call(calls, facts, block.get("id"), block.get("name"), block.get("input"))
            elif is_block(block, "tool_result"):
                error, flagged = bool(block.get("is_error")), "is_error" in block
                _answer(
                    calls, facts, block.get("tool_use_id"), block.get("content"), error, flagged
                )
        for tool_call in message.get("tool_calls") or ():
            function = tool_call.get("function") or {}
            arguments = _arguments(function.get("arguments"))
            _call(calls, facts, tool_call.get("id"), function.get("name"), arguments)
        if role == "user":
            for text in user_texts(message):
                facts.requests.extend([text.written] if text.written else [])
                facts.earlier.extend([text.earlier_summary] if text.earlier_summary else [])
        elif role == "assistant" and _text_of(message).strip() not in ("", *ACKNOWLEDGEMENTS):
            facts.assistant_texts.append(_text_of(message).strip())
    facts.calls = [_with_output(call, outputs or {}) for call in facts.calls]
    return facts


def tool_outputs(messages: list[Message]) -> dict[str, str]:
    """The text of each tool result in ``messages``, by the id of the call it answers."""
    outputs = {}
    for message in messages:
        if message.get("role") == "tool":
            outputs[message.get("tool_call_id")] = _text_of(message)
        for block in blocks(message):
            if is_block(block, "tool_result"):
                outputs[block.get("tool_use_id")] = _content_text(block.get("content"))
    return {call_id: text for call_id, text in outputs.items() if isinstance(call_id, str)}


def _call(calls: dict, facts: Facts, call_id: Any, name: Any, arguments: Any) -> None:
    call = Call(
        len(facts.calls), call_id, name if isinstance(name, str) else UNKNOWN_TOOL, arguments
    )
    facts.calls.append(call)
    if isinstance(call_id, str):
        calls[call_id] = call


def _answer(
    calls: dict, facts: Facts, call_id: Any, content: Any, is_error: bool, flagged: bool
) -> None:
    call = calls.get(call_id) if isinstance(call_id, str) else None
    text = _content_text(content)
    facts.results.append((call.name if call else UNKNOWN_TOOL, text, is_error))
    if call is not None:
        answered = replace(call, answered=True, result=text, is_error=is_error, flagged=flagged)
        facts.calls[call.position] = calls[call_id] = answered


def _with_output(call: Call, outputs: dict) -> Call:
    original = outputs.get(call.call_id) if isinstance(call.call_id, str) else None
    if call.answered and is_marker(call.result) and isinstance(original, str):
        return replace(call, result=original)
    return call


def _arguments(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments


def _content_text(content: Any) -> str:
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


def _text_of(message: Message) -> str:
    return _content_text(message.get("content"))


# --- composing -----------------------------------------------------------------------------------


def compose(facts: Facts, lang: str) -> list[Line]:
    label = LABELS[lang]
    carried = carried_forward(facts.previous, lang) if facts.previous is not None else []
    has_first = any(line.text.startswith(FIRST_LABELS) for line in carried)
    lines = [
        *_carried(carried, facts, label),
        *_goal_lines(facts, label, has_first),
        *_work_lines(facts, label),
        *(line for line in carried if line.section == WORK),
        *(Line(CONSTRAINTS, clip(text, LINE_CHARS), 2) for text in constraints(facts.requests)),
        *(line for line in carried if line.section == CONSTRAINTS),
        *_path_lines(facts, label),
        *(line for line in carried if line.section == PATHS),
        *_result_lines(facts, label),
        *(line for line in carried if line.section == RESULTS),
        *_next_lines(facts, label, carried),
    ]
    return _unique(lines)


def _carried(carried: list[Line], facts: Facts, label: dict[str, str]) -> list[Line]:
    """The previous summary's goal lines; its latest request becomes a later one under a newer."""
    lines = [line for line in carried if line.section == GOAL]
    if facts.requests:
        lines.extend(
            Line(GOAL, f"{label['later']}: {line.text.split(': ', 1)[1]}", 4)
            for line in carried
            if line.section == NEXT and line.text.startswith(LATEST_LABELS)
        )
    return lines


def _goal_lines(facts: Facts, label: dict[str, str], has_first: bool) -> list[Line]:
    lines = [
        Line(GOAL, f"{label['earlier']}: {clip(earlier, 600)}", 4, -age)
        for age, earlier in enumerate(reversed(facts.earlier))
    ]
    requests = list(facts.requests)
    if requests and not has_first:
        first = requests.pop(0)
        lines.append(Line(GOAL, f"{label['first']}: “{clip(first, FIRST_REQUEST_CHARS)}”", 0))
    count = len(requests)
    lines.extend(
        Line(GOAL, f"{label['later']}: “{clip(text, LINE_CHARS)}”", 4, index - count)
        for index, text in enumerate(requests)
    )
    return lines


def _work_lines(facts: Facts, label: dict[str, str]) -> list[Line]:
    """What was done, newest first: edits, commands and tests with their outcome, decisions."""
    done = [text for text in (work_line(call, label) for call in reversed(facts.calls)) if text]
    lines = [  # the newest is essential: what the next agent builds on
        Line(WORK, clip(text, LINE_CHARS), 1 if age == 0 else 3, age)
        for age, text in enumerate(done)
    ]
    decisions = [sentence for text in facts.assistant_texts for sentence in decided(text)]
    lines.extend(
        Line(WORK, clip(f"{label['decided']}: {sentence}", LINE_CHARS), 5, -age)
        for age, sentence in enumerate(reversed(decisions))
    )
    looked = Counter(call.name for call in facts.calls if work_line(call, label) is None)
    if looked:
        counts = ", ".join(f"{name} ×{count}" for name, count in looked.most_common())
        lines.append(Line(WORK, f"{label['looked']}: {counts}", 6))
    truncated = sum(1 for _, text, _ in facts.results if is_marker(text))
    if truncated:
        lines.append(Line(WORK, f"{truncated} {label['truncated']}", 7))
    return lines


def decided(text: str) -> list[str]:
    return [
        sentence.strip()
        for sentence in SENTENCE_END.split(CODE_FENCE.sub("", text))
        if sentence and DECISION.search(sentence) and len(sentence.strip()) <= CONSTRAINT_CHARS
    ]


def _path_lines(facts: Facts, label: dict[str, str]) -> list[Line]:
    modified: dict[str, bool] = {}
    for call in facts.calls:
        for path in paths_in(call.arguments):
            changed = writes(call.name, call.arguments) and not failed(call)
            modified[path] = modified.get(path, False) or changed
    return [
        Line(PATHS, f"{path} ({label['modified']})" if changed else path, 1)
        for path, changed in modified.items()
    ]


def _result_lines(facts: Facts, label: dict[str, str]) -> list[Line]:
    """Errors that were resolved later (the open ones are in "needed to continue"), newest
    first, then the newest readable results."""
    open_positions = {call.position for call in open_errors(facts.calls)}
    errors = [
        Line(
            RESULTS,
            clip(f"{call.name} ({label['error']}): {_error_gist(call)}", LINE_CHARS),
            5,
            -age,
        )
        for age, call in enumerate(reversed(facts.calls))
        if call.answered and failed(call) and call.position not in open_positions
    ]
    others = [
        Line(RESULTS, clip(f"{tool}: {first_line(text)}", LINE_CHARS), 7)
        for tool, text, is_error in facts.results
        if text.strip() and not is_marker(text) and not is_error and error_line(text) is None
    ]
    return errors + others[-10:]


def open_errors(calls: list[Call]) -> list[Call]:
    """Failed calls not followed by a success of the same command or on the same file, nor by
    a test run that passed (green tests close what came before them)."""
    latest: dict[str, Call] = {}
    for call in calls:
        if not call.answered:
            continue
        if is_test_run(call) and not failed(call):
            latest.clear()
        latest[_subject(call)] = call
    return [call for call in latest.values() if failed(call)]


def _subject(call: Call) -> str:
    if is_test_run(call):
        return "tests"  # the latest test run tells whether the tests fail
    command = command_of(call.arguments)
    if command is not None and " " in command.strip():
        return "command:" + " ".join(command.split())
    paths = paths_in(call.arguments)
    return "path:" + paths[0] if paths else "tool:" + call.name


def _error_gist(call: Call) -> str:
    """The command or file, and the error line when the result can still be read."""
    subject = command_of(call.arguments) or ", ".join(paths_in(call.arguments))
    gist = None if is_marker(call.result) else error_line(call.result) or first_line(call.result)
    subject = f"`{clip(subject, 100)}`" if subject else ""
    return ": ".join(part for part in (subject, gist) if part)


def _next_lines(facts: Facts, label: dict[str, str], carried: list[Line]) -> list[Line]:
    """Always the latest request, the errors still open and the next step.

    A previous summary's last part stands while nothing new has happened; once the user or the
    assistant has said more, only its open errors are kept (as results), the rest is replaced."""
    previous = [line for line in carried if line.section == NEXT]
    if not facts.requests and not facts.assistant_texts and not facts.calls:
        return previous
    lines = [Line(RESULTS, line.text, 3) for line in previous if line.text.startswith(OPEN_LABELS)]
    if len(facts.requests) > 1 or (facts.requests and carried):
        latest = f"“{clip(facts.requests[-1], LATEST_CHARS)}”"
        lines.append(Line(NEXT, f"{label['last']}: {latest}", 0))
    elif facts.requests:
        lines.append(Line(NEXT, f"{label['last']}: {label['same']}", 0))
    else:
        lines.extend(line for line in previous if line.text.startswith(LATEST_LABELS))
    for age, call in enumerate(reversed(open_errors(facts.calls)[-OPEN_ERRORS:])):
        text = clip(f"{label['open']}: {call.name} {_error_gist(call)}", 400)
        lines.append(Line(NEXT, text, 0, -age))
    if facts.assistant_texts:
        reply = clip(facts.assistant_texts[-1], LATEST_CHARS)
        lines.append(Line(NEXT, f"{label['state']}: {reply}", 1))
    lines.append(Line(NEXT, f"{label['next']}: {next_step(facts, label)}", 0))
    unanswered = [call.name for call in facts.calls if not call.answered]
    if unanswered:
        lines.append(Line(NEXT, f"{label['unanswered']}: {', '.join(unanswered)}", 2))
    return lines


def next_step(facts: Facts, label: dict[str, str]) -> str:
    """The plan the assistant stated last, if its last reply states one; else the latest request."""
    if facts.assistant_texts:
        plans = [s for s in SENTENCE_END.split(facts.assistant_texts[-1]) if s and PLAN.search(s)]
        if plans:
            return clip(plans[-1].strip(), LINE_CHARS)
    return label["answer"]


def constraints(requests: list[str]) -> list[str]:
    """The user's rules: sentences of their requests (code and pasted logs left out) that say
    must, never, only, keep …; questions are not rules."""
    found = []
    for request in requests:
        for sentence in SENTENCE_END.split(CODE_FENCE.sub("", request)):
            sentence = (sentence or "").strip()
            if (
                len(sentence) > 3
                and len(sentence) <= CONSTRAINT_CHARS
                and not sentence.endswith(("?", "？"))
                and CONSTRAINT.search(sentence)
            ):
                found.append(sentence)
    return found


def first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _unique(lines: list[Line]) -> list[Line]:
    seen: set[tuple[int, str]] = set()
    unique = []
    for line in lines:
        if (line.section, line.text) not in seen:
            seen.add((line.section, line.text))
            unique.append(line)
    return unique


# --- a previous summary --------------------------------------------------------------------------

FIRST_LABELS = tuple(f"{labels['first']}: " for labels in LABELS.values())
LATEST_LABELS = tuple(f"{labels['last']}: " for labels in LABELS.values())
OPEN_LABELS = tuple(f"{labels['open']}: " for labels in LABELS.values())
# Lines of a previous summary's last part that a newer one replaces (not carried as they are).
SUPERSEDED = tuple(
    f"{labels[key]}: " for labels in LABELS.values() for key in ("last", "state", "next", "open")
)


def carried_forward(previous: str, lang: str) -> list[Line]:
    """Lines of a previous summary, each under its section; anything else kept whole in the goal.

    Its first request stays the first; its latest request, latest reply, next step and open
    errors are priority 1 in the last part, for ``_next_lines`` to keep or replace."""
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


# --- fitting and rendering -----------------------------------------------------------------------


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
