"""Recall end to end (issue 35): the real Claude Code goes through ``ctxpack serve`` with
``ctxpack mcp`` as its MCP server; serve gives old results markers with a recall handle (the
request offers the model ``mcp__ctxpack__recall``), keeps their originals, and the model — the
test model server, which calls the tool with the handle it finds in the request — gets the
original back, whole, through the MCP server."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from agents.claude import ClaudeHome, run_claude
from agents.script import Reply, Script, ToolCall
from agents.server import ModelServer
from serve_support import CTXPACK, Serving

RECALL_TOOL = "mcp__ctxpack__recall"
# Claude Code defers MCP tools behind its tool search unless told not to
EAGER = {"ENABLE_TOOL_SEARCH": "false"}
HANDLE = re.compile(r"; recall ([0-9a-f]{12})\]")


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
    serve_args = ("--policy", "every-turn", "--keep-recent", "1")
    with ModelServer(recalling_model()) as model, Serving(model.url, *serve_args, env=env) as proxy:
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
    serve_args = ("--policy", "every-turn", "--keep-recent", "1")
    with (
        ModelServer(Script(replies=replies, reacting=react)) as model,
        Serving(model.url, *serve_args, env=env) as proxy,
    ):
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
