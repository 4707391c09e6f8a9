"""SPEC §2: micro compaction."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
from helpers import assert_only_tool_results_changed, micro_in_place
from hypothesis import example, given, settings
from hypothesis import strategies as st
from strategies import conversations

from compactor_core.compaction.micro import (
    MicroResult,
    content_length,
    is_marker,
    marker,
    micro_compact,
)
from compactor_core.compaction.staleness import analyse
from compactor_core.conversation.tools import result_holders, tool_names, tool_result_turns

MARKER = re.compile(r"\[truncated: (?P<tool>.*) result, (?P<chars>\d+) chars\]")


def anthropic_turn(call_id: str, tool: str, result: Any, **extra: Any) -> list[dict]:
    return [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": call_id, "name": tool, "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": call_id, "content": result, **extra}
            ],
        },
    ]


def openai_turn(calls: list[tuple[str, str, Any]]) -> list[dict]:
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": tool, "arguments": "{}"}}
                for call_id, tool, _ in calls
            ],
        },
        *(
            {"role": "tool", "tool_call_id": call_id, "content": result}
            for call_id, _, result in calls
        ),
    ]


def results(messages: list[dict]) -> list[Any]:
    """Every tool result's content, in order."""
    found = []
    for message in messages:
        if message.get("role") == "tool":
            found.append(message.get("content"))
        elif isinstance(message.get("content"), list):
            found += [
                block.get("content")
                for block in message["content"]
                if isinstance(block, dict) and block.get("type") == "tool_result"
            ]
    return found


def result_ids_and_contents(messages: list[dict]) -> list[tuple[Any, Any]]:
    """(call id, content) of every tool result, in order."""
    found = []
    for message in messages:
        if message.get("role") == "tool":
            found.append((message.get("tool_call_id"), message.get("content")))
        elif isinstance(message.get("content"), list):
            found += [
                (block.get("tool_use_id"), block.get("content"))
                for block in message["content"]
                if isinstance(block, dict) and block.get("type") == "tool_result"
            ]
    return found


# --- the strings and numbers the spec fixes ------------------------------------------------------


def test_marker_format() -> None:
    assert marker("bash", 1204) == "[truncated: bash result, 1204 chars]"


def test_list_content_length_is_its_json_text_35() -> None:
    assert content_length([{"type": "text", "text": "中文 ok"}]) == 35


@pytest.mark.parametrize(
    ("value", "length"),
    [
        ("", 0),
        ("x" * 1204, 1204),
        ("中文", 2),
        ("😀👍🏽", 3),  # code points, not UTF-16 units or bytes
        (None, 0),
        ([], 2),
        ({"a": 1}, 8),
    ],
)
def test_content_length_counts_code_points(value: Any, length: int) -> None:
    assert content_length(value) == length


def golden_conversation() -> list[dict]:
    return [
        {"role": "system", "content": "你是助手"},
        {"role": "user", "content": "请读取配置"},
        *anthropic_turn("t1", "bash", "x" * 1204),
        *anthropic_turn("t2", "read_file", [{"type": "text", "text": "中文 ok"}], is_error=True),
        *anthropic_turn("t3", "grep", None),
        *openai_turn([("c1", "get_reservation", "结果"), ("c2", "search", "[truncated: old]")]),
        *anthropic_turn("t4", "bash", "recent 1"),
        *anthropic_turn("t5", "bash", "recent 2"),
        *openai_turn([("c3", "search", "recent 3")]),
        {"role": "user", "content": "继续"},
    ]


def test_micro_golden(golden) -> None:
    """The default profile marks only what the marker makes shorter (issue 21.6)."""
    messages = golden_conversation()
    outcome = micro_in_place(messages)
    assert outcome == MicroResult(truncated=1, chars_removed=1204 - 36)
    golden("micro.json", json.dumps(messages, ensure_ascii=False, indent=1) + "\n")
    assert results(messages)[:5] == [
        "[truncated: bash result, 1204 chars]",
        [{"type": "text", "text": "中文 ok"}],  # 35 chars: its marker would take 39
        None,  # 0 chars: its marker would take 33
        "结果",
        "[truncated: old]",  # already a marker: left as it is
    ]


def test_micro_golden_bareagent(golden) -> None:
    """The BareAgent profile is the reference's: every old result of a turn of
    ``tool_result`` blocks gets the marker, longer or not (its turns are only those: t3 is one
    of the three newest, and OpenAI ``tool`` messages stay)."""
    messages = golden_conversation()
    outcome = micro_in_place(messages, compat=True)
    assert outcome == MicroResult(truncated=2, chars_removed=1204 - 36 + 35 - 39)
    golden("micro_bareagent.json", json.dumps(messages, ensure_ascii=False, indent=1) + "\n")
    assert results(messages)[:4] == [
        "[truncated: bash result, 1204 chars]",
        "[truncated: read_file result, 35 chars]",  # 39 characters in place of 35
        None,
        "结果",
    ]


