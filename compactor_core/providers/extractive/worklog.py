"""What a tool call did, in one line: the extractive summary's "Work done" (issue 10).

A file edit says which file and the gist of the change (the first line it adds, or removes); a
file written says how many lines; a command says how it ended (ok, failed with its error line, no
result yet), and a test run is called a test run. Read-only calls (reading, searching, listing)
are not work done: the files they touched are listed among the paths instead.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ...micro import is_marker
from ...text import clip

PATH_KEYS = frozenset({"path", "file_path", "filename", "notebook_path", "filepath", "paths"})
WRITING_TOOL = re.compile(r"(?i)edit|write|create|replace|patch|insert|move|delete|rm\b|notebook")
SINGLE_WORD = re.compile(r"[A-Za-z_]+")
# Tools that only look: what they touched is listed among the paths, not as work done.
LOOKING_TOOL = re.compile(
    r"(?i)^(read|view|grep|glob|search|find|list|ls|cat|get|fetch|query|show|lookup|think)"
    r"|^(task(list|get|output)|todoread|webfetch|websearch)$"
)
ERROR_LINE = re.compile(
    r"(?i)\b(error|exception|traceback|failed|failure|fatal|panic|denied|not found)\b"
    r"|exit (code|status) [1-9]|错误|失败|异常"
)
EXIT_STATUS = re.compile(r"(?i)exit (code|status):? \d+")
TEST_COMMAND = re.compile(
    r"\b(pytest|go test|cargo test|(npm|pnpm|yarn|bun)( run)? test|make (test|check)|"
    r"mise run test|jest|vitest|unittest|tox|rspec|ctest|phpunit|mvn test|gradle test)\b"
)
TEST_TALLY = re.compile(
    r"(?i)\b\d+ (passed|failed|tests?|errors?)\b|^(ok|PASS|FAIL)\b|\btests? (passed|failed)\b"
)
GIST_CHARS = 100


@dataclass(frozen=True)
class Call:
    """A tool call and what came back, as the extractive summary sees them."""

    position: int  # order among all calls, oldest first
    call_id: Any
    name: str
    arguments: Any
    answered: bool = False
    result: str = ""  # the result's text as it was before micro compaction, when known
    is_error: bool = False
    # Whether the result said if it is an error (Claude Code always does for a shell command,
    # true for a non-zero exit); where it does not (OpenAI tool messages, other harnesses), a
    # command's output is read for an error line instead.
    flagged: bool = False


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


def command_of(arguments: Any) -> str | None:
    if isinstance(arguments, dict) and isinstance(arguments.get("command"), str):
        return arguments["command"]
    return None


def writes(name: str, arguments: Any) -> bool:
    """Whether a call changes files: a one-word ``command`` decides (an editor tool's ``view``
    or ``str_replace``), else the tool's name."""
    command = command_of(arguments)
    if command is not None and SINGLE_WORD.fullmatch(command):
        return bool(WRITING_TOOL.search(command))
    return bool(WRITING_TOOL.search(name))


def runs_command(arguments: Any) -> bool:
    """Whether the call runs a shell command (not an editor's one-word sub-command)."""
    command = command_of(arguments)
    return command is not None and not SINGLE_WORD.fullmatch(command)


def error_line(text: str) -> str | None:
    """The first line that reports an error, and the next if it only introduces it (``ERROR:``);
    a bare ``Exit code 1`` (Claude Code's first line) only when nothing says more."""
    lines = [line.strip() for line in text[:20000].splitlines() if line.strip()]
    status = None
    for index, line in enumerate(lines):
        if EXIT_STATUS.fullmatch(line):
            status = status or line
        elif ERROR_LINE.search(line):
            if line.endswith(":") and index + 1 < len(lines):
                return f"{line} {lines[index + 1]}"
            return line
    return status


def failed(call: Call) -> bool:
    """The call failed: the harness said so, or, where it cannot say, a command's readable
    output reports an error (a file's text mentioning "error" is no failure)."""
    if call.is_error or call.flagged:
        return call.is_error
    readable = not is_marker(call.result)
    return readable and runs_command(call.arguments) and error_line(call.result) is not None


