"""Issue 22.2-22.4: an agent writing its session while ctxpack rewrites or restores it loses
nothing. Real processes: the ``ctxpack`` executable, and a writer (``live_agent.py``) that the
kernel's own notifications (inotify) wake at the worst moments; many trials each, every line
the writer wrote is in the file afterwards, once, in its order."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers import CORPUS, TESTS, run
from inotify import available

from compactor_core import commit, leases
from compactor_core.destinations import InPlace
from compactor_core.outcome import Report
from compactor_core.process import Target, process
from compactor_core.settings import Job, RunSettings, SessionRules, Settings, Writing
from compactor_core.snapshot_store import SnapshotStore
from compactor_core.sources import LocalFile

pytestmark = pytest.mark.skipif(not available(), reason="needs Linux inotify")

SESSION = CORPUS / "originals" / "cc_kimi_516b7270__full.jsonl"
LINES = 5
TEMP = ".ctxpack-tmp"
OLD = time.time() - 3600


@dataclass
class Trial:
    returncode: int
    stderr: bytes
    data: bytes
    slowest_open_us: int


def session(tmp_path: Path, number: int) -> Path:
    folder = tmp_path / f"trial-{number}"
    folder.mkdir()
    path = folder / "s.jsonl"
    shutil.copyfile(SESSION, path)
    os.utime(path, (OLD, OLD))
    return path


def appended_lines(data: bytes) -> list[int]:
    """The numbers of the writer's lines in ``data``, in the order they are in."""
    return [
        int(line.split(b"live-agent-", 1)[1][:4])
        for line in data.splitlines()
        if b"live-agent-" in line
    ]


