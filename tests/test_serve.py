"""`ctxpack serve` as a real process between a caller and an upstream on 127.0.0.1.

The upstream (serve_support.Upstream) records what reaches it and answers with fixed bytes, so
a test sees both ends: what the proxy forwarded and what the caller got back.
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import json
import re
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import serve_bodies
from agents.script import Script
from agents.server import ModelServer
from helpers import run
from serve_support import Answer, Serving, Upstream

EVENTS = tuple(
    f'event: content_block_delta\ndata: {{"type":"content_block_delta","index":0,'
    f'"delta":{{"type":"text_delta","text":"part {n}"}}}}\n\n'.encode()
    for n in range(10)
)
SECRET_KEY = "sk-ant-api03-not-a-real-key-7f3a9"
SECRET_TOKEN = "Bearer sk-proj-not-a-real-token-42c1"

# The seed's markers on every old result (cache-aware with no batch to wait for): what these small
# bodies show of the policy's work.
EVERY_OLD_RESULT = ("--min-gain", "0")


def anthropic_request(turns: int = 5, **body: object) -> bytes:
    return json.dumps({**serve_bodies.anthropic(turns=turns), **body}).encode()


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_first_line_on_stdout_is_the_address_it_listens_on() -> None:
    with Upstream() as upstream, Serving(upstream.url) as proxy:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", proxy.url)
        assert int(proxy.url.rsplit(":", 1)[1]) > 0
        assert httpx.get(proxy.url + "/ctxpack/stats").status_code == 200
        assert proxy.stop() == 0
    assert "serving " + proxy.url in proxy.log


def test_a_stream_comes_back_event_by_event_with_the_upstream_status_and_headers() -> None:
    answer = Answer(
        status=201,
        headers=(("content-type", "text/event-stream"), ("x-upstream", "kept")),
        chunks=EVENTS,
        pause=0.1,
    )
    with Upstream(answer) as upstream, Serving(upstream.url, *EVERY_OLD_RESULT) as proxy:
        arrivals = []
        headers = {"x-api-key": SECRET_KEY, "anthropic-version": "2023-06-01"}
        headers |= {"connection": "keep-alive, x-hop", "x-hop": "1", "te": "trailers"}
        with httpx.stream(
            "POST",
            proxy.url + "/v1/messages?beta=true",
            content=anthropic_request(),
            headers=headers,
        ) as reply:
            for chunk in reply.iter_raw():
                arrivals.append((time.monotonic(), chunk))
        assert reply.status_code == 201
        assert reply.headers["x-upstream"] == "kept"
        assert b"".join(chunk for _, chunk in arrivals) == b"".join(EVENTS)
        assert arrivals[-1][0] - arrivals[0][0] > 0.5  # the first event came long before the last
        received = upstream.received[-1]
        assert received.target == "/v1/messages?beta=true"
        assert received.headers["x-api-key"] == SECRET_KEY
        assert received.headers["anthropic-version"] == "2023-06-01"
        assert received.headers["host"] == upstream.url.removeprefix("http://")
        assert "x-hop" not in received.headers and "te" not in received.headers
        sent = json.loads(received.body)
        marker = f"[truncated: Bash result, {len(serve_bodies.output(0))} chars]"
        assert marker in json.dumps(sent["messages"])
        assert received.size < len(anthropic_request())
    assert SECRET_KEY not in proxy.log


def test_a_reply_that_is_not_streamed_comes_back_whole() -> None:
    with ModelServer(Script()) as model, Serving(model.url, *EVERY_OLD_RESULT) as proxy:
        body = {**serve_bodies.anthropic(turns=5), "stream": False}
        reply = httpx.post(proxy.url + "/v1/messages", json=body)
        assert reply.status_code == 200
        assert reply.json()["content"] == [{"type": "text", "text": "Done."}]
        sent = model.model_requests[-1].body
        assert sent["messages"][2]["content"][0]["content"].startswith("[truncated: Bash result")
        assert sent["stream"] is False


def test_count_tokens_and_every_other_route_pass_through_untouched() -> None:
    answer = Answer(status=404, headers=(("content-type", "application/json"),), chunks=(b"{}",))
    with Upstream(answer) as upstream, Serving(upstream.url) as proxy:
        pretty = json.dumps(serve_bodies.anthropic(turns=6), indent=2).encode()
        reply = httpx.post(proxy.url + "/v1/messages/count_tokens", content=pretty)
        assert (reply.status_code, reply.content) == (404, b"{}")
        assert upstream.received[-1].body == pretty
        reply = httpx.get(proxy.url + "/v1/models?limit=5&after=x%2Fy")
        assert upstream.received[-1].target == "/v1/models?limit=5&after=x%2Fy"
        assert (reply.status_code, reply.content) == (404, b"{}")
        upgrade = {"connection": "Upgrade", "upgrade": "websocket", "sec-websocket-version": "13"}
        reply = httpx.get(proxy.url + "/v1/responses", headers=upgrade)  # Codex's first try
        assert reply.status_code == 426  # answered here: Codex speaks HTTP at once
        assert reply.json()["error"]["type"] == "upgrade_required"
        assert upstream.received[-1].target == "/v1/models?limit=5&after=x%2Fy"  # not upstream
        reply = httpx.delete(proxy.url + "/v1/files/file-1")
        assert (upstream.received[-1].method, upstream.received[-1].target) == (
            "DELETE",
            "/v1/files/file-1",
        )
    assert "GET /v1/models 404: passed through" in proxy.log
    assert "limit=5" not in proxy.log  # a query string can hold a key: never logged


def test_a_body_it_cannot_read_goes_through_byte_for_byte() -> None:
    with Upstream() as upstream, Serving(upstream.url) as proxy:
        for data in (b"not json{", b"\xff\xfe\x00garbage", b"[]", b""):
            reply = httpx.post(proxy.url + "/v1/messages", content=data)
            assert reply.status_code == 200
            assert upstream.received[-1].body == data
        gzipped = gzip.compress(anthropic_request())
        httpx.post(
            proxy.url + "/v1/messages", content=gzipped, headers={"content-encoding": "gzip"}
        )
        assert upstream.received[-1].body == gzipped
        assert upstream.received[-1].headers["content-encoding"] == "gzip"
    assert proxy.log.count("forwarded as is") == 5  # the log is whole once it has stopped
    assert "forwarded as is (a body in content-encoding gzip)" in proxy.log


def test_a_100_mb_body_streams_through_without_being_held() -> None:
    size = 100 << 20
    piece = (b'{"role":"user","content":"' + b"x" * 1000 + b'"},') * 1024

    def body():
        for _ in range(size // len(piece)):
            yield piece
        yield b"x" * (size % len(piece))

    digest = hashlib.sha256()
    for chunk in body():
        digest.update(chunk)
    with Upstream() as upstream, Serving(upstream.url, "--max-body", str(1 << 20)) as proxy:
        reply = httpx.post(
            proxy.url + "/v1/messages",
            content=body(),
            headers={"content-length": str(size)},
            timeout=120,
        )
        assert reply.status_code == 200
        received = upstream.received[-1]
        assert (received.size, received.sha256) == (size, digest.hexdigest())
        assert received.headers["content-length"] == str(size)
        peak = proxy.peak_memory()
        assert peak < 100 << 20, f"the proxy held {peak >> 20} MiB"
        assert (
            httpx.post(proxy.url + "/v1/messages", content=anthropic_request()).status_code == 200
        )
    assert f"forwarded as is (body over {1 << 20} bytes)" in proxy.log


def test_an_upstream_that_is_down_is_a_502_with_one_line_of_json() -> None:
    port = closed_port()
    with Serving(f"http://127.0.0.1:{port}") as proxy:
        reply = httpx.post(
            proxy.url + "/v1/messages",
            content=anthropic_request(),
            headers={"x-api-key": SECRET_KEY, "authorization": SECRET_TOKEN},
        )
        assert reply.status_code == 502
        assert reply.headers["content-type"] == "application/json"
        assert reply.content.count(b"\n") == 1 and reply.content.endswith(b"\n")
        error = reply.json()["error"]
        assert error["type"] == "upstream_unreachable"
        assert f"127.0.0.1:{port} could not be reached" in error["message"]
        stats = httpx.get(proxy.url + "/ctxpack/stats").json()
        assert stats["upstream_errors"] == 1
    assert "POST /v1/messages 502: tokens" in proxy.log
    assert SECRET_KEY not in proxy.log and "sk-proj" not in proxy.log


def test_an_upstream_that_keeps_silent_is_a_504() -> None:
    with (
        Upstream(Answer(silent=5)) as upstream,
        Serving(upstream.url, "--upstream-timeout", "0.5") as proxy,
    ):
        started = time.monotonic()
        reply = httpx.post(proxy.url + "/v1/chat/completions", json=serve_bodies.chat())
        assert reply.status_code == 504
        assert reply.json()["error"]["type"] == "upstream_timeout"
        assert time.monotonic() - started < 4  # not the upstream's 5 s


def test_sigterm_lets_the_streams_in_flight_finish_then_exits_0() -> None:
    with Upstream(Answer(chunks=EVENTS, pause=0.15)) as upstream, Serving(upstream.url) as proxy:
        got: list[bytes] = []
        first = threading.Event()

        def stream() -> None:
            with httpx.stream("POST", proxy.url + "/v1/messages", content=anthropic_request()) as r:
                for chunk in r.iter_raw():
                    got.append(chunk)
                    first.set()

        caller = threading.Thread(target=stream)
        caller.start()
        assert first.wait(10)
        assert proxy.stop() == 0
        caller.join(10)
        assert b"".join(got) == b"".join(EVENTS)
        try:
            httpx.get(proxy.url + "/ctxpack/stats", timeout=2)
        except httpx.ConnectError:
            pass
        else:
            raise AssertionError("still listening after SIGTERM")


# A SIGTERM that comes after the address is printed but before uvicorn's own handler is in
# place (a caller that reads the address and stops serve at once): the server made, the signal
# sent, then run. It used to be ignored there, and serve ran on.
EARLY_SIGTERM = """
import os, signal, socket, uvicorn
from cli.serve import uvicorn_server

