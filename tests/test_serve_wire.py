"""`ctxpack serve`'s core: each API's request body through the policy of `ctxpack auto`.

What must hold: only old tool results change (micro) or the history before the pending turn
becomes a summary (full); everything else comes back identical, and a body the policy cannot
read or would break goes out byte for byte.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import serve_bodies
from hypothesis import given
from strategies import envelopes, tool_pairs

from compactor_core.compaction.status import Status
from compactor_core.conversation.formats import MAX_DEPTH, load_body
from compactor_core.errors import InputError
from compactor_core.serve.compaction import AS_IS, COMPACTED, UNCHANGED, Compactor, Forwarded
from compactor_core.serve.wire import CHAT, MESSAGES, RESPONSES, WIRES, wire_for
from compactor_core.settings import Settings

MARKER = re.compile(r"\[truncated: (.+) result, (\d+) chars\]")

# These tests are of the adapters (what a request's body becomes and what it keeps), with the
# policy that changes the most: every old result a marker on every call. serve's own default is
# the cache-aware policy (tests/test_serve_replay.py).
EVERY_TURN = Settings(policy="every-turn")


def compact(route: str, body: Any, settings: Settings | None = None) -> Forwarded:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return Compactor(settings or EVERY_TURN).compact(WIRES[route], data)


def sent(forwarded: Forwarded) -> dict[str, Any]:
    return json.loads(forwarded.body)


def others(body: dict[str, Any], key: str) -> dict[str, Any]:
    return {name: value for name, value in body.items() if name != key}


# --- Anthropic Messages --------------------------------------------------------------------------


def test_messages_old_results_become_markers_and_nothing_else_changes() -> None:
    body = serve_bodies.anthropic(turns=5)
    forwarded = compact(MESSAGES, body)
    out = sent(forwarded)
    assert forwarded.report.outcome == COMPACTED
    assert forwarded.report.truncated == 2  # 5 turns, the newest 3 kept
    assert others(out, "messages") == others(body, "messages")  # system, tools, thinking, ...
    assert len(out["messages"]) == len(body["messages"])
    for before, after in zip(body["messages"], out["messages"], strict=True):
        for old, new in zip(before["content"], after["content"], strict=True):
            if old["type"] != "tool_result" or old["tool_use_id"] not in ("toolu_00", "toolu_01"):
                assert new == old
                continue
            assert {**new, "content": None} == {**old, "content": None}
            assert MARKER.fullmatch(new["content"]).groups() == ("Bash", str(len(old["content"])))
    assert forwarded.report.tokens_out < forwarded.report.tokens_in


def test_messages_full_compaction_keeps_the_pending_turn_with_its_thinking() -> None:
    body = serve_bodies.anthropic(turns=5, pending_results=True)
    forwarded = compact(MESSAGES, body, Settings(threshold=500, policy="every-turn"))
    out = sent(forwarded)
    assert forwarded.report.summary == Status.COMPACTED
    assert others(out, "messages") == others(body, "messages")
    assert (
        out["messages"][-2:] == body["messages"][-2:]
    )  # the calls (thinking, signature) + results
    assert out["messages"][0]["content"].startswith("[Context Compressed]\n")
    assert len(out["messages"]) == 3


def test_messages_a_cache_marker_inside_a_tool_result_stays() -> None:
    body = serve_bodies.anthropic(turns=5)
    marked = body["messages"][2]["content"][0]  # the oldest result
    marked["content"] = [
        {"type": "text", "text": "long " * 500, "cache_control": {"type": "ephemeral"}}
    ]
    out = sent(compact(MESSAGES, body))
    assert out["messages"][2] == body["messages"][2]
    assert MARKER.fullmatch(out["messages"][4]["content"][0]["content"])  # the next one: truncated


def test_a_body_the_policy_leaves_alone_goes_out_byte_for_byte() -> None:
    data = json.dumps(serve_bodies.anthropic(turns=2), indent=3).encode()
    forwarded = compact(MESSAGES, data)
    assert forwarded.report.outcome == UNCHANGED
    assert forwarded.body is data


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"not json{", "invalid JSON"),
        (b'[{"role": "user", "content": "hi"}]', "not a JSON object"),
        (b'{"messages": "hi"}', '"messages" must be an array'),
        (b'{"messages": [{"content": "hi"}]}', '"role" is missing'),
        (b'{"model": "m"}', "no history"),
        (b"\xff\xfe", "invalid UTF-8"),
    ],
)
def test_a_body_it_cannot_read_goes_out_as_it_came(data: bytes, reason: str) -> None:
    forwarded = compact(MESSAGES, data)
    assert forwarded.body is data
    assert forwarded.report.outcome == AS_IS
    assert reason in forwarded.report.reason


def test_a_result_that_would_change_the_last_turn_goes_out_as_it_came() -> None:
    body = serve_bodies.anthropic(turns=5)
    body["messages"].append({"role": "assistant", "content": "Prefilled: the answer is"})
    data = json.dumps(body).encode()
    forwarded = compact(
        MESSAGES, data, Settings(threshold=500, policy="every-turn")
    )  # would summarize everything
    assert forwarded.body is data
    assert forwarded.report.reason == "the policy would change the last turn"


@given(envelopes())
def test_any_conversation_comes_out_sound(body: dict[str, Any]) -> None:
    for settings in (EVERY_TURN, Settings(keep_recent=1, threshold=40, policy="every-turn")):
        forwarded = compact(MESSAGES, body, settings)
        if forwarded.report.outcome == AS_IS:
            assert forwarded.body == json.dumps(body).encode()
            continue
        out = sent(forwarded)
        assert others(out, "messages") == others(body, "messages")
        if body["messages"]:
            assert out["messages"][-1] == body["messages"][-1]
        answered = {call for call, _, answer in tool_pairs(body["messages"]) if answer >= 0}
        for call, _, answer in tool_pairs(out["messages"]):
            assert answer >= 0 or call not in answered, f"{call} lost its result"


# --- OpenAI Chat Completions ---------------------------------------------------------------------


def test_chat_developer_messages_stay_developer_messages() -> None:
    body = serve_bodies.chat(turns=5)
    out = sent(compact(CHAT, body))
    assert out["messages"][0] == {"role": "developer", "content": "Answer tersely."}
    markers = [
        m["content"] for m in out["messages"] if m["role"] == "tool" and MARKER.match(m["content"])
    ]
    assert len(markers) == 4  # two turns of two parallel calls
    full = sent(compact(CHAT, body, Settings(threshold=500, policy="every-turn")))
    assert full["messages"][0] == {"role": "developer", "content": "Answer tersely."}
    assert full["messages"][1]["content"].startswith("[Context Compressed]\n")
    assert full["messages"][-1] == body["messages"][-1]
    assert others(full, "messages") == others(body, "messages")


# --- OpenAI Responses ----------------------------------------------------------------------------


def test_responses_only_old_outputs_change_and_every_other_item_is_identical() -> None:
    body = serve_bodies.responses(turns=5)
    forwarded = compact(RESPONSES, body)
    out = sent(forwarded)
    assert forwarded.report.truncated == 4
    assert others(out, "input") == others(body, "input")
    assert len(out["input"]) == len(body["input"])
    for before, after in zip(body["input"], out["input"], strict=True):
        old_output = before["type"] == "function_call_output" and before["call_id"] < "call_2"
        if not old_output:
            assert after == before
            continue
        assert list(after) == list(before)  # the same keys in the same order
        assert {**after, "output": None} == {**before, "output": None}
        assert MARKER.fullmatch(after["output"]).groups() == (
            "exec_command",
            str(len(before["output"])),
        )


def test_responses_full_compaction_keeps_context_and_the_pending_calls_with_their_reasoning() -> (
    None
):
    body = serve_bodies.responses(turns=5, pending_results=True)
    forwarded = compact(RESPONSES, body, Settings(threshold=500, policy="every-turn"))
    out = sent(forwarded)
    assert forwarded.report.summary == Status.COMPACTED
    items = out["input"]
    assert items[:2] == body["input"][:2]  # the developer message and the environment context
    summary = items[2]
    assert summary["role"] == "user" and summary["type"] == "message"
    assert summary["content"][0]["type"] == "input_text"
    assert summary["content"][0]["text"].startswith("[Context Compressed]\n")
    pending = body["input"][-6:]  # reasoning, message, two calls, two outputs
    assert items[3:] == pending
    assert pending[0]["encrypted_content"] == "gAAAA4secret"


def test_responses_an_output_that_is_not_text_is_never_replaced() -> None:
    body = serve_bodies.responses(turns=5)
    screenshot = {"type": "computer_screenshot", "image_url": "data:image/png;base64,iVB"}
    body["input"][7]["output"] = screenshot  # an old output
    out = sent(compact(RESPONSES, body))
    assert out["input"][7] == body["input"][7]


def test_responses_input_as_a_string_goes_out_as_it_came() -> None:
    data = json.dumps({"model": "m", "input": "hello"}).encode()
    forwarded = compact(RESPONSES, data)
    assert (forwarded.body, forwarded.report.reason) == (data, "no history")


@pytest.mark.parametrize(
    ("method", "path", "route"),
    [
        ("POST", "/v1/messages", MESSAGES),
        ("POST", "/api/v1/chat/completions", CHAT),
        ("POST", "/v1/responses", RESPONSES),
        ("POST", "/v1/messages/count_tokens", None),
        ("GET", "/v1/responses", None),
        ("POST", "/v1/responses/compact", None),
        ("POST", "/v1/models", None),
    ],
)
def test_which_requests_are_compacted(method: str, path: str, route: str | None) -> None:
    assert wire_for(method, path) is (WIRES[route] if route else None)


def _nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("outside", [0, MAX_DEPTH + 5])  # a key besides the history, nested so
@pytest.mark.parametrize("inside", [MAX_DEPTH - 4, MAX_DEPTH - 3, MAX_DEPTH - 2, MAX_DEPTH + 3])
def test_a_body_walked_once_reads_its_history_as_one_walked_again(
    inside: int, outside: int
) -> None:
    """``load_body``'s walk spares the history's own only where that one would find it fine."""
    message = {"role": "user", "content": [{"type": "text", "text": "hi", "x": _nested(inside)}]}
    data = json.dumps({"metadata": _nested(outside), "messages": [message]}).encode()
    body, walked = load_body(data, "request")

    def read(walked: bool) -> Any:
        try:
            return WIRES[MESSAGES].conversation(body, "request", walked)
        except InputError as error:
            return str(error)

    assert read(walked) == read(False)
    refused = isinstance(read(False), str)
    assert walked == (not refused and outside == 0)  # spared where nothing was too deep
    assert refused == (inside > MAX_DEPTH - 3)  # below the message: its content and a block
