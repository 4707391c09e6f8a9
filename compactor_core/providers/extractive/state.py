"""Where the work stands: the errors still open, the latest request and the next step."""

from __future__ import annotations

import re

from ...micro import is_marker
from ...text import clip
from .facts import Facts
from .fit import Line
from .wording import LATEST_LABELS, NEXT, OPEN_LABELS, RESULTS
from .worklog import Call, command_of, error_line, failed, is_test_run, paths_in

PLAN = re.compile(
    r"(?i)\b(next|then|remaining|todo|still need|i'll|i will|let me)\b|接下来|下一步|然后"
)
SENTENCE_END = re.compile(r"(?<=[。！？!?；;])|(?<=\.)\s|\n")
LINE_CHARS = 240
LATEST_CHARS = 600
OPEN_ERRORS = 3


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


def error_gist(call: Call) -> str:
    """The command or file, and the error line when the result can still be read."""
    subject = command_of(call.arguments) or ", ".join(paths_in(call.arguments))
    gist = None if is_marker(call.result) else error_line(call.result) or first_line(call.result)
    subject = f"`{clip(subject, 100)}`" if subject else ""
    return ": ".join(part for part in (subject, gist) if part)


def next_lines(facts: Facts, label: dict[str, str], carried: list[Line]) -> list[Line]:
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
        text = clip(f"{label['open']}: {call.name} {error_gist(call)}", 400)
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


def first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""
