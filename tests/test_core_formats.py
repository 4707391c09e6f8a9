"""SPEC §6 input: array, envelope and JSONL; validation with places; valid JSON kept intact."""

from __future__ import annotations

import json

import pytest
from bad_inputs import BAD_INPUTS as CLI_BAD_INPUTS
from helpers import micro_in_place
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import conversations, envelopes, json_values

from compactor_core.conversation.formats import MAX_DEPTH, Conversation, dump, dumps, parse
from compactor_core.errors import InputError

MESSAGES = [{"role": "user", "content": "你好"}, {"role": "assistant", "content": None}]


def test_array() -> None:
    conversation = parse(json.dumps(MESSAGES).encode())
    assert conversation == Conversation(MESSAGES, "array", None, False)
    assert (
        dump(conversation)
        == '[{"role":"user","content":"你好"},{"role":"assistant","content":null}]\n'.encode()
    )


def test_envelope_keeps_its_other_keys_in_order() -> None:
    envelope = {"model": "m", "system": "s", "messages": MESSAGES, "max_tokens": 5, "tools": [{}]}
    conversation = parse(json.dumps(envelope).encode())
    assert conversation.shape == "envelope"
    assert conversation.messages == MESSAGES
    assert conversation.system == "s"
    out = json.loads(dump(conversation))
    assert out == envelope
    assert list(out) == list(envelope)


def test_jsonl() -> None:
    data = b'{"role":"user","content":"a"}\n\n{"role":"assistant","content":"b"}\n'
    conversation = parse(data)
    assert conversation.shape == "jsonl"
    assert [m["content"] for m in conversation.messages] == ["a", "b"]
    assert (
        dump(conversation) == b'{"role":"user","content":"a"}\n{"role":"assistant","content":"b"}\n'
    )


def test_jsonl_of_one_message() -> None:
    conversation = parse(b'{"role":"user","content":"a"}\n')
    assert conversation.shape == "jsonl"
    assert dump(conversation) == b'{"role":"user","content":"a"}\n'


def test_jsonl_with_crlf() -> None:
    conversation = parse(b'{"role":"user","content":"a"}\r\n{"role":"user","content":"b"}\r\n')
    assert len(conversation.messages) == 2


def test_pretty_and_compact() -> None:
    conversation = parse(json.dumps(MESSAGES).encode())
    assert (
        dump(conversation, pretty=True).decode()
        == json.dumps(MESSAGES, ensure_ascii=False, indent=2) + "\n"
    )
    assert b"\n" not in dump(conversation).rstrip(b"\n")


def test_unknown_roles_blocks_and_keys_pass_through() -> None:
    messages = [
        {"role": "developer", "content": [{"type": "weird", "x": [1, {"y": None}]}], "z": True},
        {"role": "user", "content": [1, "two", None, {"no": "type"}]},
    ]
    assert parse(json.dumps(messages).encode()).messages == messages


# --- valid JSON that a fast parser balks at ------------------------------------------------------


def test_utf8_bom_is_accepted_and_kept() -> None:
    data = b"\xef\xbb\xbf" + json.dumps(MESSAGES).encode()
    conversation = parse(data)
    assert conversation.bom
    assert dump(conversation).startswith(b"\xef\xbb\xbf[")
    assert parse(dump(conversation)).messages == MESSAGES


@pytest.mark.parametrize(
    "number",
    [
        "123456789012345678901234567890",
        "-123456789012345678901234567890",
        "18446744073709551616",  # 2**64
        "-9223372036854775809",  # one below the smallest int64
        "1" + "0" * 400,
    ],
)
def test_integers_beyond_64_bits_come_back_intact(number: str) -> None:
    # regression: orjson read these as floats, so 123456789012345678901234567890 came back
    # as 1.2345678901234568e+29
    data = f'[{{"role":"user","content":"x","n":{number},"list":[{number}]}}]'.encode()
    conversation = parse(data)
    assert conversation.messages[0]["n"] == int(number)
    assert dump(conversation) == data + b"\n"


def test_long_digit_runs_in_strings_do_not_change_anything() -> None:
    data = b'[{"role":"user","content":"id 12345678901234567890123 and 1.5","f":1.5}]'
    assert dump(parse(data)) == data + b"\n"


