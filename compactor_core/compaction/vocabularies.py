"""An exact tokenizer's encoder: tiktoken's, built from the official vocabulary file that an
installed package ships, checked by its published SHA-256 (never downloaded).

Its own module: hashlib, pathlib and importlib.metadata cost every command about 8 ms of
start-up, and only a run that counts a model's tokens exactly needs them (``tokenizers._exact``
loads this module then).
"""

from __future__ import annotations

import hashlib
from binascii import a2b_base64
from importlib import metadata
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .tokenizer_specs import Spec

INSTALL_HINT = "pip install 'ctxpack[tokenizers]'"


def encoding(spec: Spec) -> Any:
    """tiktoken's ``Encoding`` of ``spec``, with no special tokens; ConfigError if tiktoken or
    the vocabulary is not installed."""
    try:
        import tiktoken  # the optional extra
    except ImportError:
        raise ConfigError(
            f"tokenizer {spec.name!r} needs tiktoken, which is not installed: {INSTALL_HINT}"
        ) from None
    ranks = load_ranks(find_vocabulary(spec))
    return tiktoken.Encoding(
        spec.encoding, pat_str=spec.pattern, mergeable_ranks=ranks, special_tokens={}
    )


def find_vocabulary(spec: Spec) -> bytes:
    """The bytes of the first installed copy of ``spec``'s vocabulary, checked by its hash."""
    vocabulary = spec.vocabulary
    wrong: list[str] = []
    for distribution, inner in vocabulary.carriers:
        path = installed(distribution, inner)
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


def installed(distribution: str, inner: str) -> Path | None:
    try:
        found = metadata.distribution(distribution).locate_file(inner)
    except metadata.PackageNotFoundError:
        return None
    path = Path(str(found))
    return path if path.is_file() else None


def load_ranks(data: bytes) -> dict[bytes, int]:
    """A ``.tiktoken`` file: one base64 token and its rank a line (decoded in C loops)."""
    words = data.split()
    return dict(zip(map(a2b_base64, words[0::2]), map(int, words[1::2]), strict=True))