def work_line(call: Call, label: dict[str, str]) -> str | None:
    """What the call did, or None for a call that changed nothing (reading, searching)."""
    if runs_command(call.arguments):
        command = " ".join(command_of(call.arguments).split())
        kind = label["tests"] if is_test_run(call) else label["ran"]
        return f"{kind} `{clip(command, GIST_CHARS)}`: {outcome(call, label)}"
    if writes(call.name, call.arguments):
        paths = ", ".join(paths_in(call.arguments))
        gist = edit_gist(call.arguments, label)
        what = f"{call.name} {paths}" if paths else call.name
        line = f"{what}: {gist}" if gist else what
        return f"{line} ({label['failed']})" if failed(call) else line
    if looks_only(call):
        return None
    arguments = json.dumps(call.arguments, ensure_ascii=False) if call.arguments else ""
    return f"{call.name} {clip(arguments, GIST_CHARS)}".rstrip() + f": {outcome(call, label)}"


def looks_only(call: Call) -> bool:
    """Reading, searching, listing: a call that changes nothing."""
    command = command_of(call.arguments)
    if command is not None and SINGLE_WORD.fullmatch(command):
        return not WRITING_TOOL.search(command)
    return LOOKING_TOOL.search(call.name) is not None


def is_test_run(call: Call) -> bool:
    command = command_of(call.arguments)
    return command is not None and TEST_COMMAND.search(command) is not None


def outcome(call: Call, label: dict[str, str]) -> str:
    """ok or passed, failed with the error line, or no result yet."""
    if not call.answered:
        return label["no_result"]
    readable = not is_marker(call.result)
    if failed(call):
        error = error_line(call.result) if readable else None
        return f"{label['failed']}: {clip(error, GIST_CHARS)}" if error else label["failed"]
    if not is_test_run(call):
        return label["ok"]
    tally = test_tally(call.result) if readable else None
    return f"{label['passed']} ({clip(tally, GIST_CHARS)})" if tally else label["passed"]


def test_tally(text: str) -> str | None:
    """The last line of a result that counts tests (``5 passed``, ``ok  pkg 0.2s``, ``FAIL``)."""
    tallies = [line.strip() for line in text[-20000:].splitlines() if TEST_TALLY.search(line)]
    return tallies[-1] if tallies else None


def edit_gist(arguments: Any, label: dict[str, str]) -> str | None:
    """The gist of a file change: the first line it adds (or removes), or a new file's size."""
    if not isinstance(arguments, dict):
        return None
    if isinstance(arguments.get("edits"), list):  # several edits in one call
        edits = [edit for edit in arguments["edits"] if isinstance(edit, dict)]
        gists = [gist for gist in (edit_gist(edit, label) for edit in edits[:1]) if gist]
        more = f" (+{len(edits) - 1})" if len(edits) > 1 else ""
        return f"{gists[0]}{more}" if gists else None
    old = _text(arguments, "old_string", "old_str", "old")
    new = _text(arguments, "new_string", "new_str", "new")
    if old is not None or new is not None:
        return _change(old or "", new or "", label)
    content = _text(arguments, "content", "file_text")
    if content is not None:
        return f"{len(content.splitlines())} {label['lines']}"
    return None


def _text(arguments: dict, *keys: str) -> str | None:
    for key in keys:
        if isinstance(arguments.get(key), str):
            return arguments[key]
    return None


def _change(old: str, new: str, label: dict[str, str]) -> str:
    old_lines = {line.strip() for line in old.splitlines()}
    new_lines = {line.strip() for line in new.splitlines()}
    added = [line.strip() for line in new.splitlines() if line.strip() not in old_lines]
    removed = [line.strip() for line in old.splitlines() if line.strip() not in new_lines]
    added = [line for line in added if line]
    removed = [line for line in removed if line]
    if added:
        return f"+ “{clip(added[0], GIST_CHARS)}”"
    if removed:
        return f"{label['removed']} “{clip(removed[0], GIST_CHARS)}”"
    return label["whitespace"]