def test_lone_surrogate_escape_is_accepted_and_comes_back() -> None:
    data = b'[{"role":"user","content":"a\\ud800b"}]'
    conversation = parse(data)
    assert conversation.messages[0]["content"] == "a\ud800b"
    out = dump(conversation)
    assert b"\\ud800" in out
    assert parse(out).messages == conversation.messages


def test_bom_big_integer_and_surrogate_together() -> None:
    data = b'\xef\xbb\xbf[{"role":"user","content":"\\ud800","n":123456789012345678901234567890}]'
    conversation = parse(data)
    assert dump(conversation) == data + b"\n"


@pytest.mark.parametrize("number", ["1e400", "-1E+999", "1" + "0" * 400 + ".5"])
def test_number_too_large_for_a_double_is_refused_not_changed(number: str) -> None:
    # regression: 1e400 used to be read as infinity and written back as null
    data = f'[{{"role":"user",\n"content":"x","n":{number}}}]'.encode()
    with pytest.raises(InputError, match=r"^in\.json: line 2, column 19: the number .* too large"):
        parse(data, "in.json")


def test_nesting_deeper_than_the_limit_is_refused_with_its_place() -> None:
    deep = "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5)
    data = f'[{{"role":"user","content":"ok"}},{{"role":"user","content":{deep}}}]'.encode()
    with pytest.raises(InputError, match=r"^in\.json: messages\[1\]: nested more than"):
        parse(data, "in.json")


def test_nesting_beyond_any_parser_is_refused() -> None:
    # regression: json.loads raised RecursionError (a traceback) on this
    data = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(InputError, match=r"^in\.json: line 1: nested more than"):
        parse(data, "in.json")


def test_nesting_within_the_limit_is_fine_everywhere() -> None:
    from compactor_core.compaction.estimate import estimate

    inner = "[" * (MAX_DEPTH - 4) + "]" * (MAX_DEPTH - 4)
    data = (
        '[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"x","input":'
        + inner
        + '}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":'
        + inner
        + "}]}]"
    ).encode()
    conversation = parse(data)
    assert estimate(conversation.messages) > 0
    assert estimate(conversation.messages, compat=True) == 1  # the name "x"
    assert dump(conversation) == data + b"\n"
    micro_in_place(conversation.messages, keep_recent=0)
    assert conversation.messages[1]["content"][0]["content"].startswith("[truncated: x result")


def test_envelope_key_nested_too_deep_is_refused() -> None:
    deep = "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5)
    data = f'{{"system":{deep},"messages":[]}}'.encode()
    with pytest.raises(InputError, match=r"^e\.json: system: nested more than"):
        parse(data, "e.json")


# --- errors name the file and the place ----------------------------------------------------------

