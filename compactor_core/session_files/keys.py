"""Ids as numbers, and a map of numbers that costs bytes, not objects (SPEC §8.5).

A session file of millions of small records cannot keep a Python string per id and a dict entry
per record: that is a kilobyte a record, a gigabyte of memory for a 235 MB session. The index
keeps each id as its ``key``, a 64-bit number (Python's hash of the string, the same in one
process), in arrays, and the maps it needs (tool call -> tool name, record id -> record) are
``KeyMap``: open addressing over two arrays, about 15 bytes an entry instead of 70.

Keys compare equal when the ids do; two different ids sharing a key is a one in 10^12 chance
for a session of millions of ids, and costs no more than a wrong tool name in a marker.
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Iterator
from typing import Any

NONE = 0  # the key of no id


def key(value: Any) -> int:
    """The 64-bit key of an id: of a string its hash, of a key itself (an int) the same; NONE
    for None. Anything else (a malformed id: a list, an object) by its repr."""
    if value.__class__ is str:
        return hash(value) or 1
    if value is None:
        return NONE
    if isinstance(value, int) and not isinstance(value, bool) and -(2**63) < value < 2**63:
        return value or 1
    return hash(f"{type(value).__name__}:{value!r}") or 1


class KeyMap:
    """Keys (never NONE) to small non-negative numbers; the last value given a key wins."""

    def __init__(self, value_type: str = "l") -> None:
        self._value_type = value_type
        self._size = 0
        self._keys = array("q", [NONE]) * 16
        self._values = array(value_type, [0]) * 16

    def __len__(self) -> int:
        return self._size

    def __setitem__(self, item: int, value: int) -> None:
        if 3 * (self._size + 1) > 2 * len(self._keys):
            self._grow()
        keys, mask = self._keys, len(self._keys) - 1
        slot = item & mask
        while True:
            found = keys[slot]
            if found == item:
                break
            if found == NONE:
                keys[slot] = item
                self._size += 1
                break
            slot = (slot + 1) & mask
        self._values[slot] = value

    def get(self, item: int, default: Any = None) -> Any:
        keys, mask = self._keys, len(self._keys) - 1
        slot = item & mask
        while True:
            found = keys[slot]
            if found == item:
                return self._values[slot]
            if found == NONE:
                return default
            slot = (slot + 1) & mask

    def __contains__(self, item: int) -> bool:
        return self.get(item) is not None

    def _grow(self) -> None:
        old_keys, old_values = self._keys, self._values
        size = 2 * len(old_keys)
        keys = self._keys = array("q", [NONE]) * size
        values = self._values = array(self._value_type, [0]) * size
        mask = size - 1
        for item, value in zip(old_keys, old_values, strict=True):
            if item != NONE:
                slot = item & mask
                while keys[slot] != NONE:
                    slot = (slot + 1) & mask
                keys[slot] = item
                values[slot] = value


class LineSet:
    """Line indexes: a byte a line says which are in, an array keeps them in order (added in
    ascending order, as pass 1's rows come)."""

    def __init__(self, lines: int = 0) -> None:
        self._in = bytearray(lines)
        self._order = array("i")

    def add(self, index: int) -> None:
        if not self._in[index]:
            self._in[index] = 1
            self._order.append(index)

    def __contains__(self, index: int) -> bool:
        return 0 <= index < len(self._in) and bool(self._in[index])

    def __iter__(self) -> Iterator[int]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)

    def __or__(self, other: LineSet) -> LineSet:
        union = LineSet(max(len(self._in), len(other._in)))
        for index in heapq.merge(self._order, other._order):
            union.add(index)
        return union
