"""Exact token counts with a model family's own tokenizer, offline (issue 13).

The same texts as the heuristic (SPEC §1, ``estimate.counted_texts``) are each encoded on their
own with no special tokens (``<|endoftext|>`` in a text is plain text) and the counts summed.
Encoding is tiktoken's Rust ``CoreBPE``; the vocabularies are the official files as other packages
on the package index ship them, checked against their published SHA-256, never downloaded.

Speed: a transcript repeats itself (the same files read twice, the same log lines), so a text is
cut into chunks where a cut cannot change the count, and each distinct chunk is encoded once.
A cut goes after a line break that is followed by a character that is neither whitespace nor
``/``: every pattern of ``tokenizer_specs`` ends the piece there (only a punctuation piece's
``[\\r\\n/]*`` tail or a whitespace run could run on past a line break), and the next piece
starts afresh, since the patterns look ahead but never behind. The tests check this against the
plain encoders.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections import Counter as Tally
from collections.abc import Iterable, Sequence
from functools import cache
from os import cpu_count
from typing import Any

from ..errors import ConfigError
from .estimate import HEURISTIC, Counter, json_text
from .tokenizer_specs import SPECS

NAMES = (HEURISTIC.name, *SPECS)

# A line break that ends a piece whatever came before it (see the module's docstring).
_SAFE_CUT = re.compile(r"\n(?=[^\S\r\n]+\S|[^\s/])")
_PARALLEL_CHARS = 1 << 20  # below this much new text, threads cost more than they save


def counter(name: str) -> Counter:
    """The counter called ``name``; ConfigError naming what to install when it cannot be had."""
    if name == HEURISTIC.name:
        return HEURISTIC
    if name not in SPECS:
        raise ConfigError(f"unknown tokenizer {name!r}: choose one of {', '.join(NAMES)}")
    return _exact(name)


@cache
def _exact(name: str) -> Exact:
    from .vocabularies import encoding  # here: tiktoken, and what finds its vocabulary

    spec = SPECS[name]
    return Exact(name, encoding(spec), spec.nfc)


class Exact:
    """Counts tokens exactly; remembers the count of every chunk it has seen."""

    per_token = 1

    def __init__(self, name: str, encoding: Any, nfc: bool) -> None:
        self.name = name
        self._encode = encoding.encode_ordinary  # no special tokens: all text is plain text
        self._nfc = nfc
        self._seen: dict[str, int] = {}  # chunk -> tokens
        self._lock = threading.Lock()

    def units(self, texts: Sequence[str]) -> int:
        chunks: Tally[str] = Tally()
        for text, times in Tally(texts).items():
            if times == 1:
                chunks.update(self.chunks(text))
            else:
                for chunk, count in Tally(self.chunks(text)).items():
                    chunks[chunk] += count * times
        return self.count_chunks(chunks)

    def json_units(self, values: Sequence[Any]) -> int:
        return self.units([json_text(value) for value in values])

    def chunks(self, text: str) -> list[str]:
        """``text`` cut where a cut cannot change its count; the chunks join back to it."""
        if self._nfc:
            text = unicodedata.normalize("NFC", text)
        parts = _SAFE_CUT.split(text)
        last = parts.pop()
        chunks = [part + "\n" for part in parts]
        chunks.append(last)
        return chunks

    def count_chunks(self, chunks: Tally[str]) -> int:
        seen = self._seen
        new = [chunk for chunk in chunks if chunk not in seen]
        if new:
            self._learn(new)
        return sum(seen[chunk] * times for chunk, times in chunks.items())

    def _learn(self, new: list[str]) -> None:
        threads = min(cpu_count() or 1, 8)
        if threads < 2 or sum(map(len, new)) < _PARALLEL_CHARS:
            self._encode_all(new)
            return
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(threads) as pool:  # the Rust encoder lets go of the GIL
            list(pool.map(self._encode_all, [new[start::threads] for start in range(threads)]))

    def _encode_all(self, chunks: Iterable[str]) -> None:
        encode = self._encode
        counts = {chunk: len(encode(chunk)) for chunk in chunks}
        with self._lock:
            self._seen.update(counts)
