"""The summary's lines, section by section, from the facts of the history and the summaries
before it."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace

from ...compaction.micro import is_marker
from ...text import clip
from .calls import (
    Call,
    command_name,
    command_of,
    keeps_books,
    looks_only,
    paths_in,
    runs_command,
    writes,
)
from .facts import Facts, Request
from .fit import Line, tiered, unique
from .names import name_lines
from .outcomes import error_line, failed
from .previous import carried_forward
from .state import (
    CODE_FENCE,
    LINE_CHARS,
    error_gist,
    next_lines,
    open_errors,
    sentences,
)
from .wording import (
    CONSTRAINTS,
    FIRST_LABELS,
    GOAL,
    LABELS,
    LATEST_LABELS,
    NEXT,
    PATHS,
    RESULTS,
    SAME_WORDS,
    WORK,
)
from .worklog import describe, work_line

# A rule of the user's: an order at the start of a clause ("but do not …", "always …"), or a
# must; not any sentence with "don't" in it ("they don't really need to exist" is no rule).
CONSTRAINT = re.compile(
    r"(?i)(?:^|[,;:(]\s*|\b(?:but|and|please|just|also|so|then)\s+)"
    r"(?:do not|don't|never|always|avoid|make sure|ensure|keep|only|no need to)\b"
    r"|\b(?:must|mustn't|should not|shouldn't|without)\b"
    r"|不要|必须|不得|不能|务必|禁止|避免|确保|保持|(?:^|[，,。；;：:])别(?![的人])"
)
DECISION = re.compile(
    r"(?i)\b(decided|decision|instead of|rather than|going with|we'll use|i'll use|chose|"
    r"the fix is|root cause)\b|决定|改为|改用|根因|原因是"
)
MODIFIED_MARK = re.compile(r" \((?:modified|已修改)\)$")
FIRST_REQUEST_CHARS = 1200
CONSTRAINT_CHARS = 300  # a longer "sentence" is a pasted log or code, not a rule
CONTEXT_CHARS = 160
REFUSED_CHARS = 120
RESULTS_KEPT = 10


def compose(facts: Facts, lang: str) -> list[Line]:
    label = LABELS[lang]
    carried = _carried(facts, lang)
    has_first = any(line.text.startswith(FIRST_LABELS) for line in carried)
    paths = _path_lines(facts, label, [line for line in carried if line.section == PATHS])
    lines = [
        *_carried_goal(carried, facts, label),
        *_goal_lines(facts, label, has_first),
        *_work_lines(facts, label),
        *(line for line in carried if line.section == WORK),
        *_constraint_lines(facts, label),
        *(line for line in carried if line.section == CONSTRAINTS),
        *paths,
        *tiered(name_lines(facts, [line for line in paths if line.anchor is None], label), 3, 2, 3),
        *_result_lines(facts, label),
        *(line for line in carried if line.section == RESULTS),
        *next_lines(facts, label, carried),
    ]
    return unique(lines)


def _carried(facts: Facts, lang: str) -> list[Line]:
    """The lines of the summaries before, the newest as it stands, the older ones after it (a
    newer summary has already carried what of them mattered)."""
    lines = []
    for age, summary in enumerate(reversed(facts.summaries)):
        lines[:0] = [
            replace(line, priority=line.priority + 2 * (age > 0))
            for line in carried_forward(summary, lang)
        ]
    return lines


def _carried_goal(carried: list[Line], facts: Facts, label: dict[str, str]) -> list[Line]:
    """The previous summary's goal lines; its latest request becomes a later one under a newer."""
    lines = [line for line in carried if line.section == GOAL]
    if facts.requests:
        lines.extend(
            Line(GOAL, f"{label['later']}: {line.text.split(': ', 1)[1]}", 4)
            for line in carried
            if line.section == NEXT
            and line.text.startswith(LATEST_LABELS)
            and line.text.split(": ", 1)[1] not in SAME_WORDS  # no request of its own
        )
    return lines


