"""``ctxpack mcp``'s protocol (issue 35): the core's server answering each message as the MCP
spec and JSON-RPC 2.0 say, in process; and the real process over its stdio, through the official
SDK's client (the reference) and with the input no client should send."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers import CTXPACK
from hypothesis import example, given
from hypothesis import strategies as st

from compactor_core.errors import InputUnreadable
from compactor_core.recall.mcp import PROTOCOL_VERSIONS, Server, Tool, ToolFailed
from compactor_core.recall.store import OriginalsStore
from compactor_core.recall.tools import INSTRUCTIONS, ctxpack_tools


def echo(text: str) -> str:
    if text == "fail":
        raise ToolFailed("echo: told to fail")
    if text == "missing":
        raise InputUnreadable("missing.json: no such file")
    if text == "bug":
        raise KeyError("a bug")
    return text


SERVER = Server(
    "test",
    "1.2",
    "use echo",
    (
        Tool("echo", "says it back", echo, {"text": "what to say"}),
        Tool("count", "a count", lambda: {"n": 1}, output_schema={"type": "object"}),
    ),
)


def ask(method: str, params: Any = None, ident: Any = 1, server: Server = SERVER) -> Any:
    """The server's reply to one request, parsed."""
    request = {"jsonrpc": "2.0", "id": ident, "method": method}
    if params is not None:
        request["params"] = params
    return reply_to(json.dumps(request).encode(), server)


def reply_to(line: bytes, server: Server = SERVER) -> Any:
    reply = server.answer(line)
    assert reply is not None and reply.endswith(b"\n") and reply.count(b"\n") == 1
    return json.loads(reply)


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return ask("tools/call", {"name": name, "arguments": arguments})["result"]


# --- the lifecycle ------------------------------------------------------------------------------


@pytest.mark.parametrize("version", PROTOCOL_VERSIONS)
def test_initialize_agrees_to_the_clients_version_when_it_is_known(version: str) -> None:
    hello = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "c"}}
    assert ask("initialize", hello, ident="a") == {
        "jsonrpc": "2.0",
        "id": "a",
        "result": {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "test", "version": "1.2"},
            "instructions": "use echo",
        },
    }


def test_initialize_answers_the_newest_version_for_one_it_does_not_know() -> None:
    result = ask("initialize", {"protocolVersion": "2099-01-01", "capabilities": {}})["result"]
    assert result["protocolVersion"] == PROTOCOL_VERSIONS[0] == "2025-11-25"


def test_initialize_without_a_version_is_bad_params() -> None:
    assert ask("initialize", {"capabilities": {}})["error"]["code"] == -32602


def test_ping_and_the_tool_list() -> None:
    assert ask("ping") == {"jsonrpc": "2.0", "id": 1, "result": {}}
    tools = ask("tools/list", {"cursor": "ignored"})["result"]["tools"]
    assert tools == [
        {
            "name": "echo",
            "description": "says it back",
            "inputSchema": {
                "type": "object",
                "properties": {"text": {"type": "string", "description": "what to say"}},
                "required": ["text"],
            },
        },
        {
            "name": "count",
            "description": "a count",
            "inputSchema": {"type": "object", "properties": {}},
            "outputSchema": {"type": "object"},
        },
    ]


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
        {"jsonrpc": "2.0", "method": "tools/call"},  # a notification, whatever its method
        {"jsonrpc": "2.0", "id": 7, "result": {}},  # a response: the server asked nothing
        {"jsonrpc": "2.0", "id": 7, "error": {"code": 1, "message": "no"}},
    ],
)
def test_notifications_and_responses_get_no_answer(message: dict[str, Any]) -> None:
    assert SERVER.answer(json.dumps(message).encode()) is None


# --- tools/call ---------------------------------------------------------------------------------


def test_a_tools_text_and_structure() -> None:
    assert call("echo", text="hi") == {
        "content": [{"type": "text", "text": "hi"}],
        "isError": False,
    }
    counted = call("count")
    assert counted["structuredContent"] == {"n": 1} and not counted["isError"]
    assert json.loads(counted["content"][0]["text"]) == {"n": 1}  # the same, for the model


