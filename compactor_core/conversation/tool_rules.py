"""What each agent's tools do to files, folders and commands: the data staleness reads (issue 35).

A rule says what a tool does — reads a file, writes one (an edit too), applies a patch that names
its files, lists a folder, runs a command, searches — and which fields of its input name the file,
the folder or the command (the first one present). A tool may have several rules, each for the
inputs that hold given values (OpenHands' ``str_replace_editor`` reads with ``command: view`` and
writes otherwise): the first that applies is the tool's. A field holding a list names one subject
(Codex's argv), or one per item with ``many`` (Cline's ``read_files``). A read names the part
of the file it read by its range fields (``offset``, ``limit``, ``start_line``, …).

Users add rules, or replace a built-in one, in the config file's ``[tools]`` table (README,
"Stale results first"); kind ``none`` takes a tool out.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

READ, WRITE, PATCH, LIST, RUN, SEARCH, NONE = (
    "read",
    "write",
    "patch",
    "list",
    "run",
    "search",
    "none",
)
KINDS = (READ, WRITE, PATCH, LIST, RUN, SEARCH, NONE)
# What a tool's kind touches: a file's content, a folder's listing, a command's output, a search's.
FILE, FOLDER, COMMAND, SEARCHED = "file", "folder", "command", "search"
DOMAINS = {READ: FILE, WRITE: FILE, PATCH: FILE, LIST: FOLDER, RUN: COMMAND, SEARCH: SEARCHED}

SHOWN = 40  # characters of a subject a marker shows (a marker costs what it says)
RANGE_KEYS = ("offset", "limit", "start_line", "end_line", "view_range", "line_range", "lines")
_RANGE_KEYS = frozenset(RANGE_KEYS)  # told at once that a read names no range
ITEM_PATH_KEYS = ("path", "file_path", "absolute_path", "filePath")
PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$|^\*\*\* Move to: (.+)$", re.M)


@dataclass(frozen=True)
class Rule:
    kind: str  # one of KINDS
    keys: tuple[str, ...] = ()  # input fields naming the subject, the first present wins
    when: tuple[tuple[str, Any], ...] = ()  # the rule applies to inputs holding these values
    many: bool = False  # a list in the field names several subjects, not one

    def applies(self, arguments: Mapping[str, Any]) -> bool:
        return all(arguments.get(field) == value for field, value in self.when)


Rules = tuple[tuple[str, tuple[Rule, ...]], ...]  # tool name -> its rules: frozen, hashable


def _one(kind: str, *keys: str, many: bool = False) -> tuple[Rule, ...]:
    return (Rule(kind, keys, many=many),)


_PATHS = ("file_path", "path", "absolute_path", "filePath")
# The built-in rules, by the tool names each agent gives its tools (README lists them per agent).
BUILT_IN: dict[str, tuple[Rule, ...]] = {
    # Claude Code
    "Read": _one(READ, "file_path"),
    "Edit": _one(WRITE, "file_path"),
    "MultiEdit": _one(WRITE, "file_path"),
    "Write": _one(WRITE, "file_path"),
    "NotebookEdit": _one(WRITE, "notebook_path"),
    "Bash": _one(RUN, "command"),
    "Grep": _one(SEARCH, "pattern"),
    "Glob": _one(SEARCH, "pattern"),
    "LS": _one(LIST, "path"),
    # Codex
    "shell": _one(RUN, "command"),
    "shell_command": _one(RUN, "command"),
    "exec_command": _one(RUN, "cmd"),
    "local_shell": _one(RUN, "command"),
    "apply_patch": _one(PATCH, "input", "patch"),
    # Gemini CLI and Qwen Code
    "read_file": _one(READ, "absolute_path", "file_path", "path"),
    "read_many_files": _one(SEARCH, "paths"),
    "write_file": _one(WRITE, *_PATHS),
    "replace": _one(WRITE, *_PATHS),
    "edit": _one(WRITE, *_PATHS),
    "run_shell_command": _one(RUN, "command"),
    "list_directory": _one(LIST, "dir_path", "path"),
    "glob": _one(SEARCH, "pattern"),
    "search_file_content": _one(SEARCH, "pattern"),
    "grep_search": _one(SEARCH, "pattern"),
    # pi and OpenCode
    "read": _one(READ, *_PATHS),
    "write": _one(WRITE, *_PATHS),
    "bash": _one(RUN, "command"),
    "ls": _one(LIST, "path"),
    "list": _one(LIST, "path"),
    "grep": _one(SEARCH, "pattern"),
    "find": _one(SEARCH, "pattern"),
    # Copilot CLI
    "view": _one(READ, "path"),
    "create": _one(WRITE, "path"),
    "str_replace": _one(WRITE, "path"),
    "insert": _one(WRITE, "path"),
    # Cline
    "read_files": _one(READ, "files", "paths", "path", many=True),
    "editor": _one(WRITE, *_PATHS),
    "run_commands": _one(RUN, "commands", "command", many=True),
    "list_files": _one(LIST, "path"),
    "search_files": _one(SEARCH, "regex", "pattern"),
    "write_to_file": _one(WRITE, "path"),
    "replace_in_file": _one(WRITE, "path"),
    "execute_command": _one(RUN, "command"),
    # OpenHands (the corpus's OpenAI-style coding session)
    "execute_bash": _one(RUN, "command"),
    "str_replace_editor": (
        Rule(READ, ("path",), (("command", "view"),)),
        Rule(WRITE, ("path",)),
    ),
}


class Touch(NamedTuple):
    """One thing a call read, wrote, listed, ran or searched (a tuple: one is made for every
    call of a conversation, and a frozen dataclass takes three times as long to make and hash)."""

    kind: str  # the call's kind: READ, WRITE, ...
    domain: str  # FILE, FOLDER, COMMAND or SEARCHED: touches of one domain and subject meet
    subject: str  # the path, folder or command as the call named it, normalized
    part: str = ""  # a read's range ("" : the whole file); a search's whole input

    @property
    def shown(self) -> str:
        """The subject as a marker shows it: one line of at most 60 characters, a path's end
        (its file's name) and a command's start."""
        line = self.subject.splitlines()[0] if self.subject.strip() else self.subject
        if len(line) <= SHOWN:
            return line
        return "…" + line[1 - SHOWN :] if self.domain in (FILE, FOLDER) else line[: SHOWN - 1] + "…"


def rules_table(extra: Rules = ()) -> dict[str, tuple[Rule, ...]]:
    """The built-in rules, with the user's (``Settings.tool_rules``) added or in their place."""
    return {**BUILT_IN, **dict(extra)}


# a call's input (a mapping, or OpenAI's JSON text) -> what the call touched, each thing once
ToolTouches = Callable[[Any], list[Touch]]
TouchTable = dict[str, ToolTouches]  # tool name -> what its calls touch


def touch_table(extra: Rules = ()) -> TouchTable:
    """``rules_table`` compiled once for all the calls of a conversation: each tool's name ->
    the function that tells what a call of it touched. The rules are not read again for every
    call, and a tool whose rules touch nothing (kind ``none``) is left out, so that a call of
    it (most calls of some sessions) costs one lookup."""
    return {
        tool: _compiled(tool, rules)
        for tool, rules in rules_table(extra).items()
        if any(rule.kind in DOMAINS for rule in rules)
    }


def touches(tool: str, arguments: Any, table: TouchTable) -> list[Touch]:
    """What a call of ``tool`` with these arguments touched, each thing once (none: nothing it
    can go stale by)."""
    touched = table.get(tool)
    return touched(arguments) if touched is not None else []


def _compiled(tool: str, rules: tuple[Rule, ...]) -> ToolTouches:
    """What a call of ``tool`` touched by the first of its rules that applies to its input."""
    compiled = [(rule, _rule_touches(tool, rule)) for rule in rules]
    if len(rules) == 1 and not rules[0].when:
        return compiled[0][1]  # the rule applies to every input: nothing to choose

    def by_first_rule_that_applies(arguments: Any) -> list[Touch]:
        arguments = _as_mapping(arguments)
        for rule, touched in compiled:
            if rule.applies(arguments):
                return touched(arguments)
        return []

    return by_first_rule_that_applies


def _rule_touches(tool: str, rule: Rule) -> ToolTouches:
    """What a call touched by this rule: a search its whole input, a patch the files it names,
    any other kind the subject of its first field present (or each of a list's, ``many``)."""
    if rule.kind not in DOMAINS:
        return _nothing
    # partial, not a lambda: one Python call less for every call of the tool
    if rule.kind == SEARCH:
        return partial(_searched, tool, rule.keys)
    if rule.kind == PATCH or rule.many:
        return partial(_each_subject, rule)
    return partial(_one_subject, rule.kind, DOMAINS[rule.kind], rule.keys)


def _nothing(arguments: Any) -> list[Touch]:
    return []


def _searched(tool: str, keys: tuple[str, ...], arguments: Any) -> list[Touch]:
    arguments = _as_mapping(arguments)
    if not arguments:
        return []
    whole = _canonical(arguments)
    return [Touch(SEARCH, SEARCHED, _first_text(arguments, keys) or whole, f"{tool} {whole}")]


def _one_subject(kind: str, domain: str, keys: tuple[str, ...], arguments: Any) -> list[Touch]:
    """A call of the commonest rule (most calls of every session): one file, folder or command
    in the first of ``keys`` present; what ``_each_subject`` finds of it, found directly."""
    arguments = _as_mapping(arguments)
    subject = _text(_first_present(arguments, keys)).strip()
    if not subject:
        # a listing without a folder lists the working folder
        return [Touch(LIST, FOLDER, ".", "")] if kind == LIST else []
    part = _range(arguments) if kind == READ else ""
    return [Touch(kind, domain, _normal(domain, subject), part)]


def _text(value: Any) -> str:
    """A subject's text: a string, or an argv (a list of strings) as one command."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return " ".join(value)
    return ""


def _each_subject(rule: Rule, arguments: Any) -> list[Touch]:
    arguments = _as_mapping(arguments)
    found = [(subject, part) for subject, part in _subjects(rule, arguments) if subject.strip()]
    if not found and rule.kind == LIST:
        found = [(".", "")]  # a listing without a folder lists the working folder
    domain = DOMAINS[rule.kind]
    touched = [Touch(rule.kind, domain, _normal(domain, subject), part) for subject, part in found]
    return list(dict.fromkeys(touched))  # a call may name a file twice


def _first_present(arguments: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:  # a loop, not next() over a generator: this runs for every call
        value = arguments.get(key)
        if value is not None:
            return value
    return None


def _subjects(rule: Rule, arguments: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    value = _first_present(arguments, rule.keys)
    whole_range = _range(arguments) if rule.kind == READ else ""
    if rule.kind == PATCH:
        for match in PATCH_FILE.finditer(value if isinstance(value, str) else ""):
            yield (match.group(1) or match.group(2)).strip(), ""
    elif isinstance(value, list) and rule.many:
        for item in value:
            if isinstance(item, dict):
                path = _first_text(item, ITEM_PATH_KEYS)
                yield path or "", _range(item) if rule.kind == READ else ""
            elif isinstance(item, str):
                yield item, whole_range
    else:
        yield _text(value), whole_range


def _as_mapping(arguments: Any) -> Mapping[str, Any]:
    """A call's input as a mapping: OpenAI's arguments are JSON text; a custom tool's (Codex's
    ``apply_patch``) input is plain text, taken as the field ``input``."""
    if isinstance(arguments, dict):
        return arguments
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except ValueError:
            return {"input": arguments}
        return parsed if isinstance(parsed, dict) else {"input": arguments}
    return {}


def _first_text(arguments: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    return next((arguments[key] for key in keys if isinstance(arguments.get(key), str)), None)


def _range(arguments: Mapping[str, Any]) -> str:
    if _RANGE_KEYS.isdisjoint(arguments):
        return ""  # most reads: the whole file, told at once
    present = {key: arguments[key] for key in RANGE_KEYS if arguments.get(key) is not None}
    return _canonical(present) if present else ""


# json.dumps(value, sort_keys=True, ensure_ascii=False, default=str), without making an encoder
# for every call (half the time of a read's or a search's touch)
_canonical = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=str).encode


def _normal(domain: str, subject: str) -> str:
    subject = subject.strip()
    if domain in (FILE, FOLDER) and "://" not in subject:  # a path, not an address
        return posixpath.normpath(subject) if _may_change(subject) else subject
    return subject


def _may_change(path: str) -> bool:
    """Whether ``posixpath.normpath`` may change the path: only an empty one, or one with an
    empty, ``.`` or ``..`` part or a slash at its end (most paths have none: normpath is the
    dearest step of finding what a call touched)."""
    return not path or "//" in path or "/." in path or path[0] == "." or path[-1] == "/"


# --- rules from the config file ------------------------------------------------------------------


def parse_rules(table: Any, where: str) -> Rules:
    """The ``[tools]`` table of the config file as rules; a ValueError says what is wrong.

    Each key is a tool's name; its value one rule or a list of rules, each a table with
    ``kind`` (one of KINDS), and optionally ``keys`` (a list of input fields), ``when`` (a table
    of input values) and ``many`` (a boolean).
    """
    if not isinstance(table, dict):
        raise ValueError(f"{where} must be a table of tool names")
    parsed = []
    for tool, value in table.items():
        entries = value if isinstance(value, list) else [value]
        parsed.append((tool, tuple(_rule(entry, f"{where}.{tool}") for entry in entries)))
    return tuple(parsed)


def _rule(entry: Any, where: str) -> Rule:
    if not isinstance(entry, dict):
        raise ValueError(f"{where} must be a table with a kind")
    unknown = set(entry) - {"kind", "keys", "when", "many"}
    if unknown:
        raise ValueError(f"{where}: unknown field {min(unknown)!r}")
    kind, keys = entry.get("kind"), entry.get("keys", [])
    when, many = entry.get("when", {}), entry.get("many", False)
    if kind not in KINDS:
        raise ValueError(f"{where}.kind must be one of {', '.join(KINDS)}")
    if not isinstance(keys, list) or not all(isinstance(key, str) for key in keys):
        raise ValueError(f"{where}.keys must be a list of input field names")
    if not isinstance(when, dict) or not all(_scalar(value) for value in when.values()):
        raise ValueError(f"{where}.when must be a table of input values (text, numbers, booleans)")
    if not isinstance(many, bool):
        raise ValueError(f"{where}.many must be true or false")
    return Rule(kind, tuple(keys), tuple(sorted(when.items())), many)


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool)