def _goal_lines(facts: Facts, label: dict[str, str], has_first: bool) -> list[Line]:
    """The first request whole (mostly), then every later one, newest first within the budget;
    the latest is in "needed to continue", a correction among the constraints."""
    requests = [request for request in facts.requests if request.is_plain]
    lines = []
    if requests and not has_first and requests[0] is facts.requests[0]:
        first = requests.pop(0)
        lines.append(Line(GOAL, f"{label['first']}: “{clip(first.text, FIRST_REQUEST_CHARS)}”", 0))
    later = [request for request in requests if request is not facts.requests[-1]]
    ages = range(len(later) - 1, -1, -1)  # newest first
    later_lines = [
        Line(GOAL, f"{label['later']}: “{clip(_elided(request.text), LINE_CHARS)}”", 3, age)
        for request, age in zip(later, ages, strict=True)
    ]
    return lines + tiered(later_lines, 2, 2, 3)


def _elided(text: str) -> str:
    """A request with what it pastes (code, logs between fences) left out."""
    return CODE_FENCE.sub("```…```", text)


def _work_lines(facts: Facts, label: dict[str, str]) -> list[Line]:
    """What was done, newest first: edits, commands and tests with their outcome, decisions;
    reading, searching and the agent's bookkeeping counted in a line each."""
    done = [text for text in (work_line(call, label) for call in reversed(facts.calls)) if text]
    lines = tiered(
        [Line(WORK, clip(text, LINE_CHARS), 3, age) for age, text in enumerate(done)], 4, 2, 3
    )
    if lines:  # the newest is essential: what the next agent builds on
        lines[0] = replace(lines[0], priority=1)
    decisions = [sentence for text in facts.texts for sentence in decided(text)]
    lines.extend(
        Line(WORK, clip(f"{label['decided']}: {sentence}", LINE_CHARS), 5, age)
        for age, sentence in enumerate(reversed(decisions))
    )
    quiet = [call for call in facts.calls if work_line(call, label) is None]
    looked = Counter(_looked(call) for call in quiet if not keeps_books(call))
    books = Counter(call.name for call in quiet if keeps_books(call))
    for key, counts in (("looked", looked), ("bookkeeping", books)):
        if counts:
            listed = ", ".join(f"{name} ×{count}" for name, count in counts.most_common())
            lines.append(Line(WORK, clip(f"{label[key]}: {listed}", 400), 4))
    truncated = sum(1 for _, text, _ in facts.results if is_marker(text))
    if truncated:
        lines.append(Line(WORK, f"{truncated} {label['truncated']}", 7))
    return lines


def _looked(call: Call) -> str:
    if runs_command(call):
        return f"`{command_name(command_of(call.arguments) or '')}`"
    return call.name


def decided(text: str) -> list[str]:
    return [
        sentence
        for sentence in sentences(text)
        if DECISION.search(sentence) and len(sentence) <= CONSTRAINT_CHARS
    ]


def _constraint_lines(facts: Facts, label: dict[str, str]) -> list[Line]:
    """The user's corrections (with what they correct) and refusals (with the call refused and
    their words), then their rules; newest first within the budget."""
    found = [
        (
            request.message,
            f"{label['correction']}: “{clip(request.text, LINE_CHARS)}” "
            f"({label['correcting']}: “{_gist_of(request.correcting)}”)",
        )
        for request in facts.requests
        if request.correcting is not None
    ]
    for call in facts.calls:
        if call.refused is not None:
            words = f": “{clip(call.refused, LINE_CHARS)}”" if call.refused else ""
            what = clip(describe(call, label), REFUSED_CHARS)
            found.append((call.message, f"{label['refused_call']}: {what}{words}"))
    found.sort()
    ages = range(len(found) - 1, -1, -1)  # newest first
    lines = [Line(CONSTRAINTS, text, 3, age) for (_, text), age in zip(found, ages, strict=True)]
    rules = constraints([request for request in facts.requests if request.is_plain])
    ages = range(len(rules) - 1, -1, -1)
    rule_lines = [
        Line(CONSTRAINTS, clip(rule, LINE_CHARS), 3, age)
        for rule, age in zip(rules, ages, strict=True)
    ]
    return tiered(lines, 2, 2, 3) + tiered(rule_lines, 2, 2, 4)


