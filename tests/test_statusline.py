"""``ctxpack statusline`` (issue 34.4): the context against the window, the cache, the session's
cost as ``report`` prices it, serve's saving; kept between runs by the file's size and time."""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx
import pytest
import serve_bodies
from helpers import REPO, run
from serve_support import Serving

from compactor_core.report.statusline import render, status

SESSIONS = sorted((REPO / "tests" / "corpus" / "originals").glob("cc_*__full.jsonl"))


def recorded(path: Path) -> dict:
    done = run("report", "--by", "session", "--json", path)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["total"]


def last_usage(path: Path) -> tuple[int, float]:
    """The last main-thread reply's tokens, and when it came."""
    from datetime import datetime

    for line in reversed(path.read_text().splitlines()):
        record = json.loads(line)
        usage = (record.get("message") or {}).get("usage")
        if record.get("type") == "assistant" and usage and not record.get("isSidechain"):
            tokens = usage["input_tokens"] + usage["cache_read_input_tokens"]
            tokens += usage["cache_creation_input_tokens"] + usage["output_tokens"]
            return tokens, datetime.fromisoformat(record["timestamp"]).timestamp()
    raise AssertionError("no reply")


@pytest.mark.parametrize("path", SESSIONS, ids=lambda path: path.stem)
def test_the_status_of_a_real_session(tmp_path: Path, path: Path) -> None:
    tokens, when = last_usage(path)
    found = status(path, when + 90, cache_folder=tmp_path)
    assert found.context == tokens and found.window == 200_000
    assert round(found.cost, 4) == recorded(path)["cost"]  # as `ctxpack report` prices it
    assert found.warm_for is not None and found.warm_for > 60  # 90 s after the last request
    assert status(path, when + 7200, cache_folder=tmp_path).warm_for is None  # an hour later


def test_a_grown_or_rewritten_session_is_counted_as_a_whole(tmp_path: Path) -> None:
    lines = SESSIONS[0].read_bytes().splitlines(keepends=True)
    session = tmp_path / "s.jsonl"
    session.write_bytes(b"".join(lines[: len(lines) // 2]))
    half = status(session, 0, cache_folder=tmp_path / "cache")
    with session.open("ab") as handle:  # the agent goes on: only what it added is read
        handle.write(b"".join(lines[len(lines) // 2 :]))
    grown = status(session, 0, cache_folder=tmp_path / "cache")
    whole = status(session, 0, cache_folder=None)
    assert grown == whole and grown.cost > half.cost
    session.write_bytes(b"".join(lines[:10]))  # rewritten smaller (a restore)
    assert status(session, 0, cache_folder=tmp_path / "cache") == status(session, 0)


def test_the_line_through_the_real_executable(tmp_path: Path) -> None:
    path = SESSIONS[0]
    given = {"transcript_path": str(path), "model": {"id": "claude-opus-4-6"}}
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    env.pop("ANTHROPIC_BASE_URL", None)
    done = run("statusline", stdin=json.dumps(given).encode(), env=env)
    assert done.returncode == 0 and done.stderr == b""
    expected = render(status(path, 10**10))
    assert done.stdout.decode() == expected + "\n"
    assert expected.startswith("ctxpack ") and " · cache cold · $" in expected
    assert (tmp_path / "ctxpack" / "statusline").is_dir()  # kept for the next refresh
    nothing = run("statusline", stdin=b"not json", env=env)
    assert nothing.returncode == 0 and nothing.stdout == b"ctxpack\n"


def test_what_serve_saved_when_it_is_in_front(tmp_path: Path) -> None:
    from agents.server import ModelServer

    path = SESSIONS[0]
    given = json.dumps({"transcript_path": str(path)}).encode()
    with ModelServer() as model, Serving(model.url, "--policy", "every-turn") as proxy:
        body = serve_bodies.anthropic(turns=6)
        for _ in range(2):
            httpx.post(f"{proxy.url}/v1/messages", json=body, timeout=30).raise_for_status()
        env = {**os.environ, "XDG_STATE_HOME": str(tmp_path), "ANTHROPIC_BASE_URL": proxy.url}
        done = run("statusline", stdin=given, env=env)
    assert done.returncode == 0
    saved = done.stdout.decode().strip().rsplit(" · ", 1)[-1]
    assert saved.startswith("serve saved ") and saved.endswith("%")