def test_a_marker_never_replaces_a_result_it_is_not_shorter_than() -> None:
    """Issue 21.6: with --min-chars 0 a 2-character result became a 34-character marker."""
    short = [*anthropic_turn("a", "bash", "ok"), *anthropic_turn("b", "bash", "new")]
    assert micro_in_place(short, keep_recent=1) == MicroResult(0, 0)
    assert results(short)[0] == "ok"
    edge = len(marker("bash", 40))  # 34: a result of 34 chars stays, of 35 gets it
    for chars, marked in ((edge, False), (edge + 1, True)):
        messages = [*anthropic_turn("a", "bash", "y" * chars), *anthropic_turn("b", "bash", "z")]
        assert micro_in_place(messages, keep_recent=1).truncated == marked


# --- which turns ---------------------------------------------------------------------------------


def output(number: int) -> str:
    """A tool's output long enough for the marker to shorten it (40 characters)."""
    return f"output {number}: " + "ok " * 10


def five_turns() -> list[dict]:
    messages: list[dict] = [{"role": "user", "content": "go"}]
    for number in range(5):
        messages += anthropic_turn(f"t{number}", "bash", output(number))
    return messages


@pytest.mark.parametrize(
    ("keep_recent", "kept"),
    [(3, 3), (1, 1), (5, 5), (99, 5), (0, 0), (-1, 0), (-100, 0)],
)
def test_keep_recent(keep_recent: int, kept: int) -> None:
    messages = five_turns()
    outcome = micro_in_place(messages, keep_recent=keep_recent)
    contents = results(messages)
    assert outcome.truncated == 5 - kept
    assert all(is_marker(text) for text in contents[: 5 - kept])
    assert contents[5 - kept :] == [output(n) for n in range(5 - kept, 5)]


def test_default_keeps_three_turns() -> None:
    messages = five_turns()
    micro_in_place(messages)
    assert results(messages) == [
        "[truncated: bash result, 40 chars]",
        "[truncated: bash result, 40 chars]",
        output(2),
        output(3),
        output(4),
    ]


def test_a_run_of_tool_messages_is_one_turn() -> None:
    messages = [
        *openai_turn([("a", "x", "1" * 40), ("b", "y", "2" * 50), ("c", "z", "3" * 60)]),
        *openai_turn([("d", "x", "4")]),
    ]
    micro_in_place(messages, keep_recent=1)
    assert results(messages) == [
        "[truncated: x result, 40 chars]",
        "[truncated: y result, 50 chars]",
        "[truncated: z result, 60 chars]",
        "4",
    ]


def test_a_message_with_several_results_is_one_turn_and_all_go() -> None:
    messages = [
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "a", "name": "read", "input": {}},
                {"type": "tool_use", "id": "b", "name": "grep", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "a" * 40},
                {"type": "text", "text": "and also"},
                {"type": "tool_result", "tool_use_id": "b", "content": "b" * 50},
            ],
        },
        *anthropic_turn("c", "bash", "kept"),
    ]
    assert tool_result_turns(messages) == [[1], [3]]
    micro_in_place(messages, keep_recent=1)
    assert messages[1]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "a",
            "content": "[truncated: read result, 40 chars]",
        },
        {"type": "text", "text": "and also"},
        {
            "type": "tool_result",
            "tool_use_id": "b",
            "content": "[truncated: grep result, 50 chars]",
        },
    ]


def test_tool_result_in_any_role_counts() -> None:
    messages = [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "n"}]},
        {
            "role": "custom",
            "content": [{"type": "tool_result", "tool_use_id": "a", "content": "x" * 40}],
        },
    ]
    micro_in_place(messages, keep_recent=0)
    assert results(messages) == ["[truncated: n result, 40 chars]"]


# --- names ---------------------------------------------------------------------------------------


def test_unknown_id_gives_unknown() -> None:
    messages = [
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "nope", "content": "x" * 40}],
        },
        {"role": "tool", "tool_call_id": "nobody", "content": "y" * 40},
        {"role": "user", "content": [{"type": "tool_result", "content": "no id at all" * 4}]},
    ]
    micro_in_place(messages, keep_recent=0)
    assert [MARKER.fullmatch(text)["tool"] for text in results(messages)] == ["unknown"] * 3


