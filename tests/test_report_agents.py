"""``ctxpack report`` on sessions the real Claude Code wrote against a model server that bills
like Anthropic (issue 33): each cache write it recorded is given the cause that made it — the
first request, a resume, the cache expired over a pause, its own ``/compact``."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta
from pathlib import Path

from agents.billing import Billing
from agents.claude import ClaudeHome, run_claude
from agents.script import Script
from agents.server import ModelServer
from helpers import run

PAUSE = 600.0  # seconds: two lifetimes of the 5-minute cache


def shifted(path: Path, first_line: int, seconds: float) -> None:
    """Move the times of every record from ``first_line`` on by ``seconds``: the session as if
    the user had paused that long before it."""
    lines = path.read_text().splitlines(keepends=True)
    for number in range(first_line, len(lines)):
        record = json.loads(lines[number])
        if isinstance(record.get("timestamp"), str):
            moment = datetime.fromisoformat(record["timestamp"].replace("Z", "+00:00"))
            later = (moment + timedelta(seconds=seconds)).isoformat(timespec="milliseconds")
            record["timestamp"] = later.replace("+00:00", "Z")
            lines[number] = json.dumps(record, ensure_ascii=False) + "\n"
    path.write_text("".join(lines))


def test_each_cache_write_of_a_real_session_gets_its_cause(tmp_path: Path) -> None:
    now = [1_000_000.0]
    home, project = ClaudeHome(tmp_path / "claude"), tmp_path / "project"
    project.mkdir()
    session = str(uuid.uuid4())
    with ModelServer(Script(), billing=Billing(clock=lambda: now[0])) as server:
        run_claude(home, project, "list the files", server, session_id=session).check()
        run_claude(home, project, "and the tests?", server, resume=session).check()
        path = home.session_file(project, session)
        paused = len(path.read_text().splitlines())
        now[0] += PAUSE  # the user thinks for ten minutes: the cache expires
        run_claude(home, project, "now the docs", server, resume=session).check()
        run_claude(home, project, "/compact", server, resume=session).check()
        run_claude(home, project, "go on", server, resume=session).check()
    shifted(path, paused, PAUSE)  # the file says so too
    done = run("report", "--json", "--no-with-ctxpack", "--misses", "--by", "session", path)
    assert done.returncode == 0, done.stderr
    causes = json.loads(done.stdout)["total"]["causes"]
    print(causes)
    assert causes["first request"] > 0
    assert causes["cache expired"] > 0
    assert causes["compaction"] > 0
    assert "unexplained" not in causes
