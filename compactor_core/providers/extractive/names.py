"""The names the work touched — functions, types, variables, config keys, paths — next to the file
they belong to (issue 23).

A resuming agent greps for names, so the summary lists those the history kept coming back to:
the ones mentioned in the most places (a user's turn, an assistant's reply or thinking, a tool
call's input, a tool's result each count once; the words of the user and the assistant, and a
call's input, count double: they say what was in focus, where a file's text only shows it). A
name belongs to the file whose calls (reading, searching, editing it) mention it most; one no
file's call mentions is listed with the other names.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

from .calls import Call, keeps_books, paths_in
from .facts import Facts
from .fit import Line
from .outcomes import output_of
from .wording import PATHS

TOKEN = re.compile(r"[\w./~-]{4,}")  # a word, a path: where a name may be
TAG = re.compile(r"</?[A-Za-z_][\w-]*>")  # <untrusted_context>: markup a harness wraps text in
NAME = re.compile(
    r"[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+"  # snake_case, SCREAMING_CASE
    r"|[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+"  # camelCase
    r"|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+"  # PascalCase
)
PATH = re.compile(r"/?(?:[\w.~-]*\w/)+[\w.-]*\w")
# A word with one slash (``and/or``) is no path unless it looks like one.
PATH_LIKE = re.compile(r"^(?:[/~.]|[^/]*/[^/]*/)|\.[A-Za-z]\w*$")
MIN_CHARS = 4
MAX_NAMES = 200
CHUNK = 6  # names per line: the budget takes or leaves them six at a time
FOCUS, SEEN = 2, 1
RESULT_CHARS = 4000


def names_in(text: str) -> list[str]:
    """The paths and the names in ``text``, each once, in the order they come (words are looked
    at one by one: a plain lowercase word, most of any text, is passed over at once)."""
    found: dict[str, None] = {}
    for token in TOKEN.findall(TAG.sub(" ", text)):
        if token.startswith("//"):  # a URL's address, not a path of the work
            continue
        if "/" in token:
            paths = (path.rstrip(".") for path in PATH.findall(token))
            found.update((p, None) for p in paths if len(p) >= MIN_CHARS and PATH_LIKE.search(p))
        elif "_" not in token and (token.islower() or token.isupper() or token[1:].islower()):
            continue  # a word (or a capitalized one, or one in capitals) names nothing
        found.update((name, None) for name in NAME.findall(token) if len(name) >= MIN_CHARS)
    return list(found)


def name_lines(facts: Facts, path_lines: list[Line], label: dict[str, str]) -> list[Line]:
    """Lines of names, six at a time, each continuing its file's line among the paths, the most
    mentioned first; priority 3, ranked so that the budget takes the best of every file first."""
    listed = {line.text.split(" (")[0]: line.text for line in path_lines}
    in_calls = [_call_names(call) for call in facts.calls]
    tools = {call.name for call in facts.calls}  # a tool's name is no name the work touched
    ranked = [
        name for name in _named_once(_ranked(facts, in_calls), list(listed)) if name not in tools
    ]
    homes = _homes(facts, in_calls, set(ranked[:MAX_NAMES]))
    chunks: dict[str | None, list[list[str]]] = defaultdict(list)
    for name in ranked[:MAX_NAMES]:
        home = homes.get(name)
        home = home if home in listed else None
        if not chunks[home] or len(chunks[home][-1]) == CHUNK:
            chunks[home].append([])
        chunks[home][-1].append(name)
    order = sorted(
        (
            (number, ranked.index(chunk[0]), home, chunk)
            for home, found in chunks.items()
            for number, chunk in enumerate(found)
        ),
        key=lambda entry: entry[:2],
    )
    lines = []
    for rank, (_, _, home, chunk) in enumerate(order):
        anchor = listed[home] if home is not None else label["names"]
        lead = f"{home.rsplit('/', 1)[-1]}: " if home is not None else f"{label['names']}: "
        lines.append(Line(PATHS, ", ".join(chunk), 3, rank, anchor=anchor, lead=lead))
    return lines


def _named_once(ranked: list[str], paths: list[str]) -> list[str]:
    """The names, without those that a listed path or a path among the names already names
    (``test_login`` beside ``tests/test_login.py``)."""
    kept: list[str] = []
    for name in ranked:
        if not any(name in path for path in paths):
            kept.append(name)
            paths = [*paths, name] if "/" in name else paths
        if len(kept) == MAX_NAMES:
            break
    in_paths = [name for name in kept if "/" in name]
    return [name for name in kept if not any(name in path and name != path for path in in_paths)]


Mentions = tuple[list[str], list[str]]  # the names in a call's input, and in its result


def _call_names(call: Call) -> Mentions:
    """The names in a call's input, and in its result (the start of a long one: a name the
    work is about shows early, or in the input or the words around it)."""
    if keeps_books(call):  # a task list's states (in_progress) name nothing of the work
        return [], []
    result = output_of(call.result)[:RESULT_CHARS] if call.answered else ""
    return names_in("\n".join(strings(call.arguments))), names_in(result)


def _ranked(facts: Facts, in_calls: list[Mentions]) -> list[str]:
    """Every name of the history, the most mentioned first (among equals, the latest)."""
    weight: Counter[str] = Counter()
    latest: dict[str, int] = {}
    texts = [*facts.summaries, *(request.text for request in facts.requests), *facts.texts]
    found = [(names_in(text), FOCUS) for text in [*texts, *facts.thoughts]]
    for in_input, in_result in in_calls:
        found += [(in_input, FOCUS), (in_result, SEEN)]
    for order, (names, mention) in enumerate(found):
        for name in names:
            weight[name] += mention
            latest[name] = order
    return sorted(weight, key=lambda name: (-weight[name], -latest[name]))


def _homes(facts: Facts, in_calls: list[Mentions], wanted: set[str]) -> dict[str, str]:
    """For each name, the file whose calls mention it most."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for call, (in_input, in_result) in zip(facts.calls, in_calls, strict=True):
        paths = paths_in(call.arguments)
        for name in dict.fromkeys([*in_input, *in_result]) if paths else ():
            if name in wanted:
                counts[name].update(paths)
    return {name: found.most_common(1)[0][0] for name, found in counts.items()}


def strings(value: Any) -> Iterable[str]:
    """The strings among a tool input's values, at any depth (its keys are the tool's own)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict | list):
        for item in value.values() if isinstance(value, dict) else value:
            yield from strings(item)