def test_ids_that_are_not_strings_give_unknown() -> None:
    # regression: an unhashable tool_use_id used to raise TypeError
    messages = [
        {"role": "assistant", "content": [{"type": "tool_use", "id": [1], "name": "bash"}]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": [1], "content": "x" * 40}],
        },
        {"role": "tool", "tool_call_id": {"k": 1}, "content": "y" * 40},
        {"role": "tool", "tool_call_id": 7, "content": "z" * 40},
    ]
    assert micro_in_place(messages, keep_recent=0).truncated == 3
    assert results(messages) == ["[truncated: unknown result, 40 chars]"] * 3


def test_repeated_id_last_one_wins() -> None:
    messages = [
        *anthropic_turn("same", "first", "one " * 10),
        {"role": "assistant", "tool_calls": [{"id": "same", "function": {"name": "last"}}]},
        *anthropic_turn("other", "x", "kept"),
    ]
    assert tool_names(messages)["same"] == "last"
    micro_in_place(messages, keep_recent=1)
    assert results(messages)[0] == "[truncated: last result, 40 chars]"


def test_tool_name_that_is_not_a_string_gives_unknown() -> None:
    messages = anthropic_turn("a", None, "x" * 40)  # type: ignore[arg-type]
    micro_in_place(messages, keep_recent=0)
    assert results(messages) == ["[truncated: unknown result, 40 chars]"]


# --- what stays ----------------------------------------------------------------------------------


def test_only_the_content_key_is_replaced() -> None:
    block_extra = {"is_error": True, "cache_control": {"type": "ephemeral"}, "zz": [1]}
    messages = [
        *anthropic_turn("t", "bash", "secret output " * 4, **block_extra),
        *openai_turn([("c", "search", "more output " * 4)]),
    ]
    messages[-1].update({"name": "search", "extra": {"k": "v"}})
    before = copy.deepcopy(messages)
    micro_in_place(messages, keep_recent=0)
    block = messages[1]["content"][0]
    assert block == {
        "type": "tool_result",
        "tool_use_id": "t",
        "content": "[truncated: bash result, 56 chars]",
        **block_extra,
    }
    assert list(block) == list(before[1]["content"][0])  # key order kept
    assert messages[-1] == {
        "role": "tool",
        "tool_call_id": "c",
        "content": "[truncated: search result, 48 chars]",
        "name": "search",
        "extra": {"k": "v"},
    }
    assert messages[0] == before[0] and messages[2] == before[2]


def test_marker_is_idempotent_and_never_recounted() -> None:
    messages = five_turns()
    micro_in_place(messages, keep_recent=0)
    once = copy.deepcopy(messages)
    assert micro_in_place(messages, keep_recent=0) == MicroResult(0, 0)
    assert messages == once


def test_exclude_tool_and_min_chars() -> None:
    messages = [
        *anthropic_turn("a", "read_file", "r" * 50),
        *anthropic_turn("b", "bash", "b" * 50),
        *anthropic_turn("c", "bash", "short"),
        *anthropic_turn("d", "bash", None),
    ]
    micro_in_place(messages, keep_recent=0, exclude_tools={"read_file"}, min_chars=6)
    assert results(messages) == [
        "r" * 50,
        "[truncated: bash result, 50 chars]",
        "short",
        None,  # 0 chars is shorter than 6
    ]


def test_empty_and_null_results_stay_but_for_the_bareagent_profile() -> None:
    messages = [*anthropic_turn("a", "x", ""), *anthropic_turn("b", "y", None)]
    micro_in_place(messages, keep_recent=0)
    assert results(messages) == ["", None]
    micro_in_place(messages, keep_recent=0, compat=True)
    assert results(messages) == ["[truncated: x result, 0 chars]", "[truncated: y result, 4 chars]"]


def test_result_counts() -> None:
    messages = [*anthropic_turn("a", "x", "1234567890" * 10), *anthropic_turn("b", "y", "kept")]
    outcome = micro_in_place(messages, keep_recent=1)
    assert outcome.truncated == 1
    assert outcome.chars_removed == 100 - len("[truncated: x result, 100 chars]")


def test_nothing_to_do() -> None:
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert micro_in_place(messages, keep_recent=0) == MicroResult(0, 0)
    assert micro_in_place([], keep_recent=0) == MicroResult(0, 0)


# --- properties ----------------------------------------------------------------------------------