SHAPE = 'f.json: expected a JSON array of messages, an object with a "messages" array, or JSONL; '
SHAPE += "got "
BAD_INPUTS: list[tuple[bytes, str]] = [
    (b"", "f.json: empty input, expected a JSON array of messages"),
    (b"  \n\t", "f.json: empty input, expected a JSON array of messages"),
    (b"\xef\xbb\xbf", "f.json: empty input, expected a JSON array of messages"),
    (
        b"[{",
        "f.json: line 1, column 3: invalid JSON: Expecting property name enclosed in double quotes",
    ),
    (b'[{"role":"user"},]', "f.json: line 1, column 18: invalid JSON: Expecting value"),
    (b"[NaN]", "f.json: line 1: invalid JSON: NaN is not a JSON value"),
    (b"[] []", "f.json: line 1, column 4: invalid JSON: Extra data"),
    (b'[{"role":"user","content":"\xff"}]', "f.json: line 1, byte 28: invalid UTF-8"),
    (b'[\n{"role":"user",\n"content":"\xc3"}]', "f.json: line 3, byte 12: invalid UTF-8"),
    (b"42", SHAPE + "a number"),
    (b'"hi"', SHAPE + "a string"),
    (b"null", SHAPE + "null"),
    (b'{"a":1}', SHAPE + "an object"),
    (b'{"messages":{}}', 'f.json: "messages" must be an array, got an object'),
    (b"[1]", "f.json: messages[0]: a message must be an object, got a number"),
    (b'[{"role":"user"},[]]', "f.json: messages[1]: a message must be an object, got an array"),
    (b'[{"content":"x"}]', 'f.json: messages[0]: "role" is missing'),
    (b'[{"role":null}]', 'f.json: messages[0]: "role" must be a string, got null'),
    (
        b'[{"role":"user","content":5}]',
        "f.json: messages[0].content: must be a string, null or an array, got a number",
    ),
    (
        b'[{"role":"user","content":{}}]',
        "f.json: messages[0].content: must be a string, null or an array, got an object",
    ),
    (
        b'[{"role":"a","tool_calls":{}}]',
        "f.json: messages[0].tool_calls: must be an array, got an object",
    ),
    (
        b'[{"role":"a","tool_calls":["x"]}]',
        "f.json: messages[0].tool_calls[0]: must be an object, got a string",
    ),
    (
        b'[{"role":"a","tool_calls":[{"function":"f"}]}]',
        "f.json: messages[0].tool_calls[0].function: must be an object",
    ),
    (
        b'{"model":"m","messages":[{"role":"u"},{"role":true}]}',
        'f.json: messages[1]: "role" must be a string, got a boolean',
    ),
    (b'{"role":"user"}\n\n{"role":"user"}\n{"content":"x"}\n', 'f.json: line 4: "role" is missing'),
    (b'{"role":"user"}\n[1]\n', "f.json: line 2: a message must be an object, got an array"),
    (b'{"role":"user"}\n{"role":\n', "f.json: line 2, column 9: invalid JSON: Expecting value"),
]


@pytest.mark.parametrize(("data", "message"), BAD_INPUTS)
def test_bad_input_is_one_line_naming_file_and_place(data: bytes, message: str) -> None:
    with pytest.raises(InputError) as caught:
        parse(data, "f.json")
    assert str(caught.value) == message
    assert "\n" not in str(caught.value)


def test_parse_errors_golden(golden) -> None:
    """The message of each bad input, of this file and of bad_inputs (the CLI's cases)."""
    lines = []
    for data in [data for data, _ in BAD_INPUTS] + [case[1] for case in CLI_BAD_INPUTS]:
        try:
            parse(data, "f.json")
        except InputError as error:
            lines.append(f"{data[:60]!r}\n    {error}")
    golden("parse_errors.txt", "\n".join(lines) + "\n")


# --- properties ----------------------------------------------------------------------------------


@settings(max_examples=200)  # a key property: more examples
@given(data=st.data())
def test_parse_dump_parse_is_the_identity(data: st.DataObject) -> None:
    shape = data.draw(st.sampled_from(["array", "envelope", "jsonl"]))
    pretty = data.draw(st.booleans())
    bom = data.draw(st.booleans())
    if shape == "envelope":
        envelope = data.draw(envelopes())
        conversation = Conversation(envelope["messages"], "envelope", envelope, bom)
    else:
        conversation = Conversation(data.draw(conversations()), shape, None, bom)
    if shape == "jsonl" and not conversation.messages:
        with pytest.raises(InputError, match="empty input"):  # an empty JSONL file is no input
            parse(dump(conversation, pretty))
        return
    once = parse(dump(conversation, pretty))
    assert once.messages == conversation.messages
    assert once.shape == shape
    assert once.bom == bom
    if shape == "envelope":
        assert once.envelope == conversation.envelope
    assert parse(dump(once, pretty)) == once
    assert dump(once, pretty) == dump(conversation, pretty)


@given(json_values(max_leaves=12))
def test_any_json_value_in_a_message_survives(value: object) -> None:
    messages = [{"role": "user", "content": "x", "extra": value}]
    data = dumps(messages)
    conversation = parse(data)
    assert conversation.messages == messages
    assert dump(conversation) == data + b"\n"
    assert json.loads(data) == messages


@given(st.lists(st.integers(), min_size=1, max_size=5))
def test_any_integer_survives(numbers: list[int]) -> None:
    data = json.dumps([{"role": "user", "n": numbers}]).encode()
    assert parse(data).messages[0]["n"] == numbers
    assert json.loads(dump(parse(data))) == json.loads(data)
