"""The Model Context Protocol as ``ctxpack mcp`` speaks it: a server that offers tools and
nothing else, over JSON-RPC 2.0 with one message a line (the protocol's stdio transport).

Why not the official SDK: importing it takes over half a second (it loads its client and the
models of every protocol revision), and Claude Code's print mode and Codex take the tool list
while their MCP servers start, so a server that slow loses its tools on the first request. A
server of tools needs four methods: ``initialize`` (the protocol revision agreed, what the server
offers), ``ping``, ``tools/list`` and ``tools/call``; notifications need no answer. The SDK's
client is the reference these answers are tested against (``tests/test_recall_mcp.py``).

The caller passes the lines it reads and a function that writes one reply: this module never
touches a process's streams. Requests are answered one at a time, in the order they came.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..errors import CtxpackError

# The revisions reached by the initialize handshake, newest first: the client's own is agreed
# when it is one of them, else the newest, and the client decides whether to go on.
PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

REPLIES = {"result", "error"}  # the keys of a response, where a request has a method

Answer = str | dict[str, Any]  # what a tool gives back: text, or structure (with an output schema)


class ToolFailed(Exception):
    """A tool could not do what it was asked: the model is told why (``isError``)."""


class ProtocolError(Exception):
    """A request the server answers with a JSON-RPC error rather than a result."""

    def __init__(self, code: int, message: str, data: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


@dataclass(frozen=True)
class Tool:
    """One tool: ``run`` is called with the arguments by name."""

    name: str
    description: str
    run: Callable[..., Answer]
    # each argument's name and what it is (strings, all required)
    arguments: Mapping[str, str] = field(default_factory=dict)
    output_schema: Mapping[str, Any] | None = None  # when ``run`` gives structure

    def listing(self) -> dict[str, Any]:
        """The tool as ``tools/list`` shows it."""
        properties = {
            name: {"type": "string", "description": about} for name, about in self.arguments.items()
        }
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if self.arguments:  # no arguments: no "required" at all, as the SDK listed such a tool
            schema["required"] = list(self.arguments)
        listed: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "inputSchema": schema,
        }
        if self.output_schema is not None:
            listed["outputSchema"] = dict(self.output_schema)
        return listed

    def call(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The result of ``tools/call``: what ``run`` gave, or why it failed, as the model's
        text (and the structure itself as ``structuredContent``)."""
        try:
            answer = self.run(**self._checked(arguments))
        except (ToolFailed, CtxpackError, OSError) as failure:
            return {"content": [_text(str(failure))], "isError": True}
        if isinstance(answer, str):
            return {"content": [_text(answer)], "isError": False}
        shown = orjson.dumps(answer, option=orjson.OPT_INDENT_2).decode()
        return {"content": [_text(shown)], "isError": False, "structuredContent": answer}

    def _checked(self, arguments: Mapping[str, Any]) -> dict[str, str]:
        """The arguments ``run`` takes; a missing or malformed one fails the call, so that the
        model reads why and can call again (an input error is a tool error, not a protocol
        one); others are ignored."""
        for name in self.arguments:
            if not isinstance(arguments.get(name), str):
                wrong = "missing" if name not in arguments else "not a string"
                raise ToolFailed(f"{self.name}: the argument {name} is {wrong}")
        return {name: arguments[name] for name in self.arguments}


@dataclass(frozen=True)
class Server:
    """A server of ``tools`` that introduces itself by name and version, with ``instructions``
    for the model."""

    name: str
    version: str
    instructions: str
    tools: tuple[Tool, ...]

    def serve(self, lines: Iterable[bytes], write: Callable[[bytes], None]) -> None:
        """Answer each line as it comes, until the lines end (the client closed the stream)."""
        for line in lines:
            if line.strip():
                reply = self.answer(line)
                if reply is not None:
                    write(reply)

    def answer(self, line: bytes) -> bytes | None:
        """The reply to one message (a line of JSON, newline included); None when the message
        wants none: a notification, or a response (this server asks the client nothing)."""
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError as error:
            return _error(None, PARSE_ERROR, "Parse error", str(error))
        if isinstance(message, dict) and "method" not in message and message.keys() & REPLIES:
            return None  # a response: there are no requests of ours it could answer
        if isinstance(message, dict) and "method" in message and "id" not in message:
            return None  # a notification: initialized, cancelled, ... change nothing here
        try:
            ident, method, params = _request(message)
        except ProtocolError as error:
            known = message.get("id") if isinstance(message, dict) else None
            return _error(known if _is_id(known) else None, error.code, error.message, error.data)
        try:
            return _line({"jsonrpc": "2.0", "id": ident, "result": self._result(method, params)})
        except ProtocolError as error:
            return _error(ident, error.code, error.message, error.data)
        except Exception as error:  # a bug in one answer must not end the server the agent uses
            return _error(
                ident, INTERNAL_ERROR, "Internal error", f"{type(error).__name__}: {error}"
            )

    def _result(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "initialize":
            return self._initialize(params)
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": [tool.listing() for tool in self.tools]}
        if method == "tools/call":
            return self._call(params)
        raise ProtocolError(METHOD_NOT_FOUND, "Method not found", method)

    def _initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        asked = params.get("protocolVersion")
        if not isinstance(asked, str):
            raise ProtocolError(INVALID_PARAMS, "Invalid params", "protocolVersion: not a string")
        return {
            "protocolVersion": asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": self.name, "version": self.version},
            "instructions": self.instructions,
        }

    def _call(self, params: dict[str, Any]) -> dict[str, Any]:
        name, arguments = params.get("name"), params.get("arguments")
        if not isinstance(name, str):
            raise ProtocolError(INVALID_PARAMS, "Invalid params", "name: not a string")
        if arguments is not None and not isinstance(arguments, dict):
            raise ProtocolError(INVALID_PARAMS, "Invalid params", "arguments: not an object")
        tool = next((tool for tool in self.tools if tool.name == name), None)
        if tool is None:  # the protocol's own answer: unlike a failed call, it is not the model's
            raise ProtocolError(INVALID_PARAMS, f"Unknown tool: {name}", name)
        return tool.call(arguments or {})


def _request(message: object) -> tuple[str | int, str, dict[str, Any]]:
    """A request's id, method and params, or why it is not one."""
    if not isinstance(message, dict):
        raise ProtocolError(INVALID_REQUEST, "Invalid Request", "not a JSON object")
    ident, method, params = message.get("id"), message.get("method"), message.get("params", {})
    if message.get("jsonrpc") != "2.0" or not _is_id(ident) or not isinstance(method, str):
        raise ProtocolError(INVALID_REQUEST, "Invalid Request", 'not {"jsonrpc": "2.0", ...}')
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise ProtocolError(INVALID_PARAMS, "Invalid params", "params: not an object")
    return ident, method, params


def _is_id(ident: object) -> bool:
    return isinstance(ident, str) or (isinstance(ident, int) and not isinstance(ident, bool))


def _text(text: str) -> dict[str, str]:
    return {"type": "text", "text": text}


def _error(ident: str | int | None, code: int, message: str, data: str | None) -> bytes:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return _line({"jsonrpc": "2.0", "id": ident, "error": error})


def _line(message: dict[str, Any]) -> bytes:
    """A message as one line of JSON. A text holding a lone surrogate (an original kept as it
    came, half a pair included) is written escaped, as JSON allows, rather than refused."""
    try:
        return orjson.dumps(message, option=orjson.OPT_APPEND_NEWLINE)
    except orjson.JSONEncodeError:
        import json

        return (json.dumps(message, separators=(",", ":")) + "\n").encode()
