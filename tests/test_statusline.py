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

from compactor_core.report.statusline import READ_AT_MOST, render, status

ALL = 1 << 30  # one refresh reads the whole session
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


def refreshed(path: Path, now: float, cache: Path, read_at_most: int) -> list:
    """Each refresh's status until the whole session is counted."""
    found = [status(path, now, cache_folder=cache, read_at_most=read_at_most)]
    while not found[-1].counted_all:
        found.append(status(path, now, cache_folder=cache, read_at_most=read_at_most))
    return found


@pytest.mark.parametrize("path", SESSIONS, ids=lambda path: path.stem)
def test_the_status_of_a_real_session(tmp_path: Path, path: Path) -> None:
    tokens, when = last_usage(path)
    found = refreshed(path, when + 90, tmp_path, READ_AT_MOST)[-1]
    assert found.context == tokens and found.window == 200_000
    assert round(found.cost, 4) == recorded(path)["cost"]  # as `ctxpack report` prices it
    assert found.warm_for is not None and found.warm_for > 60  # 90 s after the last request
    assert status(path, when + 7200, cache_folder=tmp_path).warm_for is None  # an hour later


def test_a_grown_or_rewritten_session_is_counted_as_a_whole(tmp_path: Path) -> None:
    lines = SESSIONS[0].read_bytes().splitlines(keepends=True)
    session = tmp_path / "s.jsonl"
    session.write_bytes(b"".join(lines[: len(lines) // 2]))
    half = status(session, 0, cache_folder=tmp_path / "cache", read_at_most=ALL)
    with session.open("ab") as handle:  # the agent goes on: only what it added is read
        handle.write(b"".join(lines[len(lines) // 2 :]))
    grown = status(session, 0, cache_folder=tmp_path / "cache", read_at_most=ALL)
    whole = status(session, 0, read_at_most=ALL)
    assert grown == whole and grown.cost > half.cost
    session.write_bytes(b"".join(lines[:10]))  # rewritten smaller (a restore)
    assert status(session, 0, cache_folder=tmp_path / "cache", read_at_most=ALL) == status(
        session, 0, read_at_most=ALL
    )


@pytest.mark.parametrize("read_at_most", [200_000, 1 << 20])
def test_a_large_session_is_counted_a_slice_per_refresh(tmp_path: Path, read_at_most: int) -> None:
    """No refresh reads more than its share; the context and the cache are right from the first,
    the cost grows to what one whole reading says, and the line marks it until then."""
    path = SESSIONS[0]
    whole = status(path, 0, read_at_most=path.stat().st_size)
    runs = refreshed(path, 0, tmp_path, read_at_most)
    assert len(runs) >= path.stat().st_size // read_at_most
    assert all(run.context == whole.context and run.window == whole.window for run in runs)
    assert all(not run.counted_all and run.cost <= whole.cost for run in runs[:-1])
    assert [run.requests for run in runs] == sorted(run.requests for run in runs)
    assert runs[-1] == whole
    assert render(runs[0]).split(" · ")[2].endswith("+") and "+" not in render(whole)


def test_the_line_through_the_real_executable(tmp_path: Path) -> None:
    path = SESSIONS[0]
    given = {"transcript_path": str(path), "model": {"id": "claude-opus-4-6"}}
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    env.pop("ANTHROPIC_BASE_URL", None)
    done = run("statusline", stdin=json.dumps(given).encode(), env=env)
    assert done.returncode == 0 and done.stderr == b""
    expected = render(status(path, 10**10, cache_folder=tmp_path / "first"))
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
