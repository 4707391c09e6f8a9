"""``ctxpack statusline`` on a 100 MB Claude Code session (issue 34.4): under 50 ms.

The session is the corpus's real ``cc_entire_1284c080`` repeated to 100 MB (each copy's message
ids and uuids made its own, so every request counts). Claude Code runs the command at every
refresh with the session's path on standard input; timed as a whole process, median of N:

- ``statusline.cached``: the file unchanged since the last run (what almost every refresh is);
- ``statusline.grown``: one turn appended since the last run (the agent answered);
- ``statusline.first``: no cache yet (the first refresh of a session): its tail and its first
  slice are read (1 MB each); the cost is complete after ``size / 1 MB`` refreshes, whose count
  and whole time ``statusline.complete`` gives.

Beside them ``ctxpack --version``, the command line's own start, and ``ctxpack estimate`` on the
same file, which reads it whole.

    python bench/run.py statusline
"""

from __future__ import annotations

import json
import os
import re
import shutil
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
        first = _median([_first(given, env, state) for _ in range(rounds)])
        refreshes, complete = _until_complete(given, env, state)
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
        estimate = _once([CTXPACK, "estimate", str(session)], b"", env)
        size_mb = session.stat().st_size / 1e6
        note = f"{size_mb:.0f} MB session; ctxpack --version {version * 1000:.0f} ms"
        report.ratio("statusline.cached", cached, TARGET_SECONDS, 1.0, note=note)
        report.ratio("statusline.grown", _median(grown), TARGET_SECONDS, 1.0, note="one turn added")
        report.ratio("statusline.first", first, TARGET_SECONDS, 1.0, note="no cache: tail + 1 MB")
        report.info(
            "statusline.complete", complete, TARGET_SECONDS, "s", note=f"{refreshes} refreshes"
        )
        report.info("estimate.same_file", estimate, first, "s", note="reads it whole; vs first")


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


def _first(given: bytes, env: dict[str, str], state: str) -> float:
    """One refresh with nothing kept (the kept statuses removed before)."""
    shutil.rmtree(Path(state) / "ctxpack" / "statusline", ignore_errors=True)
    return _once([CTXPACK, "statusline"], given, env)


def _until_complete(given: bytes, env: dict[str, str], state: str) -> tuple[int, float]:
    """Refreshes, and their whole time, from the first until the cost is counted to the end (a
    cost still being counted is shown ``$12.34+``)."""
    shutil.rmtree(Path(state) / "ctxpack" / "statusline", ignore_errors=True)
    refreshes, spent = 0, 0.0
    while True:
        started = time.perf_counter()
        done = subprocess.run(
            [CTXPACK, "statusline"], input=given, capture_output=True, env=env, check=True
        )
        spent += time.perf_counter() - started
        refreshes += 1
        if re.search(rb"\$[0-9.]+\+", done.stdout) is None:
            return refreshes, spent


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