async def app(scope, receive, send):
    while scope["type"] == "lifespan":
        message = await receive()
        done = message["type"] + ".complete"
        await send({"type": done})
        if message["type"] == "lifespan.shutdown":
            return

listening = socket.create_server(("127.0.0.1", 0))
server = uvicorn_server(uvicorn, app, 1, 5.0)
os.kill(os.getpid(), signal.SIGTERM)
server.run(sockets=[listening])
print("stopped")
"""


def test_a_sigterm_before_uvicorn_runs_stops_serve_as_soon_as_it_starts() -> None:
    done = subprocess.run(
        [sys.executable, "-c", EARLY_SIGTERM], capture_output=True, text=True, timeout=30
    )
    assert (done.returncode, done.stdout) == (0, "stopped\n"), done.stderr


def test_a_caller_that_leaves_ends_its_upstream_request() -> None:
    with (
        Upstream(Answer(chunks=EVENTS * 10, pause=0.05)) as upstream,
        Serving(upstream.url) as proxy,
    ):
        with httpx.stream("POST", proxy.url + "/v1/messages", content=anthropic_request()) as r:
            next(r.iter_raw())
        deadline = time.monotonic() + 5
        while "the caller went away" not in proxy.log and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "POST /v1/messages 0" not in proxy.log
        assert "the caller went away" in proxy.log
        while upstream.in_flight and time.monotonic() < deadline:
            time.sleep(0.05)
        assert upstream.in_flight == 0  # its connection was closed: the upstream stopped


def test_the_default_policy_keeps_a_growing_session_cache_stable() -> None:
    with Upstream() as upstream, Serving(upstream.url) as proxy:
        for turns in range(1, 7):
            body = serve_bodies.anthropic(turns=turns, pending_results=True)
            assert httpx.post(proxy.url + "/v1/messages", json=body).status_code == 200
        stats = httpx.get(proxy.url + "/ctxpack/stats").json()
    assert stats["model_requests"] == 6 and len(upstream.received) == 6
    assert (stats["cache_stable"], stats["cache_breaks"]) == (5, 0)  # nothing worth a batch yet


def test_stats_and_log_lines_follow_a_growing_session() -> None:
    with Upstream() as upstream, Serving(upstream.url, "--policy", "every-turn") as proxy:
        for turns in range(1, 7):
            body = serve_bodies.anthropic(turns=turns, pending_results=True)
            assert httpx.post(proxy.url + "/v1/messages", json=body).status_code == 200
        stats = httpx.get(proxy.url + "/ctxpack/stats").json()
    assert stats["requests"] == stats["model_requests"] == 6
    assert stats["compacted"] == 3 and stats["unchanged"] == 3  # micro from the 4th turn on
    assert stats["tokens_saved"] == stats["tokens_in"] - stats["tokens_out"] > 0
    assert (stats["cache_stable"], stats["cache_breaks"]) == (2, 3)  # the seed's every-turn micro
    assert stats["estimated_billed_ratio"] > 0
    lines = [line for line in proxy.log.splitlines() if "POST /v1/messages" in line]
    assert len(lines) == 6
    assert "new conversation" in lines[0]
    assert re.search(
        r"POST /v1/messages 200: tokens \d+ -> \d+, 1 results truncated, cache broken", lines[3]
    )


def test_fifty_streams_at_once_all_come_back_whole() -> None:
    """The load test: 50 streaming requests at once, at most 8 upstream at a time."""
    answer = Answer(chunks=EVENTS, pause=0.02)
    with Upstream(answer) as upstream, Serving(upstream.url, "--max-concurrency", "8") as proxy:
        bodies = [anthropic_request(turns=4 + n % 4) for n in range(50)]

        async def one(client: httpx.AsyncClient, body: bytes) -> tuple[int, bytes, float]:
            started = time.monotonic()
            async with client.stream("POST", proxy.url + "/v1/messages", content=body) as reply:
                data = b"".join([chunk async for chunk in reply.aiter_raw()])
            return reply.status_code, data, time.monotonic() - started

        async def all_at_once() -> list[tuple[int, bytes, float]]:
            limits = httpx.Limits(max_connections=50)
            async with httpx.AsyncClient(limits=limits, timeout=60) as client:
                return await asyncio.gather(*(one(client, body) for body in bodies))

        started = time.monotonic()
        results = asyncio.run(all_at_once())
        elapsed = time.monotonic() - started
    assert [status for status, _, _ in results] == [200] * 50
    assert all(data == b"".join(EVENTS) for _, data, _ in results)
    assert len(upstream.received) == 50
    assert upstream.most_in_flight <= 8
    assert elapsed < 60
    latencies = sorted(seconds for _, _, seconds in results)
    print(
        f"50 streams: {elapsed:.2f}s in all, latency median {latencies[25]:.2f}s, "
        f"max {latencies[-1]:.2f}s, most upstream at once {upstream.most_in_flight}"
    )


def test_summaries_are_kept_in_the_state_folder_without_keys(tmp_path: Path) -> None:
    script = tmp_path / "summarize.py"
    script.write_text(
        "import sys\nsys.stdin.read()\nsys.stdout.write('The user builds the steps.')\n"
    )
    state = tmp_path / "state"
    arguments = ["--threshold", "500", "--provider", "command", "--command"]
    arguments.append(f"{sys.executable} {script}")
    with (
        Upstream() as upstream,
        Serving(upstream.url, *arguments, env={"XDG_STATE_HOME": str(state)}) as proxy,
    ):
        headers = {"x-api-key": SECRET_KEY, "authorization": SECRET_TOKEN}
        for _ in range(2):
            httpx.post(proxy.url + "/v1/messages", content=anthropic_request(), headers=headers)
        stats = httpx.get(proxy.url + "/ctxpack/stats").json()
        summary = json.loads(upstream.received[-1].body)["messages"][0]["content"]
        assert summary == "[Context Compressed]\nThe user builds the steps."
    assert (stats["summaries_written"], stats["summaries_reused"]) == (1, 1)
    folder = state / "ctxpack"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    files = list(folder.iterdir())
    assert len(files) == 1 and stat.S_IMODE(files[0].stat().st_mode) == 0o600
    for path in [*files, *tmp_path.rglob("*")]:
        if path.is_file():
            assert SECRET_KEY.encode() not in path.read_bytes()
            assert b"sk-proj-not-a-real" not in path.read_bytes()
    assert SECRET_KEY not in proxy.log and "sk-proj" not in proxy.log


def test_without_the_serve_extra_it_says_what_to_install(tmp_path: Path) -> None:
    blocked = tmp_path / "blocked"
    (blocked / "uvicorn").mkdir(parents=True)
    (blocked / "uvicorn" / "__init__.py").write_text("raise ImportError('not installed')\n")
    done = run("serve", "--upstream", "http://127.0.0.1:9", env={"PYTHONPATH": str(blocked)})
    assert done.returncode == 78
    assert (
        done.stderr
        == b"ctxpack: ctxpack serve needs the serve extra: pip install 'ctxpack[serve]'\n"
    )


def test_a_bad_upstream_or_a_port_in_use_is_refused_in_one_line() -> None:
    done = run("serve", "--upstream", "api.anthropic.com")
    assert done.returncode == 2
    assert b"is not an http(s) URL" in done.stderr and done.stderr.count(b"\n") == 1
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run("serve", "--upstream", "http://127.0.0.1:9", "--port", port)
    assert done.returncode == 78
    assert (
        done.stderr
        == f"ctxpack: cannot listen on 127.0.0.1:{port}: Address already in use\n".encode()
    )
