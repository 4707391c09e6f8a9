"""The test model server bills like the providers (issue 31): the usage of its replies is what
the provider's cache rules make of the bodies it receives, and the real Claude Code and Codex
record it as it came, so that the replay's receipt of their session files is what it billed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from agents.billing import Billing
from agents.claude import ClaudeHome, run_claude
from agents.codex import CodexHome, run_codex
from agents.script import Reply, Script, ToolCall
from agents.server import ModelServer

from compactor_core.agents.claude_code import ClaudeCode
from compactor_core.agents.codex import Codex
from compactor_core.replay.cache_rules import Usage
from compactor_core.replay.receipt import usage_of
from compactor_core.session_files.usage import recorded_calls

MARK = {"type": "ephemeral"}
SYSTEM = [{"type": "text", "text": "You are a careful engineer. " * 400, "cache_control": MARK}]


def messages_body(turns: int, stream: bool = False) -> dict[str, Any]:
    """A conversation of ``turns`` user turns, its last block marked, as Claude Code marks it:
    each body holds the one before it whole."""
    messages: list[dict[str, Any]] = []
    for number in range(turns):
        if number:
            messages.append({"role": "assistant", "content": f"done {number} " * 50})
        messages.append({"role": "user", "content": [{"type": "text", "text": f"step {number}"}]})
    messages[-1]["content"][0]["cache_control"] = MARK
    body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "system": SYSTEM}
    return {**body, "messages": messages, "stream": stream}


def sse_usage(text: str) -> list[dict[str, Any]]:
    """The usage of each ``message_start`` / ``message_delta`` event of a stream."""
    found = []
    for line in text.splitlines():
        if line.startswith("data: "):
            event = json.loads(line[len("data: ") :])
            if event["type"] == "message_start":
                found.append(event["message"]["usage"])
            elif event["type"] == "message_delta":
                found.append(event["usage"])
    return found


def test_messages_are_billed_at_their_breakpoints_in_the_reply_and_the_stream() -> None:
    with ModelServer(Script(), billing=Billing()) as server, httpx.Client() as client:
        first = client.post(server.url + "/v1/messages", json=messages_body(1)).json()["usage"]
        streamed = client.post(server.url + "/v1/messages", json=messages_body(2, stream=True))
        start, delta = sse_usage(streamed.text)
        bills = [usage for _, usage in server.billing.bills]
    assert first["cache_read_input_tokens"] == 0
    assert first["cache_creation_input_tokens"] == bills[0].written > 2000
    assert first["input_tokens"] == 0  # nothing after the last breakpoint
    # the second request reads the whole first one: its last breakpoint is 2 blocks back
    assert start["cache_read_input_tokens"] == bills[0].tokens
    assert start["cache_creation_input_tokens"] == bills[1].written > 0
    assert start["cache_creation"] == {
        "ephemeral_5m_input_tokens": bills[1].written,
        "ephemeral_1h_input_tokens": 0,
    }
    assert {key: delta[key] for key in start if key != "output_tokens"} == {
        key: start[key] for key in start if key != "output_tokens"
    }


def test_a_body_without_breakpoints_is_not_cached() -> None:
    body = messages_body(1)
    body["system"] = [{"type": "text", "text": SYSTEM[0]["text"]}]
    body["messages"][-1]["content"][0].pop("cache_control")
    with ModelServer(Script(), billing=Billing()) as server, httpx.Client() as client:
        for _ in range(2):
            usage = client.post(server.url + "/v1/messages", json=body).json()["usage"]
            assert usage["cache_read_input_tokens"] == usage["cache_creation_input_tokens"] == 0


def test_chat_completions_and_responses_read_openais_prefix_cache() -> None:
    history = [{"role": "user", "content": "read the logs " * 600}]
    longer = [*history, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "go"}]
    with ModelServer(Script(), billing=Billing()) as server, httpx.Client() as client:
        url = server.url + "/v1/chat/completions"
        chat = {"model": "m", "tools": [{"type": "function"}]}
        client.post(url, json={**chat, "messages": history})
        usage = client.post(url, json={**chat, "messages": longer}).json()["usage"]
        cached = usage["prompt_tokens_details"]["cached_tokens"]
        assert cached >= 1024 and (cached - 1024) % 128 == 0
        assert cached < usage["prompt_tokens"]
        items = [{"type": "message", "role": "user", "content": "read the logs " * 600}]
        client.post(server.url + "/v1/responses", json={"model": "m", "input": items})
        replied = client.post(server.url + "/v1/responses", json={"model": "m", "input": items})
        completed = [
            json.loads(line[len("data: ") :])
            for line in replied.text.splitlines()
            if line.startswith("data: ") and "response.completed" in line
        ]
        details = completed[0]["response"]["usage"]["input_tokens_details"]
        assert details["cached_tokens"] >= 1024


def test_claude_code_records_the_usage_the_server_billed(tmp_path: Path) -> None:
    """The real Claude Code puts its own breakpoints in its requests; what the server billed of
    its turns is what the session file records, request for request."""
    project = tmp_path / "project"
    project.mkdir()
    calls = [Reply(calls=(ToolCall("Bash", {"command": f"seq {n * 300}"}),)) for n in (1, 2, 3)]
    script = Script([*calls, Reply(text="All done.")])
    with ModelServer(script, billing=Billing()) as server:
        home = ClaudeHome(tmp_path / "claude")
        run = run_claude(home, project, "count for me", server).check()
        turns = [
            usage
            for request, (_, usage) in zip(server.model_requests, server.billing.bills, strict=True)
            if request.offers_tools
        ]
    with home.session_file(project, run.session_id).open("rb") as handle:
        recorded = recorded_calls(handle, ClaudeCode())
    assert [usage_of(call) for call in recorded] == turns
    assert sum(turns, Usage()).read > 0  # its breakpoints were read back


def test_codex_records_the_usage_the_server_billed(tmp_path: Path) -> None:
    """The real Codex counts what the Responses API reports: its token_count totals are the
    server's bills, request for request, the cached tokens among them."""
    project = tmp_path / "project"
    project.mkdir()
    calls = [Reply(calls=(ToolCall("shell", {"command": ["seq", str(n * 300)]}),)) for n in (1, 2)]
    with ModelServer(Script([*calls, Reply(text="All done.")]), billing=Billing()) as server:
        home = CodexHome(tmp_path / "codex")
        run = run_codex(home, project, "count for me", server).check()
        bills = [usage for path, usage in server.billing.bills if path == "/v1/responses"]
    with home.session_file(run.session_id).open("rb") as handle:
        recorded = recorded_calls(handle, Codex())
    assert [(call.cache_read, call.tokens) for call in recorded] == [
        (usage.read, usage.tokens) for usage in bills
    ]
    assert sum(call.cache_read for call in recorded) > 0