@pytest.mark.parametrize(
    ("arguments", "told"),
    [
        ({"text": "fail"}, "echo: told to fail"),
        ({"text": "missing"}, "missing.json: no such file"),  # ctxpack's own errors, one line
        ({}, "echo: the argument text is missing"),
        ({"text": 3}, "echo: the argument text is not a string"),
    ],
)
def test_a_tool_that_fails_tells_the_model_why(arguments: dict[str, Any], told: str) -> None:
    """A failed call or a bad argument is the tool's error (``isError``), not the protocol's:
    the model reads it and can call again (SEP-1303)."""
    result = ask("tools/call", {"name": "echo", "arguments": arguments})["result"]
    assert result == {"content": [{"type": "text", "text": told}], "isError": True}


def test_unknown_tools_and_malformed_calls_are_protocol_errors() -> None:
    unknown = ask("tools/call", {"name": "nope", "arguments": {}}, ident=4)
    assert unknown["id"] == 4 and unknown["error"]["code"] == -32602
    assert unknown["error"]["message"] == "Unknown tool: nope"  # the spec's own example
    assert ask("tools/call", {"arguments": {}})["error"]["code"] == -32602
    assert ask("tools/call", {"name": "echo", "arguments": ["x"]})["error"]["code"] == -32602
    assert ask("tools/call", ["echo"])["error"]["code"] == -32602


def test_a_bug_in_a_tool_is_an_internal_error_and_the_server_goes_on() -> None:
    failed = ask("tools/call", {"name": "echo", "arguments": {"text": "bug"}})
    assert failed["error"]["code"] == -32603 and "KeyError" in failed["error"]["data"]
    assert call("echo", text="still here")["content"][0]["text"] == "still here"


def test_absent_arguments_are_none() -> None:
    assert "structuredContent" in ask("tools/call", {"name": "count"})["result"]


# --- what is not a request ---------------------------------------------------------------------


def test_garbage_is_a_parse_error_without_an_id() -> None:
    for line in (b"GARBAGE\n", b'{"jsonrpc": "2.0", "id": 1,\n', b"\xff\xfe\n"):
        reply = reply_to(line)
        assert reply["id"] is None and reply["error"]["code"] == -32700


@pytest.mark.parametrize(
    ("message", "ident"),
    [
        (
            [{"jsonrpc": "2.0", "id": 1, "method": "ping"}],
            None,
        ),  # a batch: not in MCP since 2025-06-18
        ({"id": 3, "method": "ping"}, 3),  # not JSON-RPC 2.0
        ({"jsonrpc": "2.0", "id": 3, "method": 5}, 3),
        ({"jsonrpc": "2.0", "id": None, "method": "ping"}, None),  # MCP: an id is never null
        ({"jsonrpc": "2.0", "id": True, "method": "ping"}, None),
        ({"jsonrpc": "2.0"}, None),
        ("ping", None),
    ],
)
def test_what_is_not_a_request_is_an_invalid_request(message: Any, ident: Any) -> None:
    reply = reply_to(json.dumps(message).encode())
    assert reply["error"]["code"] == -32600 and reply["id"] == ident


def test_an_unknown_method_is_method_not_found() -> None:
    reply = ask("resources/list", {}, ident="r")
    assert reply == {
        "jsonrpc": "2.0",
        "id": "r",
        "error": {"code": -32601, "message": "Method not found", "data": "resources/list"},
    }


def test_params_that_are_not_an_object_are_bad_params() -> None:
    assert ask("ping", [1])["error"]["code"] == -32602


@given(st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
@example(b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo"}}')
@example(b'{"jsonrpc": "2.0", "id": 1e400, "method": "ping"}')
def test_any_line_gets_one_json_rpc_line_or_none(line: bytes) -> None:
    reply = SERVER.answer(line)
    if reply is None:
        return
    answer = json.loads(reply)
    assert reply.count(b"\n") == 1 and answer["jsonrpc"] == "2.0"
    assert ("result" in answer) != ("error" in answer)


# --- ctxpack's tools ----------------------------------------------------------------------------


def ctxpack_server(tmp_path: Path) -> tuple[Server, OriginalsStore]:
    store = OriginalsStore(tmp_path / "originals")
    return Server("ctxpack", "0", INSTRUCTIONS, ctxpack_tools(store, _local)), store


def _local(path: str) -> Any:
    from compactor_core.ends.sources import local_file

    return local_file(path)


def test_recall_gives_the_original_and_fails_plainly_for_a_handle_it_does_not_hold(
    tmp_path: Path,
) -> None:
    server, store = ctxpack_server(tmp_path)
    half_a_pair = "build log \ud800 cut in two"  # kept as it came, written as JSON escapes it
    store.keep([half_a_pair])
    [held] = [name.removeprefix("original-")[:12] for name in os.listdir(store.folder)]
    result = ask("tools/call", {"name": "recall", "arguments": {"handle": held}}, server=server)
    assert result["result"]["content"][0]["text"] == half_a_pair
    missing = {"name": "recall", "arguments": {"handle": "0123456789ab"}}
    answer = ask("tools/call", missing, server=server)["result"]
    assert answer["isError"] and "no longer holds" in answer["content"][0]["text"]


def test_estimate_of_a_file_that_is_not_there_fails_naming_it(tmp_path: Path) -> None:
    server, _ = ctxpack_server(tmp_path)
    arguments = {"path": str(tmp_path / "gone.json")}
    result = ask("tools/call", {"name": "estimate", "arguments": arguments}, server=server)
    assert result["result"] == {
        "content": [{"type": "text", "text": f"{tmp_path / 'gone.json'}: no such file"}],
        "isError": True,
    }


# --- the real process ---------------------------------------------------------------------------

HELLO = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}}


