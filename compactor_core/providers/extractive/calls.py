"""A tool call as the extractive summary sees it, and what kind of call it is.

A call changes files (an editor's or a patch tool's), runs a command (a shell tool's ``command``,
Codex's ``cmd`` or an argv list), only looks (reading, searching, a command that only shows, such
as ``git diff`` or ``ls``), or keeps the agent's books (its task list, plan, diagnostics): what
it did and how it ended go to "work done", the files it touched to the paths.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any

PATH_KEYS = frozenset({"path", "file_path", "filename", "notebook_path", "filepath", "paths"})
WRITING_TOOL = re.compile(r"(?i)edit|write|create|replace|patch|insert|move|delete|rm\b|notebook")
SINGLE_WORD = re.compile(r"[A-Za-z_]+")
# Tools that only look: what they touched is listed among the paths, not as work done.
LOOKING_TOOL = re.compile(
    r"(?i)^(read|view|grep|glob|search|find|list|ls|cat|get|fetch|query|show|lookup|think)"
    r"|^(task(list|get|output)|todoread|webfetch|websearch)$"
)
# Tools that keep the agent's books: its task list or plan, plan mode, the editor's diagnostics.
BOOKKEEPING_TOOL = re.compile(
    r"(?i)^(task(create|update|list|get|output|stop)|todo(write|read)|update_plan|"
    r"(enter|exit)planmode|skill)$|diagnostics$"
)
SUBAGENT_TOOL = re.compile(r"^(Agent|Task)$")
TEST_COMMAND = re.compile(
    r"\b(pytest|go test|cargo test|(npm|pnpm|yarn|bun)( run)? test|make (test|check)|"
    r"mise run test|jest|vitest|unittest|tox|rspec|ctest|phpunit|mvn test|gradle test)\b"
)
# Commands that only show something; a pipeline of them changes nothing.
SHOWING = frozenset(
    {
        *("ls", "cat", "head", "tail", "grep", "rg", "egrep", "find", "fd", "wc", "pwd", "echo"),
        *("tree", "file", "stat", "which", "type", "less", "more", "du", "df", "nl", "sort"),
        *("uniq", "cut", "diff", "cmp", "date", "whoami", "uname", "env", "printenv"),
        *("realpath", "dirname", "basename", "pgrep", "ps", "lsof", "id", "hostname"),
    }
)
SHOWING_SUBCOMMANDS = {
    "git": frozenset(
        {
            *("status", "diff", "log", "show", "branch", "blame", "remote", "rev-parse"),
            *("ls-files", "describe", "shortlog", "reflog", "grep", "cat-file", "rev-list"),
            *("for-each-ref", "show-ref", "merge-base", "ls-tree", "ls-remote", "name-rev"),
        }
    ),
    "gh": frozenset({"view", "list", "diff", "checks", "status"}),
}
NO_FILE_REDIRECT = re.compile(r"\d?>&\d|\d?>\s*/dev/null")  # 2>&1, >/dev/null
PIPE = re.compile(r"&&|\|\||[|;\n]")
SHELLS = frozenset({"bash", "sh", "zsh"})
PATCH_FILE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$", re.M)
PATCH_START = "*** Begin Patch"


@dataclass(frozen=True)
class Call:
    """A tool call and what came back."""

    position: int  # order among all calls, oldest first
    call_id: Any
    name: str
    arguments: Any
    message: int = 0  # the index of the message that made it
    answered: bool = False
    result: str = ""  # the result's text as it was before micro compaction, when known
    is_error: bool = False
    # Whether the result said if it is an error (Claude Code always does for a shell command,
    # true for a non-zero exit); where it does not (OpenAI tool messages, Codex, other
    # harnesses), the exit status or the output is read instead.
    flagged: bool = False
    refused: str | None = None  # the user refused the call: their words ("" if none)


def paths_in(value: Any) -> list[str]:
    """File paths given to a tool: the values of path-like keys at any depth of its input, and
    the files a patch (Codex's ``apply_patch``) names."""
    found: list[str] = [path for _, path in patch_files(value)]
    if isinstance(value, dict):
        for key, item in value.items():
            if key in PATH_KEYS and isinstance(item, str) and item.strip():
                found.append(item.strip())
            elif key in PATH_KEYS and isinstance(item, list):
                found.extend(path for path in item if isinstance(path, str) and path.strip())
            elif not isinstance(item, str):
                found.extend(paths_in(item))
    elif isinstance(value, list):
        for item in value:
            found.extend(paths_in(item) if not isinstance(item, str) else ())
    return list(dict.fromkeys(found))


def patch_text(value: Any) -> str | None:
    """The patch a call applies: its input itself, an input field or an argv item that holds
    one (``*** Begin Patch`` … ``*** End Patch``)."""
    if isinstance(value, str):
        return value if PATCH_START in value else None
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for item in items:
        text = patch_text(item)
        if text is not None:
            return text
    return None


def patch_files(value: Any) -> list[tuple[str, str]]:
    """(kind, path) of each file a patch adds, updates or deletes."""
    text = patch_text(value)
    return [(kind, path.strip()) for kind, path in PATCH_FILE.findall(text or "")]


def command_of(arguments: Any) -> str | None:
    """The command a call runs: ``command`` or Codex's ``cmd`` as a string, or an argv list
    (``["bash", "-lc", "make"]`` is ``make``)."""
    if not isinstance(arguments, dict):
        return None
    command = arguments.get("command", arguments.get("cmd"))
    if isinstance(command, str):
        return command
    if isinstance(command, list) and command and all(isinstance(part, str) for part in command):
        if len(command) == 3 and command[0] in SHELLS and command[1] in ("-lc", "-c"):
            return command[2]
        return shlex.join(command)
    return None


def writes(name: str, arguments: Any) -> bool:
    """Whether a call changes files: a one-word ``command`` decides (an editor tool's ``view``
    or ``str_replace``), else a patch it applies, else the tool's name."""
    command = command_of(arguments)
    if command is not None and SINGLE_WORD.fullmatch(command):
        return bool(WRITING_TOOL.search(command))
    return patch_text(arguments) is not None or bool(WRITING_TOOL.search(name))


def runs_command(call: Call) -> bool:
    """Whether the call runs a shell command (not an editor's one-word sub-command, nor a patch
    sent through the shell)."""
    command = command_of(call.arguments)
    if command is None or SINGLE_WORD.fullmatch(command):
        return False
    return patch_text(call.arguments) is None


def looks_only(call: Call) -> bool:
    """Reading, searching, listing: a call that changes nothing."""
    command = command_of(call.arguments)
    if command is not None and SINGLE_WORD.fullmatch(command):
        return not WRITING_TOOL.search(command)
    if runs_command(call):
        return shows_only(command or "")
    return LOOKING_TOOL.search(call.name) is not None


def keeps_books(call: Call) -> bool:
    return BOOKKEEPING_TOOL.search(call.name) is not None


def is_subagent(call: Call) -> bool:
    return SUBAGENT_TOOL.match(call.name) is not None and isinstance(call.arguments, dict)


def shows_only(command: str) -> bool:
    """Whether every part of a command line only shows something (``cd`` moves, no more)."""
    parts = [part.strip() for part in PIPE.split(command) if part.strip()]
    return bool(parts) and all(_shows(part) for part in parts)


def _shows(part: str) -> bool:
    words = part.split()
    if ">" in NO_FILE_REDIRECT.sub("", part):  # it writes a file
        return False
    if words[0] == "cd":
        return True
    subcommands = SHOWING_SUBCOMMANDS.get(words[0])
    if subcommands is not None:
        return any(word in subcommands for word in _subcommand(words)[:2])
    return words[0] in SHOWING


def _subcommand(words: list[str]) -> list[str]:
    """The words of ``git -C dir status`` or ``gh pr view 12`` after the program and its
    options: ``status``, ``pr view 12``."""
    rest = words[1:]
    while rest and rest[0].startswith("-"):
        rest = rest[2:] if rest[0] in ("-C", "-c", "-R", "--repo") else rest[1:]
    return rest


def command_name(command: str) -> str:
    """What a command line runs, in a word or two (``git diff``, ``ls``), for a count."""
    for part in PIPE.split(command):
        words = part.split()
        if words and words[0] != "cd":
            kept = {"git": 1, "gh": 2}.get(words[0], 0)  # git diff, gh pr view
            return " ".join([words[0], *_subcommand(words)[:kept]])
    return command.strip()


def is_test_run(call: Call) -> bool:
    command = command_of(call.arguments)
    return command is not None and TEST_COMMAND.search(command) is not None
