"""The summary's lines, section by section, from the facts of the history."""

from __future__ import annotations

import re
from collections import Counter

from ...micro import is_marker
from ...text import clip
from .facts import Facts
from .fit import Line, unique
from .previous import carried_forward
from .state import LINE_CHARS, SENTENCE_END, error_gist, first_line, next_lines, open_errors
from .wording import (
    CONSTRAINTS,
    FIRST_LABELS,
    GOAL,
    LABELS,
    LATEST_LABELS,
    NEXT,
    PATHS,
    RESULTS,
    WORK,
)
from .worklog import error_line, failed, paths_in, work_line, writes

CONSTRAINT = re.compile(
    r"(?i)\b(must|never|do not|don't|should|shouldn't|without|only|keep|avoid|make sure|ensure|"
    r"required?|no need)\b|不要|必须|不能|不得|保持|只能|务必|禁止|避免|确保|别"
)
DECISION = re.compile(
    r"(?i)\b(decided|decision|instead of|rather than|going with|we'll use|i'll use|chose|"
    r"the fix is|root cause)\b|决定|改为|改用|根因|原因是"
)
CODE_FENCE = re.compile(r"```.*?(```|$)", re.S)

FIRST_REQUEST_CHARS = 1200
CONSTRAINT_CHARS = 300  # a longer "sentence" is a pasted log or code, not a rule


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
        *next_lines(facts, label, carried),
    ]
    return unique(lines)


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
            clip(f"{call.name} ({label['error']}): {error_gist(call)}", LINE_CHARS),
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
