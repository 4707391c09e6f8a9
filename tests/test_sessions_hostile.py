"""``ctxpack sessions`` over a hostile folder (issue 36, B7): a FIFO or a link to a device named
like a session, and a huge file of zeros, are passed over or listed without an estimate — never
a hang, never a MemoryError."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from helpers import CTXPACK, TESTS

MORE = TESTS / "fixtures" / "more_agents"


def sessions(home: Path) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "HOME": str(home)}
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "PI_CODING_AGENT_DIR", "QWEN_HOME"):
        env.pop(name, None)
    return subprocess.run(
        [str(CTXPACK), "sessions", "--json", "--min-idle", "0"],
        capture_output=True,
        env=env,
        timeout=60,  # a FIFO read would hang here
    )


def test_fifos_devices_and_a_sparse_giant_never_hang_the_listing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    chats = home / ".gemini" / "tmp" / "project" / "chats"
    chats.mkdir(parents=True)
    shutil.copy(MORE / "gemini-cli.jsonl", chats / "session-2026-12-01T00-00-a1b2c3d4.jsonl")
    os.mkfifo(chats / "session-2026-12-02T00-00-fifo0000.jsonl")
    (chats / "session-2026-12-03T00-00-zero0000.jsonl").symlink_to("/dev/zero")
    pi = home / ".pi" / "agent" / "sessions" / "--work--"
    pi.mkdir(parents=True)
    with open(pi / "2026-12-04_giant.jsonl", "wb") as giant:
        giant.truncate(20 << 30)  # 20 GB of zeros, sparse: nothing on disk
    done = sessions(home)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    paths = {Path(row["path"]).name: row for row in rows}
    assert "session-2026-12-02T00-00-fifo0000.jsonl" not in paths
    assert "session-2026-12-03T00-00-zero0000.jsonl" not in paths
    assert paths["2026-12-04_giant.jsonl"]["tokens"] is None  # listed, not estimated
    assert paths["session-2026-12-01T00-00-a1b2c3d4.jsonl"]["tokens"] > 0
    assert b"Traceback" not in done.stderr and b"MemoryError" not in done.stderr
