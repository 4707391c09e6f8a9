"""``ctxpack statusline`` on a 100 MB Claude Code session (issue 34.4): under 50 ms.

The session is the corpus's real ``cc_entire_1284c080`` repeated to 100 MB (each copy's message
ids and uuids made its own, so every request counts). Claude Code runs the command at every
refresh with the session's path on standard input; timed as a whole process, median of N:

- ``statusline.cached``: the file unchanged since the last run (what almost every refresh is);
- ``statusline.grown``: one turn appended since the last run (the agent answered);
- ``statusline.first``: no cache yet (the first refresh of a session): the whole file is read.

Beside them ``ctxpack --version``, the command line's own start.

    python bench/run.py statusline
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from harness import BENCH_DIR, CTXPACK, ROOT, Report

SOURCE = ROOT / "tests" / "corpus" / "originals" / "cc_entire_1284c080__full.jsonl"
TARGET_BYTES = 100_000_000
TARGET_SECONDS = 0.050


def run(report: Report) -> None:
    session = big_session()
    with tempfile.TemporaryDirectory() as state:
        env = {**os.environ, "XDG_STATE_HOME": state}
        env.pop("ANTHROPIC_BASE_URL", None)
        given = json.dumps({"transcript_path": str(session)}).encode()
        rounds = max(report.repeat * 4, 10)
        first = timed(given, env, 1)  # the first: nothing kept yet
        cached = timed(given, env, rounds)
        with session.open("rb+") as handle:
            size = handle.seek(0, 2)
            tail = SOURCE.read_bytes().splitlines(keepends=True)[-2:]
            grown = []
            for _ in range(rounds):
                handle.write(b"".join(tail))
                handle.flush()
                grown.append(timed(given, env, 1))
            handle.truncate(size)
        version = _median([_once([CTXPACK, "--version"], b"", env) for _ in range(rounds)])
        size_mb = session.stat().st_size / 1e6
        note = f"{size_mb:.0f} MB session; ctxpack --version {version * 1000:.0f} ms"
        report.ratio("statusline.cached", cached, TARGET_SECONDS, 1.0, note=note)
        report.ratio("statusline.grown", _median(grown), TARGET_SECONDS, 1.0, note="one turn added")
        report.info("statusline.first", first, TARGET_SECONDS, "s", note="no cache: the whole file")


def big_session() -> Path:
    """The real session, copied to 100 MB with each copy's ids its own (kept in bench/data)."""
    path = BENCH_DIR / "data" / "statusline-100mb.jsonl"
    if path.exists() and path.stat().st_size >= TARGET_BYTES:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = SOURCE.read_bytes().splitlines(keepends=True)
    with path.open("wb") as out:
        copy = 0
        while out.tell() < TARGET_BYTES:
            suffix = f"-{copy:04d}".encode()
            for line in lines:
                out.write(line.replace(b'"id":"msg_', b'"id":"msg_' + suffix[1:] + b"_"))
            copy += 1
    return path


def timed(given: bytes, env: dict[str, str], rounds: int) -> float:
    return _median([_once([CTXPACK, "statusline"], given, env) for _ in range(rounds)])


def _once(command: list[str], given: bytes, env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, input=given, capture_output=True, env=env, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: exit {done.returncode}: {done.stderr[-200:]!r}")
    return elapsed


def _median(times: list[float]) -> float:
    return statistics.median(times)
