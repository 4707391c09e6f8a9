"""The agent's own task list, as its todo and task tools left it: what is still open.

Claude Code's ``TodoWrite`` and Codex's ``update_plan`` send the whole list each time; Claude
Code's ``TaskCreate`` adds one task (its result gives the number), ``TaskUpdate`` changes one,
``TaskList``'s result shows them all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .calls import Call
from .outcomes import failed

DONE = frozenset({"completed", "complete", "done", "deleted", "cancelled", "canceled"})
CREATED = re.compile(r"Task #(\d+) created")
LISTED = re.compile(r"^#(\d+) \[([\w -]+)\] (.+?)(?: \[blocked by [^\]]*\])?$", re.M)


@dataclass(frozen=True)
class Task:
    number: str  # "3" for Claude Code's tasks, "" for a todo list's or a plan's items
    subject: str
    status: str  # pending, in_progress, completed …

    @property
    def is_open(self) -> bool:
        return self.status.lower() not in DONE


TASK_TOOLS = frozenset({"todowrite", "update_plan", "tasklist", "taskcreate", "taskupdate"})


def keeps_tasks(call: Call) -> bool:
    """Whether the call is one of the agent's task-list tools."""
    return call.name.lower() in TASK_TOOLS


def open_tasks(calls: list[Call]) -> list[Task]:
    """The tasks still open after the last call, those in progress first."""
    tasks: dict[str, Task] = {}
    for call in calls:
        if call.answered and not failed(call) and isinstance(call.arguments, dict):
            tasks = _after(call, tasks)
    found = [task for task in tasks.values() if task.is_open]
    return sorted(found, key=lambda task: task.status != "in_progress")


def _after(call: Call, tasks: dict[str, Task]) -> dict[str, Task]:
    name, arguments = call.name.lower(), call.arguments
    if name == "todowrite" and isinstance(arguments.get("todos"), list):
        return _whole_list(arguments["todos"], "content")
    if name == "update_plan" and isinstance(arguments.get("plan"), list):
        return _whole_list(arguments["plan"], "step")
    if name == "tasklist" and LISTED.search(call.result):
        return {number: Task(number, subject, status) for number, status, subject in _listed(call)}
    if name == "taskcreate" and CREATED.search(call.result):
        number = CREATED.search(call.result).group(1)
        subject = str(arguments.get("subject") or arguments.get("description") or "")
        return {**tasks, number: Task(number, subject, "pending")}
    if name == "taskupdate" and str(arguments.get("taskId")) in tasks:
        task = tasks[str(arguments["taskId"])]
        subject = str(arguments.get("subject") or task.subject)
        status = str(arguments.get("status") or task.status)
        return {**tasks, task.number: Task(task.number, subject, status)}
    return tasks


def _whole_list(items: list, text_key: str) -> dict[str, Task]:
    tasks = {}
    for item in items:
        if isinstance(item, dict) and isinstance(item.get(text_key), str):
            tasks[item[text_key]] = Task("", item[text_key], str(item.get("status", "pending")))
    return tasks


def _listed(call: Call) -> list[tuple[str, str, str]]:
    return [
        (number, status, subject.strip()) for number, status, subject in LISTED.findall(call.result)
    ]
