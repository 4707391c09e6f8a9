"""What a tool call did, in one line: the extractive summary's "Work done" (issues 10 and 23).

A file edit says which file and the gist of the change (the first line it adds, or removes); a
file written says how many lines; a patch (Codex's ``apply_patch``) says each file it adds,
updates or deletes with the gist; a command says how it ended (ok, failed with the line that says
why, refused by the user with their words, no result yet), and a test run is called a test run; a
sub-agent says what it was sent to do. Calls that only look or keep the agent's books are not
work done: the summary counts them in one line and lists the files they touched among the paths.
"""

from __future__ import annotations

import json
from typing import Any

from ...text import clip
from .calls import (
    Call,
    command_of,
    is_subagent,
    is_test_run,
    keeps_books,
    looks_only,
    patch_text,
    paths_in,
    runs_command,
    writes,
)
from .outcomes import error_text, failed, test_result

GIST_CHARS = 100
ERROR_CHARS = 160
PATCH_KINDS = {"Add": "added", "Delete": "deleted"}


def work_line(call: Call, label: dict[str, str]) -> str | None:
    """What the call did, or None for a call that changed nothing (reading, searching, the
    agent's own bookkeeping)."""
    if runs_command(call):
        if looks_only(call) and not failed(call):
            return None
        command = " ".join((command_of(call.arguments) or "").split())
        kind = label["tests"] if is_test_run(call) else label["ran"]
        return f"{kind} `{clip(command, GIST_CHARS)}`: {outcome(call, label)}"
    if keeps_books(call):
        return None
    if writes(call.name, call.arguments):
        return _change_line(call, label)
    if looks_only(call):
        return None
    if is_subagent(call):
        task = call.arguments.get("description") or call.arguments.get("prompt") or ""
        return f"{call.name} “{clip(str(task), GIST_CHARS)}”: {outcome(call, label)}"
    arguments = json.dumps(call.arguments, ensure_ascii=False) if call.arguments else ""
    return f"{call.name} {clip(arguments, GIST_CHARS)}".rstrip() + f": {outcome(call, label)}"


def describe(call: Call, label: dict[str, str]) -> str:
    """What a call was to do, without how it ended: a command, a change, a tool and its input."""
    if runs_command(call):
        return f"`{clip(' '.join((command_of(call.arguments) or '').split()), GIST_CHARS)}`"
    if writes(call.name, call.arguments):
        return _change(call, label)
    arguments = json.dumps(call.arguments, ensure_ascii=False) if call.arguments else ""
    return f"{call.name} {clip(arguments, GIST_CHARS)}".rstrip()


def _change_line(call: Call, label: dict[str, str]) -> str:
    line = _change(call, label)
    if not call.answered or not failed(call):
        return line
    return f"{line} ({failure(call, label)})"


def _change(call: Call, label: dict[str, str]) -> str:
    patch = patch_text(call.arguments)
    if patch is not None:
        line = f"{call.name} {patch_gist(patch, label)}"
    else:
        paths = ", ".join(paths_in(call.arguments))
        gist = edit_gist(call.arguments, label)
        what = f"{call.name} {paths}" if paths else call.name
        line = f"{what}: {gist}" if gist else what
    return line


def outcome(call: Call, label: dict[str, str]) -> str:
    """ok or passed, failed with the line that says why, refused, or no result yet."""
    if not call.answered:
        return label["no_result"]
    if failed(call):
        return failure(call, label)
    if not is_test_run(call):
        return label["ok"]
    tally = test_result(call)
    return f"{label['passed']} ({clip(tally, GIST_CHARS)})" if tally else label["passed"]


def failure(call: Call, label: dict[str, str]) -> str:
    """``refused by the user: “their words”``, or ``failed: the line that says why``."""
    if call.refused is not None:
        words = f": “{clip(call.refused, ERROR_CHARS)}”" if call.refused else ""
        return label["refused"] + words
    error = error_text(call)
    return f"{label['failed']}: {clip(error, ERROR_CHARS)}" if error else label["failed"]


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
        return change_gist(old or "", new or "", label)
    content = _text(arguments, "content", "file_text")
    if content is not None:
        return f"{len(content.splitlines())} {label['lines']}"
    return None


def patch_gist(patch: str, label: dict[str, str]) -> str:
    """Each file of a patch with the gist of its change: ``a.py: + “x”; b.py (deleted)``."""
    parts = []
    for kind, path, removed, added in _patch_hunks(patch):
        kind_label = f" ({label[PATCH_KINDS[kind]]})" if kind in PATCH_KINDS else ""
        gist = change_gist("\n".join(removed), "\n".join(added), label) if kind != "Delete" else ""
        parts.append(f"{path}{kind_label}: {gist}" if gist else f"{path}{kind_label}")
    return "; ".join(parts) or label["no_files"]


def _patch_hunks(patch: str) -> list[tuple[str, str, list[str], list[str]]]:
    """(kind, path, lines removed, lines added) of each file of a patch."""
    files: list[tuple[str, str, list[str], list[str]]] = []
    for line in patch.splitlines():
        for kind in ("Add", "Update", "Delete"):
            if line.startswith(f"*** {kind} File: "):
                files.append((kind, line.split(": ", 1)[1].strip(), [], []))
        if files and line.startswith("+") and not line.startswith("+++"):
            files[-1][3].append(line[1:])
        elif files and line.startswith("-") and not line.startswith("---"):
            files[-1][2].append(line[1:])
    return files


def _text(arguments: dict, *keys: str) -> str | None:
    for key in keys:
        if isinstance(arguments.get(key), str):
            return arguments[key]
    return None


def change_gist(old: str, new: str, label: dict[str, str]) -> str:
    """The first line a change adds, else the first it removes, else "whitespace only"."""
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
