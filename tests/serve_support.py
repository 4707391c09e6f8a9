"""The real ``ctxpack serve`` process, and an upstream on 127.0.0.1 that records what it gets.

with Upstream(Answer(chunks=[b"event: a\\n\\n"])) as upstream, Serving(upstream.url) as proxy:
    httpx.post(proxy.url + "/v1/messages", json=body)
    upstream.received[-1].body
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

from helpers import CTXPACK, serve_in_background

KEEP_BODIES = 1 << 20  # bodies larger than this are kept as their size and hash only


@dataclass(frozen=True)
class Answer:
    """What the upstream replies: a status, headers, and a body sent chunk by chunk (chunked
    transfer encoding), ``pause`` seconds between chunks."""

    status: int = 200
    headers: tuple[tuple[str, str], ...] = (("content-type", "text/event-stream"),)
    chunks: tuple[bytes, ...] = (b'event: message_stop\ndata: {"type":"message_stop"}\n\n',)
    pause: float = 0.0
    silent: float = 0.0  # seconds to wait before answering at all


@dataclass(frozen=True)
class Received:
    method: str
    target: str  # the path and the query, as sent
    headers: dict[str, str]  # names in lower case
    body: bytes  # empty when larger than KEEP_BODIES
    size: int
    sha256: str


@dataclass
class Upstream:
    answer: Answer = field(default_factory=Answer)
    received: list[Received] = field(default_factory=list)
    in_flight: int = 0
    most_in_flight: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._server.request_queue_size = 128
        serve_in_background(self._server)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _arrived(self, received: Received) -> None:
        with self._lock:
            self.received.append(received)
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)

    def _answered(self) -> None:
        with self._lock:
            self.in_flight -= 1


def _handler(upstream: Upstream) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_any(self) -> None:
            size, digest, kept = self._read_body()
            headers = {key.lower(): value for key, value in self.headers.items()}
            upstream._arrived(Received(self.command, self.path, headers, kept, size, digest))
            try:
                self._answer(upstream.answer)
            except OSError:
                pass  # the proxy went away (its caller left)
            finally:
                upstream._answered()

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_any

        def _read_body(self) -> tuple[int, str, bytes]:
            digest = hashlib.sha256()
            kept = bytearray()
            size = 0
            for chunk in self._body_chunks():
                digest.update(chunk)
                size += len(chunk)
                if size <= KEEP_BODIES:
                    kept += chunk
            return size, digest.hexdigest(), bytes(kept) if size <= KEEP_BODIES else b""

        def _body_chunks(self) -> Any:
            if self.headers.get("transfer-encoding", "").lower() == "chunked":
                while True:
                    length = int(self.rfile.readline().split(b";")[0], 16)
                    chunk = self.rfile.read(length + 2)[:length]
                    if not length:
                        return
                    yield chunk
            remaining = int(self.headers.get("content-length") or 0)
            while remaining:
                chunk = self.rfile.read(min(remaining, 1 << 20))
                remaining -= len(chunk)
                yield chunk

        def _answer(self, answer: Answer) -> None:
            time.sleep(answer.silent)
            self.send_response(answer.status)
            for name, value in answer.headers:
                self.send_header(name, value)
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for number, chunk in enumerate(answer.chunks):
                if number:
                    time.sleep(answer.pause)
                self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


class Serving:
    """``ctxpack serve --port 0 --upstream URL ARGS…`` as a process of its own; its stderr is
    read all the time (so that its log never fills the pipe) and kept in ``log``, whole once the
    process has stopped."""

    def __init__(self, upstream: str, *args: str, env: dict[str, str] | None = None) -> None:
        command = [str(CTXPACK), "serve", "--port", "0", "--upstream", upstream, *args]
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read_log, daemon=True)
        self._reader.start()
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().decode().strip()
        if not self.url:
            self.process.wait(timeout=10)
            raise AssertionError(f"ctxpack serve did not start:\n{self.log}")

    @property
    def log(self) -> str:
        return "".join(self.lines)

    def _read_log(self) -> None:
        assert self.process.stderr is not None
        for line in iter(self.process.stderr.readline, b""):
            self.lines.append(line.decode())

    def stop(self, timeout: float = 30) -> int:
        """SIGTERM, and the exit status once it has finished."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        status = self.process.wait(timeout=timeout)
        self._reader.join(timeout=5)
        return status

    def peak_memory(self) -> int:
        """Bytes of the most memory the process has held at once (its VmHWM)."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmHWM")

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        """Stopped as a user stops it (SIGTERM): its log is whole after the ``with`` block."""
        try:
            self.stop(timeout=15)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait(timeout=10)
