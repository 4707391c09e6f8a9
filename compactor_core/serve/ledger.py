"""Which part of a forwarded request the upstream's prompt cache can read: the prefix it shares
with the request forwarded before it in the same conversation.

A proxy sees no conversation ids, only histories. A caller re-sends its history each time with
something appended, so the request before this one in its conversation is the one whose history
is the longest prefix of this history (or this whole history: a retry). The ledger keeps, for
every history it has seen, a fingerprint of every prefix of what was forwarded for it: a chain
of hashes, one per message, the first one over the header (tools, system prompt, model), since
what comes before the history is in the cached prefix too; ``cache_control`` markers are left
out of them. A request is *cache-stable* when it
begins with the whole of the request forwarded before it: the cache reads all of that.

Bounded: the oldest entries go once the fingerprints pass ``budget`` bytes. A hit older than
``ttl`` seconds (the cache's lifetime) reads nothing.

A conversation's requests share their prefixes, so each fingerprint is kept by what it is taken
of, the one before it and the message's JSON as sent (``Links``, the newest ``links`` bytes of
them): the second time a prefix is seen it costs a look-up, not a hash of its messages (nor the
markers' removal).
"""

from __future__ import annotations

import hashlib
import operator
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from ..conversation.formats import dumps

DIGEST = 16  # bytes of each fingerprint
TTL = 300.0  # seconds: the default lifetime of Anthropic's and OpenAI's prompt caches
BUDGET = 32 << 20  # bytes of fingerprints kept
LINKS = 16 << 20  # bytes of messages whose fingerprints are kept by what they are taken of


@dataclass(frozen=True)
class Reuse:
    """How a forwarded request relates to the one before it in its conversation."""

    previous: bool  # a request of this conversation was seen before (within ttl)
    stable: bool  # it begins with the whole of the request forwarded before it
    sent_prefix: int  # messages of the caller's history that the previous one held
    forwarded_prefix: int  # messages at the start of the forwarded history the cache can read
    conversation: str = ""  # names the conversation: its header's and first message's print


NEW = Reuse(previous=False, stable=True, sent_prefix=0, forwarded_prefix=0)


@dataclass
class _Entry:
    time: float
    chain: bytes  # the fingerprints of the forwarded history's prefixes, DIGEST bytes each


class Links:
    """The fingerprint that follows another for a message's JSON, the newest ``budget`` bytes
    of JSON of them (thread-safe)."""

    def __init__(self, budget: int = LINKS) -> None:
        self.budget = budget
        self._next: dict[tuple[bytes, bytes], bytes] = {}  # oldest first
        self._size = 0
        self._lock = threading.Lock()

    def after(
        self, digest: bytes, text: bytes, taken_of: Callable[[], bytes] | None = None
    ) -> bytes:
        """The fingerprint after ``digest`` for a message whose JSON is ``text``; taken of
        ``taken_of()`` if given (asked only the first time), else of ``text``."""
        key = (digest, text)
        found = self._next.get(key)
        if found is None:
            taken = text if taken_of is None else taken_of()
            found = hashlib.blake2b(digest + taken, digest_size=DIGEST).digest()
            with self._lock:
                if key not in self._next:
                    self._size += len(text)
                self._next[key] = found
                while self._size > self.budget and self._next:
                    oldest = next(iter(self._next))
                    self._size -= len(oldest[1])
                    del self._next[oldest]
        return found


