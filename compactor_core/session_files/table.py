"""Pass 1's record infos, packed: a row of numbers a line instead of an object (SPEC §8.5).

A format fills one ``RecordInfo`` a line (``AgentFormat.index``); ``RecordTable.add`` packs it,
with what the framework derives from the record's messages, into arrays, and the info object is
dropped. About 50 bytes a line instead of a kilobyte: ids become their keys (``keys.key``),
kinds, roles and tool names small codes, tool calls and results rows of their own arrays.

``table[i]`` gives line ``i``'s ``RecordInfo`` back, made afresh (its ids are keys, which
compare equal when the ids do): formats read their infos that way. The framework, and the
formats that need speed, use the accessors (``kind(i)``, ``parent_at(i)``, ``results(i)``, …),
which make no object. A record's parent is resolved to its line while the file is read, as
parents come a few lines before their children; the few that do not are found at the end.
"""

from __future__ import annotations

import copy
from array import array
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

from ..compaction.estimate import quarters_and_images
from ..compaction.micro import content_length, is_marker
from ..conversation.formats import Message
from ..conversation.tool_rules import Rules
from ..conversation.tools import result_holders, tool_calls
from .base import RecordInfo, ToolResult
from .keys import NONE, KeyMap, key
from .stale import CallTouches

NO_PARENT, MISSING = -1, -2  # parent_at: the record names none; it names one no record has
SIDE = 1
WINDOW = 4096  # lines back where a record's parent is looked for, and its turn's records
CHECKPOINT = 64  # lines between two offsets kept whole
_INT64 = range(-(2**63), 2**63)


class Codes:
    """Strings (kinds, roles, tool names) as small numbers: each distinct one stored once."""

    def __init__(self, *first: Any) -> None:
        self.values: list[Any] = list(first)
        self._codes = {value: code for code, value in enumerate(first)}

    def code(self, value: Any) -> int:
        code = self._codes.get(value)
        return self._new(value) if code is None else code

    def _new(self, value: Any) -> int:
        code = self._codes[value] = len(self.values)
        self.values.append(value)
        return code


