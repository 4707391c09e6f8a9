"""A local model server on 127.0.0.1 that plays the model for the real coding agents.

It records every request (so a test sees exactly what the agent sent after resuming a session)
and answers from a ``Script``:

- ``POST /v1/messages`` (Claude Code): an Anthropic Messages reply, streamed as SSE when asked.
- ``POST /v1/messages/count_tokens``: a rough count, so nothing waits on it.
- ``POST /v1/responses`` (Codex): an OpenAI Responses reply, streamed as SSE.
- ``POST /v1/chat/completions`` (pi, OpenCode, Copilot CLI, Qwen Code, Cline): an OpenAI Chat
  Completions reply, streamed as SSE when asked.
- ``POST /v1beta/models/M:generateContent`` / ``:streamGenerateContent`` (Gemini CLI): a Gemini
  reply; ``:countTokens`` a rough count.

A request of the last two kinds that offers no tools (a title, a memory note, a routing
question) is answered with ``Script.side_reply`` and takes nothing from the script: the script
is the agent's turns alone, and ``turn_requests`` are the requests that make them.
- anything else, including Codex's WebSocket upgrade on ``GET /v1/responses``: 404 at once
  (a refused upgrade makes Codex use plain HTTP), and the path is logged in ``unknown``.

    with ModelServer(Script([Reply(calls=(ToolCall("Bash", {"command": "ls"}),))])) as server:
        run_claude(home, project, "list the files", server)
        server.model_requests[-1].body["messages"]
"""

from __future__ import annotations

import json
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import urlsplit

from helpers import serve_in_background

from agents import anthropic_api, chat_api, gemini_api, responses_api
from agents.billing import Billing, anthropic_usage
from agents.limits import Limits, refusal
from agents.script import Reply, Script

MODEL_PATHS = ("/v1/messages", "/v1/responses", "/v1/chat/completions")


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str  # without the query
    headers: dict[str, str]  # names in lower case
    body: Any  # the JSON body, or the raw bytes when it is not JSON
    size: int  # bytes of the (decompressed) body

    @property
    def asks_model(self) -> bool:
        return self.method == "POST" and (self.path in MODEL_PATHS or _is_gemini_turn(self.path))

    @property
    def offers_tools(self) -> bool:
        """A turn of the agent's: a model request that offers the model tools."""
        if not self.asks_model or not isinstance(self.body, dict):
            return False
        if _is_gemini_turn(self.path):
            return gemini_api.offers_tools(self.body)
        return bool(self.body.get("tools"))


def fixed_tokens(_raw: bytes) -> int:
    """The default usage figure: small, so that no agent decides to compact on its own."""
    return 1000


def tokens_by_size(raw: bytes) -> int:
    """Usage as a real model would roughly count it (4 bytes a token): lets auto-compaction fire."""
    return len(raw) // 4


@dataclass
class ModelServer:
    script: Script = field(default_factory=Script)
    input_tokens: Callable[[bytes], int] = fixed_tokens
    requests: list[Recorded] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # "METHOD /path" of every other request
    # what the real APIs refuse is refused here too (a 400 in the API's own shape); None: all
    # is answered
    limits: Limits | None = None
    refusals: list[str] = field(default_factory=list)  # why each refused request was refused
    # replies whose usage is billed from the body by the providers' cache rules; None: the
    # usage is input_tokens(raw), nothing cached
    billing: Billing | None = None

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = serve_in_background(self._server)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def model_requests(self) -> list[Recorded]:
        """The requests for a model reply, in the order they came."""
        with self._lock:
            return [request for request in self.requests if request.asks_model]

    @property
    def turn_requests(self) -> list[Recorded]:
        """The model requests that offer tools: the agent's turns, not its side questions."""
        with self._lock:
            return [request for request in self.requests if request.offers_tools]

    def forget(self) -> None:
        """Drop what was recorded so far (before the run a test looks at)."""
        with self._lock:
            self.requests.clear()
            self.unknown.clear()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def refused(self, path: str, body: Any, size: int) -> str | None:
        """Why the API would refuse this model request (recorded), or None."""
        if self.limits is None or path == "/v1/messages/count_tokens" or path.endswith("Tokens"):
            return None
        reason = refusal(self.limits, path, body, size)
        if reason is not None:
            with self._lock:
                self.refusals.append(f"{path}: {reason}")
        return reason

    def record(self, request: Recorded) -> None:
        with self._lock:
            self.requests.append(request)
            known = request.path.startswith(MODEL_PATHS) or gemini_api.method(request.path)
            if request.method != "POST" or not known:
                self.unknown.append(f"{request.method} {request.path}")


