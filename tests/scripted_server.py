"""A real HTTP server on 127.0.0.1 that answers from a script: the faults a real model server
will not produce on demand (500 then 200, 429 with Retry-After, a stall, a dropped connection,
malformed JSON, Anthropic's error bodies, …).

Each POST takes the next step of the script; the last step repeats. Every request is recorded
(path, headers, JSON body, arrival time) so tests can assert what was sent and how often.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


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


class ScriptedServer:
    def __init__(self) -> None:
        self.requests: list[Request] = []
        self._steps: list[Step] = [Reply(500, {"error": {"message": "no script"}})]
        self._lock = threading.Lock()
        self._stop = threading.Event()
        server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        server.daemon_threads = True
        server.block_on_close = False  # a stalled handler must not hold up the test's end
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def script(self, *steps: Step) -> None:
        with self._lock:
            self._steps = list(steps)
            self.requests = []

    def close(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()

    def _next(self) -> Step:
        with self._lock:
            return self._steps.pop(0) if len(self._steps) > 1 else self._steps[0]

    def _record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw
                headers = {key.lower(): value for key, value in self.headers.items()}
                outer._record(Request(self.path, headers, body, time.monotonic()))
                step = outer._next()
                if isinstance(step, Drop):
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if isinstance(step, Stall):
                    outer._stop.wait(step.seconds)
                    self.close_connection = True
                    return
                self._reply(step)

            def _reply(self, step: Reply) -> None:
                if isinstance(step.body, dict | list):
                    data = json.dumps(step.body).encode()
                    kind = "application/json"
                else:
                    data = step.body.encode() if isinstance(step.body, str) else step.body or b""
                    kind = "text/plain"
                self.send_response(step.status)
                self.send_header("content-type", step.headers.get("content-type", kind))
                self.send_header("content-length", str(len(data)))
                for key, value in step.headers.items():
                    if key.lower() != "content-type":
                        self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep the test output clean

        return Handler


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