def test_the_tool_list_is_as_the_agents_read_it(golden: Any) -> None:
    lines = talk(
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": HELLO},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    )
    assert json.loads(lines[0])["result"]["serverInfo"]["name"] == "ctxpack"
    golden("mcp_tools_list.json", json.dumps(json.loads(lines[1]), indent=2) + "\n")


def talk(*messages: Any, env: dict[str, str] | None = None) -> list[bytes]:
    """Write each message (a string as it is) to a real ``ctxpack mcp``, close its input, and
    return the lines it wrote; it must end by itself, with status 0 and nothing on stderr."""
    lines = b"".join(
        (item if isinstance(item, str) else json.dumps(item)).encode() + b"\n" for item in messages
    )
    done = subprocess.run(
        [str(CTXPACK), "mcp"], input=lines, capture_output=True, timeout=60, env=env
    )
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    return done.stdout.splitlines()


def test_bad_input_gets_its_error_and_the_server_answers_on(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    replies = [
        json.loads(line)
        for line in talk(
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": HELLO},
            "GARBAGE",
            {"jsonrpc": "2.0", "id": 1, "method": "no/such/method"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "nope"}},
            {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "recall"}},
            "",
            {"jsonrpc": "2.0", "id": 4, "method": "ping"},
            env=env,
        )
    ]
    assert [reply["id"] for reply in replies] == [0, None, 1, 2, 3, 4]
    assert [reply.get("error", {}).get("code") for reply in replies[1:4]] == [
        -32700,
        -32601,
        -32602,
    ]
    assert replies[4]["result"]["isError"] and "handle is missing" in str(replies[4]["result"])
    assert replies[5]["result"] == {}


def test_the_sdk_client_sees_tool_failures_and_protocol_errors(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    missing, no_argument, no_file, unknown = anyio.run(_failures, env, tmp_path / "gone.json")
    assert missing.is_error and "no longer holds" in missing.content[0].text
    assert no_argument.is_error and no_file.is_error
    assert no_file.content[0].text == f"{tmp_path / 'gone.json'}: no such file"
    assert unknown == (-32602, "Unknown tool: nope")


async def _failures(env: dict[str, str], gone: Path) -> tuple[Any, ...]:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.shared.exceptions import MCPError

    server = StdioServerParameters(command=str(CTXPACK), args=["mcp"], env=env)
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.send_ping()
        missing = await session.call_tool("recall", {"handle": "0123456789ab"})
        no_argument = await session.call_tool("recall", {})
        no_file = await session.call_tool("estimate", {"path": str(gone)})
        with pytest.raises(MCPError) as unknown:
            await session.call_tool("nope", {})
        return (
            missing,
            no_argument,
            no_file,
            (unknown.value.error.code, unknown.value.error.message),
        )


def test_ctxpack_mcp_imports_no_sdk_and_no_pydantic() -> None:
    """Its start is the point: what it imports to answer is ctxpack's and orjson."""
    code = (
        "import sys\nfrom cli.main import cli\n"
        "try:\n    cli(['mcp'], prog_name='ctxpack')\nexcept SystemExit:\n    pass\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] in ('mcp', 'pydantic')))"
    )
    ping = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}\n'
    done = subprocess.run([sys.executable, "-c", code], input=ping, capture_output=True)
    assert done.returncode == 0, done.stderr
    answer, imported = done.stdout.splitlines()
    assert json.loads(answer)["result"] == {} and imported == b"[]"
