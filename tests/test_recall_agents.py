"""Recall end to end (issue 35): the real Claude Code goes through ``ctxpack serve`` with
``ctxpack mcp`` as its MCP server; serve gives old results markers with a recall handle (the
request offers the model ``mcp__ctxpack__recall``), keeps their originals, and the model — the
test model server, which calls the tool with the handle it finds in the request — gets the
original back, whole, through the MCP server."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agents.claude import ClaudeHome, run_claude
from agents.script import DONE, Reply, Script, ToolCall
from agents.server import ModelServer
from serve_support import CTXPACK, Serving

RECALL_TOOL = "mcp__ctxpack__recall"
# Claude Code defers MCP tools behind its tool search unless told not to
EAGER = {"ENABLE_TOOL_SEARCH": "false"}
HANDLE = re.compile(r"; recall ([0-9a-f]{12})\]")


@contextmanager
def recalling(script: Script, env: dict[str, str]) -> Iterator[tuple[ModelServer, Serving]]:
    """The model server playing ``script``, and serve in front of it sharing the store of
    originals with ``ctxpack mcp`` (``env``); every old result a marker at once."""
    with (
        ModelServer(script) as model,
        Serving(model.url, "--policy", "every-turn", "--keep-recent", "1", env=env) as proxy,
    ):
        yield model, proxy


def _texts(body: Any) -> str:
    return json.dumps(body)


def recalling_model() -> Script:
    """Three Bash calls with long outputs; then, the first time a request holds a marker with a
    handle, a call of the recall tool with that handle; then done."""
    asked: list[str] = []

    def react(body: Any) -> Reply | None:
        if asked or not isinstance(body, dict) or not body.get("tools"):
            return None
        found = HANDLE.search(_texts(body.get("messages")))
        if found is None:
            return None
        asked.append(found.group(1))
        return Reply(
            text="Let me look again.", calls=(ToolCall(RECALL_TOOL, {"handle": asked[0]}),)
        )

    replies = [
        Reply(text=f"Step {n}.", calls=(ToolCall("Bash", {"command": f"seq {n} 3 6000"}),))
        for n in (1, 2, 3)
    ]
    return Script(replies=replies, reacting=react)


def test_claude_code_recalls_a_truncated_output_through_ctxpack_mcp(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = {"XDG_STATE_HOME": str(state)}
    mcp_config = tmp_path / "mcp.json"
    server_entry = {"command": str(CTXPACK), "args": ["mcp"], "env": env}
    mcp_config.write_text(json.dumps({"mcpServers": {"ctxpack": server_entry}}))
    home, project = ClaudeHome(tmp_path / "claude"), tmp_path / "project"
    project.mkdir()
    with recalling(recalling_model(), env) as (model, proxy):
        extra = ["--mcp-config", str(mcp_config), "--strict-mcp-config"]
        run_claude(home, project, "count", proxy, extra=extra, more_env=EAGER, timeout=300).check()
        turns = [request.body for request in model.turn_requests]
    assert any(_offers(body, RECALL_TOOL) for body in turns)
    called = [_call_of(body, RECALL_TOOL) for body in turns]
    call_id, handle = next(found for found in called if found is not None)
    original = next(_result(body, call_id) for body in turns if _result(body, call_id))
    expected = "\n".join(str(n) for n in range(1, 6001, 3))  # seq 1 3 6000: the first output
    assert original.strip() == expected
    assert re.fullmatch(r"[0-9a-f]{12}", handle)


def _offers(body: dict[str, Any], name: str) -> bool:
    return any(tool.get("name") == name for tool in body.get("tools") or ())


def _call_of(body: dict[str, Any], name: str) -> tuple[str, str] | None:
    for message in body.get("messages") or ():
        for block in message.get("content") if isinstance(message.get("content"), list) else ():
            if block.get("type") == "tool_use" and block.get("name") == name:
                return block["id"], block["input"]["handle"]
    return None


def _result(body: dict[str, Any], call_id: str) -> str:
    for message in body.get("messages") or ():
        for block in message.get("content") if isinstance(message.get("content"), list) else ():
            if block.get("type") == "tool_result" and block.get("tool_use_id") == call_id:
                content = block.get("content")
                if isinstance(content, str):
                    return content
                return "".join(part.get("text", "") for part in content)
    return ""


def test_qwen_code_recalls_through_its_tool_bridge(tmp_path: Path) -> None:
    """Qwen Code defers MCP tools (listed by name, called through its ``tool_call`` bridge):
    serve sees ``mcp__ctxpack__recall`` listed, gives markers handles, and the original comes
    back through the bridge."""
    from agents.qwen import QwenHome, run_qwen

    state = tmp_path / "state"
    env = {"XDG_STATE_HOME": str(state)}
    servers = {"ctxpack": {"command": str(CTXPACK), "args": ["mcp"], "env": env}}
    asked: list[str] = []

    def react(body: Any) -> Reply | None:
        found = HANDLE.search(_texts(body.get("messages"))) if isinstance(body, dict) else None
        if asked or found is None or not body.get("tools"):
            return None
        asked.append(found.group(1))
        arguments = {"name": RECALL_TOOL, "arguments": {"handle": asked[0]}}
        return Reply(text="Looking again.", calls=(ToolCall("tool_call", arguments),))

    replies = [
        Reply(
            text=f"Step {n}.",
            calls=(ToolCall("run_shell_command", {"command": f"seq {n} 3 6000"}),),
        )
        for n in (1, 2, 3)
    ]
    home, project = QwenHome(tmp_path / "qwen"), tmp_path / "project"
    project.mkdir()
    with recalling(Script(replies=replies, reacting=react), env) as (model, proxy):
        run_qwen(home, project, "count", proxy, more_settings={"mcpServers": servers}, timeout=300)
        bodies = [request.body for request in model.turn_requests]
    assert asked, "no marker with a handle reached the model"
    expected = "\n".join(str(n) for n in range(1, 6001, 3))
    bridged = {  # the calls of the bridge, by id
        call["id"]
        for body in bodies
        for message in body.get("messages") or ()
        for call in message.get("tool_calls") or ()
        if call["function"]["name"] == "tool_call"
    }
    answers = [
        _as_text(message.get("content"))
        for body in bodies
        for message in body.get("messages") or ()
        if message.get("role") == "tool" and message.get("tool_call_id") in bridged
    ]
    assert bridged and any(expected in text for text in answers), [t[:400] for t in answers]


def _as_text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


def test_codex_recalls_through_its_mcp_namespace(tmp_path: Path) -> None:
    """Codex offers ``ctxpack mcp``'s tools as the Responses namespace ``mcp__ctxpack`` (once the
    server has started: its first request may go without it); the model calls ``recall`` in
    that namespace and the original comes back as the call's output."""
    from agents.codex import CodexHome, run_codex

    state = tmp_path / "state"
    env = {"XDG_STATE_HOME": str(state)}
    mcp_server = [
        "[mcp_servers.ctxpack]",
        f"command = {json.dumps(str(CTXPACK))}",
        'args = ["mcp"]',
        f"env = {{ XDG_STATE_HOME = {json.dumps(str(state))} }}",
    ]
    asked: list[str] = []

    def react(body: Any) -> Reply | None:
        if asked:
            return DONE  # the recall's output is in this request
        if not isinstance(body, dict) or not _offers_namespace(body, "mcp__ctxpack"):
            return None
        found = HANDLE.search(_texts(body.get("input")))
        if found is None:
            return None
        asked.append(found.group(1))
        recall = ToolCall("recall", {"handle": asked[0]}, namespace="mcp__ctxpack")
        return Reply(text="Looking again.", calls=(recall,))

    # steps of a second or more, until the MCP server is up (Codex offers its tools from then
    # on) and a marker with a handle has reached the model
    replies = [
        Reply(
            text=f"Step {n}.",
            calls=(ToolCall("exec_command", {"cmd": f"sleep 1; seq {n} 3 6000"}),),
        )
        for n in range(1, 16)
    ]
    home, project = CodexHome(tmp_path / "codex"), tmp_path / "project"
    project.mkdir()
    with recalling(Script(replies=replies, reacting=react), env) as (model, proxy):
        run_codex(home, project, "count", proxy, more_config=mcp_server, timeout=300).check()
        bodies = [request.body for request in model.model_requests]
    assert asked, "no marker with a handle reached the model"
    items = [item for body in bodies if isinstance(body, dict) for item in body.get("input") or ()]
    recalls = {item["call_id"] for item in items if item.get("name") == "recall"}
    answers = [
        _as_text(item.get("output"))
        for item in items
        if item.get("type") == "function_call_output" and item.get("call_id") in recalls
    ]
    steps = {"\n".join(str(k) for k in range(n, 6001, 3)) for n in range(1, 16)}
    assert any(step in text for text in answers for step in steps), [t[:300] for t in answers]


def _offers_namespace(body: dict[str, Any], name: str) -> bool:
    return any(
        tool.get("type") == "namespace" and tool.get("name") == name
        for tool in body.get("tools") or ()
    )
