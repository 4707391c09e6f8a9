"""Short text for one line: a warning, a summary line, a server's error message."""

from __future__ import annotations


def clip(text: str, limit: int) -> str:
    """``text`` on one line (whitespace runs made one space), cut to ``limit`` characters."""
    text = " ".join(text[: limit * 4].split())  # a 10 MB error page is not split whole
    return text if len(text) <= limit else text[: limit - 1] + "…"


def counted(number: int, word: str) -> str:
    """``1 line``, ``2 lines``."""
    return f"{number} {word}{'' if number == 1 else 's'}"
