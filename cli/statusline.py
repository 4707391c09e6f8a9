"""``ctxpack statusline``: Claude Code's statusLine command.

Claude Code runs it at every refresh with a JSON object on standard input (``transcript_path``,
``model``, ``context_window``, …) and shows the first line it prints. It runs often, so
``ctxpack statusline`` takes a path of its own from ``cli/entry.py``: no click, no more of the core
than the status needs (``compactor_core.report.statusline``); ``--help`` goes through click as
every command does. It never fails the statusline: a session it cannot read prints ``ctxpack``.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson

from compactor_core.report.statusline import render, saved_share, status
from compactor_core.snapshots.locations import user_store

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
ASK_SERVE_FOR = 0.2  # seconds: serve on this machine answers at once, or not at all


def line(given: bytes, environ: Mapping[str, str], now: float) -> str:
    """The statusline for what Claude Code passed on standard input."""
    try:
        data: Any = orjson.loads(given) if given.strip() else {}
    except orjson.JSONDecodeError:
        data = {}
    data = data if isinstance(data, dict) else {}
    transcript = data.get("transcript_path")
    if not isinstance(transcript, str) or not os.path.isfile(transcript):
        return "ctxpack"
    window = (data.get("context_window") or {}).get("context_window_size")
    cache = user_store(environ.get("XDG_STATE_HOME"), environ.get("HOME")) / "statusline"
    try:
        found = status(Path(transcript), now, window if isinstance(window, int) else None, cache)
    except OSError:
        return "ctxpack"
    stats = _serve_stats(environ.get("ANTHROPIC_BASE_URL", ""))
    return render(found, saved_share(stats) if stats else None)


def _serve_stats(base_url: str) -> dict[str, Any] | None:
    """serve's figures, when the agent goes through one on this machine."""
    address = urlsplit(base_url)
    if address.hostname not in LOCAL_HOSTS or address.port is None:
        return None
    import http.client

    try:
        connection = http.client.HTTPConnection(
            address.hostname, address.port, timeout=ASK_SERVE_FOR
        )
        connection.request("GET", "/ctxpack/stats")
        reply = connection.getresponse()
        body = reply.read() if reply.status == 200 else b""
        connection.close()
        stats = orjson.loads(body) if body else None
    except (OSError, http.client.HTTPException, orjson.JSONDecodeError):
        return None
    return stats if isinstance(stats, dict) else None


def main() -> None:
    """The fast path: stdin to one line on stdout, exit 0 whatever happens."""
    sys.stdout.write(line(sys.stdin.buffer.read(), os.environ, time.time()) + "\n")
    sys.stdout.flush()