class Ledger:
    def __init__(self, ttl: float = TTL, budget: int = BUDGET, links: int = LINKS) -> None:
        self.ttl = ttl
        self.budget = budget
        self._entries: OrderedDict[bytes, _Entry] = OrderedDict()
        self._size = 0
        self._links = Links(links)
        self._lock = threading.Lock()

    def record(
        self,
        header: Any,
        sent: list[Any],
        forwarded: list[Any],
        now: float,
        json_of: Callable[[Any], bytes] = dumps,
    ) -> Reuse:
        """Remember what was forwarded for ``sent``; how it reuses the request before it.
        ``json_of``: a message's JSON (``dumps``), as the caller may have it already."""
        texts: dict[int, bytes] = {}  # the messages both histories share are written once
        sent_chain = chain(header, sent, texts, self._links, json_of)
        forwarded_chain = chain(header, forwarded, texts, self._links, json_of)
        with self._lock:
            reuse = self._reuse(sent_chain, forwarded_chain, now)
            self._remember(sent_chain[-DIGEST:], _Entry(now, forwarded_chain))
        return replace(reuse, conversation=sent_chain[DIGEST : 2 * DIGEST].hex()[:12])

    def _reuse(self, sent_chain: bytes, forwarded_chain: bytes, now: float) -> Reuse:
        for count in range(len(sent_chain) // DIGEST - 1, 0, -1):  # the longest history first
            entry = self._entries.get(sent_chain[count * DIGEST : (count + 1) * DIGEST])
            if entry is None:
                continue
            if now - entry.time > self.ttl:
                return NEW
            shared = _shared(entry.chain, forwarded_chain)  # the header's fingerprint too
            stable = shared == len(entry.chain) // DIGEST
            return Reuse(True, stable, count, max(shared - 1, 0))
        return NEW

    def _remember(self, key: bytes, entry: _Entry) -> None:
        old = self._entries.pop(key, None)
        if old is not None:
            self._size -= len(old.chain)
        self._entries[key] = entry
        self._size += len(entry.chain)
        while self._size > self.budget and len(self._entries) > 1:
            _, dropped = self._entries.popitem(last=False)
            self._size -= len(dropped.chain)


def chain(
    header: Any,
    messages: list[Any],
    texts: dict[int, bytes] | None = None,
    links: Links | None = None,
    json_of: Callable[[Any], bytes] = dumps,
) -> bytes:
    """The fingerprint of the header, then of each prefix of ``messages``, one after another.

    ``texts`` keeps each message's JSON by the message's identity, for another chain of the same
    call (the objects must outlive it); ``links``: fingerprints taken before.
    """
    texts = {} if texts is None else texts
    links = Links(0) if links is None else links
    digest = hashlib.blake2b(_text(header), digest_size=DIGEST).digest()
    parts = [digest]
    for message in messages:
        text = texts.get(id(message))
        if text is None:
            text = texts[id(message)] = json_of(message)
        digest = links.after(digest, text, partial(_fingerprinted, message, text))
        parts.append(digest)
    return b"".join(parts)


def _fingerprinted(message: Any, text: bytes) -> bytes:
    """The JSON a message's fingerprint is taken of, from its own JSON ``text``."""
    as_blocks = _as_blocks(message)
    if as_blocks is not message:  # written anew: not what the caller has
        return _text(as_blocks)
    return _text(message, text)


def _as_blocks(message: Any) -> Any:
    """A message whose content is a string as the same text in one text block: the API reads
    both alike, and a caller may send one the first time and the other the next (Claude Code
    does), so they are one prefix."""
    if isinstance(message, dict) and isinstance(message.get("content"), str):
        return {**message, "content": [{"type": "text", "text": message["content"]}]}
    return message


def _text(value: Any, text: bytes | None = None) -> bytes:
    """The JSON the fingerprint is taken of: ``value``'s (``text``, if given), without its
    ``cache_control`` markers."""
    text = dumps(value) if text is None else text
    return dumps(_unmarked(value)) if b'"cache_control"' in text else text


def _unmarked(value: Any, depth: int = 3) -> Any:
    """``value`` without its ``cache_control`` markers: they say where to write the cache, and a
    caller moves them to its newest message each time, but what the cache reads is the content.

    Markers sit on a message's blocks, on the blocks inside a tool result, on the system prompt's
    blocks and on tools: ``depth`` levels of objects below ``value`` are looked at, no more, and
    only what held a marker is copied.
    """
    if isinstance(value, list):
        items = [_unmarked(item, depth) for item in value]
        return value if all(map(operator.is_, items, value)) else items
    if not isinstance(value, dict) or depth < 0:
        return value
    kept = {
        key: _unmarked(item, depth - 1) for key, item in value.items() if key != "cache_control"
    }
    unchanged = len(kept) == len(value) and all(kept[key] is value[key] for key in kept)
    return value if unchanged else kept


def _shared(one: bytes, other: bytes) -> int:
    """How many fingerprints two chains share from their start."""
    count = min(len(one), len(other)) // DIGEST
    for index in range(count):
        start = index * DIGEST
        if one[start : start + DIGEST] != other[start : start + DIGEST]:
            return index
    return count
