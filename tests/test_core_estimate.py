"""SPEC §1: the token estimate, against the spec's numbers and a per-character reference."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import (
    CJK_RANGES,
    char_weight,
    reference_estimate,
    reference_text,
)
from strategies import conversations, envelopes, json_values, texts

from compactor_core.compaction import estimate as estimate_module
from compactor_core.compaction.estimate import (
    breakdown,
    estimate,
    estimate_quarters,
    json_quarters,
    json_text,
    text_quarters,
)


def exact(text: str) -> float:
    """The unrounded estimate of one text, from the fast implementation."""
    return text_quarters([text]) / 4


def content(value: Any) -> list[dict]:
    return [{"role": "user", "content": value}]


# --- the numbers the spec fixes ------------------------------------------------------------------

SPEC_VECTOR = [
    {"role": "user", "content": "你好abc123"},
    {
        "role": "assistant",
        "content": [{"type": "text", "text": "ok"}, {"type": "tool_result", "content": "结果42"}],
    },
]


def test_spec_test_vector_is_9() -> None:
    assert estimate_quarters(SPEC_VECTOR) / 4 == 8.5
    assert estimate(SPEC_VECTOR) == 9
    assert estimate(SPEC_VECTOR, compat=True) == 9


def test_estimate_golden(golden) -> None:
    cases = {
        "spec vector": SPEC_VECTOR,
        "U+3000": content("\u3000"),
        "12345": content([12345]),
        "true": content([True]),
        "tool_use dict input": [
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "name": "bash", "input": {"command": "ls -la"}}],
            }
        ],
    }
    lines = [
        f"{name}\tdefault={estimate_quarters(messages) / 4}\t"
        f"bareagent={estimate_quarters(messages, compat=True) / 4}\ttokens={estimate(messages)}"
        for name, messages in cases.items()
    ]
    golden("estimate.txt", "\n".join(lines) + "\n")


@pytest.mark.parametrize(
    ("char", "weight"),
    [
        ("你", 1.5),
        ("a", 0.25),
        ("Z", 0.25),
        ("7", 0.25),
        (" ", 0.25),
        ("\n", 0.25),
        ("\t", 0.25),
        ("\x1c", 0.25),  # str.isspace() accepts the ASCII separators
        ("\xa0", 0.25),
        ("\u2028", 0.25),
        ("\u3000", 1.25),
        (".", 0.5),
        ("_", 0.5),
        ("é", 0.5),  # an accented letter is not an ASCII letter
        ("Ａ", 0.5),  # nor is a full-width one
        ("１", 0.5),
        ("😀", 0.5),
        ("\u200b", 0.5),  # zero-width space: not str.isspace()
        ("\ufeff", 0.5),
    ],
)
def test_weight_of_each_class(char: str, weight: float) -> None:
    assert exact(char) == weight
    assert exact(char * 7) == 7 * weight


def test_u3000_scores_1_25() -> None:
    assert exact("\u3000") == 1.25
    assert estimate(content("\u3000" * 4)) == 5


@pytest.mark.parametrize(("low", "high"), CJK_RANGES)
def test_cjk_range_bounds(low: int, high: int) -> None:
    inside = [chr(low), chr(high), chr((low + high) // 2)]
    for char in inside:
        assert exact(char) == (1.25 if char == "\u3000" else 1.5), hex(ord(char))
    for outside in (chr(low - 1), chr(high + 1)):
        if not any(a <= ord(outside) <= b for a, b in CJK_RANGES):
            assert exact(outside) == char_weight(outside) != 1.5, hex(ord(outside))


def test_rounded_up_once_at_the_end() -> None:
    assert estimate(content("a")) == 1
    assert estimate(content("abcd")) == 1
    assert estimate(content("abcde")) == 2
    # two messages of 0.25 each: 0.5 rounds to 1, not 1 + 1
    assert estimate(content("a") + content("b")) == 1
    assert estimate([]) == 0


def test_only_content_counts() -> None:
    bare = content("hi")
    decorated = [
        {"role": "user" * 50, "content": "hi", "id": "msg_0123456789", "name": "someone" * 9}
    ]
    assert estimate(bare) == estimate(decorated) == 1
    assert estimate([{"role": "user", "content": None}]) == 0
    assert estimate([{"role": "user"}]) == 0


def test_list_content_is_the_sum_of_its_items() -> None:
    assert exact_of(content(["ab", "你"])) == 0.5 + 1.5


def exact_of(messages: list[dict], system: Any = None, compat: bool = False) -> float:
    return estimate_quarters(messages, system, compat) / 4


def test_numbers_and_booleans_count_as_their_json_text() -> None:
    assert exact_of(content([12345])) == 1.25
    assert exact_of(content([True])) == 1.0
    assert exact_of(content([False, None])) == 1.25
    assert exact_of(content([-1.5])) == 0.5 + 0.25 + 0.5 + 0.25


def test_tool_use_counts_name_and_input_as_json() -> None:
    block = {"type": "tool_use", "id": "toolu_01", "name": "bash", "input": {"command": "ls -la"}}
    input_text = '{"command": "ls -la"}'
    assert exact_of(content([block])) == exact("bash") + exact(input_text)
    assert exact_of(content([block]), compat=True) == exact("bash")  # the reference's blind spot


def test_tool_use_string_and_list_input() -> None:
    as_string = {"type": "tool_use", "name": "x", "input": "ls"}
    assert exact_of(content([as_string])) == 0.75
    as_list = {"type": "tool_use", "name": "x", "input": ["中文", 1]}
    assert exact_of(content([as_list])) == 0.25 + exact('["中文", 1]')


def test_input_json_uses_standard_spacing_and_keeps_non_ascii() -> None:
    block = {"type": "tool_use", "name": "", "input": {"路径": "/a b", "n": [1, 2]}}
    assert exact_of(content([block])) == exact('{"路径": "/a b", "n": [1, 2]}')


def test_other_blocks_count_text_content_input_and_name() -> None:
    block = {
        "type": "custom",
        "text": "ab",
        "content": [{"type": "text", "text": "你"}],
        "input": {"k": 1},
        "name": "nm",
        "id": "ignored",
        "thinking": "ignored too",
    }
    assert exact_of(content([block])) == 0.5 + 1.5 + exact('{"k": 1}') + 0.5


def test_tool_result_name_is_not_counted() -> None:
    block = {"type": "tool_result", "tool_use_id": "t", "name": "bash", "content": "ok"}
    assert exact_of(content([block])) == 0.5


@pytest.mark.parametrize(
    "block",
    [
        {"type": "thinking", "thinking": "long thoughts " * 20, "signature": "abc"},
        {"type": "redacted_thinking", "data": "xyz"},
    ],
)
def test_blocks_without_counted_keys_count_zero(block: dict) -> None:
    assert exact_of(content([block])) == 0


def test_an_image_counts_by_its_bytes_without_a_header_and_zero_under_bareagent() -> None:
    # issue 26: 99 base64 characters are 74 bytes, read as 74 pixels: 1 token (SPEC §1: 0)
    source = {"type": "base64", "media_type": "image/png", "data": "Q" * 99}
    image = {"type": "image", "source": source}
    assert estimate(content([image])) == 1
    assert estimate(content([image]), compat=True) == 0


def test_openai_tool_calls_count_name_and_arguments_except_in_compat() -> None:
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "bash", "arguments": '{"command": "ls"}'},
            }
        ],
    }
    assert exact_of([message]) == exact("bash") + exact('{"command": "ls"}')
    assert exact_of([message], compat=True) == 0


def test_envelope_system_counts_except_in_compat() -> None:
    assert exact_of([], system="你好") == 3.0
    assert exact_of([], system=[{"type": "text", "text": "abcd"}]) == 1.0
    assert exact_of([], system="你好", compat=True) == 0


def test_compat_walks_a_dict_input_like_a_block() -> None:
    # the reference counts only text/content/input/name inside a dict input
    block = {"type": "tool_use", "name": "", "input": {"text": "abcd", "other": "ignored"}}
    assert exact_of(content([block]), compat=True) == 1.0


# --- breakdown -----------------------------------------------------------------------------------


def test_breakdown_parts_add_up_to_the_estimate() -> None:
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "run it"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "a", "name": "bash", "input": {"c": "ls"}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "xy"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "b", "function": {"name": "grep", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "b", "content": "found"},
    ]
    report = breakdown(messages, system="hello")
    assert report["tokens"] == estimate(messages, system="hello")
    assert report["exact"] == sum(report["by_role"].values()) + report["envelope_system"]
    assert report["messages"] == 6
    assert report["tool_result_turns"] == 2
    assert report["profile"] == "default"
    assert report["by_tool"]["bash"] == {
        "calls": 1,
        "call_tokens": exact("bash") + exact('{"c": "ls"}'),
        "results": 1,
        "result_tokens": 0.5,
    }
    assert report["by_tool"]["grep"]["results"] == 1
    assert report["by_tool"]["grep"]["result_tokens"] == exact("found")
    assert breakdown(messages, system="hello", compat=True)["profile"] == "bareagent"


def test_breakdown_survives_ids_that_are_not_strings() -> None:
    # regression: an unhashable id used to raise TypeError
    messages = [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": {"a": 1}, "name": "x", "input": {}}],
            "tool_calls": [{"id": [1], "function": {"name": "y"}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": [2], "content": "z"}]},
        {"role": "tool", "tool_call_id": {}, "content": "w"},
    ]
    report = breakdown(messages)
    assert report["by_tool"]["unknown"]["results"] == 2
    assert report["tokens"] == estimate(messages)


# --- properties ----------------------------------------------------------------------------------


@settings(max_examples=200)  # a key property: more examples
@given(st.text())
def test_fast_text_path_equals_the_per_character_reference(text: str) -> None:
    assert exact(text) == reference_text(text)


@given(st.lists(texts(max_size=40), max_size=6))
def test_fast_path_over_special_characters(parts: list[str]) -> None:
    assert text_quarters(parts) / 4 == sum(reference_text(part) for part in parts)


@given(
    st.lists(texts(max_size=40), max_size=6),
    st.integers(min_value=1, max_value=8),
    st.integers(min_value=1, max_value=30),
)
def test_batches_and_pieces_of_texts_count_the_same(
    parts: list[str], batch_chars: int, alone_chars: int
) -> None:
    # Short texts are counted in batches, long ones on their own in pieces of a batch's size:
    # tiny sizes put a boundary between, and inside, every few characters, on both paths.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(estimate_module, "BATCH_CHARS", batch_chars)
        patch.setattr(estimate_module, "ALONE_CHARS", alone_chars)
        assert text_quarters(parts) / 4 == sum(reference_text(part) for part in parts)


# What orjson writes otherwise than json_text, or refuses: a float in exponent notation, a lone
# surrogate, an integer beyond 64 bits, a key that is not a string, a tuple.
unlike_orjson = st.sampled_from([{"t": 1e-07}, "\ud800", [2**70], {1: "a"}, ("x", 2.5e-07)])


@given(st.lists(st.one_of(json_values(), unlike_orjson), max_size=6))
def test_json_values_count_as_their_json_text(values: list[Any]) -> None:
    assert json_quarters(values) == text_quarters([json_text(value) for value in values])


def test_every_character_is_written_by_orjson_as_json_text_writes_it() -> None:
    # orjson's escapes must be json_text's to the character: all of Unicode but the surrogates,
    # as a key and as a value
    every = "".join(map(chr, [*range(0xD800), *range(0xE000, 0x110000)]))
    values = [every, {every: [every, 1, True, None]}]
    assert json_quarters(values) == text_quarters([json_text(value) for value in values])


def test_only_floats_are_written_by_json_text_alone() -> None:
    values = [{"t": 1e-07}, [2.5e-07]]
    assert json_quarters(values) == text_quarters([json_text(value) for value in values])


def test_a_value_that_holds_itself_is_refused_as_json_text_refuses_it() -> None:
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    with pytest.raises(ValueError, match="Circular reference"):
        json_quarters([{"command": "ls"}, cyclic])


@pytest.mark.parametrize("odd", [[2**70], {1: "a"}, "\ud800"])
def test_one_value_orjson_refuses_leaves_the_others_counted_exactly(odd: Any) -> None:
    values = [{"command": "ls -la", "n": [1, 2]}, odd, "你好"]
    assert json_quarters(values) == text_quarters([json_text(value) for value in values])


def test_lone_surrogates_are_other_characters() -> None:
    assert exact("\ud800") == 0.5
    assert exact("a\udfff你") == 0.25 + 0.5 + 1.5


@settings(max_examples=200)  # a key property: more examples
@given(data=st.data())
def test_estimate_equals_the_reference_on_conversations(data: st.DataObject) -> None:
    envelope = data.draw(envelopes())
    messages, system = envelope["messages"], envelope.get("system")
    assert estimate(messages, system) == reference_estimate(messages, system)
    assert estimate(messages, system, compat=True) == reference_estimate(messages, system, True)


@given(
    st.lists(
        st.dictionaries(
            st.sampled_from(["type", "text", "content", "input", "name"]),
            json_values(max_leaves=6),
            max_size=5,
        ),
        max_size=4,
    )
)
def test_estimate_equals_the_reference_on_arbitrary_blocks(blocks: list[dict]) -> None:
    messages = content(blocks)
    assert estimate(messages) == reference_estimate(messages)
    assert estimate(messages, compat=True) == reference_estimate(messages, compat=True)


@settings(max_examples=200)  # a key property: more examples
@given(conversations(), texts(min_size=1), st.data())
def test_adding_content_never_lowers_the_estimate(
    messages: list[dict], extra: str, data: st.DataObject
) -> None:
    before = estimate_quarters(messages)
    grown = copy.deepcopy(messages)
    how = data.draw(st.sampled_from(["append", "extend text", "add block"]))
    if how == "append" or not grown:
        grown.append({"role": data.draw(st.sampled_from(["user", "assistant"])), "content": extra})
    else:
        message = grown[data.draw(st.integers(0, len(grown) - 1))]
        value = message.get("content")
        if how == "extend text" and isinstance(value, str):
            message["content"] = value + extra
        elif isinstance(value, list):
            value.append({"type": "text", "text": extra})
        else:
            message["content"] = [value, extra] if value is not None else extra
    after = estimate_quarters(grown)
    assert after >= before
    assert estimate(grown) >= estimate(messages)
    assert estimate_quarters(grown, compat=True) >= estimate_quarters(messages, compat=True)


@given(envelopes())
def test_bareagent_profile_never_exceeds_the_default(envelope: dict) -> None:
    messages, system = envelope["messages"], envelope.get("system")
    assert estimate(messages, system, compat=True) <= estimate(messages, system)


@given(conversations())
def test_estimate_does_not_modify_its_input(messages: list[dict]) -> None:
    before = copy.deepcopy(messages)
    estimate(messages)
    breakdown(messages)
    assert messages == before