class RecordTable(Sequence[RecordInfo]):
    """The infos of every line of a session file, in arrays (see the module's docstring)."""

    def __init__(self, measure: bool = True, rules: Rules | None = None) -> None:
        self.measured = measure
        # what each call touched, for stale results (stale.py), when indexed with tool rules
        self.touches = CallTouches(rules) if rules is not None else None
        self.size = 0  # bytes of the lines added
        self._lengths = array("I")  # of each line; its offset: the checkpoint before, and sums
        self._checkpoints = array("q")  # the offset of every CHECKPOINT-th line
        self._kinds, self._kind_names = array("H"), Codes()
        self._roles, self._role_names = array("B"), Codes(None)
        self._flags = array("B")
        self._ids = array("q")
        self._turns = array("i")  # the line that opened the record's turn (-1: none), +1
        self._open_turns: dict[int, int] = {}  # turn key -> the line that opened it, lately
        self._parents = array("i")  # the parent's line index, NO_PARENT or MISSING
        self._missing: dict[int, int] = {}  # line -> key of a parent not (yet) found
        self._logical: dict[int, int] = {}
        self._tag_kinds, self._tag_values = array("B"), array("q")  # 0 none, 1 an int, 2 object
        self._tags = Codes()
        self._problems: dict[int, str] = {}
        self._quarters = array("q")
        self._part_quarters: dict[int, tuple[int, ...]] = {}
        self._images: dict[int, int] = {}  # line -> inline images its messages hold (few lines)
        self._part_images: dict[int, tuple[int, ...]] = {}
        self._calls = _Rows("qHH")  # key, tool code, part
        self._results = _Rows("qqi")  # key, chars, part << 1 | is_marker
        self._copies = _Rows("q")  # key
        self._tools = Codes()
        self.names = KeyMap("H")  # call key -> tool code, the whole file's (the last wins)
        self._recent: dict[int, int] = {}  # id key -> line, for the last WINDOW lines
        self._window: deque[int] = deque()

    # --- filling it, in pass 1 ----------------------------------------------------------------

    def add(self, info: RecordInfo, messages: list[Message]) -> None:
        """Pack ``info`` (line ``len(self)``), filled by the format, and what the record's
        messages hold by the core's own rules."""
        index = len(self._lengths)
        if index % CHECKPOINT == 0:
            self._checkpoints.append(info.offset)
        if info.length > 0xFFFFFFFF and self._lengths.typecode == "I":  # a line over 4 GB
            self._lengths = array("q", self._lengths)
        self._lengths.append(info.length)
        self.size = info.offset + info.length
        self._kinds.append(self._kind_names.code(info.kind))
        self._flags.append(SIDE if info.side else 0)
        own = key(info.id)
        self._ids.append(own)
        self._turns.append(self._turn_opener(index, key(info.turn)))
        parent = key(info.parent)
        if parent == NONE:
            self._parents.append(NO_PARENT)
        else:
            found = self._recent.get(parent)
            if found is None:
                self._parents.append(MISSING)
                self._missing[index] = parent
            else:
                self._parents.append(found)
        if info.logical_parent is not None:
            self._logical[index] = key(info.logical_parent)
        self._add_tag(info.tag)
        if info.problem is not None:
            self._problems[index] = info.problem
        for copied in info.copies:
            self._copies.add(index, key(copied))
        self._roles.append(self._role_names.code(messages[0].get("role") if messages else None))
        if messages:
            self._describe(index, messages)
        elif self.measured:
            self._quarters.append(0)
        if own != NONE:
            self._remember(index, own)

    def finish(self) -> None:
        """Find the parents that were not a few lines before their children (or are nowhere)."""
        if not self._missing:
            return
        far: dict[int, int] | KeyMap
        if len(self._missing) <= 64:  # a scan each, at the speed of memory
            far = {item: _find(self._ids, item) for item in set(self._missing.values())}
        else:
            far = KeyMap("l")
            for index, item in enumerate(self._ids):
                if item != NONE:
                    far[item] = index
        for index, item in list(self._missing.items()):
            found = far.get(item)
            if found is not None and found >= 0:
                self._parents[index] = found
                del self._missing[index]
        self._recent.clear()
        self._window.clear()
        self._open_turns.clear()

    def _turn_opener(self, index: int, turn: int) -> int:
        """The first line of the record's turn, plus one (0: it has none). A turn is the lines
        sharing a ``turn`` value at most WINDOW lines after the one that opened it (one reply's
        records come together; a value seen again much later opens a turn of its own)."""
        if turn == NONE:
            return 0
        opened = self._open_turns.get(turn)
        if opened is None or opened < index - WINDOW:
            opened = self._open_turns[turn] = index
        if index % WINDOW == 0:  # forget the turns that ended long ago
            self._open_turns = {t: i for t, i in self._open_turns.items() if i >= index - WINDOW}
        return opened + 1

    def _remember(self, index: int, item: int) -> None:
        """Where ids of the last WINDOW records are: their children come soon after them."""
        self._recent[item] = index
        window = self._window
        window.append(item)
        if len(window) > WINDOW:
            old = window.popleft()
            if self._recent.get(old, -1) <= index - WINDOW:
                del self._recent[old]

    def _add_tag(self, tag: Any) -> None:
        if tag is None:
            self._tag_kinds.append(0)
            self._tag_values.append(0)
        elif tag.__class__ is int and tag in _INT64:
            self._tag_kinds.append(1)
            self._tag_values.append(tag)
        else:
            self._tag_kinds.append(2)
            self._tag_values.append(self._tag_code(tag))

    def _tag_code(self, tag: Any) -> int:
        try:
            return self._tags.code(tag)
        except TypeError:  # unhashable: kept as it is, once per line
            self._tags.values.append(tag)
            return len(self._tags.values) - 1

    def _describe(self, index: int, messages: list[Message]) -> None:
        """What the framework derives from a record's messages, by the core's own rules."""
        touches = self.touches
        for part, message in enumerate(messages):
            calls = 0
            for call_id, name in tool_calls(message):
                code = self._tools.code(name)
                call = key(call_id)
                self._calls.add(index, call, code, part)
                if call_id.__class__ is str:
                    self.names[call] = code
                calls += 1
            if calls and touches is not None:
                touches.add_calls(index, message)
            for call_id, holder in result_holders((message,)):
                content = holder.get("content")
                mark = part << 1 | is_marker(content)
                self._results.add(index, key(call_id), content_length(content), mark)
                if touches is not None and holder.get("is_error") is True:
                    touches.add_error(key(call_id))
        if not self.measured:
            return
        measured = [quarters_and_images(message) for message in messages]
        self._quarters.append(sum(quarters for quarters, _ in measured))
        if len(messages) > 1:
            self._part_quarters[index] = tuple(quarters for quarters, _ in measured)
        images = tuple(images for _, images in measured)
        if any(images):
            self._images[index] = sum(images)
            if len(messages) > 1:
                self._part_images[index] = images

    def patched(self, parents: dict[int, int], blank: set[int]) -> RecordTable:
        """A copy in which lines have other parents (a line, or NO_PARENT) and some lines are
        blank: the table as ``rescue``'s repairs leave it, for the view made again."""
        patched = copy.copy(self)
        patched._parents = array("i", self._parents)
        patched._missing = dict(self._missing)
        for index, parent in parents.items():
            patched._parents[index] = parent
            patched._missing.pop(index, None)
        if blank:
            patched._kinds, patched._roles = array("H", self._kinds), array("B", self._roles)
            patched._tag_kinds = array("B", self._tag_kinds)
            for index in blank:
                patched._kinds[index] = self._kind_names.code("blank")
                patched._roles[index] = 0  # None's code
                patched._tag_kinds[index] = 0
        return patched

    # --- reading it ---------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._lengths)

    def __getitem__(self, index: int) -> RecordInfo:  # type: ignore[override]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        info = RecordInfo(index + 1, self.offset(index), self.length(index), self.kind(index))
        info.id = self._ids[index] or None
        info.parent = self.parent_key(index)
        info.logical_parent = self._logical.get(index)
        info.turn = self._turns[index] or None  # equal for the records of one turn
        info.side = self.side(index)
        info.copies = self.copies(index)
        info.tag = self.tag(index)
        info.role = self.role(index)
        info.calls = self.calls(index)
        info.results = self.results(index)
        info.quarters = self.quarters(index)
        info.part_quarters = self._part_quarters.get(index, ())
        info.images = self.images(index)
        info.part_images = self.part_images(index)
        info.problem = self._problems.get(index)
        return info

    def __iter__(self) -> Iterator[RecordInfo]:
        return (self[index] for index in range(len(self)))

    def line(self, index: int) -> int:
        return index + 1

    def offset(self, index: int) -> int:
        checkpoint = index - index % CHECKPOINT
        return self._checkpoints[index // CHECKPOINT] + sum(self._lengths[checkpoint:index])

    def length(self, index: int) -> int:
        return self._lengths[index]

    def kind(self, index: int) -> str:
        return self._kind_names.values[self._kinds[index]]

    def kinds(self) -> list[str]:
        """Every distinct kind, its code's place in the list."""
        return self._kind_names.values

    def kind_code(self, index: int) -> int:
        return self._kinds[index]

    def role(self, index: int) -> str | None:
        return self._role_names.values[self._roles[index]]

    def side(self, index: int) -> bool:
        return bool(self._flags[index] & SIDE)

    def id(self, index: int) -> int:
        """The key of the record's own id (NONE: it has none)."""
        return self._ids[index]

    def turn(self, index: int) -> int:
        """The record's turn, as the first line of it plus one (NONE: it has none)."""
        return self._turns[index]

    def find(self, item: Any) -> int | None:
        """The first line whose record has the id (or key) ``item``, if any."""
        found = _find(self._ids, key(item))
        return found if found >= 0 else None

    def parent_at(self, index: int) -> int:
        """The line of the record's parent; NO_PARENT, or MISSING when no record has its id."""
        return self._parents[index]

    def parent_key(self, index: int) -> int | None:
        at = self._parents[index]
        if at == NO_PARENT:
            return None
        return self._missing[index] if at == MISSING else self._ids[at]

    def logical_parent(self, index: int) -> int | None:
        return self._logical.get(index)

    def tag(self, index: int) -> Any:
        kind = self._tag_kinds[index]
        if kind == 0:
            return None
        value = self._tag_values[index]
        return value if kind == 1 else self._tags.values[value]

    def problem(self, index: int) -> str | None:
        return self._problems.get(index)

    def quarters(self, index: int) -> int:
        return self._quarters[index] if self.measured else 0

    def piece_quarters(self, index: int, part: int | None) -> int:
        """The estimate of one message of a record (part None: of all of them)."""
        parts = self._part_quarters.get(index)
        return self.quarters(index) if part is None or not parts else parts[part]

    def images(self, index: int) -> int:
        """The inline images of the record's messages (measured with its estimate)."""
        return self._images.get(index, 0)

    def piece_images(self, index: int, part: int | None) -> int:
        """The inline images of one message of a record (part None: of all of them)."""
        parts = self._part_images.get(index)
        return self.images(index) if part is None or not parts else parts[part]

    def part_images(self, index: int) -> tuple[int, ...]:
        """Each message's inline images, for a record of more than one message that has any."""
        return self._part_images.get(index, ())

    def image_lines(self) -> list[int]:
        """The lines whose records hold inline images, in order."""
        return sorted(self._images)

    def has_results(self, index: int) -> bool:
        return self._results.has(index)

    def results(self, index: int) -> tuple[ToolResult, ...]:
        return tuple(
            ToolResult(item, chars, bool(mark & 1), mark >> 1)
            for item, chars, mark in self._results.rows(index)
        )

    def calls(self, index: int) -> tuple[tuple[int, str, int], ...]:
        tools = self._tools.values
        return tuple((item, tools[code], part) for item, code, part in self._calls.rows(index))

    def copies(self, index: int) -> tuple[int, ...]:
        return tuple(item for (item,) in self._copies.rows(index))

    def tool(self, call: Any, default: Any = None) -> Any:
        """The name of the tool of a call (its id or its key), the last call of that id's."""
        code = self.names.get(key(call)) if isinstance(call, int | str) else None
        return default if code is None else self._tools.values[code]

    def result_rows(self) -> Iterator[tuple[int, int, int, int]]:
        """(line, call key, chars, part << 1 | is_marker) of every tool result, in file order."""
        return self._results.all()

    def copy_rows(self) -> Iterator[tuple[int, int]]:
        return ((index, item) for index, item in self._copies.all())


class _Rows:
    """Rows a line may have several of (calls, results, copies): parallel arrays, in order."""

    def __init__(self, types: str) -> None:
        self.lines = array("i")
        self.columns = [array(kind) for kind in types]

    def add(self, index: int, *values: int) -> None:
        self.lines.append(index)
        for column, value in zip(self.columns, values, strict=True):
            column.append(value)

    def has(self, index: int) -> bool:
        start = bisect_left(self.lines, index)
        return start < len(self.lines) and self.lines[start] == index

    def rows(self, index: int) -> list[tuple[int, ...]]:
        start, end = bisect_left(self.lines, index), bisect_right(self.lines, index)
        return [tuple(column[row] for column in self.columns) for row in range(start, end)]

    def all(self) -> Iterator[tuple[int, ...]]:
        return zip(self.lines, *self.columns, strict=True)


def _find(ids: array, item: int) -> int:
    try:
        return ids.index(item)
    except ValueError:
        return -1
