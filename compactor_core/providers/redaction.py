"""The API key out of everything a server sends back, whatever form it comes back in.

A server may echo the key it was sent, in an error message or in the reply itself, and not only
as it was sent: upper-cased, base64-encoded (as in a Basic ``Authorization`` header), one or two
characters short. So every run of at least ``RUN`` characters that is also a run of the key, or
of one of its base64 forms, compared without regard to ASCII case, becomes ``[redacted]``. A
key shorter than ``MIN_SECRET`` is no secret (a local server's ``ollama``) and left alone.

A reply is redacted once decoded (every string of the JSON value, keys too), so that a
replacement never breaks the JSON around it; text that is not JSON is redacted as it is.
"""

from __future__ import annotations

import base64
import string
from typing import Any

REDACTED = "[redacted]"
MIN_SECRET = 8
RUN = 10  # characters of the key in a row that give it away
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


class Redactor:
    """Redacts one key (and its forms) from text and decoded JSON values."""

    def __init__(self, key: str | None) -> None:
        key = (key or "").strip()
        self.run = min(RUN, len(key))
        self._runs: frozenset[str] = frozenset()
        if len(key) >= MIN_SECRET:
            forms = [key, *_base64_forms(key)]
            self._runs = frozenset(
                _folded(form[start : start + self.run])
                for form in forms
                for start in range(len(form) - self.run + 1)
            )

    def text(self, text: str) -> str:
        """``text`` with every run of the key's characters replaced."""
        if not self._runs or len(text) < self.run:
            return text
        folded, run, runs = _folded(text), self.run, self._runs
        spans: list[list[int]] = []
        for start in range(len(text) - run + 1):
            if folded[start : start + run] in runs:
                if spans and start <= spans[-1][1]:
                    spans[-1][1] = start + run
                else:
                    spans.append([start, start + run])
        if not spans:
            return text
        pieces, position = [], 0
        for start, end in spans:
            pieces += [text[position:start], REDACTED]
            position = end
        pieces.append(text[position:])
        return "".join(pieces)

    def value(self, value: Any) -> Any:
        """A decoded JSON value with every string in it redacted (keys of objects too)."""
        if not self._runs:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(item) for item in value]
        if isinstance(value, dict):
            return {self.text(key): self.value(item) for key, item in value.items()}
        return value


def _folded(text: str) -> str:
    return text.translate(_ASCII_LOWER)  # ASCII only: the length never changes


def _base64_forms(key: str) -> list[str]:
    """The key base64-encoded wherever it starts in what is encoded (each of the three byte
    alignments), standard and URL-safe; the characters at its edges, which depend on its
    neighbours, fall out of the runs that matter."""
    data = key.encode()
    forms = []
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + data).decode().rstrip("=")
        encoded = encoded[(4 * shift + 2) // 3 :]  # what the padding bytes decided
        forms += [encoded, encoded.translate(str.maketrans("+/", "-_"))]
    return forms
