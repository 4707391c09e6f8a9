"""Where the work stands: the latest request, the errors still open, the agent's open tasks and
the next step, read from how the history ends (issue 23).

The next step follows from the state of the work: calls still waiting for their result are
waited for; a turn that ended with the assistant's reply answered the latest request, unless
the reply states a plan (then the plan is next) or asks the user something (then the user's
answer is awaited); a request without any reply yet is to be answered; work in the middle of a
turn goes on, with what the assistant said it was doing and what it did since.
"""

from __future__ import annotations

import re

from ...text import clip
from .calls import Call, command_of, is_test_run, keeps_books, looks_only, paths_in
from .facts import Facts
from .fit import Line
from .outcomes import cancelled, error_text, failed, subject
from .tasks import Task, keeps_tasks, open_tasks
from .wording import LATEST_LABELS, NEXT, OPEN_LABELS, RESULTS, SUPERSEDED, TASK_LABELS
from .worklog import describe, outcome, work_line

PLAN = re.compile(
    r"(?i)^(next|then|now,? (i'll|i will|let me|let's)|i'll|i will|let me|let's|i'm going to|"
    r"i am going to|remaining|still need|todo|the next step)\b|\bnext (step|i'll|i will)\b"
    r"|^(接下来|下一步|然后|我将|我会|让我|现在)"
)
NOT_PLAN = re.compile(r"(?i)\blet me know\b")
SENTENCE_END = re.compile(r"(?<=[。！？!?；;])|(?<=\.)\s|\n")
CODE_FENCE = re.compile(r"```.*?(```|$)", re.S)
LINE_CHARS = 240
LATEST_CHARS = 600
OPEN_ERRORS = 3
TASK_CHARS = 120


def open_errors(calls: list[Call]) -> list[Call]:
    """Failed calls not followed by a success of the same command or on the same file, nor by
    a test run that passed (green tests close what came before them). A refused call is the
    user's correction, not an error; a failed look (a file not there) blocks nothing, and a call
    the harness cancelled (its sibling failed) never ran."""
    latest: dict[str, Call] = {}
    for call in calls:
        if not call.answered:
            continue
        if is_test_run(call) and not failed(call):
            latest.clear()
        latest[subject(call)] = call
    return [
        call
        for call in latest.values()
        if failed(call) and call.refused is None and not looks_only(call) and not cancelled(call)
    ]


def error_gist(call: Call) -> str:
    """The command or file, and the line that says why it failed when the result can be read."""
    what = command_of(call.arguments) or ", ".join(paths_in(call.arguments))
    what = f"`{clip(what, 100)}`" if what else ""
    return ": ".join(part for part in (what, error_text(call)) if part)


def next_lines(facts: Facts, label: dict[str, str], carried: list[Line]) -> list[Line]:
    """Always the latest request, the errors still open, the open tasks and the next step.

    A previous summary's last part stands while nothing new has happened; once the user or the
    assistant has said more, its open errors are kept (as results) and its other lines stay
    below the new ones, but its latest request, reply and next step are replaced."""
    previous = [line for line in carried if line.section == NEXT]
    if not facts.requests and not facts.replies and not facts.calls:
        return previous
    # a summary before's open errors, unless a test run since passed (green closes them)
    passed = any(is_test_run(call) and call.answered and not failed(call) for call in facts.calls)
    carried_errors = () if passed else previous
    lines = [
        Line(RESULTS, line.text, 3) for line in carried_errors if line.text.startswith(OPEN_LABELS)
    ]
    if len(facts.requests) > 1 or (facts.requests and carried):
        latest = f"“{clip(facts.requests[-1].text, LATEST_CHARS)}”"
        lines.append(Line(NEXT, f"{label['last']}: {latest}", 0))
    elif facts.requests:
        lines.append(Line(NEXT, f"{label['last']}: {label['same']}", 0))
    else:
        lines.extend(line for line in previous if line.text.startswith(LATEST_LABELS))
    for age, call in enumerate(reversed(open_errors(facts.calls)[-OPEN_ERRORS:])):
        text = clip(f"{label['open']}: {call.name} {error_gist(call)}", 400)
        lines.append(Line(NEXT, text, 0, -age))
    tasks = open_tasks(facts.calls)
    if tasks:
        listed = "; ".join(_task(task, label) for task in tasks)
        lines.append(Line(NEXT, clip(f"{label['open_tasks']}: {listed}", 600), 1))
    # what the summary before still had to do, unless the agent's own task list says newer
    stale = SUPERSEDED + (TASK_LABELS if any(keeps_tasks(call) for call in facts.calls) else ())
    lines.extend(line for line in previous if not line.text.startswith(stale))
    if facts.replies:
        reply = clip(facts.replies[-1][1], LATEST_CHARS)
        lines.append(Line(NEXT, f"{label['state']}: {reply}", 1))
    lines.append(Line(NEXT, f"{label['next']}: {next_step(facts, label, tasks)}", 0))
    return lines


def _task(task: Task, label: dict[str, str]) -> str:
    number = f"#{task.number} " if task.number else ""
    return f"{number}{clip(task.subject, TASK_CHARS)} ({label.get(task.status, task.status)})"


def next_step(facts: Facts, label: dict[str, str], tasks: list[Task]) -> str:
    """What comes next, from how the history ends (the module's docstring)."""
    waiting = [f"`{call.name}`" for call in facts.calls if not call.answered]
    if waiting and not facts.calls[-1].answered:
        return label["await"].format(calls=", ".join(dict.fromkeys(waiting)))
    request = facts.requests[-1].message if facts.requests else -1
    reply_at, reply = facts.replies[-1] if facts.replies else (-1, "")
    since = [call for call in facts.calls if call.message >= reply_at] if reply else facts.calls
    if reply and reply_at > request and not since:
        question, plan = asked(reply), stated_plan(reply)
        if question:
            return f"{label['answered']}; {label['asked']}: “{question}”"
        return plan or label["answered"]
    if request > max(reply_at, facts.calls[-1].message if facts.calls else -1):
        return label["answer"]
    step = label["continue"]
    current = [task for task in tasks if task.status == "in_progress"]
    if current:
        step += f" ({_task(current[0], label)})"
    plan = stated_plan(reply) if reply_at > request else None
    if plan:
        step += f"; {label['was_doing']}: “{plan}”"
    done = [call for call in since if not keeps_books(call)]
    if done:  # the last thing done, even a look: what the next step starts from
        last = done[-1]
        step += f"; {label['since']}: {work_line(last, label) or _looked(last, label)}"
    return clip(step, 500)


def _looked(call: Call, label: dict[str, str]) -> str:
    return f"{describe(call, label)}: {outcome(call, label)}"


def sentences(text: str) -> list[str]:
    """The sentences of a reply, code left out."""
    parts = SENTENCE_END.split(CODE_FENCE.sub("", text))
    return [part.strip() for part in parts if part and part.strip()]


def stated_plan(reply: str) -> str | None:
    """The last sentence of a reply that says what the assistant will do."""
    plans = [s for s in sentences(reply) if PLAN.search(s) and not NOT_PLAN.search(s)]
    return clip(plans[-1], LINE_CHARS) if plans else None


def asked(reply: str) -> str | None:
    """The question a reply ends with, if it does (the assistant waits for the answer)."""
    found = sentences(reply)
    last = found[-1] if found else ""
    return clip(last, LINE_CHARS) if last.endswith(("?", "？")) else None