@settings(max_examples=200)  # a key property: more examples
@given(data=st.data())
def test_micro_changes_nothing_but_tool_result_contents(data: st.DataObject) -> None:
    messages = data.draw(conversations())
    keep_recent = data.draw(st.integers(-2, 6))
    stale = data.draw(st.booleans())  # by age alone: SPEC §2's markers exactly
    before = copy.deepcopy(messages)
    micro_in_place(messages, keep_recent=keep_recent, stale=stale)
    assert_only_tool_results_changed(before, messages, superseded=stale)
    systems = [m for m in messages if m.get("role") == "system"]
    assert systems == [m for m in before if m.get("role") == "system"]


@settings(max_examples=200)  # a key property: more examples
@given(data=st.data())
def test_micro_is_idempotent(data: st.DataObject) -> None:
    messages = data.draw(conversations())
    keep_recent = data.draw(st.integers(-2, 6))
    exclude = data.draw(st.sets(st.sampled_from(["bash", "Grep", "工具"]), max_size=2))
    min_chars = data.draw(st.sampled_from([0, 0, 5, 40]))
    micro_in_place(messages, keep_recent, exclude, min_chars)
    once = copy.deepcopy(messages)
    assert micro_in_place(messages, keep_recent, exclude, min_chars).truncated == 0
    assert messages == once


SAME_FILE_TWICE = [  # read twice in one turn: the first read is a duplicate of the second
    {"role": "user", "content": ""},
    {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"file_path": "0"}},
            {"type": "tool_use", "id": "t2", "name": "read_file", "input": {"file_path": "0"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "0" * 64},
            {"type": "tool_result", "tool_use_id": "t2", "content": ""},
        ],
    },
]


@given(conversations(), st.integers(1, 6))
@example(SAME_FILE_TWICE, 1)
def test_the_newest_turns_are_kept_whole(messages: list[dict], keep_recent: int) -> None:
    """Whole, but for a result a later one repeats (issue 35: a duplicate, not context), which
    gets the marker that names the later one."""
    before = copy.deepcopy(messages)
    duplicates = analyse(before).duplicates()
    micro_in_place(messages, keep_recent=keep_recent)
    for turn in tool_result_turns(before)[-keep_recent:]:
        for index in turn:
            for (call_id, was), (_, now) in zip(
                result_holders([before[index]]), result_holders([messages[index]]), strict=True
            ):
                repeated = call_id in duplicates and now["content"] == duplicates[call_id].marker()
                assert now == was or repeated
            assert {k: v for k, v in messages[index].items() if k != "content"} == {
                k: v for k, v in before[index].items() if k != "content"
            }


@given(conversations())
def test_keep_recent_zero_leaves_no_result_the_marker_would_shorten(messages: list[dict]) -> None:
    names = tool_names(messages)
    micro_in_place(messages, keep_recent=0)
    for call_id, value in result_ids_and_contents(messages):
        marked = marker(names.get(call_id, "unknown"), content_length(value))
        assert is_marker(value) or len(marked) >= content_length(value)


@pytest.mark.parametrize("content", [True, {"rows": 2, "ok": None}, 12.5, "x"])
@pytest.mark.parametrize("compat", [False, True])
def test_any_json_value_is_a_tool_result(content: Any, compat: bool) -> None:
    """SPEC §2 (issue 11.3): accepted, measured as its JSON text, truncated, serialized."""
    from compactor_core.compaction.bareagent import serialize as reference_serialize
    from compactor_core.compaction.estimate import estimate
    from compactor_core.compaction.serialize import serialize
    from compactor_core.conversation.formats import dumps, parse

    messages = anthropic_turn("t1", "db", content) + anthropic_turn("t2", "db", "new")
    conversation = parse(dumps(messages), "f.json")
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    assert f"[tool_result:db] {text}" in (reference_serialize if compat else serialize)(messages)
    if not compat:
        as_text = anthropic_turn("t1", "db", text) + anthropic_turn("t2", "db", "new")
        assert estimate(messages) == estimate(as_text)
    micro_in_place(conversation.messages, keep_recent=1, compat=compat)
    expected = f"[truncated: db result, {len(text)} chars]" if compat else content  # too short
    assert results(conversation.messages)[0] == expected


def test_micro_compact_returns_a_new_list_and_leaves_its_input_alone() -> None:
    from compactor_core.settings import Settings

    messages = five_turns()
    before = copy.deepcopy(messages)
    compacted, outcome = micro_compact(messages, Settings(keep_recent=1))
    assert messages == before
    assert outcome.truncated == 4 and results(compacted)[:4] != results(messages)[:4]
    assert compacted[0] is messages[0]  # what does not change is shared, not copied
    assert compacted[-1] is messages[-1]  # the kept turn too