def _gist_of(reply: str | None) -> str:
    """The end of a reply (what a correction answers): its last two sentences."""
    return clip(" ".join(sentences(reply or "")[-2:]), CONTEXT_CHARS)


def constraints(requests: list[Request]) -> list[str]:
    """The user's rules: sentences of their requests (code and pasted logs left out) that give
    an order; questions are not rules."""
    found = []
    for request in requests:
        for sentence in sentences(request.text):
            sentence = sentence.lstrip("-*• ").strip()
            if (
                3 < len(sentence) <= CONSTRAINT_CHARS
                and not sentence.endswith(("?", "？"))
                and CONSTRAINT.search(sentence)
            ):
                found.append(sentence)
    return found


def _path_lines(facts: Facts, label: dict[str, str], carried: list[Line]) -> list[Line]:
    """One line per file path given to a tool, with those of the summaries before: a path
    changed here or before says so once, the changed ones first, then the most used; the names a
    summary before listed after a path stay with it. A folder that holds a listed file is named
    by the file's path."""
    suffix = f" ({label['modified']})"
    modified: dict[str, bool] = {}
    uses: Counter[str] = Counter()
    told = []  # a summary before's items about files in words (Claude Code's), kept as they are
    for line in carried:
        if line.anchor is not None:
            continue
        if not is_path_line(line):
            told.append(line)
            continue
        path = _without_mark(line.text)
        modified[path] = modified.get(path, False) or line.text != path
    for call in facts.calls:
        for path in paths_in(call.arguments):
            changed = writes(call.name, call.arguments) and not failed(call)
            modified[path] = modified.get(path, False) or changed
            uses[path] += 1
    listed = [
        path
        for path in modified
        if not any(other.startswith(path.rstrip("/") + "/") for other in modified)
    ]
    listed.sort(key=lambda path: (not modified[path], -uses[path]))
    named = {path: f"{path}{suffix}" if modified[path] else path for path in listed}
    lines = [Line(PATHS, named[path], 1) for path in listed]  # the budget takes them in order
    lines += told
    for line in carried:  # a summary before's names of a file, after its line as it is now
        if line.anchor is not None:
            anchor = named.get(_without_mark(line.anchor), line.anchor)
            lines.append(replace(line, anchor=anchor))
    return lines


def is_path_line(line: Line) -> bool:
    """Whether a line of the paths part names one file (``src/app.py (modified)``), not a
    file's names or an item about files in words."""
    return (
        line.section == PATHS
        and line.anchor is None
        and not any(space in _without_mark(line.text) for space in " \t")
    )


def _without_mark(text: str) -> str:
    """A path line's path, without its "(modified)" in either language."""
    return MODIFIED_MARK.sub("", text)


def _result_lines(facts: Facts, label: dict[str, str]) -> list[Line]:
    """Errors that a later step fixed (the open ones are in "needed to continue"), newest
    first, then the newest readable results."""
    open_positions = {call.position for call in open_errors(facts.calls)}
    errors = [
        Line(
            RESULTS,
            clip(f"{call.name} ({label['fixed']}): {error_gist(call)}", 300),
            5,
            age,
        )
        for age, call in enumerate(reversed(facts.calls))
        if call.answered
        and failed(call)
        and call.refused is None
        and not looks_only(call)
        and call.position not in open_positions
    ]
    others = [  # what a service answered; a command's outcome and a file are told elsewhere
        Line(RESULTS, clip(f"{call.name}: {first_line(call.result)}", LINE_CHARS), 7)
        for call in facts.calls
        if call.answered
        and call.result.strip()
        and not failed(call)
        and not (runs_command(call) or keeps_books(call) or paths_in(call.arguments))
        and error_line(call.result) is None
    ]
    return errors + others[-RESULTS_KEPT:]


def first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""
