"""A real HTTP server on 127.0.0.1 that answers from a script: the faults a real model server
will not produce on demand (500 then 200, 429 with Retry-After, a stall, a dropped connection,
malformed JSON, Anthropic's error bodies, …).

Each POST takes the next step of the script; the last step repeats. Every request is recorded
(path, headers, JSON body, arrival time) so tests can assert what was sent and how often.

``ScriptedTransport`` answers the same script inside the test's process (an httpx transport and
a fake clock), for the many cases that need no real socket and no real wait.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from helpers import serve_in_background

if TYPE_CHECKING:
    import httpx


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: Any = None  # a dict or list is sent as JSON, str or bytes as they are
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Stall:
    """Accept the request, then say nothing for ``seconds`` (longer than the client waits)."""

    seconds: float = 5.0


@dataclass(frozen=True)
class Drop:
    """Close the connection without a response."""


Step = Reply | Stall | Drop


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: Any
    at: float


class Script:
    """The steps to answer with, and the requests answered: what the server and the transport
    share. Each request takes the next step; the last step repeats."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self._steps: list[Step] = [Reply(500, {"error": {"message": "no script"}})]
        self._lock = threading.Lock()

    def script(self, *steps: Step) -> None:
        with self._lock:
            self._steps = list(steps)
            self.requests = []

    def _answer(self, request: Request) -> Step:
        """Record ``request`` and take the step that answers it."""
        with self._lock:
            self.requests.append(request)
            return self._steps.pop(0) if len(self._steps) > 1 else self._steps[0]


def decoded(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def encoded(step: Reply) -> tuple[bytes, dict[str, str]]:
    """The body of a reply and its headers, content-type first (JSON for a dict or a list)."""
    if isinstance(step.body, dict | list):
        data, kind = json.dumps(step.body).encode(), "application/json"
    else:
        data = step.body.encode() if isinstance(step.body, str) else step.body or b""
        kind = "text/plain"
    headers = {"content-type": step.headers.get("content-type", kind)}
    headers.update(
        (key, value) for key, value in step.headers.items() if key.lower() != "content-type"
    )
    return data, headers


class ScriptedServer(Script):
    def __init__(self) -> None:
        super().__init__()
        self._stop = threading.Event()
        server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        server.daemon_threads = True
        server.block_on_close = False  # a stalled handler must not hold up the test's end
        self._server = server
        self._thread = serve_in_background(server)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def close(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = decoded(self.rfile.read(int(self.headers.get("content-length", 0))))
                headers = {key.lower(): value for key, value in self.headers.items()}
                step = outer._answer(Request(self.path, headers, body, time.monotonic()))
                if isinstance(step, Drop):
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if isinstance(step, Stall):
                    outer._stop.wait(step.seconds)
                    self.close_connection = True
                    return
                data, headers = encoded(step)
                self.send_response(step.status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep the test output clean

        return Handler


@dataclass
class FakeClock:
    """Time that passes only when slept: retries and backoff without waiting, waits recorded."""

    now: float = 1e9
    slept: list[float] = field(default_factory=list)

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    def time(self) -> float:
        return self.now


class ScriptedTransport(Script):
    """The same script answered in this process through ``httpx.MockTransport``: no socket, and
    time from a :class:`FakeClock`. A :class:`Stall` is the read timeout the client would hit, a
    :class:`Drop` the error httpx raises when a server closes without a response (the real
    server shows both for real in a few tests)."""

    url = "http://127.0.0.1:9"  # never connected to: the transport answers

    def __init__(self) -> None:
        import httpx

        super().__init__()
        self.clock = FakeClock()
        self.transport = httpx.MockTransport(self._handle)

    def _handle(self, request: httpx.Request) -> httpx.Response:
        import httpx

        headers = {key.lower(): value for key, value in request.headers.items()}
        recorded = Request(request.url.path, headers, decoded(request.read()), self.clock.time())
        step = self._answer(recorded)
        if isinstance(step, Drop):
            raise httpx.RemoteProtocolError(
                "Server disconnected without sending a response.", request=request
            )
        if isinstance(step, Stall):
            raise httpx.ReadTimeout("timed out", request=request)
        data, reply_headers = encoded(step)
        return httpx.Response(step.status, headers=reply_headers, content=data)


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
