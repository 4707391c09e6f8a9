"""Whatever the bytes, the foundation either refuses them with an InputError or handles them.

Never another exception (which the CLI would show as a traceback): message-shaped JSON with every
key holding any type, mutated conversations, and raw bytes.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from helpers import micro_in_place
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import conversations, json_values, texts

from compactor_core.compaction.estimate import breakdown, estimate
from compactor_core.conversation.formats import dump, parse
from compactor_core.errors import InputError

KEYS = [
    "role",
    "content",
    "type",
    "id",
    "name",
    "input",
    "text",
    "tool_use_id",
    "tool_calls",
    "tool_call_id",
    "function",
    "arguments",
]
ROLES = st.sampled_from(["user", "assistant", "system", "tool", "developer"])
TYPES = st.sampled_from(["text", "tool_use", "tool_result", "image", "thinking"])

anything = json_values(max_leaves=6)
blocks = st.fixed_dictionaries(
    {"type": st.one_of(TYPES, anything)},
    optional={key: st.one_of(anything, texts(max_size=6)) for key in KEYS if key != "type"},
)
weird_messages = st.fixed_dictionaries(
    {"role": st.one_of(ROLES, ROLES, anything)},
    optional={
        "content": st.one_of(anything, st.lists(st.one_of(blocks, anything), max_size=4)),
        "tool_calls": st.one_of(
            anything,
            st.lists(
                st.one_of(
                    st.fixed_dictionaries(
                        {},
                        optional={
                            "id": anything,
                            "function": st.one_of(
                                anything,
                                st.fixed_dictionaries(
                                    {}, optional={"name": anything, "arguments": anything}
                                ),
                            ),
                        },
                    ),
                    anything,
                ),
                max_size=3,
            ),
        ),
        "tool_call_id": anything,
    },
)


def exercise(data: bytes) -> None:
    try:
        conversation = parse(data, "in.json")
    except InputError as error:
        assert "\n" not in str(error)
        assert str(error).startswith("in.json: ")
        return
    messages = conversation.messages
    for compat in (False, True):
        tokens = estimate(messages, conversation.system, compat)
        assert breakdown(messages, conversation.system, compat)["tokens"] == tokens
    out = dump(conversation)
    assert parse(out).messages == messages
    for keep_recent in (3, 0):
        copied = copy.deepcopy(messages)
        micro_in_place(copied, keep_recent=keep_recent, exclude_tools={"bash"}, min_chars=2)
        micro_in_place(copied, keep_recent=keep_recent)
        dump(conversation.with_messages(copied))


@settings(max_examples=300)
@given(st.lists(weird_messages, max_size=6), st.booleans())
def test_message_shaped_json_of_any_types(messages: list[Any], envelope: bool) -> None:
    document: Any = {"system": messages[:1], "messages": messages} if envelope else messages
    exercise(json.dumps(document).encode())


@given(conversations(), st.data())
def test_mutated_conversations(messages: list[dict], data: st.DataObject) -> None:
    raw = bytearray(json.dumps(messages, ensure_ascii=data.draw(st.booleans())).encode())
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(0, len(raw)))
        action = data.draw(st.sampled_from(["insert", "delete", "replace"]))
        byte = data.draw(st.sampled_from(b'[]{}",:\\0123456789 \n\xff\xc3e-.tn'))
        if action == "insert":
            raw.insert(position, byte)
        elif position < len(raw):
            if action == "delete":
                del raw[position]
            else:
                raw[position] = byte
    exercise(bytes(raw))


@given(st.binary(max_size=200))
def test_raw_bytes(data: bytes) -> None:
    exercise(data)


@given(st.lists(json_values(max_leaves=4), max_size=4))
def test_jsonl_lines_of_anything(values: list[Any]) -> None:
    lines = [json.dumps({"role": "user", "content": "x"})] + [json.dumps(v) for v in values]
    exercise("\n".join(lines).encode())
