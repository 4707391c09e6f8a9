"""``ctxpack mcp``'s start: from its spawn to its answer to ``tools/list`` (issue 35).

An agent starts its MCP servers, asks each ``initialize`` and then ``tools/list``; Claude Code's
print mode and Codex take the tool list while the servers start, so one slower than that loses
its tools on the first request. Measured: the wall time from the spawn to the ``tools/list``
answer (the three messages a client sends written at once, so that only the server is waited
for), the median of the rounds, against the issue's 300 ms; beside it ``ctxpack --version`` in
the same rounds, the command line's own start.

    python bench/run.py mcp
"""

from __future__ import annotations

import json
import statistics
import subprocess
import time

from harness import CTXPACK, ENV, Report, run_once

TARGET = 0.300  # seconds from the spawn to the tool list
HELLO = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench"}}
ASKED = b"".join(
    json.dumps(message).encode() + b"\n"
    for message in (
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": HELLO},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    )
)


def run(report: Report) -> None:
    report.case("mcp.startup", lambda: _startup(report))


def _startup(report: Report) -> None:
    rounds = max(report.repeat * 4, 10)  # short and noisy: more rounds
    listed, version = [], []
    until_listed()  # warm-up: page cache, .pyc files
    run_once([CTXPACK, "--version"])
    for round_ in range(rounds):
        pair = (until_listed, lambda: run_once([CTXPACK, "--version"]))
        for measure in pair if round_ % 2 == 0 else reversed(pair):
            (listed if measure is until_listed else version).append(measure())
    note = (
        f"spawn to the tools/list answer, median of {rounds}; "
        f"ctxpack --version: {statistics.median(version) * 1000:.0f} ms"
    )
    report.ratio("mcp.startup", statistics.median(listed), TARGET, 1.0, note=note)


def until_listed() -> float:
    """Seconds from starting ``ctxpack mcp`` to reading its answer to ``tools/list``."""
    started = time.perf_counter()
    server = subprocess.Popen(
        [CTXPACK, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=ENV
    )
    assert server.stdin and server.stdout
    server.stdin.write(ASKED)
    server.stdin.flush()
    answers = [json.loads(server.stdout.readline()) for _ in range(2)]
    elapsed = time.perf_counter() - started
    server.stdin.close()
    if server.wait() != 0 or not answers[1].get("result", {}).get("tools"):
        raise RuntimeError(f"ctxpack mcp: exit {server.returncode}, answered {answers}")
    return elapsed