def with_writer(
    path: Path,
    command: list[str],
    watch: Path,
    on: str,
    name: str,
    delay_us: int,
    seed: int,
    hold: bool = False,
) -> Trial:
    """Run ctxpack ``command`` while the writer waits for ``on`` at ``name`` in ``watch``."""
    flags = ["--hold"] if hold else []
    writer = subprocess.Popen(
        [
            sys.executable,
            str(TESTS / "live_agent.py"),
            str(path),
            "--watch",
            str(watch),
            "--on",
            on,
            "--name",
            name,
            "--lines",
            str(LINES),
            "--delay-us",
            str(delay_us),
            "--seed",
            str(seed),
            *flags,
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert writer.stdout is not None
        assert writer.stdout.readline() == b"ready\n"
        done = run(*command, path)
        said = writer.stdout.read()
        writer.wait(timeout=60)
    finally:
        writer.kill()
    assert said.startswith(b"done"), said
    return Trial(done.returncode, done.stderr, path.read_bytes(), int(said.split()[1]))


def assert_nothing_lost(trial: Trial, original: bytes) -> str:
    """Every line once, in order, at the end; the rest is the original or its rewrite. Which
    of the two ways it went, in words."""
    assert appended_lines(trial.data) == list(range(1, LINES + 1)), trial.stderr
    tail = trial.data[-sum(len(line) for line in trial.data.splitlines(True)[-LINES:]) :]
    assert appended_lines(tail) == list(range(1, LINES + 1))
    if trial.returncode == 75:  # left as it was: the original, and the agent's lines
        assert trial.data.startswith(original) and b"left as is" in trial.stderr
        return "left alone"
    assert trial.returncode == 0, trial.stderr
    assert len(trial.data) < len(original)
    return "moved" if b"moved onto the new version" in trial.stderr else "after the rename"


def snapshot_is_whole(store: Path, path: Path, original: bytes) -> None:
    [snapshot] = SnapshotStore(store).select(source=path, kind="original")
    assert snapshot.read() == original  # its size and hash: only the bytes that were read


def test_lines_appended_while_the_file_is_replaced_are_never_lost(tmp_path: Path) -> None:
    """The writer wakes when the snapshot's record is written, the last step before the checks
    and the rename, and waits 0-3 ms more: its lines land before the last check (the file is
    left alone), between it and the rename (moved onto the new file), or after."""
    original = SESSION.read_bytes()
    ways: Counter[str] = Counter()
    for number in range(30):
        path = session(tmp_path, number)
        store = tmp_path / f"store-{number}"
        command = ["micro", "--in-place", "--snapshot-dir", store]
        trial = with_writer(path, command, store, "delete", TEMP, 6000, number)
        way = assert_nothing_lost(trial, original)
        ways[way] += 1
        if way != "left alone":
            snapshot_is_whole(store, path, original)
    print(dict(ways))
    assert ways["moved"] + ways["after the rename"] > 0  # the window was reached


# --- the window itself, held open: the writer is let in after the rename -------------------------

APPENDER = """
import json, os, sys
for number in range(1, int(sys.argv[2]) + 1):
    line = {"type": "user", "uuid": f"live-agent-{number:04d}", "message": {"role": "user",
            "content": f"appended line {number}"}}
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
    os.write(fd, json.dumps(line).encode() + b"\\n")
    os.close(fd)
"""


def compact_in_place(path: Path, store: Path) -> Report:
    run_settings = RunSettings(
        Job("micro", Settings(keep_recent=0)),
        Writing(snapshots=SnapshotStore(store)),
        SessionRules(min_idle=0),
    )
    return process(Target(LocalFile(path, str(path)), InPlace()), run_settings)


def test_a_writer_that_opens_the_file_between_the_last_check_and_the_rename_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer starts opening the old file just after the last check: the kernel holds it
    back (the read lease), the rename happens, then it is let in; its first line, written into
    the old inode, is moved onto the new file, and its next lines (the new file, held back by
    the write lease meanwhile) come after it."""
    path = session(tmp_path, 0)
    original = path.read_bytes()
    writers: list[subprocess.Popen[bytes]] = []
    real_check = commit._last_check

    def last_check_then_a_writer(where: Path, guard: commit.Guard, lease: Any) -> None:
        real_check(where, guard, lease)
        assert lease is not None, "leases are available here"
        writers.append(subprocess.Popen([sys.executable, "-c", APPENDER, str(where), str(LINES)]))
        deadline = time.monotonic() + 20
        while not lease.broken():  # until the kernel holds the writer's open back
            assert time.monotonic() < deadline and writers[0].poll() is None
            time.sleep(0.001)

    monkeypatch.setattr(commit, "_last_check", last_check_then_a_writer)
    report = compact_in_place(path, tmp_path / "store")
    assert writers[0].wait(timeout=30) == 0
    assert report.error is None
    assert "1 line (" in (report.warning or "") and "moved onto the new version" in report.warning
    data = path.read_bytes()
    assert appended_lines(data) == list(range(1, LINES + 1))  # all, in their order, at the end
    assert data.splitlines()[-LINES:] == [
        line for line in data.splitlines() if b"live-agent" in line
    ]
    assert len(data) < len(original)
    snapshot_is_whole(tmp_path / "store", path, original)  # cut back to what was read


def test_without_leases_proc_is_asked_and_the_late_line_is_moved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where there are no leases (another system, a file system without them), the writer that
    has the old file open at the rename is seen in /proc and followed until it closes it."""
    path = session(tmp_path, 0)
    original = path.read_bytes()
    monkeypatch.setattr(leases.Lease, "take", classmethod(lambda cls, fd, kind: None))
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    real_rename = commit._rename
    real_check = commit._last_check

    def last_check_then_opened(where: Path, guard: commit.Guard, lease: Any) -> None:
        real_check(where, guard, lease)
        assert holder.stdin is not None and holder.stdout is not None
        holder.stdin.write(b"open\n")
        holder.stdin.flush()
        assert holder.stdout.readline() == b"opened\n"  # it holds the old file now

    def rename_then_it_writes(new: Any, where: Path, label: str) -> None:
        real_rename(new, where, label)
        assert holder.stdin is not None
        holder.stdin.write(b"write\n")
        holder.stdin.close()

    monkeypatch.setattr(commit, "_last_check", last_check_then_opened)
    monkeypatch.setattr(commit, "_rename", rename_then_it_writes)
    report = compact_in_place(path, tmp_path / "store")
    assert holder.wait(timeout=30) == 0
    assert report.error is None and "moved onto the new version" in (report.warning or "")
    data = path.read_bytes()
    assert appended_lines(data) == [1]
    assert data.endswith(b'"appended line 1"}}\n')
    snapshot_is_whole(tmp_path / "store", path, original)


HOLDER = """
import json, os, sys
assert sys.stdin.readline() == "open\\n"
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
print("opened", flush=True)
assert sys.stdin.readline() == "write\\n"
line = {"type": "user", "uuid": "live-agent-0001", "message": {"role": "user",
        "content": "appended line 1"}}
os.write(fd, json.dumps(line).encode() + b"\\n")
os.close(fd)
"""