def _handler(server: ModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            raw = _decoded(self.rfile.read(int(self.headers.get("content-length") or 0)), self)
            path = urlsplit(self.path).path
            body = _json_or_raw(raw)
            server.record(Recorded("POST", path, self._headers(), body, len(raw)))
            reason = server.refused(path, body, len(raw))
            if reason is not None:
                self._send(400, "application/json", json.dumps(_error(path, reason)))
            elif path == "/v1/messages" and isinstance(body, dict):
                self._claude(body, raw)
            elif path == "/v1/messages/count_tokens":
                self._send(200, "application/json", json.dumps({"input_tokens": len(raw) // 4}))
            elif path == "/v1/responses" and isinstance(body, dict):
                if responses_api.is_compaction(body):
                    reply = Reply(text=server.script.summary)
                elif responses_api.is_remote_compaction(body):
                    reply = Reply(compaction=responses_api.encrypted(server.script.summary))
                else:
                    reply = server.script.next_reply(body)
                model = str(body.get("model"))
                tokens, cached = self._openai_usage(path, body, raw)
                self._stream(responses_api.stream(reply, model, tokens, cached))
            elif path == "/v1/chat/completions" and isinstance(body, dict):
                self._chat(body, raw)
            elif gemini_api.method(path) and isinstance(body, dict):
                self._gemini(path, body, raw)
            else:
                self._send(404, "application/json", '{"error": {"message": "not here"}}')

        def do_GET(self) -> None:
            path = urlsplit(self.path).path
            server.record(Recorded("GET", path, self._headers(), b"", 0))
            self._send(404, "application/json", '{"error": {"message": "not here"}}')

        do_HEAD = do_PUT = do_DELETE = do_GET

        def _claude(self, body: dict[str, Any], raw: bytes) -> None:
            if anthropic_api.is_compaction(body):
                reply = anthropic_api.summary_reply(server.script.summary)
            else:
                reply = server.script.next_reply(body)
            billed = server.billing and anthropic_usage(server.billing.messages(body))
            model = str(body.get("model"))
            whole = anthropic_api.message(reply, model, server.input_tokens(raw), billed or None)
            if body.get("stream"):
                self._stream(anthropic_api.stream(whole))
            else:
                self._send(200, "application/json", json.dumps(whole))

        def _chat(self, body: dict[str, Any], raw: bytes) -> None:
            reply = _turn_reply(server, chat_api.offers_tools(body), body)
            model = str(body.get("model"))
            tokens, cached = self._openai_usage("/v1/chat/completions", body, raw)
            whole = chat_api.completion(reply, model, tokens, cached)
            if body.get("stream"):
                self._stream(chat_api.stream(whole))
            else:
                self._send(200, "application/json", json.dumps(whole))

        def _openai_usage(self, path: str, body: dict[str, Any], raw: bytes) -> tuple[int, int]:
            """The input tokens and, of those, the cached ones."""
            if server.billing is None:
                return server.input_tokens(raw), 0
            usage = server.billing.openai_request(path, body)
            return usage.tokens, usage.read

        def _gemini(self, path: str, body: dict[str, Any], raw: bytes) -> None:
            model, method = gemini_api.method(path) or ("", "")
            if method == "countTokens":
                self._send(200, "application/json", json.dumps(gemini_api.count_tokens(raw)))
                return
            if method not in gemini_api.GENERATE:
                self._send(404, "application/json", '{"error": {"message": "not here"}}')
                return
            reply = _turn_reply(server, gemini_api.offers_tools(body), body)
            if server.billing is None:
                whole = gemini_api.response(reply, model, server.input_tokens(raw))
            else:
                usage = server.billing.gemini_request(path, body)
                whole = gemini_api.response(reply, model, usage.tokens, usage.read)
            if method == "streamGenerateContent":
                self._stream(gemini_api.stream(whole))
            else:
                self._send(200, "application/json", json.dumps(whole))

        def _stream(self, events: Any) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            self.end_headers()
            for event in events:
                self.wfile.write(event)
            self.wfile.flush()
            self.close_connection = True

        def _send(self, status: int, kind: str, text: str) -> None:
            data = text.encode()
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _headers(self) -> dict[str, str]:
            return {key.lower(): value for key, value in self.headers.items()}

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the requests are recorded; keep the test output clean

    return Handler


def _is_gemini_turn(path: str) -> bool:
    found = gemini_api.method(path)
    return found is not None and found[1] in gemini_api.GENERATE


def _turn_reply(server: ModelServer, offers_tools: bool, body: dict[str, Any]) -> Reply:
    """The script's next reply for a turn; its summary for the agent's own compaction; the side
    reply for a request that offers no tools."""
    if server.script.is_compaction(body):
        return Reply(text=server.script.summary_text())
    if not offers_tools:
        return server.script.side_reply
    return server.script.next_reply(body)


def _error(path: str, reason: str) -> dict[str, Any]:
    """A 400's body as each API writes it, so the agent reports it as it would the real one."""
    if path.startswith("/v1/messages"):
        return {"type": "error", "error": {"type": "invalid_request_error", "message": reason}}
    if gemini_api.method(path):
        return {"error": {"code": 400, "message": reason, "status": "INVALID_ARGUMENT"}}
    return {"error": {"message": reason, "type": "invalid_request_error", "code": None}}


def _decoded(raw: bytes, request: BaseHTTPRequestHandler) -> bytes:
    """The body as sent before any gzip/deflate the client applied."""
    encoding = (request.headers.get("content-encoding") or "").lower()
    if encoding in ("gzip", "deflate"):
        return zlib.decompress(raw, zlib.MAX_WBITS | 32)
    return raw


def _json_or_raw(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw
